//! Requests the upstream did not process are sent again on a fresh connection instead of
//! answering 502: streams refused by an h2c upstream's GOAWAY (above its last stream id), and
//! idempotent requests sent on a pooled keep-alive connection the upstream closed as they
//! arrived. Upstreams played by raw sockets that do exactly that after N requests per
//! connection, so every retry is deterministic (no timing involved).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use common::Client;
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
use h2lab_wire::h2::testing::{self, Event, Recorder};
use h2lab_wire::h2::{Connection, HeadersKind, Limits, LocalSettings, Role, StreamId};

/// Runs `serve` on a thread per accepted connection.
fn listen(serve: fn(TcpStream)) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            std::thread::spawn(move || serve(s));
        }
    });
    addr
}

/// HTTP/1.1 keep-alive upstream that answers one request per connection and closes the
/// connection, without answering, when the next request arrives on it.
fn h1_one_per_connection(mut s: TcpStream) {
    let (mut buf, mut b, mut answered) = (Vec::new(), [0u8; 4096], 0);
    loop {
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..i + 4);
            if answered == 1 {
                return; // the "keep-alive timeout" hits just as the request comes in
            }
            answered += 1;
            if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match s.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
}

/// h2c upstream that answers two requests per connection and answers the third with
/// GOAWAY(last stream id = the second's), leaving the connection open.
fn h2_goaway_after_two(mut s: TcpStream) {
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut out, mut inbuf, mut b) = (Vec::new(), Vec::new(), [0u8; 16384]);
    conn.start(&mut out);
    let (mut rec, mut seen, mut answered, mut last) = (Recorder::default(), 0, 0, 0);
    loop {
        if !out.is_empty() && s.write_all(&out).is_err() {
            return;
        }
        out.clear();
        match s.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(n) => inbuf.extend_from_slice(&b[..n]),
        }
        let Ok(n) = conn.recv(&inbuf, &mut out, &mut rec) else {
            return;
        };
        inbuf.drain(..n);
        let new: Vec<u32> = rec.events[seen..]
            .iter()
            .filter_map(|e| match e {
                Event::HeadersDone(id, d) if d.kind == HeadersKind::Request => Some(*id),
                _ => None,
            })
            .collect();
        seen = rec.events.len();
        for id in new {
            if answered == 2 {
                testing::goaway(&mut out, last, 0, b"");
                answered += 1;
                continue;
            }
            if answered > 2 {
                continue;
            }
            let sid = StreamId::new(id);
            let fields: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"content-length", b"2")];
            conn.send_header_fields(sid, &fields, false, &mut out)
                .unwrap();
            conn.send_data(sid, b"ok", true, &mut out).unwrap();
            answered += 1;
            last = id;
        }
    }
}

fn proxy_to(addr: SocketAddr, proto: UpstreamProtocol) -> h2lab_proxy::RunningProxy {
    h2lab_proxy::spawn(ProxyConfig::local(vec![UpstreamAddr::Tcp(addr)], proto)).unwrap()
}

const POST_EMPTY: &str = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";

#[test]
fn idempotent_requests_on_a_closed_keep_alive_connection_are_retried() {
    let p = proxy_to(listen(h1_one_per_connection), UpstreamProtocol::H1);
    let mut c = Client::connect(p.addr().unwrap());
    for k in 0..10 {
        let r = c.get("/");
        assert_eq!(r.status, 200, "request {k}");
        assert_eq!(r.body, b"ok");
    }
    // Not idempotent: it may have been processed, so it is not sent twice.
    let r = c.send(POST_EMPTY, b"", false);
    assert_eq!(r.status, 502);
    // A request that fails on a fresh connection is not retried either.
    let r = c.get("/");
    assert_eq!(r.status, 200);
    drop(c);
    p.shutdown();
    let s = p.join().unwrap();
    // Requests 2..10 each met the connection that served the one before: 9 retries, each on
    // a new connection.
    assert_eq!(s.upstream_retries, 9, "{s}");
    assert_eq!(s.requests, 12, "{s}");
    assert_eq!(s.responses, 12, "{s}");
    assert_eq!(s.bad_gateway_reset, 1, "{s}");
    assert_eq!(s.upstream_connections_opened, 11, "{s}");
    assert_eq!(s.open_exchanges, 0, "{s}");
}

#[test]
fn streams_refused_by_goaway_are_retried_on_a_new_connection() {
    for proto in [UpstreamProtocol::H2c, UpstreamProtocol::H2cMux] {
        let p = proxy_to(listen(h2_goaway_after_two), proto);
        let mut c = Client::connect(p.addr().unwrap());
        for k in 0..10 {
            let r = c.get("/");
            assert_eq!(r.status, 200, "{proto:?}: request {k}");
            assert_eq!(r.body, b"ok");
        }
        // Refused by GOAWAY: not processed, so even a POST (without body) is retried.
        let r = c.send(POST_EMPTY, b"", false);
        assert_eq!(r.status, 200, "{proto:?}");
        drop(c);
        p.shutdown();
        let s = p.join().unwrap();
        // Connection 1 answers requests 1, 2 and refuses 3; each next one answers the
        // refused request and one more: requests 3, 5, 7, 9 and 11 are retried.
        assert_eq!(s.upstream_retries, 5, "{proto:?}: {s}");
        assert_eq!(s.upstream_connections_opened, 6, "{proto:?}: {s}");
        assert_eq!(s.requests, 11, "{proto:?}: {s}");
        assert_eq!(
            s.bad_gateway_reset + s.bad_gateway_refused,
            0,
            "{proto:?}: {s}"
        );
        assert_eq!(s.open_exchanges, 0, "{proto:?}: {s}");
    }
}
