//! Read waiting against the real h2lab server: with responses that take milliseconds
//! (`/delay`), an idle worker sleeps before reading (`read_waits` > 0) and every request
//! still completes with its status and body; with `--read-wait 0` it never sleeps. Over
//! HTTP/2 (many streams per connection) and HTTP/1.1 (one request per connection).
//!
//! Timing: the assertions are counts. Whether a given wake-up finds data is up to the
//! scheduler, but with every response held 3 ms by the server the worker is idle most of
//! the run, so some sleeps are certain.

use std::net::SocketAddr;
use std::time::Duration;

use h2lab_engine::{BenchConfig, NoopObserver, ProtocolChoice, RunResult, StopFlag};

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
