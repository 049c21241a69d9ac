//! Clients that go away mid-request cancel their upstream request, and nothing leaks:
//! after 10,000 aborted requests no exchange or upstream stream is open and the pool holds
//! at most its configured connections.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{backends, proxy, wait_until, Client};
use h2lab_proxy::UpstreamProtocol;

fn abort_many(proto: UpstreamProtocol, n: usize) {
    let b = backends(4);
    let p = proxy(&b, proto, |c| c.pool = 8);
    let addr = p.addr().unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..n / 8 {
                    let mut s = TcpStream::connect(addr).unwrap();
                    // A slow endpoint: the upstream request is still in flight when the
                    // client goes away.
                    s.write_all(b"GET /delay?ms=2000 HTTP/1.1\r\nHost: x\r\n\r\n")
                        .unwrap();
                    drop(s);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let settled = wait_until(30, || {
        let s = p.stats().snapshot(Duration::from_secs(1));
        s.open_exchanges == 0 && s.open_upstream_streams == 0
    });
    let s = p.stats().snapshot(Duration::from_secs(1));
    assert!(settled, "{proto:?}: {s}");
    assert!(s.open_upstream_connections <= 4 * 8, "{proto:?}: {s}");
    assert!(s.client_cancels > 0, "{proto:?}: {s}");
    assert_eq!(s.responses + s.client_cancels, s.requests, "{proto:?}: {s}");
    // The proxy still works.
    let mut c = Client::connect(addr);
    assert_eq!(c.get("/ping").status, 200);
}

#[test]
fn ten_thousand_aborted_requests_h1() {
    abort_many(UpstreamProtocol::H1, 10_000);
}

#[test]
fn ten_thousand_aborted_requests_h2c_mux() {
    abort_many(UpstreamProtocol::H2cMux, 10_000);
}

#[test]
fn ten_thousand_aborted_requests_h2c() {
    abort_many(UpstreamProtocol::H2c, 10_000);
}
