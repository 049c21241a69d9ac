//! Packet mode end to end: the kernels' TCP, UDP and ICMP across two network namespaces joined
//! by the link thread. Accuracy tests state their bounds; they need root (or a user namespace)
//! and /dev/net/tun, and skip with a line otherwise (failing when `CI=true`).
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use common::median;
use h2lab_link::packet::{LossModel, PacketConfig, PacketLink, PacketParams, Side, SERVER_ADDR};

const MS: u64 = 1_000_000;

fn dir(one_way: u64, bps: Option<u64>, loss: f64) -> PacketParams {
    PacketParams {
        one_way,
        jitter: 0,
        reorder: false,
        bps,
        queue_bytes: bps.map_or(usize::MAX, |b| {
            h2lab_link::packet::default_queue_bytes(b, 2 * one_way, 1500)
        }),
        loss: LossModel::Iid(loss),
    }
}

fn config(rtt_ms: u64, bps: Option<u64>, loss: f64) -> PacketConfig {
    PacketConfig {
        up: dir(rtt_ms * MS / 2, bps, loss),
        down: dir(rtt_ms * MS / 2, bps, loss),
        seed: 7,
        mtu: 1500,
        congestion_control: None,
        spin_ns: h2lab_link::packet::DEFAULT_SPIN_NS,
    }
}

/// One path at a time: the tests measure time, and paths running side by side would share the
/// machine's two cores (their link threads, senders and receivers).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A path and the lock that keeps other tests' paths from running beside it.
struct Path {
    link: PacketLink,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl std::ops::Deref for Path {
    type Target = PacketLink;
    fn deref(&self) -> &PacketLink {
        &self.link
    }
}

/// Starts a path, or returns `None` (with a line) where namespaces are unavailable.
fn start(c: PacketConfig) -> Option<Path> {
    let serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match PacketLink::start(c) {
        Ok(link) => Some(Path {
            link,
            _serial: serial,
        }),
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "packet mode unavailable in CI: {e}"
            );
            eprintln!("SKIP: packet mode unavailable: {e}");
            None
        }
    }
}

/// A TCP listener on the server side, port chosen by the kernel.
fn listen(link: &PacketLink) -> TcpListener {
    link.spawn_in(Side::Server, || {
        TcpListener::bind(SocketAddr::from((SERVER_ADDR, 0))).unwrap()
    })
    .unwrap()
    .join()
    .unwrap()
}

fn in_client<T: Send + 'static>(link: &PacketLink, f: impl FnOnce() -> T + Send + 'static) -> T {
    link.spawn_in(Side::Client, f).unwrap().join().unwrap()
}

fn echo_server(l: TcpListener) {
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let _ = s.set_nodelay(true);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

/// RTT at low load within ±0.5 ms of the configured 20 ms over 20 round trips on a kept-alive
/// TCP connection (the first, with its handshake, excluded). The statistic is the fastest
/// round trip: the link's delay is fixed, and what varies on a shared machine is how late the
/// client's and the kernel's threads get the CPU (a load average of 15-20 on 2 cores moved the
/// median by up to 10 ms while the fastest stayed within 0.4 ms). None may be early.
#[test]
fn tcp_round_trip_is_the_configured_rtt() {
    let Some(link) = start(config(20, None, 0.0)) else {
        return;
    };
    let l = listen(&link);
    let addr = l.local_addr().unwrap();
    echo_server(l);
    let samples = in_client(&link, move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 4];
        s.write_all(b"warm").unwrap();
        s.read_exact(&mut buf).unwrap();
        // Up to three batches of 20: a batch whose fastest round trip a busy machine delayed
        // past the band is followed by another (none may ever be early).
        let mut all = Vec::new();
        for _ in 0..3 {
            let batch: Vec<f64> = (0..20)
                .map(|_| {
                    let t = Instant::now();
                    s.write_all(b"ping").unwrap();
                    s.read_exact(&mut buf).unwrap();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            let fastest = batch.iter().copied().fold(f64::MAX, f64::min);
            all.extend(batch);
            if fastest <= 20.5 {
                break;
            }
        }
        all
    });
    let m = median(samples.clone());
    let fastest = samples.iter().copied().fold(f64::MAX, f64::min);
    eprintln!("RTT fastest {fastest:.3} ms, median {m:.3} ms");
    assert!(
        (19.5..=20.5).contains(&fastest),
        "fastest {fastest} ms of {samples:?}"
    );
    assert!(samples.iter().all(|&t| t >= 19.5), "early: {samples:?}");
}

fn icmp_echo(seq: u16) -> Vec<u8> {
    let mut p = vec![8u8, 0, 0, 0, 0x12, 0x34, (seq >> 8) as u8, seq as u8];
    p.extend_from_slice(&[0xab; 56]);
    let mut sum = 0u32;
    for c in p.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    p[2..4].copy_from_slice(&ck.to_be_bytes());
    p
}

/// ICMP echo (the server side's kernel answers) within ±0.5 ms of the configured 10 ms (the
/// fastest of 20, as above).
#[test]
fn icmp_echo_is_the_configured_rtt() {
    use socket2::{Domain, Protocol, Socket, Type};
    let Some(link) = start(config(10, None, 0.0)) else {
        return;
    };
    let samples = in_client(&link, || {
        // A raw ICMP socket, used through std's datagram calls (send_to, recv).
        let s: UdpSocket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
            .unwrap()
            .into();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut out = Vec::new();
        let mut b = [0u8; 256];
        // Up to three batches of 20, as above.
        for seq in 0..60u16 {
            if seq % 20 == 0 && seq > 0 && out.iter().copied().fold(f64::MAX, f64::min) <= 10.5 {
                break;
            }
            let t = Instant::now();
            s.send_to(&icmp_echo(seq), (SERVER_ADDR, 0)).unwrap();
            loop {
                let n = s.recv(&mut b).unwrap();
                // IP header (20 bytes), then ICMP type 0 (echo reply) with our sequence.
                if n >= 28 && b[20] == 0 && u16::from_be_bytes([b[26], b[27]]) == seq {
                    break;
                }
            }
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
        out
    });
    let m = median(samples.clone());
    let fastest = samples.iter().copied().fold(f64::MAX, f64::min);
    eprintln!("RTT fastest {fastest:.3} ms, median {m:.3} ms");
    assert!(
        (9.5..=10.5).contains(&fastest),
        "fastest {fastest} ms of {samples:?}"
    );
    assert!(samples.iter().all(|&t| t >= 9.5), "early: {samples:?}");
}

/// Streams bytes from the server side to the client side for `secs` and returns the bytes the
/// client read between `warm` seconds and the end, over that time, in bit/s (goodput).
fn bulk_goodput(link: &PacketLink, warm: f64, secs: f64) -> f64 {
    let l = listen(link);
    let addr = l.local_addr().unwrap();
    let total = Duration::from_secs_f64(secs + 0.5);
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let buf = vec![0x5au8; 64 * 1024];
        let t = Instant::now();
        while t.elapsed() < total && s.write_all(&buf).is_ok() {}
    });
    in_client(link, move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let t0 = Instant::now();
        let mut counted = 0u64;
        let mut start = None;
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            let e = t0.elapsed().as_secs_f64();
            if e >= secs {
                break;
            }
            if e >= warm {
                if start.is_none() {
                    start = Some(e);
                } else {
                    counted += n as u64;
                }
            }
        }
        let span = t0.elapsed().as_secs_f64() - start.unwrap();
        counted as f64 * 8.0 / span
    })
}

/// A 2-second bulk download over kernel TCP at 50 Mbit/s (RTT 10 ms) gets the rate within
/// ±3%: goodput is the rate times 1448/1500 (TCP payload with timestamps per 1500-byte packet).
/// The link can never carry more than its rate, but a machine busy on both cores can hold the
/// link thread back and cost the transfer a few percent: a transfer below the band is measured
/// again (three at most), and one of them must land in the band; none may exceed it.
/// The link thread runs at real-time priority where permitted, but the sender and receiver do
/// not: the test needs them to get most of a core. With six busy loops on 2 cores (load average
/// 10, `BUSY=6 ONLY=packet bench/under-load.sh`) all three tries fell short in 1 of 2 runs.
///
/// The sender is CUBIC (Reno where the kernel has no CUBIC) with a queue of four
/// bandwidth-delay products, so that the sender keeps the link busy and the goodput measures
/// the link: a loss-based sender fills the queue and, after a drop, cuts a window of about
/// five BDPs to one still above one. With the host's BBR the goodput measured BBR instead: its
/// pacing cycles (gain 0.75 after 1.25) drained the queue and left the link idle for moments
/// (-2 to -5%, 46.0-47.3 Mbit/s), and with a one-BDP queue its probing overflowed it (-4%).
/// The queue's drops have their own test below.
#[test]
fn bulk_tcp_gets_the_configured_rate() {
    let mut c = config(10, Some(50_000_000), 0.0);
    c.down.queue_bytes *= 4;
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    let loss_based = if available.split_whitespace().any(|a| a == "cubic") {
        "cubic"
    } else {
        "reno"
    };
    c.congestion_control = Some(loss_based.into());
    let Some(link) = start(c) else {
        return;
    };
    let expected = 50e6 * 1448.0 / 1500.0;
    let mut measured = Vec::new();
    for _ in 0..3 {
        let goodput = bulk_goodput(&link, 0.5, 2.5);
        eprintln!(
            "TCP goodput {:.2} Mbit/s, expected {:.2}; {}",
            goodput / 1e6,
            expected / 1e6,
            link.stats()
        );
        assert!(goodput / expected - 1.0 <= 0.03, "{goodput} vs {expected}");
        measured.push(goodput);
        if (goodput / expected - 1.0).abs() <= 0.03 {
            return;
        }
    }
    panic!("no transfer within 3% of {expected}: {measured:?}");
}

/// Mathis et al.: Reno's throughput is MSS / RTT × sqrt(3/2) / sqrt(p). A long download at 1%
/// loss (RTT 20 ms, rate far above the estimate) lands within ±25% of it; at 3% within ±30%,
/// because there retransmission timeouts (200 ms minimum here, ten RTTs), which the formula
/// leaves out, cost Linux's Reno 20-25% below it (measured 3.06-3.19 Mbit/s against 4.10; the
/// Padhye model, which counts timeouts, says 2.42).
///
/// The sender and receiver run at normal priority: on a machine busier than its cores (six
/// busy loops on 2 cores, load average 10) they, not the window, can set the rate. So a
/// transfer below the band is measured again (three at most); one must land in it and none
/// may exceed it (a busy machine only ever slows a transfer).
#[test]
fn long_tcp_transfers_under_loss_follow_mathis() {
    for loss in [0.01, 0.03] {
        // Loss on the data direction only: Mathis's p is the data segments' loss rate.
        let mut c = config(20, Some(200_000_000), 0.0);
        c.down.loss = LossModel::Iid(loss);
        c.congestion_control = Some("reno".into());
        let Some(link) = start(c) else {
            return;
        };
        assert_eq!(link.info().server.congestion_control, "reno");
        let mathis = 1448.0 * 8.0 / 0.020 * (1.5f64).sqrt() / loss.sqrt();
        let bound = if loss > 0.02 { 0.30 } else { 0.25 };
        let mut measured = Vec::new();
        for _ in 0..3 {
            let goodput = bulk_goodput(&link, 1.0, 9.0);
            eprintln!(
                "loss {loss}: goodput {:.2} Mbit/s, Mathis {:.2}",
                goodput / 1e6,
                mathis / 1e6
            );
            assert!(
                goodput / mathis - 1.0 <= bound,
                "loss {loss}: {goodput} above Mathis {mathis}"
            );
            measured.push(goodput);
            if (goodput / mathis - 1.0).abs() <= bound {
                break;
            }
        }
        assert!(
            measured.iter().any(|g| (g / mathis - 1.0).abs() <= bound),
            "loss {loss}: {measured:?} vs Mathis {mathis}"
        );
    }
}

/// Sends `n` numbered datagrams from the client side, one every `gap`; returns the sequence
/// numbers the server side received, in arrival order.
fn udp_run(link: &PacketLink, n: u32, gap: Duration, size: usize) -> Vec<u32> {
    let rx = link
        .spawn_in(Side::Server, || {
            UdpSocket::bind(SocketAddr::from((SERVER_ADDR, 0))).unwrap()
        })
        .unwrap()
        .join()
        .unwrap();
    let to = rx.local_addr().unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let collector = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut b = vec![0u8; 2048];
        while let Ok(k) = rx.recv(&mut b) {
            if k >= 4 {
                got.push(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            }
        }
        got
    });
    in_client(link, move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let mut p = vec![0u8; size];
        let t = Instant::now();
        for i in 0..n {
            p[..4].copy_from_slice(&i.to_be_bytes());
            s.send_to(&p, to).unwrap();
            // Pace by the clock (not by sleeping a fixed time per datagram).
            let due = gap * (i + 1);
            while t.elapsed() < due {
                std::thread::yield_now();
            }
        }
    });
    collector.join().unwrap()
}

/// Per-packet loss at 3%: of the packets that reached the link (a busy machine may drop some
/// before, in the sender's device queue), the ones lost lie in the binomial 99% interval
/// (z = 2.576), and the receiver got no more than the others (its socket buffer may overflow
/// on a busy machine).
#[test]
fn packet_loss_is_the_configured_rate() {
    let loss = 0.03;
    let Some(link) = start(config(2, None, loss)) else {
        return;
    };
    let got = udp_run(&link, 20_000, Duration::from_micros(50), 200);
    let st = link.stats();
    let n = st.up.packets_in as f64;
    let lost = st.up.lost as f64;
    let half = 2.576 * (n * loss * (1.0 - loss)).sqrt();
    eprintln!("lost {lost} of {n}; {st}");
    assert!(n >= 10_000.0, "{st}");
    assert!((lost - n * loss).abs() <= half, "lost {lost} of {n}");
    assert!(got.len() as u64 <= st.up.packets_out);
}

/// A sender at twice the rate fills the queue: the link drops at the tail and delivers at the
/// rate; nothing is reordered.
#[test]
fn a_sender_above_the_rate_gets_queue_drops() {
    let Some(link) = start(config(10, Some(8_000_000), 0.0)) else {
        return;
    };
    // 1000-byte payloads (1028-byte packets) every 0.5 ms: 16.4 Mbit/s into 8 Mbit/s.
    let got = udp_run(&link, 4000, Duration::from_micros(500), 1000);
    let st = link.stats();
    eprintln!("received {} of 4000; {st}", got.len());
    assert!(st.up.queue_drops > 1000, "{st}");
    // Every packet that reached the link was dropped at the queue or delivered; the receiver
    // got no more than was delivered (its socket buffer may overflow on a busy machine).
    assert_eq!(
        st.up.queue_drops + st.up.packets_out,
        st.up.packets_in,
        "{st}"
    );
    assert!(got.len() as u64 <= st.up.packets_out);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "reordered");
}

/// Jitter of ±4 ms on a datagram every 0.1 ms reorders nothing by default, and many with
/// `reorder`.
#[test]
fn jitter_reorders_only_when_asked() {
    for reorder in [false, true] {
        let mut c = config(10, None, 0.0);
        for d in [&mut c.up, &mut c.down] {
            d.jitter = 4 * MS;
            d.reorder = reorder;
        }
        let Some(link) = start(c) else {
            return;
        };
        let got = udp_run(&link, 3000, Duration::from_micros(100), 100);
        // The receiver's socket buffer may overflow on a busy machine; order is what counts.
        assert!(got.len() >= 1000, "{}", got.len());
        let late = got.windows(2).filter(|w| w[0] > w[1]).count();
        eprintln!("reorder {reorder}: {late} out of order");
        if reorder {
            assert!(late > 100, "{late}");
        } else {
            assert_eq!(late, 0);
        }
    }
}

/// The wire rate of the down direction over `window` after `warm`, from the link's counters,
/// while `transfer` runs on the client side (it must last longer than `warm + window`).
fn down_wire_rate(
    link: &PacketLink,
    warm: Duration,
    window: Duration,
    transfer: impl FnOnce() + Send,
) -> f64 {
    let entry = link.entry(Side::Client);
    std::thread::scope(|s| {
        let t = s.spawn(move || {
            entry.enter().unwrap();
            transfer();
        });
        // Wait for the transfer to start, then measure.
        while link.stats().down.bytes_out < 100_000 {
            std::thread::yield_now();
        }
        let start = Instant::now() + warm;
        while Instant::now() < start {
            std::thread::yield_now();
        }
        let b0 = link.stats().down.bytes_out;
        let t0 = Instant::now();
        while t0.elapsed() < window {
            std::thread::yield_now();
        }
        let b1 = link.stats().down.bytes_out;
        let rate = (b1 - b0) as f64 * 8.0 / t0.elapsed().as_secs_f64();
        t.join().unwrap();
        rate
    })
}

/// A 2-second bulk download over QUIC (quinn, HTTP/3 from `h2lab serve --h3`) at 10 Mbit/s
/// fills the link: the wire rate (whole IP packets) is the configured rate within ±3%. (10, not
/// 50 Mbit/s: debug builds of both QUIC stacks on a shared 2-core machine move about 18
/// Mbit/s, so a faster link would measure the CPU, not the path.)
///
/// The queue is four bandwidth-delay products, as in the TCP test: with one, quinn's CUBIC
/// overflowed it (65-90 drops) and its backoff left the link idle for part of the window, so
/// the rate measured was 89-95% of the configured one — the sender's recovery, not the link.
///
/// Both QUIC endpoints run at normal priority and need most of a core between them: a machine
/// busier than that (six busy loops on 2 cores, load average 10) slows the transfer, not the
/// link. So, as in the TCP test, a transfer below the band is measured again (three at most),
/// one must land in it and none may exceed it.
#[test]
fn bulk_quic_gets_the_configured_rate() {
    let mut c = config(40, Some(10_000_000), 0.0);
    c.down.queue_bytes *= 4;
    let Some(link) = start(c) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cert_dir = dir.path().to_path_buf();
    let server = link
        .spawn_in(Side::Server, move || {
            let mut cfg = h2lab_server::ServerConfig::local();
            cfg.listen = None;
            cfg.tls_listen = Some(SocketAddr::from((SERVER_ADDR, 0)));
            cfg.cert_dir = Some(cert_dir);
            cfg.h3 = true;
            cfg.quiet = true;
            h2lab_server::spawn(cfg).unwrap()
        })
        .unwrap()
        .join()
        .unwrap();
    let h3 = server.h3_addr().unwrap();
    let cert = server.cert_path().unwrap().to_path_buf();
    let mut measured = Vec::new();
    for _ in 0..3 {
        let cert = cert.clone();
        let rate = down_wire_rate(
            &link,
            // Past slow start's overshoot and its recovery.
            Duration::from_millis(1500),
            Duration::from_secs(2),
            move || {
                let config = common::h3_client_config(&cert);
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    use bytes::Buf;
                    let mut ep = quinn::Endpoint::client("0.0.0.0:0".parse().unwrap()).unwrap();
                    ep.set_default_client_config(config);
                    let conn = ep.connect(h3, "localhost").unwrap().await.unwrap();
                    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
                        .await
                        .unwrap();
                    tokio::spawn(async move {
                        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
                    });
                    let req = http::Request::builder()
                        .uri("https://localhost/data?size=8000000")
                        .body(())
                        .unwrap();
                    let mut s = send.send_request(req).await.unwrap();
                    s.finish().await.unwrap();
                    let resp = s.recv_response().await.unwrap();
                    assert_eq!(resp.status(), 200);
                    let mut len = 0;
                    while let Some(chunk) = s.recv_data().await.unwrap() {
                        len += chunk.remaining();
                    }
                    assert_eq!(len, 8_000_000);
                });
            },
        );
        eprintln!("QUIC wire rate {:.2} Mbit/s; {}", rate / 1e6, link.stats());
        assert!(rate / 10e6 - 1.0 <= 0.03, "faster than the link: {rate}");
        measured.push(rate);
        if (rate / 10e6 - 1.0).abs() <= 0.03 {
            return;
        }
    }
    panic!("no transfer within 3% of 10 Mbit/s: {measured:?}");
}

/// The congestion control of a TCP socket (`TCP_CONGESTION`).
#[allow(unsafe_code)] // getsockopt(TCP_CONGESTION) has no safe wrapper in std
fn congestion_control_of(s: &impl std::os::fd::AsRawFd) -> String {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live buffer `name`.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    String::from_utf8_lossy(&name[..end]).into_owned()
}

/// `--cc cubic` where the host allows only `reno bbr` as a namespace's default: the algorithm
/// is set on the route across the path, and both the connecting and the accepting socket use
/// it (and the path reports it per side).
#[test]
fn the_chosen_congestion_control_is_on_both_ends_of_a_connection() {
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    let Some(cc) = ["cubic", "reno"]
        .into_iter()
        .find(|c| available.split_whitespace().any(|a| a == *c))
    else {
        eprintln!("SKIP: neither cubic nor reno in {available:?}");
        return;
    };
    let mut c = config(2, None, 0.0);
    c.congestion_control = Some(cc.into());
    let Some(link) = start(c) else {
        return;
    };
    assert_eq!(link.info().client.congestion_control, cc);
    assert_eq!(link.info().server.congestion_control, cc);
    let l = listen(&link);
    let port = l.local_addr().unwrap().port();
    let client = in_client(&link, move || {
        TcpStream::connect(SocketAddr::from((SERVER_ADDR, port))).unwrap()
    });
    let (server, _) = l.accept().unwrap();
    assert_eq!(congestion_control_of(&client), cc);
    assert_eq!(congestion_control_of(&server), cc);
}
