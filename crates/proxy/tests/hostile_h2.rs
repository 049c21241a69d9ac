//! Hostile HTTP/2 clients against the proxy's h2c front: the cases `h2lab serve` survives
//! (`crates/server/tests/hostile_clients.rs`) — rapid reset, CONTINUATION flood, HPACK bomb,
//! a zero window that never opens, many idle connections, huge request bodies, invalid
//! prefaces. Each gets the answer RFC 9113 and the wire crate's limits call for, the proxy
//! releases what the attack held, and serves HTTP/2 and HTTP/1.1 clients afterwards.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::h2raw::{ping_h2, H2Raw, END_STREAM};
use common::{backends, proxy, wait_until, Client};
use h2lab_proxy::{RunningProxy, UpstreamProtocol};
use h2lab_wire::h2::testing::{self, kind, setting};

/// GOAWAY / RST_STREAM error codes (RFC 9113 §7).
const PROTOCOL_ERROR: u32 = 0x1;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The proxy serves HTTP/2 and HTTP/1.1 clients, and holds no exchange or upstream stream
/// once the attack's connections are gone.
fn still_serving(p: &RunningProxy, what: &str) {
    let addr = p.addr().unwrap();
    ping_h2(addr);
    assert_eq!(Client::connect(addr).get("/ping").status, 200, "{what}");
    let settled = wait_until(30, || {
        let s = p.stats().snapshot(Duration::from_secs(1));
        s.open_exchanges == 0 && s.open_upstream_streams == 0
    });
    assert!(
        settled,
        "{what}: {}",
        p.stats().snapshot(Duration::from_secs(1))
    );
}

/// Connects and sends `batch` (with the connection's HPACK encoder) over and over until the
/// proxy cuts the connection (up to `max` batches); returns the GOAWAY code read, if any,
/// and the batches sent. Fails if the proxy does not close the connection.
fn attack(
    addr: std::net::SocketAddr,
    max: u32,
    mut batch: impl FnMut(&mut H2Raw, u32, &mut Vec<u8>),
) -> (Option<u32>, u32) {
    let mut c = H2Raw::connect(addr, &[]);
    let mut n = 0;
    while !c.closed && c.goaway().is_none() && n < max {
        let mut buf = Vec::new();
        batch(&mut c, n, &mut buf);
        c.send(&buf);
        n += 1;
        // Some time to read the GOAWAY before sending more: the proxy closes after it, and
        // bytes that reach a closed socket make it reset the connection, which can drop
        // the GOAWAY before it is read.
        c.read_some(Duration::from_millis(20));
    }
    assert!(
        c.wait_close(Duration::from_secs(5)),
        "still open after {n} batches"
    );
    (c.goaway(), n)
}

/// Runs `attack` up to 5 times: each connection is cut, with a GOAWAY of `code` when one is
/// read at all, and at least one is read.
fn cut_with_goaway(what: &str, code: u32, mut run: impl FnMut() -> (Option<u32>, u32)) {
    let mut seen = 0;
    for _ in 0..5 {
        let (goaway, batches) = run();
        assert!(
            goaway.is_none() || goaway == Some(code),
            "{what}: {goaway:?}"
        );
        if goaway.is_some() {
            println!("{what}: GOAWAY({code:#x}) after {batches} batches");
            seen += 1;
            break;
        }
    }
    assert!(seen > 0, "{what}: no GOAWAY({code:#x}) read");
}

#[test]
fn rapid_reset_gets_goaway_enhance_your_calm() {
    // CVE-2023-44487: HEADERS then RST_STREAM as fast as possible, 50 pairs a batch.
    let b = backends(1);
    for proto in [UpstreamProtocol::H1, UpstreamProtocol::H2cMux] {
        let p = proxy(&b, proto, |_| {});
        let addr = p.addr().unwrap();
        cut_with_goaway("rapid reset", ENHANCE_YOUR_CALM, || {
            attack(addr, 200, |c, n, buf| {
                for k in 0..50 {
                    let id = 1 + 2 * (50 * n + k);
                    let block = c.peer.request_block("GET", "/ping", &[]);
                    testing::headers(buf, id, &block, true);
                    testing::rst_stream(buf, id, 0x8);
                }
            })
        });
        still_serving(&p, "rapid reset");
    }
}

#[test]
fn continuation_flood_is_cut_off() {
    // A header block that never ends: one-byte CONTINUATION frames, 50 a batch.
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H1, |_| {});
    let addr = p.addr().unwrap();
    cut_with_goaway("CONTINUATION flood", ENHANCE_YOUR_CALM, || {
        let mut block = Vec::new();
        attack(addr, 200, |c, n, buf| {
            if n == 0 {
                block = c
                    .peer
                    .request_block("GET", "/ping", &[("x-pad", &"p".repeat(100))]);
                testing::headers_flags(buf, 1, &block[..4], true, false);
            }
            for i in 0..50 {
                testing::continuation(buf, 1, &block[4 + i..][..1], false);
            }
        })
    });
    still_serving(&p, "CONTINUATION flood");
}

#[test]
fn hpack_bomb_is_refused() {
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H1, |_| {});
    let mut c = H2Raw::connect(p.addr().unwrap(), &[]);
    let mut buf = Vec::new();
    testing::headers(&mut buf, 1, &testing::hpack_bomb_block(1000), true);
    c.send(&buf);
    let ended = c.read_until(Duration::from_secs(10), |fr| {
        fr.iter().any(|f| {
            f.kind == kind::GOAWAY
                || (f.stream == 1 && (f.kind == kind::RST_STREAM || f.flags & END_STREAM != 0))
        })
    });
    assert!(ended, "no answer to the bomb: {:?}", c.frames());
    // The stream is refused (or answered 431) before anything reaches the upstream: the
    // 4 MB field list is never decoded whole (the wire's header list limit).
    let refused = c
        .frames()
        .iter()
        .any(|f| f.stream == 1 && f.kind == kind::RST_STREAM && f.error_code().is_some());
    assert!(
        refused || c.statuses().contains(&(1, 431)),
        "{:?}",
        c.frames()
    );
    let s = p.stats().snapshot(Duration::from_secs(1));
    assert_eq!(s.upstream_requests, 0, "{s}");
    still_serving(&p, "HPACK bomb");
}

#[test]
fn zero_window_that_never_opens() {
    let b = backends(1);
    for proto in [UpstreamProtocol::H1, UpstreamProtocol::H2cMux] {
        let p = proxy(&b, proto, |c| c.front.idle_timeout = Duration::from_secs(1));
        let mut c = H2Raw::connect(p.addr().unwrap(), &[(setting::INITIAL_WINDOW_SIZE, 0)]);
        for k in 0..20 {
            c.request(1 + 2 * k, "GET", "/data?size=100000000", true);
        }
        // Nothing can be sent to it and it sends nothing: cut off after the idle timeout
        // (1 s) like `serve` does, its 20 upstream requests cancelled.
        let t = Instant::now();
        assert!(
            c.wait_close(Duration::from_secs(10)),
            "{proto:?}: still open"
        );
        println!("zero window {proto:?}: closed after {:?}", t.elapsed());
        let s = p.stats().snapshot(Duration::from_secs(1));
        assert_eq!(s.client_cancels, 20, "{proto:?}: {s}");
        // An HTTP/1.1 client that never reads a 1 GB response: cut off too (its socket
        // buffers fill, then nothing leaves for the idle timeout).
        let mut s = TcpStream::connect(p.addr().unwrap()).unwrap();
        s.write_all(b"GET /data?size=1000000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let cut = wait_until(30, || {
            p.stats().snapshot(Duration::from_secs(1)).client_cancels == 21
        });
        assert!(
            cut,
            "{proto:?}: {}",
            p.stats().snapshot(Duration::from_secs(1))
        );
        drop(s);
        still_serving(&p, "zero window");
    }
}

/// This process's soft RLIMIT_NOFILE (1024 when unknown).
fn nofile_soft_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

#[test]
fn thousands_of_idle_connections_are_closed() {
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H1, |c| {
        c.front.idle_timeout = Duration::from_secs(1)
    });
    let addr = p.addr().unwrap();
    // Half after an HTTP/2 preface and SETTINGS, half sending nothing. Each needs two
    // descriptors in this process (client and proxy side): at most 2,000, fewer under a
    // low RLIMIT_NOFILE.
    let n = 2000.min(nofile_soft_limit().saturating_sub(256) / 2);
    assert!(n >= 300, "RLIMIT_NOFILE too low");
    let mut conns: Vec<H2Raw> = (0..n)
        .map(|k| {
            if k % 2 == 0 {
                H2Raw::connect(addr, &[])
            } else {
                H2Raw::tcp(addr)
            }
        })
        .collect();
    let t = Instant::now();
    let mut closed = 0;
    for c in conns.iter_mut() {
        if c.wait_close(Duration::from_secs(30).saturating_sub(t.elapsed())) {
            closed += 1;
        }
    }
    println!("idle connections: {closed} of {n} closed by the proxy");
    assert_eq!(closed, n);
    still_serving(&p, "idle connections");
}

#[test]
fn huge_request_bodies() {
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H1, |c| {
        c.front.max_request_body = 1 << 20
    });
    let mut c = H2Raw::connect(p.addr().unwrap(), &[]);
    c.request(1, "POST", "/ping", false);
    let chunk = vec![b'u'; 16 * 1024];
    let mut sent = 0usize;
    let t = Instant::now();
    let mut seen = false;
    while !c.closed && sent < 64 << 20 && t.elapsed() < Duration::from_secs(20) {
        let mut buf = Vec::new();
        testing::data(&mut buf, 1, &chunk, false);
        if !c.send(&buf) {
            break;
        }
        sent += chunk.len();
        c.read_some(Duration::from_millis(1));
        if c.frames()
            .iter()
            .any(|f| f.stream == 1 && (f.kind == kind::RST_STREAM || f.kind == kind::HEADERS))
            || c.goaway().is_some()
        {
            seen = true;
            break;
        }
    }
    assert!(seen, "no answer after {sent} bytes");
    // Past `max_request_body` (1 MiB) the stream is answered 413 (not buffered, not
    // forwarded further).
    let answered =
        c.read_until(Duration::from_secs(10), |_| true) && c.statuses().contains(&(1, 413));
    assert!(answered, "{:?}", c.statuses());
    assert!(sent < 4 << 20, "{sent} bytes taken");
    still_serving(&p, "huge bodies");
}

#[test]
fn invalid_prefaces() {
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H1, |c| {
        c.front.idle_timeout = Duration::from_secs(1)
    });
    let addr = p.addr().unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "garbage",
            (0..200u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
                .collect(),
        ),
        (
            "broken preface",
            b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".to_vec(),
        ),
        ("PING first", {
            let mut b = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            testing::ping(&mut b, false, [0; 8]);
            b
        }),
        ("HTTP/9.9", b"GET / HTTP/9.9\r\n\r\n".to_vec()),
        (
            "TLS hello",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
        ),
    ];
    for (name, bytes) in cases {
        let mut c = H2Raw::tcp(addr);
        c.send(&bytes);
        // Closed at once, or (bytes that hold no line end yet) after the idle timeout.
        assert!(c.wait_close(Duration::from_secs(10)), "{name}: still open");
        if name == "PING first" {
            // RFC 9113 §3.4: the preface must be followed by SETTINGS.
            assert_eq!(c.goaway(), Some(PROTOCOL_ERROR), "{name}");
        }
    }
    still_serving(&p, "invalid prefaces");
}
