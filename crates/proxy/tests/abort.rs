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

/// HTTP/2 clients cancel in-flight requests with RST_STREAM: `rounds` connections each send
/// 50 requests to a slow endpoint and reset them all once the proxy has sent them upstream
/// (50 resets per connection stay under the rapid-reset budget, `Limits::rapid_reset_budget`),
/// then get an answer on the same connection; then a connection closes with 50 requests in
/// flight. Every exchange, upstream stream and pooled connection is released.
fn reset_many(proto: UpstreamProtocol, rounds: u32) {
    use common::h2raw::{ping_h2, H2Raw};
    use h2lab_wire::h2::testing;
    const STREAMS: u32 = 50;
    let b = backends(2);
    let p = proxy(&b, proto, |c| c.pool = 8);
    let addr = p.addr().unwrap();
    let snap = || p.stats().snapshot(Duration::from_secs(1));
    let mut sent = 0u64;
    let mut conns = Vec::new();
    for _ in 0..rounds {
        let mut c = H2Raw::connect(addr, &[]);
        for k in 0..STREAMS {
            assert!(c.request(1 + 2 * k, "GET", "/delay?ms=5000", true));
        }
        sent += u64::from(STREAMS);
        // Cancel only once every request went upstream: the upstream side has to be undone.
        let upstream = wait_until(30, || snap().upstream_requests >= sent);
        assert!(upstream, "{proto:?}: {}", snap());
        let mut b = Vec::new();
        for k in 0..STREAMS {
            testing::rst_stream(&mut b, 1 + 2 * k, 0x8); // CANCEL
        }
        assert!(c.send(&b));
        // The same connection still serves.
        let id = 1 + 2 * STREAMS;
        assert!(c.request(id, "GET", "/ping", true));
        sent += 1;
        let done = c.read_until(Duration::from_secs(10), |fr| {
            fr.iter().any(|f| f.stream == id && f.flags & 0x1 != 0)
        });
        assert!(
            done,
            "{proto:?}: no answer after the resets: {:?}",
            c.goaway()
        );
        assert!(c.statuses().contains(&(id, 200)), "{proto:?}");
        conns.push(c);
    }
    // A connection that goes away with requests in flight.
    let mut gone = H2Raw::connect(addr, &[]);
    for k in 0..STREAMS {
        assert!(gone.request(1 + 2 * k, "GET", "/delay?ms=5000", true));
    }
    sent += u64::from(STREAMS);
    let upstream = wait_until(30, || snap().upstream_requests >= sent);
    assert!(upstream, "{proto:?}: {}", snap());
    drop(gone);
    let settled = wait_until(30, || {
        let s = snap();
        s.open_exchanges == 0 && s.open_upstream_streams == 0
    });
    let s = snap();
    assert!(settled, "{proto:?}: {s}");
    let aborted = u64::from(rounds * STREAMS + STREAMS);
    assert_eq!(s.client_cancels, aborted, "{proto:?}: {s}");
    assert_eq!(s.responses + s.client_cancels, s.requests, "{proto:?}: {s}");
    assert!(s.open_upstream_connections <= 2 * 8, "{proto:?}: {s}");
    // Upstream connections are retired before their cancellations look like a rapid-reset
    // attack to the upstream (`h2lab serve` would close them with GOAWAY, refusing or
    // failing what is in flight on them).
    assert_eq!(s.upstream_retries, 0, "{proto:?}: {s}");
    assert_eq!(s.bad_gateway_reset, 0, "{proto:?}: {s}");
    ping_h2(addr);
    drop(conns);
    p.shutdown();
    p.join().unwrap();
}

#[test]
fn http2_clients_resetting_streams_h1() {
    reset_many(UpstreamProtocol::H1, 20);
}

#[test]
fn http2_clients_resetting_streams_h2c_mux() {
    reset_many(UpstreamProtocol::H2cMux, 20);
}

#[test]
fn http2_clients_resetting_streams_h2c() {
    reset_many(UpstreamProtocol::H2c, 20);
}

/// Other clients' cancellations do not get a shared h2c-mux upstream connection closed under
/// a request in flight: after 100 cancellations the connection takes no new stream, drains,
/// and a new one carries the next requests (`upstream::CANCELS_PER_CONNECTION`).
#[test]
fn cancellations_do_not_fail_a_bystander_on_the_shared_connection() {
    use common::h2raw::H2Raw;
    use h2lab_wire::h2::testing;
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H2cMux, |c| c.pool = 1);
    let addr = p.addr().unwrap();
    let snap = || p.stats().snapshot(Duration::from_secs(1));
    let bystander = std::thread::spawn(move || {
        let mut c = Client::connect(addr);
        c.get("/delay?ms=4000").status
    });
    assert!(
        wait_until(30, || snap().upstream_requests >= 1),
        "{}",
        snap()
    );
    let mut sent = 1;
    let mut conns = Vec::new();
    for _ in 0..6 {
        let mut c = H2Raw::connect(addr, &[]);
        for k in 0..50 {
            assert!(c.request(1 + 2 * k, "GET", "/delay?ms=5000", true));
        }
        sent += 50;
        assert!(
            wait_until(30, || snap().upstream_requests >= sent),
            "{}",
            snap()
        );
        let mut b = Vec::new();
        for k in 0..50 {
            testing::rst_stream(&mut b, 1 + 2 * k, 0x8);
        }
        assert!(c.send(&b));
        conns.push(c);
    }
    assert_eq!(bystander.join().unwrap(), 200, "{}", snap());
    let s = snap();
    assert_eq!(s.client_cancels, 300, "{s}");
    assert_eq!((s.upstream_retries, s.bad_gateway_reset), (0, 0), "{s}");
    assert!(s.upstream_connections_opened >= 3, "{s}");
    drop(conns);
    p.shutdown();
    p.join().unwrap();
}
