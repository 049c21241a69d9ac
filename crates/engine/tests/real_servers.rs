//! End-to-end runs against real servers (nginx) started by the test on ports
//! chosen at run time; numbers cross-checked with h2load when it is installed.
//! Skipped (passing, with a note) when the servers are not installed.

mod common;

use common::servers::{docroot, h2load, nginx, BIG, SMALL};
use h2lab_engine::{AppProtocol, BaseUri, BenchConfig, ProtocolChoice};

fn cfg(url: &str) -> BenchConfig {
    let mut c = BenchConfig::from_uris(&[url], None).unwrap();
    c.connection_inactivity_timeout = Some(std::time::Duration::from_secs(30));
    c
}

#[test]
fn nginx_h1_counts_match_h2load() {
    let root = docroot();
    let Some(srv) = nginx(&root) else { return };
    let url = format!("http://127.0.0.1:{}/file", srv.ports[0]);
    let mut c = cfg(&url);
    c.protocol = ProtocolChoice::H1;
    c.requests = 2000;
    c.clients = 10;
    c.max_concurrent_streams = 4;
    let r = common::run(&c).unwrap();
    let q = &r.requests;
    assert_eq!(
        (q.total, q.done, q.succeeded, q.failed),
        (2000, 2000, 2000, 0)
    );
    assert_eq!(r.status.s2xx, 2000);
    assert_eq!(r.traffic.bytes_body, 2000 * SMALL as u64);
    assert_eq!(r.app_protocol, Some(AppProtocol::Http11));
    if let Some((total, head, data, ok)) =
        h2load(&["--h1", "-n", "2000", "-c", "10", "-m", "4", &url])
    {
        assert_eq!(ok, 2000);
        assert_eq!(
            (
                r.traffic.bytes_total,
                r.traffic.bytes_head,
                r.traffic.bytes_body
            ),
            (total, head, data)
        );
    }
}

#[test]
fn nginx_h1_large_responses_and_unix_socket() {
    let root = docroot();
    let Some(srv) = nginx(&root) else { return };
    let mut c = cfg(&format!("http://127.0.0.1:{}/big", srv.ports[0]));
    c.protocol = ProtocolChoice::H1;
    c.requests = 4;
    c.clients = 2;
    let r = common::run(&c).unwrap();
    assert_eq!(r.requests.succeeded, 4);
    assert_eq!(r.traffic.bytes_body, 4 * BIG as u64);

    let mut c = cfg("http://localhost/file");
    c.protocol = ProtocolChoice::H1;
    c.base_uri = Some(BaseUri::Unix(srv.sock.clone().unwrap()));
    c.requests = 100;
    c.clients = 2;
    c.max_concurrent_streams = 8;
    let r = common::run(&c).unwrap();
    assert_eq!(r.requests.succeeded, 100);
    assert_eq!(r.traffic.bytes_body, 100 * SMALL as u64);
}

#[test]
fn nginx_tls_h1_via_alpn() {
    let root = docroot();
    let Some(srv) = nginx(&root) else { return };
    let mut c = cfg(&format!("https://127.0.0.1:{}/file", srv.ports[2]));
    c.protocol = ProtocolChoice::H1;
    c.requests = 200;
    c.clients = 4;
    let r = common::run(&c).unwrap();
    assert_eq!(r.requests.succeeded, 200);
    assert_eq!(r.app_protocol, Some(AppProtocol::Http11));
    assert!(!r.protocol_fallback);
    let tls = r.tls.unwrap();
    assert!(tls.protocol.starts_with("TLSv1."));
    assert_eq!(tls.alpn.as_deref(), Some("http/1.1"));
}
