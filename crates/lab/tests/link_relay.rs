//! Functional tests of the link relay over loopback: integrity, half-close, resets, refused
//! upstreams, back-pressure, handshake emulation, shared bandwidth, shutdown.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use h2lab_lab::link::{self, LinkConfig, LinkProfile};

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

#[test]
fn handshake_costs_one_round_trip() {
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(60);
    let link = link::spawn(c).unwrap();
    let t = Instant::now();
    let mut s = connect(link.addr());
    round_trip(&mut s, b"first").unwrap();
    let first = t.elapsed();
    let second = round_trip(&mut s, b"second").unwrap();
    // First exchange: handshake RTT + request RTT = 120 ms; later ones 60 ms.
    assert!(
        first >= Duration::from_millis(120) && first < Duration::from_millis(170),
        "{first:?}"
    );
    assert!(
        second >= Duration::from_millis(60) && second < Duration::from_millis(95),
        "{second:?}"
    );

    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(60);
    c.emulate_handshake = false;
    let link = link::spawn(c).unwrap();
    let t = Instant::now();
    let mut s = connect(link.addr());
    round_trip(&mut s, b"first").unwrap();
    let first = t.elapsed();
    assert!(first < Duration::from_millis(100), "{first:?}");
}

#[test]
fn connections_share_the_bandwidth() {
    // Four downloads at once through a 16 Mbit/s link: together they get 16 Mbit/s, each a
    // fair share.
    let mut c = config(serve(source));
    c.down_bps = Some(16_000_000);
    c.rtt = Duration::from_millis(2);
    let link = link::spawn(c).unwrap();
    let addr = link.addr();
    let n = 400_000u64; // 4 x 400 kB = 12.8 Mbit: 0.8 s at 16 Mbit/s
    let t = Instant::now();
    let downloads: Vec<_> = (0..4)
        .map(|_| thread::spawn(move || download_rate(addr, n)))
        .collect();
    let rates: Vec<f64> = downloads.into_iter().map(|d| d.join().unwrap()).collect();
    println!("rates {rates:?}");
    let total = (4 * n * 8) as f64 / t.elapsed().as_secs_f64();
    assert!(
        (14e6..16.5e6).contains(&total),
        "total {total} rates {rates:?}"
    );
    for r in &rates {
        // Fair share is 4 Mbit/s; round-robin keeps each within a wide margin of it.
        assert!((3.2e6..5e6).contains(r), "rates {rates:?}");
    }
}

#[test]
fn loss_costs_whole_round_trips() {
    // 20% segment loss: an echo exchange loses its request or its reply with probability
    // 1 - 0.8^2 = 36%, and then takes one extra RTT (the retransmission), never less.
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(20);
    c.loss = 0.2;
    c.seed = 1;
    let link = link::spawn(c).unwrap();
    let mut s = connect(link.addr());
    round_trip(&mut s, b"warm-up").unwrap();
    let samples: Vec<f64> = (0..30)
        .map(|_| round_trip(&mut s, b"ping").unwrap().as_secs_f64() * 1e3)
        .collect();
    let slow = samples.iter().filter(|&&ms| ms >= 38.0).count();
    assert!(samples.iter().all(|&ms| ms >= 19.9), "{samples:?}");
    assert!((3..=22).contains(&slow), "{slow} slow of {samples:?}");
    assert!(link.stats().up.lost_chunks + link.stats().down.lost_chunks > 0);
}

#[test]
fn jitter_varies_round_trips_within_bounds() {
    // 10 ms +- 3 ms each way: round trips between 14 and 26 ms, not all alike.
    let mut c = config(serve(echo));
    c.rtt = Duration::from_millis(20);
    c.jitter = Duration::from_millis(3);
    let link = link::spawn(c).unwrap();
    let mut s = connect(link.addr());
    round_trip(&mut s, b"warm-up").unwrap();
    let samples: Vec<f64> = (0..20)
        .map(|_| round_trip(&mut s, b"ping").unwrap().as_secs_f64() * 1e3)
        .collect();
    let min = samples.iter().cloned().fold(f64::MAX, f64::min);
    // Delays are never shortened: a hard bound.
    assert!(min >= 13.9, "{samples:?}");
    // The upper bound can be stretched by a busy machine; allow two outliers.
    let within = samples.iter().filter(|&&ms| ms <= 26.5).count();
    assert!(within >= 18, "{samples:?}");
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
