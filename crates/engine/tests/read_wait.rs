//! Read waiting against the real h2lab server: with responses that take milliseconds
//! (`/delay`), an idle worker sleeps before reading (`read_waits` > 0) and every request
//! still completes with its status and body; with `--read-wait 0` it never sleeps. Over
//! HTTP/2 (many streams per connection), HTTP/1.1 (one request per connection) and HTTP/3
//! (QUIC connections honour the same wait; then also with 1 MiB responses, byte-exact: a
//! wake-up lost across a wait would stall the run).
//!
//! Timing: the assertions are counts. Whether a given wake-up finds data is up to the
//! scheduler, but with every response held 3 ms by the server the worker is idle most of
//! the run, so some sleeps are certain.

use std::net::SocketAddr;
use std::time::Duration;

use h2lab_engine::{AppProtocol, BenchConfig, NoopObserver, ProtocolChoice, RunResult, StopFlag};

const REQUESTS: u64 = 240;
/// `/delay?ms=3` answers with "delayed 3 ms\n" (13 bytes) after 3 ms.
const BODY: u64 = 13;

fn config(addr: SocketAddr, h1: bool, read_wait: Option<Duration>) -> BenchConfig {
    let mut cfg = BenchConfig::from_uris(&[format!("http://{addr}/delay?ms=3")], None).unwrap();
    cfg.requests = REQUESTS;
    if h1 {
        cfg.protocol = ProtocolChoice::H1;
        cfg.clients = 8;
    } else {
        // Two streams per connection: even if the server answers both in one write, a read
        // carries at most two responses, so waiting is never switched off as pointless
        // (that takes more than four per read).
        cfg.clients = 4;
        cfg.max_concurrent_streams = 2;
    }
    cfg.read_wait = read_wait;
    cfg
}

fn run(cfg: &BenchConfig) -> RunResult {
    h2lab_engine::run(cfg, &NoopObserver, &StopFlag::new()).unwrap()
}

fn all_complete(r: &RunResult) {
    assert_eq!(r.requests.total, REQUESTS, "{:?}", r.requests);
    assert_eq!(r.requests.succeeded, REQUESTS, "{:?}", r.requests);
    assert_eq!(r.requests.failed, 0);
    assert_eq!(r.status.s2xx, REQUESTS);
    assert_eq!(r.traffic.bytes_body, REQUESTS * BODY);
    assert_eq!(r.request_time.len(), REQUESTS);
}

fn sleeps_when_responses_take_milliseconds(h1: bool) {
    let srv = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let addr = srv.addr().unwrap();

    let on = run(&config(addr, h1, Some(h2lab_engine::DEFAULT_READ_WAIT)));
    all_complete(&on);
    assert!(on.read_waits > 0, "no read wait in {on:?}");

    let off = run(&config(addr, h1, None));
    all_complete(&off);
    assert_eq!(off.read_waits, 0);
}

#[test]
fn h2_sleeps_when_responses_take_milliseconds() {
    sleeps_when_responses_take_milliseconds(false);
}

#[test]
fn h1_sleeps_when_responses_take_milliseconds() {
    sleeps_when_responses_take_milliseconds(true);
}

/// `h2lab serve --tls --h3` on loopback (certificate in `dir`).
fn h3_server(dir: &std::path::Path) -> h2lab_server::RunningServer {
    h2lab_server::spawn(h2lab_server::ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.to_path_buf()),
        h3: true,
        ..h2lab_server::ServerConfig::local()
    })
    .unwrap()
}

fn h3_config(addr: SocketAddr, path: &str, requests: u64) -> BenchConfig {
    let url = format!("https://127.0.0.1:{}{path}", addr.port());
    let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
    cfg.protocol = ProtocolChoice::Alpn(vec!["h3".into()]);
    cfg.require_protocol = Some(AppProtocol::H3);
    cfg.insecure = true;
    cfg.requests = requests;
    // Two streams per connection, as for HTTP/2 above.
    cfg.clients = 4;
    cfg.max_concurrent_streams = 2;
    cfg
}

#[test]
fn h3_sleeps_when_responses_take_milliseconds() {
    let dir = tempfile::tempdir().unwrap();
    let srv = h3_server(dir.path());
    let addr = srv.h3_addr().unwrap();

    let mut cfg = h3_config(addr, "/delay?ms=3", REQUESTS);
    cfg.read_wait = Some(h2lab_engine::DEFAULT_READ_WAIT);
    let on = run(&cfg);
    all_complete(&on);
    assert!(on.read_waits > 0, "no read wait in {on:?}");

    cfg.read_wait = None;
    let off = run(&cfg);
    all_complete(&off);
    assert_eq!(off.read_waits, 0);
}

#[test]
fn h3_large_responses_with_read_wait_are_byte_exact() {
    const N: u64 = 12;
    const SIZE: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let srv = h3_server(dir.path());
    let addr = srv.h3_addr().unwrap();
    let mut cfg = h3_config(addr, &format!("/data?size={SIZE}"), N);
    cfg.read_wait = Some(h2lab_engine::DEFAULT_READ_WAIT);
    let r = run(&cfg);
    assert_eq!(r.requests.succeeded, N, "{:?}", r.requests);
    assert_eq!(r.requests.failed, 0);
    assert_eq!(r.status.s2xx, N);
    assert_eq!(r.traffic.bytes_body, N * SIZE);
    eprintln!("read waits: {}", r.read_waits);
}
