//! The browser-like fetch client over HTTP/3 against `h2lab serve --h3` on loopback: one
//! QUIC connection, many streams, keep-alive between batches, exact counts and bytes, the
//! server's stream limit, captured bodies.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher};
use h2lab_engine::{AppProtocol, EngineError, Target};
use h2lab_server::{RunningServer, ServerConfig};

fn server(max_streams: u32) -> RunningServer {
    let dir = std::env::temp_dir().join(format!("h2lab-fetch-h3-test-{}", std::process::id()));
    h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir),
        h3: true,
        max_concurrent_streams: max_streams,
        ..ServerConfig::local()
    })
    .unwrap()
}

fn origin(a: SocketAddr) -> Target {
    Target::parse(&format!("https://127.0.0.1:{}/", a.port())).unwrap()
}

fn paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/data?size={}", 1000 + i)).collect()
}

#[test]
fn http3_loads_every_object_on_one_connection() {
    // The server allows 20 streams at once: 150 requests wait for stream credit.
    let s = server(20);
    let gauge = Arc::new(AtomicI64::new(0));
    let mut cfg = FetchConfig::browser(origin(s.h3_addr().unwrap()), FetchProtocol::H3);
    cfg.open_gauge = Some(Arc::clone(&gauge));
    let p = paths(151);
    let mut f = Fetcher::new(cfg, &p).unwrap();
    let html = f.fetch(&[0], true).unwrap();
    assert_eq!(html.new_connections, 1);
    assert_eq!(html.records[0].status, 200);
    assert_eq!(html.bodies[0].len(), 1000);
    let rest: Vec<usize> = (1..151).collect();
    let b = f.fetch(&rest, false).unwrap();
    assert_eq!(
        b.new_connections, 0,
        "the QUIC connection is kept between batches"
    );
    assert_eq!(f.connections().len(), 1);
    assert_eq!(f.connections()[0].protocol, Some(AppProtocol::H3));
    assert!(f.connections()[0].ready.is_some());
    assert_eq!(gauge.load(Ordering::Relaxed), 1);
    assert_eq!(b.records.len(), 150);
    for (i, r) in b.records.iter().enumerate() {
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.path, i + 1);
        assert_eq!(r.body_bytes, 1000 + (i as u64 + 1));
        assert_eq!(r.attempts, 1);
        assert_eq!(r.conn, 0);
        assert!(r.sent <= r.first_byte && r.first_byte <= r.done);
        assert!(r.request_bytes > 0, "a HEADERS frame per request");
    }
    let t = f.traffic();
    let bodies: u64 = (0..151).map(|i| 1000 + i).sum();
    assert_eq!(t.response_body_bytes, bodies);
    assert!(
        t.bytes_read > bodies,
        "UDP payloads carry the bodies and more"
    );
    assert!(t.bytes_written > t.request_header_bytes);
    f.close();
    assert_eq!(gauge.load(Ordering::Relaxed), 0);
}

#[test]
fn http3_needs_an_https_origin() {
    let o = Target::parse("http://127.0.0.1:1/").unwrap();
    let e = Fetcher::new(FetchConfig::browser(o, FetchProtocol::H3), &paths(1)).unwrap_err();
    assert!(matches!(e, EngineError::Config(_)), "{e:?}");
}
