//! The browser-like fetch client against the built-in server: pool sizes, multiplexing,
//! keep-alive between batches, body capture, `Connection: close`, failures.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher};
use h2lab_engine::{AppProtocol, EngineError, Target};
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
    assert!(
        b.elapsed() < Duration::from_millis(600),
        "{:?}",
        b.elapsed()
    );
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
