//! Hostile clients against the proxy's front (the cases `h2lab serve` survives): slow heads
//! (slowloris), idle connections, oversized heads, smuggling attempts, garbage, pipelining.
//! After each, the proxy still serves normal clients.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{backends, proxy, Client};
use h2lab_proxy::UpstreamProtocol;

/// Reads until EOF or error; true when the proxy closed the connection within `secs`.
fn closed_within(s: &mut TcpStream, secs: u64) -> (bool, Vec<u8>) {
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return (true, got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return (true, got),
        }
    }
    (false, got)
}

#[test]
fn hostile_clients_are_cut_off_and_normal_clients_still_served() {
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H1, |c| {
        c.front.idle_timeout = Duration::from_millis(300);
    });
    let addr = p.addr().unwrap();

    // Slowloris: a head trickled a byte at a time never completes; it is closed.
    let mut s = TcpStream::connect(addr).unwrap();
    let start = Instant::now();
    let mut closed = false;
    for &byte in b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: "
        .iter()
        .cycle()
        .take(400)
    {
        if s.write_all(&[byte]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        if start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let closed = closed || closed_within(&mut s, 3).0;
    assert!(closed, "slowloris connection still open");

    // An idle connection is closed after the idle timeout.
    let mut s = TcpStream::connect(addr).unwrap();
    assert!(closed_within(&mut s, 5).0, "idle connection still open");

    // Oversized head: 431, then close.
    let mut s = TcpStream::connect(addr).unwrap();
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let _ = s.write_all(big.as_bytes());
    let (closed, got) = closed_within(&mut s, 5);
    assert!(closed);
    assert!(
        got.starts_with(b"HTTP/1.1 431"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );

    // Smuggling: Content-Length with Transfer-Encoding is refused, the connection closed.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").unwrap();
    let (closed, got) = closed_within(&mut s, 5);
    assert!(closed);
    assert!(
        got.starts_with(b"HTTP/1.1 400"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );

    // Garbage (a TLS ClientHello on the cleartext port, an HTTP/2 preface): closed.
    for junk in [
        &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[..],
        // A broken HTTP/2 preface.
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
        // A valid one, then nothing: an idle HTTP/2 connection.
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(junk).unwrap();
        assert!(closed_within(&mut s, 5).0);
    }

    // Pipelining: three requests in one write, three responses in order.
    let mut c = Client::connect(addr);
    c.s.write_all(b"GET /data?size=10 HTTP/1.1\r\nHost: x\r\n\r\nGET /data?size=20 HTTP/1.1\r\nHost: x\r\n\r\nGET /data?size=30 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    for n in [10, 20, 30] {
        let r = c.read_response(false);
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), n);
    }

    // Still serving.
    let mut c = Client::connect(addr);
    assert_eq!(c.get("/ping").status, 200);
    p.shutdown();
    let s = p.join().unwrap();
    assert_eq!(s.open_exchanges, 0, "{s}");
}
