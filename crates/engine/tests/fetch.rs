//! The browser-like fetch client against the built-in server: pool sizes, multiplexing,
//! keep-alive between batches, body capture, `Connection: close`, failures.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher};
use h2lab_engine::{AppProtocol, EngineError, Target, TransportError};
use h2lab_server::{RunningServer, ServerConfig};

fn server() -> RunningServer {
    let dir = std::env::temp_dir().join(format!("h2lab-fetch-test-{}", std::process::id()));
    h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir),
        ..ServerConfig::local()
    })
    .unwrap()
}

fn origin(scheme: &str, a: SocketAddr) -> Target {
    Target::parse(&format!("{scheme}://127.0.0.1:{}/", a.port())).unwrap()
}

fn paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/data?size={}", 1000 + i)).collect()
}

#[test]
fn http11_pool_opens_at_most_six_connections_and_reuses_them() {
    let s = server();
    let gauge = Arc::new(AtomicI64::new(0));
    let mut cfg = FetchConfig::browser(origin("http", s.addr().unwrap()), FetchProtocol::Http11);
    cfg.open_gauge = Some(Arc::clone(&gauge));
    let p = paths(40);
    let mut f = Fetcher::new(cfg, &p).unwrap();
    let first = f.fetch(&[0], false).unwrap();
    assert_eq!(first.new_connections, 1);
    let rest: Vec<usize> = (1..40).collect();
    let b = f.fetch(&rest, false).unwrap();
    // The first connection is reused; 5 more are opened for the queue.
    assert_eq!(b.new_connections, 5);
    assert_eq!(f.connections().len(), 6);
    assert_eq!(gauge.load(Ordering::Relaxed), 6);
    for (i, r) in b.records.iter().enumerate() {
        assert_eq!(r.status, 200);
        assert_eq!(r.path, i + 1);
        assert_eq!(r.body_bytes, 1000 + (i as u64 + 1));
        assert_eq!(r.attempts, 1);
        assert!(r.sent <= r.first_byte && r.first_byte <= r.done);
        assert!(r.request_bytes > 100, "an HTTP/1.1 request head");
    }
    for c in f.connections() {
        assert_eq!(c.protocol, Some(AppProtocol::Http11));
        assert!(c.ready.is_some());
    }
    let t = f.traffic();
    let bodies: u64 = (0..40).map(|i| 1000 + i).sum();
    assert_eq!(t.response_body_bytes, bodies);
    assert!(t.bytes_read > bodies);
    assert_eq!(t.request_header_bytes, t.bytes_written);
    f.close();
    assert_eq!(gauge.load(Ordering::Relaxed), 0);
}

#[test]
fn http2_multiplexes_on_one_connection_over_tls_and_h2c() {
    let s = server();
    for (o, want) in [
        (origin("https", s.tls_addr().unwrap()), AppProtocol::H2),
        (origin("http", s.addr().unwrap()), AppProtocol::H2c),
    ] {
        let p = paths(150);
        let mut f = Fetcher::new(FetchConfig::browser(o, FetchProtocol::H2), &p).unwrap();
        let all: Vec<usize> = (0..150).collect();
        let b = f.fetch(&all, false).unwrap();
        assert_eq!(f.connections().len(), 1);
        assert_eq!(f.connections()[0].protocol, Some(want));
        assert!(b.records.iter().all(|r| r.status == 200 && r.conn == 0));
        // HPACK: 150 requests with the same browser headers cost far less than HTTP/1.1 text.
        let t = f.traffic();
        assert!(
            t.request_header_bytes < 150 * 120,
            "{} request header bytes",
            t.request_header_bytes
        );
        assert!(t.response_header_bytes < t.response_header_decoded);
    }
}

#[test]
fn captures_bodies_on_request() {
    let s = server();
    for proto in [FetchProtocol::Http11, FetchProtocol::H2] {
        let o = origin("http", s.addr().unwrap());
        let p = vec!["/page?n=20".to_owned(), "/ping".to_owned()];
        let mut f = Fetcher::new(FetchConfig::browser(o, proto), &p).unwrap();
        let b = f.fetch(&[0, 1], true).unwrap();
        let html = String::from_utf8(b.bodies[0].clone()).unwrap();
        assert!(html.contains("<img src=\"/asset/1/19-"), "{html}");
        assert_eq!(b.bodies[1].len() as u64, b.records[1].body_bytes);
        assert!(f.fetch(&[1], false).unwrap().bodies.is_empty());
    }
}

#[test]
fn connection_close_means_a_connection_per_request() {
    let s = server();
    let mut cfg = FetchConfig::browser(origin("http", s.addr().unwrap()), FetchProtocol::Http11);
    cfg.max_connections = 2;
    cfg.headers.push(("connection".into(), "close".into()));
    let p = paths(10);
    let mut f = Fetcher::new(cfg, &p).unwrap();
    let b = f.fetch(&(0..10).collect::<Vec<_>>(), false).unwrap();
    assert!(b.records.iter().all(|r| r.status == 200));
    assert_eq!(f.connections().len(), 10);
    assert!(
        f.connections().iter().all(|c| c.completed == 1),
        "{:?}",
        f.connections()
    );
    assert_eq!(f.open_connections(), 0);
}

#[test]
fn slow_requests_run_in_rounds_over_http11_and_at_once_over_http2() {
    let s = server();
    let p: Vec<String> = (0..12).map(|i| format!("/delay?ms=300&r={i}")).collect();
    let all: Vec<usize> = (0..12).collect();
    let o = origin("http", s.addr().unwrap());
    let mut h1 = Fetcher::new(FetchConfig::browser(o.clone(), FetchProtocol::Http11), &p).unwrap();
    let a = h1.fetch(&all, false).unwrap();
    let mut h2 = Fetcher::new(FetchConfig::browser(o, FetchProtocol::H2), &p).unwrap();
    let b = h2.fetch(&all, false).unwrap();
    // 12 requests on 6 connections: 2 rounds of 300 ms; on one HTTP/2 connection: 1 round.
    // Told by the order of sends and completions, not by how long the machine took: over
    // HTTP/1.1 at most 6 are in flight at once and each connection's second request is sent
    // after its first is done; over HTTP/2 all 12 are sent before the first is done.
    assert_eq!(most_in_flight(&a.records), 6, "{:?}", a.records);
    let conns: std::collections::BTreeSet<u32> = a.records.iter().map(|r| r.conn).collect();
    assert_eq!(conns.len(), 6, "{:?}", a.records);
    for c in conns {
        let mut on: Vec<_> = a.records.iter().filter(|r| r.conn == c).collect();
        on.sort_by_key(|r| r.sent);
        assert!(on.windows(2).all(|w| w[1].sent >= w[0].done), "{on:?}");
    }
    assert_eq!(most_in_flight(&b.records), 12, "{:?}", b.records);
    // Lower bounds only (a slower machine only adds to them): each round waits 300 ms.
    assert!(
        a.elapsed() >= Duration::from_millis(600),
        "{:?}",
        a.elapsed()
    );
    assert!(
        b.elapsed() >= Duration::from_millis(300),
        "{:?}",
        b.elapsed()
    );
}

/// The most requests that were in flight (sent, not yet done) at one moment.
fn most_in_flight(records: &[h2lab_engine::fetch::FetchRecord]) -> usize {
    records
        .iter()
        .map(|r| {
            records
                .iter()
                .filter(|o| o.sent <= r.sent && r.sent < o.done)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn refused_connections_fail_the_fetch_with_a_connect_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    drop(l);
    let mut cfg = FetchConfig::browser(origin("http", a), FetchProtocol::Http11);
    cfg.timeout = Duration::from_secs(10);
    let mut f = Fetcher::new(cfg, &paths(3)).unwrap();
    match f.fetch(&[0, 1, 2], false) {
        Err(EngineError::Connect { .. }) => {}
        other => panic!("expected a connect error, got {other:?}"),
    }
    assert!(Fetcher::new(
        FetchConfig::browser(origin("http", a), FetchProtocol::H2),
        &[]
    )
    .is_err());
}

/// Forwards every connection accepted on a fresh UNIX socket to `to` (TCP).
fn unix_forwarder(to: SocketAddr) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::net::UnixListener;
    let dir = std::env::temp_dir().join(format!(
        "h2lab-fetch-unix-{}-{}",
        std::process::id(),
        to.port()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.sock");
    let l = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(u) = s else { return };
            let Ok(t) = std::net::TcpStream::connect(to) else {
                continue;
            };
            let (mut u2, mut t2) = (u.try_clone().unwrap(), t.try_clone().unwrap());
            let (mut u, mut t) = (u, t);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut u2, &mut t2);
                let _ = t2.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut t, &mut u);
                let _ = u.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (dir, path)
}

#[test]
fn fetches_over_a_unix_socket_in_every_protocol() {
    let s = server();
    let (plain_dir, plain) = unix_forwarder(s.addr().unwrap());
    let (tls_dir, tls) = unix_forwarder(s.tls_addr().unwrap());
    for (scheme, sock, proto, want) in [
        ("http", &plain, FetchProtocol::Http11, AppProtocol::Http11),
        ("http", &plain, FetchProtocol::H2, AppProtocol::H2c),
        ("https", &tls, FetchProtocol::Http11, AppProtocol::Http11),
        ("https", &tls, FetchProtocol::H2, AppProtocol::H2),
    ] {
        // The origin's port is never connected to: the socket path is.
        let mut cfg = FetchConfig::browser(
            Target::parse(&format!("{scheme}://localhost:1/")).unwrap(),
            proto,
        );
        cfg.unix_socket = Some(sock.clone());
        let p = paths(12);
        let mut f = Fetcher::new(cfg, &p).unwrap();
        let b = f.fetch(&(0..12).collect::<Vec<_>>(), true).unwrap();
        for (i, r) in b.records.iter().enumerate() {
            assert_eq!(r.status, 200, "{scheme} {proto:?}");
            assert_eq!(r.body_bytes, 1000 + i as u64);
            assert_eq!(b.bodies[i].len() as u64, r.body_bytes);
        }
        // A connection still being set up when the last response arrived (HTTP/1.1 opens up
        // to six) never negotiated anything: every connection that did, and at least one,
        // speaks `want`.
        let ready: Vec<_> = f
            .connections()
            .iter()
            .filter(|c| c.ready.is_some())
            .collect();
        assert!(
            !ready.is_empty() && ready.iter().all(|c| c.protocol == Some(want)),
            "{:?}",
            f.connections()
        );
    }
    let _ = std::fs::remove_dir_all(plain_dir);
    let _ = std::fs::remove_dir_all(tls_dir);
}

#[test]
fn a_refusing_first_address_moves_on_to_the_next_like_bench() {
    let s = server();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    for (scheme, live, proto, want) in [
        (
            "http",
            s.addr().unwrap(),
            FetchProtocol::Http11,
            AppProtocol::Http11,
        ),
        (
            "http",
            s.addr().unwrap(),
            FetchProtocol::H2,
            AppProtocol::H2c,
        ),
        (
            "https",
            s.tls_addr().unwrap(),
            FetchProtocol::H2,
            AppProtocol::H2,
        ),
    ] {
        let mut cfg = FetchConfig::browser(origin(scheme, live), proto);
        // Like a host name resolving to two addresses, the first of which refuses.
        cfg.connect_to = vec![dead_addr, live];
        cfg.timeout = Duration::from_secs(20);
        let p = paths(20);
        let mut f = Fetcher::new(cfg, &p).unwrap();
        let b = f.fetch(&(0..20).collect::<Vec<_>>(), false).unwrap();
        assert!(b.records.iter().all(|r| r.status == 200 && r.attempts == 1));
        let conns = f.connections();
        assert!(!conns.is_empty());
        assert!(
            conns
                .iter()
                .all(|c| c.protocol == Some(want) && c.ready.is_some()),
            "{conns:?}"
        );
    }
    // Every address refuses: a connect error naming the last address tried.
    let mut cfg = FetchConfig::browser(origin("http", dead_addr), FetchProtocol::Http11);
    cfg.connect_to = vec![dead_addr, dead_addr];
    cfg.timeout = Duration::from_secs(10);
    let mut f = Fetcher::new(cfg, &paths(2)).unwrap();
    match f.fetch(&[0, 1], false) {
        Err(EngineError::Connect { addr, source }) => {
            assert_eq!(addr, dead_addr.to_string());
            assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[test]
fn sni_replaces_the_origin_host_in_tls() {
    let s = server();
    let o = origin("https", s.tls_addr().unwrap());
    let mut cfg = FetchConfig::browser(o.clone(), FetchProtocol::H2);
    cfg.sni = Some("localhost".into());
    let mut f = Fetcher::new(cfg, &paths(1)).unwrap();
    assert_eq!(f.fetch(&[0], false).unwrap().records[0].status, 200);
    let mut cfg = FetchConfig::browser(o, FetchProtocol::H2);
    cfg.sni = Some("not a name".into());
    assert!(matches!(
        Fetcher::new(cfg, &paths(1)),
        Err(EngineError::Tls(TransportError::InvalidServerName { .. }))
    ));
}
