//! `bench --0rtt` and `--reconnect-every` against `serve --0rtt` (in-process, port 0), over
//! HTTP/1.1 and HTTP/2 on TLS 1.3 and HTTP/3 on QUIC: reconnections resume and carry their
//! first requests in early data, which the server accepts; a `425 Too Early` answer is sent
//! again after the handshake and the unsafe handler never runs on early data; rejected early
//! data (a server that no longer knows the ticket) is replayed on the same connection.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use h2lab_engine::{BenchConfig, NoopObserver, ProtocolChoice, RunResult, StopFlag};
use h2lab_server::{RunningServer, ServerConfig};

fn server(zero_rtt: bool, h3: bool) -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let s = h2lab_server::spawn(ServerConfig {
        listen: None,
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.path().to_path_buf()),
        zero_rtt,
        h3,
        ..ServerConfig::local()
    })
    .unwrap();
    (s, dir)
}

fn bench(url: String, proto: &str, zero_rtt: bool, every: u64, n: u64) -> RunResult {
    let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
    cfg.requests = n;
    cfg.clients = 1;
    cfg.max_concurrent_streams = 1;
    match proto {
        "h1" => cfg.protocol = ProtocolChoice::H1,
        "h3" => cfg.alpn_list = vec!["h3".to_owned()],
        _ => {}
    }
    cfg.tls.zero_rtt = zero_rtt;
    cfg.reconnect_every = Some(every);
    h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new()).unwrap()
}

#[test]
fn reconnections_resume_and_send_early_data_over_h1_and_h2() {
    for proto in ["h1", "h2"] {
        let (s, _dir) = server(true, false);
        let url = format!("https://{}/json", s.tls_addr().unwrap());
        let r = bench(url, proto, true, 2, 20);
        let e = r.resume;
        assert_eq!(r.requests.succeeded, 20, "{proto}: {:?} {e:?}", r.errors);
        assert_eq!(r.reconnects, 9, "{proto}");
        assert_eq!(e.handshakes, 10, "{proto}: {e:?}");
        // Every reconnection has a ticket from the handshake before it.
        assert_eq!(e.resumed, 9, "{proto}: {e:?}");
        assert_eq!(e.early_offered, 9, "{proto}: {e:?}");
        assert_eq!(e.early_accepted, 9, "{proto}: {e:?}");
        assert_eq!((e.early_rejected, e.replayed, e.too_early), (0, 0, 0));
        let [_, redeemed, _, answered, too_early] = s.early_stats().snapshot();
        assert_eq!(redeemed, 9, "{proto}");
        // The first request of each resumed connection ran on early data.
        assert_eq!((answered, too_early), (9, 0), "{proto}");
    }
}

#[test]
fn without_the_flags_nothing_changes() {
    let (s, _dir) = server(true, false);
    let url = format!("https://{}/json", s.tls_addr().unwrap());
    let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
    cfg.requests = 10;
    cfg.clients = 2;
    let r = h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new()).unwrap();
    assert_eq!(r.requests.succeeded, 10);
    assert_eq!(r.reconnects, 0);
    assert!(r.resume.is_empty(), "{:?}", r.resume);
    // The server hands out tickets; none is redeemed, nothing arrives early.
    let [_, redeemed, refused, answered, too_early] = s.early_stats().snapshot();
    assert_eq!((redeemed, refused, answered, too_early), (0, 0, 0, 0));
}

#[test]
fn a_425_is_sent_again_after_the_handshake_and_the_handler_never_runs_early() {
    for proto in ["h1", "h2"] {
        let (s, _dir) = server(true, false);
        let url = format!("https://{}/json?replay=unsafe", s.tls_addr().unwrap());
        let r = bench(url, proto, true, 1, 6);
        let e = r.resume;
        assert_eq!(r.requests.succeeded, 6, "{proto}: {:?} {e:?}", r.errors);
        assert_eq!(r.status.s2xx, 6, "{proto}: a 425 is not a response");
        assert_eq!(r.status.s4xx, 0, "{proto}");
        assert_eq!(e.early_accepted, 5, "{proto}: {e:?}");
        assert_eq!(e.too_early, 5, "{proto}: {e:?}");
        let [_, _, _, answered, too_early] = s.early_stats().snapshot();
        assert_eq!((answered, too_early), (0, 5), "{proto}");
    }
}

#[test]
fn quic_reconnections_send_0rtt() {
    let (s, _dir) = server(true, true);
    let url = format!("https://{}/json", s.h3_addr().unwrap());
    let r = bench(url, "h3", true, 2, 20);
    let e = r.resume;
    assert_eq!(r.requests.succeeded, 20, "{:?} {e:?}", r.errors);
    assert_eq!(e.handshakes, 10, "{e:?}");
    // A ticket may still be on its way when the next connection starts (QUIC sends it
    // after the handshake, possibly after the responses): most reconnections use 0-RTT.
    assert!(e.early_offered >= 1, "{e:?}");
    assert_eq!(e.early_accepted, e.early_offered, "{e:?}");
    assert_eq!(e.early_rejected, 0, "{e:?}");
    let [_, _, _, answered, _] = s.early_stats().snapshot();
    assert!(answered >= 1, "the server answered requests from 0-RTT");
}

#[test]
fn quic_a_425_is_sent_again_after_the_handshake() {
    let (s, _dir) = server(true, true);
    let url = format!("https://{}/json?replay=unsafe", s.h3_addr().unwrap());
    let r = bench(url, "h3", true, 1, 6);
    let e = r.resume;
    assert_eq!(r.requests.succeeded, 6, "{:?} {e:?}", r.errors);
    assert_eq!(r.status.s2xx, 6);
    assert_eq!(r.status.s4xx, 0);
    let [_, _, _, answered, too_early] = s.early_stats().snapshot();
    assert_eq!(answered, 0, "the unsafe handler never ran on 0-RTT");
    assert_eq!(too_early, e.too_early, "{e:?}");
}

/// A TLS 1.3 HTTP/1.1 server that accepts early data but gives every connection a fresh
/// session store: the tickets the client holds are unknown there, so its early data is
/// rejected and must be sent again.
fn forgetful_server() -> (SocketAddr, std::thread::JoinHandle<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = h2lab_server::tls::ensure_certificate(&ServerConfig {
        cert_dir: Some(dir.path().to_path_buf()),
        quiet: true,
        ..ServerConfig::local()
    })
    .unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let _dir = dir;
        let mut answered = 0;
        // Each connection a configuration (and session store) of its own.
        for sock in l.incoming().take(3) {
            let cfg = ServerConfig {
                zero_rtt: true,
                alpn: vec![b"http/1.1".to_vec()],
                ..ServerConfig::local()
            };
            let tls = h2lab_server::tls::server_config(&paths, &cfg).unwrap();
            answered += serve_one(sock.unwrap(), tls);
        }
        answered
    });
    (addr, t)
}

/// Answers each request of one connection with a 2-byte body until the client closes.
fn serve_one(mut sock: std::net::TcpStream, cfg: Arc<rustls::ServerConfig>) -> u64 {
    let mut tls = rustls::ServerConnection::new(cfg).unwrap();
    let mut input = Vec::new();
    let mut answered = 0;
    loop {
        // Handshake, pending writes, then one blocking read.
        if tls.complete_io(&mut sock).is_err() {
            return answered;
        }
        if let Some(mut early) = tls.early_data() {
            let _ = early.read_to_end(&mut input);
        }
        let mut buf = [0u8; 4096];
        match tls.reader().read(&mut buf) {
            Ok(0) => return answered,
            Ok(n) => input.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return answered,
        }
        while let Some(end) = input.windows(4).position(|w| w == b"\r\n\r\n") {
            input.drain(..end + 4);
            answered += 1;
            let _ = tls
                .writer()
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        }
    }
}

#[test]
fn rejected_early_data_is_sent_again_on_the_same_connection() {
    let (addr, t) = forgetful_server();
    let r = bench(format!("https://{addr}/x"), "h1", true, 2, 6);
    let e = r.resume;
    assert_eq!(r.requests.succeeded, 6, "{:?} {e:?}", r.errors);
    assert_eq!(r.reconnects, 2);
    assert_eq!(e.early_offered, 2, "{e:?}");
    assert_eq!(e.early_rejected, 2, "{e:?}");
    assert_eq!(e.early_accepted, 0, "{e:?}");
    assert_eq!(e.replayed, 2, "{e:?}");
    // Each request was answered once: the rejected early copies were never processed.
    assert_eq!(t.join().unwrap(), 6);
}

/// Counts the requests done, as the run reports its progress.
#[derive(Default)]
struct Done(std::sync::atomic::AtomicU64);

impl h2lab_engine::Observer for Done {
    fn progress(&self, done: u64, _: u64, _: std::time::Duration, _: u64) {
        self.0.store(done, std::sync::atomic::Ordering::Relaxed);
    }
    fn tls_info(&self, _: &h2lab_engine::TlsInfo) {}
    fn protocol(&self, _: h2lab_engine::AppProtocol) {}
    fn interval(&self, _: &h2lab_engine::IntervalRow) {}
    fn phase(&self, _: u32, _: h2lab_engine::TimedRunPhase) {}
}

/// QUIC 0-RTT rejected: after the first request (a full handshake that brought tickets), the
/// server is replaced on the same port by one that does not know the tickets; the second
/// request, due two seconds later on a new connection, goes out in 0-RTT, is rejected and is
/// sent again on the same connection by a fresh HTTP/3 session.
#[test]
fn quic_rejected_0rtt_is_sent_again_on_the_same_connection() {
    let (first, dir) = server(true, true);
    let addr = first.h3_addr().unwrap();
    let mut cfg = BenchConfig::from_uris(&[format!("https://{addr}/json")], None).unwrap();
    cfg.alpn_list = vec!["h3".to_owned()];
    cfg.tls.zero_rtt = true;
    cfg.clients = 1;
    cfg.requests = 2;
    cfg.reconnect_every = Some(1);
    cfg.load.rps = Some(0.5);
    let done = Arc::new(Done::default());
    let obs = Arc::clone(&done);
    let bench =
        std::thread::spawn(move || h2lab_engine::run(&cfg, &*obs, &StopFlag::new()).unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while done.0.load(std::sync::atomic::Ordering::Relaxed) == 0
        || first.early_stats().snapshot()[0] == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first request never completed"
        );
        std::thread::yield_now();
    }
    drop(first);
    let second = h2lab_server::spawn(ServerConfig {
        listen: None,
        tls_listen: Some(addr),
        cert_dir: Some(dir.path().to_path_buf()),
        zero_rtt: true,
        h3: true,
        ..ServerConfig::local()
    })
    .unwrap();
    let r = bench.join().unwrap();
    let e = r.resume;
    assert_eq!(r.requests.succeeded, 2, "{:?} {e:?}", r.errors);
    assert_eq!(
        (
            e.early_offered,
            e.early_accepted,
            e.early_rejected,
            e.replayed
        ),
        (1, 0, 1, 1),
        "{e:?}"
    );
    let [_, _, refused, answered, _] = second.early_stats().snapshot();
    assert_eq!(
        (refused, answered),
        (1, 0),
        "the old ticket was unknown there"
    );
}
