//! Functional tests of the link relay over loopback: integrity, half-close, resets, refused
//! upstreams, back-pressure, handshake emulation, shared bandwidth, shutdown.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use h2lab_link::{self as link, LinkConfig, LinkProfile};

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn config(upstream: SocketAddr) -> LinkConfig {
    LinkConfig::new(any(), upstream)
}

/// Pseudo-random bytes (xorshift), so that reordering or corruption would show.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn relays_bytes_intact_in_both_directions_at_once() {
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(4);
    c.jitter = Duration::from_millis(1);
    c.loss = 0.01;
    c.down_bps = Some(400_000_000);
    c.up_bps = Some(300_000_000);
    let link = link::spawn(c).unwrap();
    let data = noise(3_000_000, 7);
    let mut s = connect(link.addr());
    let mut r = s.try_clone().unwrap();
    let expect = data.clone();
    let reader = thread::spawn(move || {
        let mut got = Vec::with_capacity(expect.len());
        r.read_to_end(&mut got).unwrap();
        assert!(got == expect, "echoed bytes differ");
    });
    s.write_all(&data).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    reader.join().unwrap();
    let st = link.stats();
    assert_eq!(st.up.bytes_in, 3_000_000);
    assert_eq!(st.up.bytes_out, 3_000_000);
    assert_eq!(st.down.bytes_out, 3_000_000);
    assert!(
        st.up.lost_chunks > 0,
        "1% loss over 2000 segments lost nothing"
    );
    assert_eq!(st.connections, 1);
}

#[test]
fn many_concurrent_connections() {
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(2);
    c.down_bps = Some(200_000_000);
    let link = link::spawn(c).unwrap();
    let addr = link.addr();
    let clients: Vec<_> = (0..40u64)
        .map(|i| {
            thread::spawn(move || {
                let mut s = connect(addr);
                for round in 0..5u64 {
                    let msg = noise(1000 + (i * 997 + round * 31) as usize % 20_000, i + round);
                    s.write_all(&msg).unwrap();
                    let mut back = vec![0; msg.len()];
                    s.read_exact(&mut back).unwrap();
                    assert!(back == msg);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    // The relay counts a write after the syscall returns, which may be after the client read.
    wait_for(|| {
        let st = link.stats();
        st.up.bytes_in == st.down.bytes_out
    });
    assert_eq!(link.stats().connections, 40);
}

#[test]
fn half_close_is_propagated_after_the_data() {
    // The server reads to EOF (which needs the client's FIN relayed), then answers with a count.
    let mut c = config(serve(sink));
    c.rtt = Duration::from_millis(10);
    c.up_bps = Some(50_000_000);
    let link = link::spawn(c).unwrap();
    let mut s = connect(link.addr());
    s.write_all(&[1u8; 100_000]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let (total, _, _) = sink_reply(&mut s);
    assert_eq!(total, 100_000);
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap(); // and the server's FIN comes back as EOF
    assert!(rest.is_empty());
    drop(s);
    wait_for(|| link.stats().active == 0);
    assert_eq!(link.stats().resets, 0);
}

#[test]
fn server_reset_reaches_the_client_as_a_reset() {
    let upstream = serve(|s| {
        let mut s = s;
        let mut b = [0u8; 4];
        let _ = s.read_exact(&mut b);
        let _ = s.write_all(b"bye!");
        let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
        drop(s); // RST
    });
    let mut c = config(upstream);
    c.rtt = Duration::from_millis(6);
    let link = link::spawn(c).unwrap();
    let mut s = connect(link.addr());
    s.write_all(b"ping").unwrap();
    // The data sent before the reset is delivered first...
    let mut b = [0u8; 4];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"bye!");
    // ...then the reset.
    let mut rest = [0u8; 16];
    let err = s.read(&mut rest).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    wait_for(|| link.stats().resets == 1);
}

#[test]
fn refused_upstream_resets_the_client() {
    // A port with nothing listening.
    let closed = TcpListener::bind(any()).unwrap().local_addr().unwrap();
    let link = link::spawn(config(closed)).unwrap();
    let mut s = connect(link.addr());
    let _ = s.write_all(b"hello");
    let mut b = [0u8; 8];
    match s.read(&mut b) {
        Ok(0) => {}
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset),
        Ok(n) => panic!("read {n} bytes from a refused upstream"),
    }
    wait_for(|| link.stats().connect_failures == 1);
}

#[test]
fn full_queue_pushes_back_on_the_sender_and_memory_stays_bounded() {
    // The server never reads: once its receive buffer, the link's queue and the link's
    // per-connection buffer are full, the client's writes must block.
    let upstream = serve(|s| {
        thread::sleep(Duration::from_secs(5));
        drop(s);
    });
    let mut c = config(upstream);
    c.up_bps = Some(1_000_000_000);
    c.queue_bytes = Some(64 * 1024);
    let limit = c.buffer_limit(link::Direction::Up);
    let link = link::spawn(c).unwrap();
    let mut s = connect(link.addr());
    s.set_nonblocking(true).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    let start = Instant::now();
    let mut idle_since = Instant::now();
    // Write until the writes have been blocked for 300 ms straight.
    while idle_since.elapsed() < Duration::from_millis(300) {
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "writes never blocked"
        );
        match s.write(&chunk) {
            Ok(n) => {
                written += n as u64;
                idle_since = Instant::now();
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("{e}"),
        }
    }
    let st = link.stats();
    assert!(st.up.max_queue_bytes <= 64 * 1024, "{st:?}");
    assert!(st.up.max_conn_held <= limit as u64, "{st:?} limit {limit}");
    // Everything written is in kernel buffers or the link, and the link holds at most its limit.
    assert!(st.up.bytes_in < written, "{st:?} written {written}");
    assert!(st.up.bytes_in - st.up.bytes_out <= limit as u64);
}

/// The first exchange on a new connection to `addr` (connecting included), and the second.
fn first_and_second(addr: SocketAddr) -> (Duration, Duration) {
    let t = Instant::now();
    let mut s = connect(addr);
    round_trip(&mut s, b"first").unwrap();
    let first = t.elapsed();
    (first, round_trip(&mut s, b"second").unwrap())
}

/// Waiting for the CPU only delays an exchange, so the lower bounds hold for every one. The
/// upper bounds (the handshake costs ONE round trip, not two) hold for the fastest of a few
/// connections, less the fastest of as many direct connections to the same echo server,
/// alternated with them: a new connection costs the echo server a new thread, and on a busy
/// machine starting it took 40 ms or more (at a load of 17 on 2 cores, no first exchange
/// through a 60 ms link without the handshake took less than 100 ms).
#[test]
fn handshake_costs_one_round_trip() {
    let echo_addr = serve(echo);
    let mut c = config(echo_addr);
    c.rtt = Duration::from_millis(60);
    let link = link::spawn(c).unwrap();
    let mut c = config(echo_addr);
    c.rtt = Duration::from_millis(60);
    c.emulate_handshake = false;
    let bare = link::spawn(c).unwrap();
    let (mut firsts, mut seconds, mut bare_firsts, mut direct) = (vec![], vec![], vec![], vec![]);
    for _ in 0..4 {
        let (first, second) = first_and_second(link.addr());
        firsts.push(first);
        seconds.push(second);
        direct.push(first_and_second(echo_addr).0);
        bare_firsts.push(first_and_second(bare.addr()).0);
        direct.push(first_and_second(echo_addr).0);
    }
    let ms = |v: &[Duration]| v.iter().min().unwrap().as_secs_f64() * 1e3;
    let setup = ms(&direct);
    // First exchange: handshake RTT + request RTT = 120 ms; later ones 60 ms.
    assert!(
        firsts.iter().all(|&d| d >= Duration::from_millis(120)) && ms(&firsts) - setup < 150.0,
        "{firsts:?} direct {direct:?}"
    );
    assert!(
        seconds.iter().all(|&d| d >= Duration::from_millis(60)) && ms(&seconds) < 95.0,
        "{seconds:?}"
    );
    // Without the handshake: one RTT.
    assert!(
        bare_firsts.iter().all(|&d| d >= Duration::from_millis(60))
            && ms(&bare_firsts) - setup < 90.0,
        "{bare_firsts:?} direct {direct:?}"
    );
}

/// Four downloads at once through a 16 Mbit/s link: together they get 16 Mbit/s, each a
/// fair share. The shaper serializes at exactly the rate from the first byte, so from the
/// first request to the last byte the four transfers take at least `bytes * 8 / rate` plus
/// the RTT: never more than 16 Mbit/s together, whatever the load (checked on every trial).
/// The clients start together (a barrier, so that starting their threads on a busy machine is
/// not counted), and waiting for the CPU can only make a trial slower, so the shared rate
/// is that of the faster of two trials.
#[test]
fn connections_share_the_bandwidth() {
    let mut c = config(serve(source));
    c.down_bps = Some(16_000_000);
    c.rtt = Duration::from_millis(2);
    let link = link::spawn(c).unwrap();
    let addr = link.addr();
    let n = 400_000u64; // 4 x 400 kB = 12.8 Mbit: 0.8 s at 16 Mbit/s
    let trial = || {
        let go = std::sync::Arc::new(std::sync::Barrier::new(4));
        let downloads: Vec<_> = (0..4)
            .map(|_| {
                let go = go.clone();
                thread::spawn(move || {
                    go.wait();
                    download(addr, n)
                })
            })
            .collect();
        let xs: Vec<Transfer> = downloads.into_iter().map(|d| d.join().unwrap()).collect();
        let start = xs.iter().map(|x| x.start).min().unwrap();
        let end = xs.iter().map(|x| x.start + x.elapsed).max().unwrap();
        let secs = (end - start).saturating_sub(Duration::from_millis(2));
        let total = (4 * n * 8) as f64 / secs.as_secs_f64();
        let rates: Vec<f64> = xs.iter().map(|x| x.rate).collect();
        println!("total {total} rates {rates:?}");
        assert!(
            total <= 16e6 * (1.0 + 1e-6),
            "total {total} rates {rates:?}"
        );
        (total, rates)
    };
    let (a, b) = (trial(), trial());
    let (total, rates) = if a.0 >= b.0 { a } else { b };
    assert!(total >= 14e6, "total {total} rates {rates:?}");
    for r in &rates {
        // Fair share is 4 Mbit/s; round-robin keeps each within a wide margin of it.
        assert!((3.2e6..5e6).contains(r), "rates {rates:?}");
    }
}

#[test]
fn loss_costs_whole_round_trips() {
    // 20% segment loss: an echo exchange loses its request or its reply with probability
    // 1 - 0.8^2 = 36%, and then takes one extra RTT (the retransmission), never less. The
    // relay counts its losses when it reads a chunk, so the counters tell which exchanges
    // lost one; waiting for the CPU only makes an exchange slower, so the lower bounds hold
    // for every exchange, and "one extra RTT, not two" for the fastest exchange that lost.
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(20);
    c.loss = 0.2;
    c.seed = 1;
    let link = link::spawn(c).unwrap();
    let lost = || {
        let st = link.stats();
        st.up.lost_chunks + st.down.lost_chunks
    };
    let mut s = connect(link.addr());
    round_trip(&mut s, b"warm-up").unwrap();
    let (mut clean, mut lossy) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        let before = lost();
        let ms = round_trip(&mut s, b"ping").unwrap().as_secs_f64() * 1e3;
        if lost() > before {
            lossy.push(ms);
        } else {
            clean.push(ms);
        }
    }
    assert!(clean.iter().all(|&ms| ms >= 19.9), "{clean:?}");
    assert!(lossy.iter().all(|&ms| ms >= 39.9), "{lossy:?}");
    assert!((3..=22).contains(&lossy.len()), "{lossy:?} of 30");
    let fastest = lossy.iter().copied().fold(f64::MAX, f64::min);
    assert!(fastest < 59.0, "{lossy:?}");
}

/// 10 ms ± 3 ms each way: round trips between 14 and 26 ms. The bounds of the jitter are
/// tested exactly in virtual time (`shaper.rs`, `jitter_never_reorders_and_stays_in_bounds`
/// and `jitter_is_spread_over_the_whole_range`); end to end, a busy machine can stretch any
/// exchange (at a load of 20 on 2 cores, 20 ms exchanges took up to 172 ms), so this checks
/// what waiting for the CPU cannot cause: no exchange is shorter than the least jitter
/// allows, and some are shorter than the RTT, which only jitter can do (a link without
/// jitter never answers early: `accuracy.rs`).
#[test]
fn jitter_varies_round_trips_within_bounds() {
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(20);
    c.jitter = Duration::from_millis(3);
    let link = link::spawn(c).unwrap();
    let mut s = connect(link.addr());
    round_trip(&mut s, b"warm-up").unwrap();
    let samples: Vec<f64> = (0..40)
        .map(|_| round_trip(&mut s, b"ping").unwrap().as_secs_f64() * 1e3)
        .collect();
    let min = samples.iter().cloned().fold(f64::MAX, f64::min);
    // Delays are never shortened below rtt - 2 x jitter: a hard bound.
    assert!(min >= 13.9, "{samples:?}");
    assert!(
        min < 19.9,
        "no exchange was shortened by the jitter: {samples:?}"
    );
    let spread = samples.iter().filter(|&&ms| ms >= min + 2.0).count();
    assert!(spread >= 3, "{samples:?}");
}

#[test]
fn profiles_run() {
    let upstream = serve(echo);
    for p in LinkProfile::ALL {
        let link = link::spawn(LinkConfig::profile(p, any(), upstream)).unwrap();
        let mut s = connect(link.addr());
        round_trip(&mut s, p.name().as_bytes()).unwrap();
    }
}

#[test]
fn shutdown_closes_connections_and_stops_accepting() {
    let link = link::spawn(config(serve(echo))).unwrap();
    let addr = link.addr();
    let mut s = connect(addr);
    round_trip(&mut s, b"x").unwrap();
    link.join().unwrap();
    let mut b = [0u8; 1];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn run_blocks_until_triggered() {
    let listener = TcpListener::bind(any()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = link::Shutdown::new();
    let trigger = shutdown.clone();
    let cfg = config(serve(echo));
    let t = thread::spawn(move || link::run(listener, &cfg, shutdown));
    let mut s = connect(addr);
    round_trip(&mut s, b"hi").unwrap();
    trigger.trigger();
    t.join().unwrap().unwrap();
}

#[test]
fn invalid_config_is_rejected() {
    let mut c = config(any());
    c.loss = 2.0;
    let err = link::spawn(c).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

fn wait_for(cond: impl Fn() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "condition not reached"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// The regression test of the relay's loss rate at 50 Mbit/s (1,562-byte pacing chunks), where
/// it used to lose about twice the configured rate per segment: a 4 MB download at `--loss 3%`
/// loses 3% of its segments, within the binomial 99% interval (z = 2.576) around it.
#[test]
fn loss_per_segment_is_the_configured_loss_at_50_mbit() {
    let mut c = config(serve(source));
    c.rtt = Duration::from_millis(10);
    c.down_bps = Some(50_000_000);
    c.up_bps = Some(50_000_000);
    c.loss = 0.03;
    c.seed = 3;
    let link = link::spawn(c).unwrap();
    download(link.addr(), 4_000_000);
    let st = link.stats();
    let (segs, lost) = (st.down.segments as f64, st.down.lost_segments as f64);
    let half = 2.576 * (segs * 0.03 * 0.97).sqrt();
    eprintln!(
        "{lost} of {segs} segments lost; {} chunks, {} lost",
        st.down.chunks, st.down.lost_chunks
    );
    assert!(segs >= 4_000_000.0 / 1448.0, "{st:?}");
    assert!((lost - 0.03 * segs).abs() <= half, "{lost} of {segs}");
}
