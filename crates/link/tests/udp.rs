//! The UDP half of the link: echo through the link, the accuracy checks of
//! `accuracy.rs` for datagrams (added RTT, rate, loss), many flows, idle expiry and the
//! port choice. All on 127.0.0.1, port 0, bounded in count and time; the bounds are generous
//! because the link, the client and the echo server share a busy 2-core machine.

mod common;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::median;
use h2lab_link::{self as link, LinkConfig, LinkStats, RunningLink};

/// The measurements must not run at the same time (they would compete for the CPU).
static SERIAL: Mutex<()> = Mutex::new(());

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A UDP server on 127.0.0.1 that echoes every datagram (or, with `echo == false`, only
/// counts them) until dropped.
struct UdpServer {
    addr: SocketAddr,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl UdpServer {
    fn start(echo: bool) -> UdpServer {
        let socket = UdpSocket::bind(any()).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (Arc::clone(&received), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !s.load(Ordering::SeqCst) {
                if let Ok((n, from)) = socket.recv_from(&mut buf) {
                    r.fetch_add(1, Ordering::SeqCst);
                    if echo {
                        let _ = socket.send_to(&buf[..n], from);
                    }
                }
            }
        });
        UdpServer {
            addr,
            received,
            stop,
            thread: Some(thread),
        }
    }

    fn received(&self) -> u64 {
        self.received.load(Ordering::SeqCst)
    }
}

impl Drop for UdpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn client() -> UdpSocket {
    let s = UdpSocket::bind(any()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn udp_addr(link: &RunningLink) -> SocketAddr {
    link.udp_addr().expect("the link relays UDP")
}

/// Sends `msg` to `to` and waits for the same bytes back: the round trip.
fn ping(s: &UdpSocket, to: SocketAddr, msg: &[u8]) -> Duration {
    let t = Instant::now();
    s.send_to(msg, to).unwrap();
    let mut buf = [0u8; 2048];
    loop {
        let (n, _) = s.recv_from(&mut buf).expect("echo within 5 s");
        if &buf[..n] == msg {
            return t.elapsed();
        }
    }
}

/// Polls `cond` on the link's counters until it holds (or 10 s pass: then panics).
fn wait_for(link: &RunningLink, what: &str, cond: impl Fn(&LinkStats) -> bool) -> LinkStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = link.stats();
        if cond(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn median_ping_ms(to: SocketAddr, samples: usize) -> f64 {
    let s = client();
    ping(&s, to, b"warm-up");
    let v = (0..samples)
        .map(|i| ping(&s, to, format!("sample {i:04}").as_bytes()).as_secs_f64() * 1e3)
        .collect();
    median(v)
}

#[test]
fn udp_echo_crosses_the_link_on_the_tcp_port_number() {
    let server = UdpServer::start(true);
    let link = link::spawn(LinkConfig::new(any(), server.addr)).unwrap();
    let udp = udp_addr(&link);
    assert_eq!(
        udp,
        link.addr(),
        "UDP on the TCP listener's address and port"
    );
    let s = client();
    for i in 0..5 {
        ping(&s, udp, format!("hello {i}").as_bytes());
    }
    // The counters are updated right after each send.
    let st = wait_for(&link, "the counters", |st| st.udp.down.datagrams_out == 5);
    assert_eq!((st.udp.flows, st.udp.active_flows), (1, 1));
    assert_eq!(st.udp.up.datagrams_out, 5);
    assert_eq!(st.connections, 0, "no TCP connection was made");
    // The statistics text has the UDP lines.
    assert!(st.to_string().contains("udp flows: 1 seen"), "{st}");
}

#[test]
fn udp_port_falls_back_when_taken_and_can_be_off() {
    let listener = TcpListener::bind(any()).unwrap();
    let port_taker = UdpSocket::bind(listener.local_addr().unwrap()).unwrap();
    let server = UdpServer::start(true);
    let link = link::spawn_on(listener, LinkConfig::new(any(), server.addr)).unwrap();
    let udp = udp_addr(&link);
    assert_ne!(udp.port(), link.addr().port());
    assert_eq!(udp.ip(), link.addr().ip());
    ping(&client(), udp, b"still relayed");
    drop(port_taker);

    let mut c = LinkConfig::new(any(), server.addr);
    c.udp = false;
    let link = link::spawn(c).unwrap();
    assert_eq!(link.udp_addr(), None);
}

#[test]
fn added_rtt_for_datagrams() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = UdpServer::start(true);
    let direct = median_ping_ms(server.addr, 15);
    let mut table = Vec::new();
    let mut failures = Vec::new();
    for (target_ms, samples) in [(10u64, 11), (50, 7)] {
        let measure = || {
            let mut c = LinkConfig::new(any(), server.addr);
            c.rtt = Duration::from_millis(target_ms);
            let link = link::spawn(c).unwrap();
            median_ping_ms(udp_addr(&link), samples) - direct
        };
        // Early is a broken link and fails at once (10%, as for TCP). Late may be a starved
        // machine (a test process at nice 10 among compilers measured 50 ms as 63 ms three
        // batches in a row): the batch closest to the target out of three counts, and the
        // bound on that side is generous.
        let mut added = measure();
        for _ in 0..2 {
            if (added - target_ms as f64) / (target_ms as f64) <= 0.10 {
                break;
            }
            added = added.min(measure());
        }
        let err = (added - target_ms as f64) / target_ms as f64;
        table.push(format!(
            "target {target_ms} ms: added {added:.3} ms ({:+.2}%)",
            err * 100.0
        ));
        if !(-0.10..=0.40).contains(&err) {
            failures.push(target_ms);
        }
    }
    println!(
        "UDP added RTT (direct {direct:.3} ms)\n{}",
        table.join("\n")
    );
    assert!(failures.is_empty(), "{failures:?}\n{}", table.join("\n"));
}

/// Sends 1000-byte datagrams through the link for `secs` at twice `bps` (so its queue never
/// empties) and returns the rate at which their echoes arrive, in bit/s, over the span between
/// the first and the last echo.
fn echo_rate(to: SocketAddr, bps: u64, secs: f64) -> f64 {
    const SIZE: usize = 1000;
    let s = client();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let sender = s.try_clone().unwrap();
    let total = (2.0 * bps as f64 / 8.0 / SIZE as f64 * secs) as u64;
    let send = std::thread::spawn(move || {
        let start = Instant::now();
        let per_datagram = Duration::from_secs_f64(SIZE as f64 * 8.0 / (2.0 * bps as f64));
        let payload = [7u8; SIZE];
        for i in 0..total {
            // Pacing, not waiting for anything: keep to the schedule.
            let due = start + per_datagram * i as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let _ = sender.send_to(&payload, to);
        }
    });
    let mut buf = [0u8; 2048];
    let (mut first, mut last, mut count) = (None, None, 0u64);
    while let Ok((n, _)) = s.recv_from(&mut buf) {
        assert_eq!(n, SIZE);
        let now = Instant::now();
        first.get_or_insert(now);
        last = Some(now);
        count += 1;
    }
    send.join().unwrap();
    let span = last.unwrap() - first.unwrap();
    (count - 1) as f64 * SIZE as f64 * 8.0 / span.as_secs_f64()
}

#[test]
fn datagram_rate_is_the_link_rate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = UdpServer::start(true);
    let mut table = Vec::new();
    let mut failures = Vec::new();
    for (mbit, dir) in [(4u64, "up"), (8, "down")] {
        let bps = mbit * 1_000_000;
        let measure = || {
            let mut c = LinkConfig::new(any(), server.addr);
            c.rtt = Duration::from_millis(4);
            // 100 ms of queue: the sender (or the echo server) may stall for that long on a
            // loaded machine without the link running dry (the default, 5 ms here, would).
            c.queue_bytes = Some((bps / 8 / 10) as usize);
            if dir == "up" {
                c.up_bps = Some(bps);
            } else {
                c.down_bps = Some(bps);
            }
            let link = link::spawn(c).unwrap();
            let rate = echo_rate(udp_addr(&link), bps, 0.6);
            let st = link.stats();
            let d = if dir == "up" { st.udp.up } else { st.udp.down };
            assert!(d.queue_drops > 0, "twice the rate must overflow the queue");
            rate
        };
        // As in accuracy.rs: more than the rate fails at once; less may be a starved
        // machine, so it gets two more tries and the best one counts.
        let mut best = measure();
        for _ in 0..2 {
            if (best - bps as f64) / (bps as f64) >= -0.10 {
                break;
            }
            best = best.max(measure());
        }
        let err = (best - bps as f64) / bps as f64;
        table.push(format!(
            "{mbit} Mbit/s {dir}: {:.3} Mbit/s ({:+.2}%)",
            best / 1e6,
            err * 100.0
        ));
        if err.abs() > 0.10 {
            failures.push((mbit, dir));
        }
    }
    println!("UDP rate\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{failures:?}\n{}", table.join("\n"));
}

#[test]
fn datagram_loss_rate_is_the_configured_loss() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sink = UdpServer::start(false);
    let mut c = LinkConfig::new(any(), sink.addr);
    c.loss = 0.05;
    let link = link::spawn(c).unwrap();
    let to = udp_addr(&link);
    let s = client();
    let n = 4000u64;
    for batch in 0..n / 100 {
        for i in 0..100 {
            s.send_to(format!("datagram {}", batch * 100 + i).as_bytes(), to)
                .unwrap();
        }
        // Never more than 100 datagrams in the kernel's buffers: none is lost there.
        let sent = (batch + 1) * 100;
        wait_for(&link, "the link to read the batch", |st| {
            st.udp.up.datagrams_in == sent
        });
    }
    let st = wait_for(&link, "every datagram to be relayed or lost", |st| {
        st.udp.up.datagrams_out + st.udp.up.lost == n
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while sink.received() < st.udp.up.datagrams_out && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sink.received(), st.udp.up.datagrams_out);
    let rate = 1.0 - sink.received() as f64 / n as f64;
    println!("UDP loss: configured 5%, measured {:.2}%", rate * 100.0);
    // Binomial: sd = sqrt(0.05 * 0.95 / 4000) = 0.34%; the bounds are about 4 sd.
    assert!((0.0365..0.0635).contains(&rate), "loss rate {rate}");
    assert_eq!(st.udp.up.queue_drops + st.udp.up.send_drops, 0);
}

#[test]
fn many_flows_each_get_their_own_answers() {
    let server = UdpServer::start(true);
    let mut c = LinkConfig::new(any(), server.addr);
    c.rtt = Duration::from_millis(2);
    let link = link::spawn(c).unwrap();
    let to = udp_addr(&link);
    let clients: Vec<UdpSocket> = (0..64).map(|_| client()).collect();
    for round in 0..3 {
        for (i, s) in clients.iter().enumerate() {
            s.send_to(format!("flow {i} round {round}").as_bytes(), to)
                .unwrap();
        }
        for (i, s) in clients.iter().enumerate() {
            let mut buf = [0u8; 64];
            let (n, from) = s.recv_from(&mut buf).expect("an answer within 5 s");
            assert_eq!(from, to, "answers come from the link's socket");
            assert_eq!(&buf[..n], format!("flow {i} round {round}").as_bytes());
        }
    }
    let st = wait_for(&link, "the counters", |st| st.udp.down.datagrams_out == 192);
    assert_eq!((st.udp.flows, st.udp.active_flows), (64, 64));
}

#[test]
fn idle_flows_expire_and_come_back() {
    let server = UdpServer::start(true);
    let mut c = LinkConfig::new(any(), server.addr);
    c.udp_idle = Duration::from_millis(200);
    let link = link::spawn(c).unwrap();
    let to = udp_addr(&link);
    let s = client();
    // Before the flow's first datagram, so before its last one too.
    let before = Instant::now();
    ping(&s, to, b"one");
    wait_for(&link, "the flow to expire", |st| {
        st.udp.active_flows == 0 && st.udp.expired_flows == 1
    });
    assert!(
        before.elapsed() >= Duration::from_millis(200),
        "expired early"
    );
    // The same client address gets a new flow.
    ping(&s, to, b"two");
    let st = link.stats();
    assert_eq!((st.udp.flows, st.udp.active_flows), (2, 1));
}
