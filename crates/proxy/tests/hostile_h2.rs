//! Hostile HTTP/2 clients against the proxy's fronts, the h2c port and the TLS port (h2 by
//! ALPN; the same code after TLS): the cases `h2lab serve` survives
//! (`crates/server/tests/hostile_clients.rs`) — rapid reset, CONTINUATION flood, HPACK bomb,
//! a zero window that never opens, many idle connections, huge request bodies, invalid
//! prefaces. Each gets the answer RFC 9113 and the wire crate's limits call for, the proxy
//! releases what the attack held, and serves HTTP/2 and HTTP/1.1 clients afterwards.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::h2raw::{ping_h2_to, Front, H2Raw, END_STREAM};
use common::{proxy, wait_until, Client};
use h2lab_proxy::{ProxyConfig, RunningProxy, UpstreamProtocol};
use h2lab_server::RunningServer;
use h2lab_wire::h2::testing::{self, kind, setting};

/// GOAWAY / RST_STREAM error codes (RFC 9113 §7).
const PROTOCOL_ERROR: u32 = 0x1;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A proxy with both fronts (a cleartext port and a TLS port with a generated certificate,
/// removed on drop).
struct TwoFronts {
    p: RunningProxy,
    dir: PathBuf,
}

impl TwoFronts {
    /// A proxy in front of `b` speaking `proto` upstream.
    fn start(
        b: &[RunningServer],
        proto: UpstreamProtocol,
        tweak: impl FnOnce(&mut ProxyConfig),
    ) -> Self {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "h2lab-proxy-hostile-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let p = proxy(b, proto, |c| {
            c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
            c.front.cert_dir = Some(dir.clone());
            tweak(c);
        });
        TwoFronts { p, dir }
    }

    /// The h2c port, then the TLS port.
    fn fronts(&self) -> [Front; 2] {
        [Front::h2c(self.p.addr().unwrap()), Front::tls(&self.p)]
    }
}

impl Deref for TwoFronts {
    type Target = RunningProxy;
    fn deref(&self) -> &RunningProxy {
        &self.p
    }
}

impl Drop for TwoFronts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The proxy serves HTTP/2 (on both fronts) and HTTP/1.1 clients, and holds no exchange or
/// upstream stream once the attack's connections are gone.
fn still_serving(p: &TwoFronts, what: &str) {
    let addr = p.addr().unwrap();
    for front in p.fronts() {
        ping_h2_to(&front);
    }
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
    front: &Front,
    max: u32,
    mut batch: impl FnMut(&mut H2Raw, u32, &mut Vec<u8>),
) -> (Option<u32>, u32) {
    let mut c = H2Raw::connect_to(front, &[]);
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
    let b = common::backends(1);
    for proto in [UpstreamProtocol::H1, UpstreamProtocol::H2cMux] {
        let p = TwoFronts::start(&b, proto, |_| {});
        for front in p.fronts() {
            let what = format!("rapid reset, {}", front.name());
            cut_with_goaway(&what, ENHANCE_YOUR_CALM, || {
                attack(&front, 200, |c, n, buf| {
                    for k in 0..50 {
                        let id = 1 + 2 * (50 * n + k);
                        let block = c.peer.request_block("GET", "/ping", &[]);
                        testing::headers(buf, id, &block, true);
                        testing::rst_stream(buf, id, 0x8);
                    }
                })
            });
            still_serving(&p, &what);
        }
    }
}

#[test]
fn continuation_flood_is_cut_off() {
    // A header block that never ends: one-byte CONTINUATION frames, 50 a batch.
    let b = common::backends(1);
    let p = TwoFronts::start(&b, UpstreamProtocol::H1, |_| {});
    for front in p.fronts() {
        let what = format!("CONTINUATION flood, {}", front.name());
        cut_with_goaway(&what, ENHANCE_YOUR_CALM, || {
            let mut block = Vec::new();
            attack(&front, 200, |c, n, buf| {
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
        still_serving(&p, &what);
    }
}

#[test]
fn hpack_bomb_is_refused() {
    let b = common::backends(1);
    let p = TwoFronts::start(&b, UpstreamProtocol::H1, |_| {});
    for front in p.fronts() {
        let what = format!("HPACK bomb, {}", front.name());
        // The pings of `still_serving` after the previous front's bomb are the only
        // upstream requests before this one.
        let sent = p.stats().snapshot(Duration::from_secs(1)).upstream_requests;
        let mut c = H2Raw::connect_to(&front, &[]);
        let mut buf = Vec::new();
        testing::headers(&mut buf, 1, &testing::hpack_bomb_block(1000), true);
        c.send(&buf);
        let ended = c.read_until(Duration::from_secs(10), |fr| {
            fr.iter().any(|f| {
                f.kind == kind::GOAWAY
                    || (f.stream == 1 && (f.kind == kind::RST_STREAM || f.flags & END_STREAM != 0))
            })
        });
        assert!(ended, "{what}: no answer to the bomb: {:?}", c.frames());
        // The stream is refused (or answered 431) before anything reaches the upstream:
        // the 4 MB field list is never decoded whole (the wire's header list limit).
        let refused = c
            .frames()
            .iter()
            .any(|f| f.stream == 1 && f.kind == kind::RST_STREAM && f.error_code().is_some());
        assert!(
            refused || c.statuses().contains(&(1, 431)),
            "{what}: {:?}",
            c.frames()
        );
        let s = p.stats().snapshot(Duration::from_secs(1));
        assert_eq!(s.upstream_requests, sent, "{what}: {s}");
        still_serving(&p, &what);
    }
}

#[test]
fn zero_window_that_never_opens() {
    let b = common::backends(1);
    for proto in [UpstreamProtocol::H1, UpstreamProtocol::H2cMux] {
        let p = TwoFronts::start(&b, proto, |c| c.front.idle_timeout = Duration::from_secs(1));
        let cancels = || p.stats().snapshot(Duration::from_secs(1)).client_cancels;
        for front in p.fronts() {
            let before = cancels();
            let mut c = H2Raw::connect_to(&front, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
            for k in 0..20 {
                c.request(1 + 2 * k, "GET", "/data?size=100000000", true);
            }
            // Nothing can be sent to it and it sends nothing: cut off after the idle timeout
            // (1 s) like `serve` does, its 20 upstream requests cancelled.
            let t = Instant::now();
            assert!(
                c.wait_close(Duration::from_secs(10)),
                "{proto:?} {}: still open",
                front.name()
            );
            println!(
                "zero window {proto:?} {}: closed after {:?}",
                front.name(),
                t.elapsed()
            );
            let s = p.stats().snapshot(Duration::from_secs(1));
            assert_eq!(
                s.client_cancels,
                before + 20,
                "{proto:?} {}: {s}",
                front.name()
            );
        }
        // An HTTP/1.1 client that never reads a 1 GB response: cut off too (its socket
        // buffers fill, then nothing leaves for the idle timeout).
        let before = cancels();
        let mut s = TcpStream::connect(p.addr().unwrap()).unwrap();
        s.write_all(b"GET /data?size=1000000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let cut = wait_until(30, || cancels() == before + 1);
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
    let b = common::backends(1);
    let p = TwoFronts::start(&b, UpstreamProtocol::H1, |c| {
        c.front.idle_timeout = Duration::from_secs(1)
    });
    for front in p.fronts() {
        // Half after an HTTP/2 preface and SETTINGS (over TLS: after the handshake), half
        // sending nothing (over TLS: not even a ClientHello). Each needs two descriptors in
        // this process (client and proxy side): at most 2,000, fewer under a low
        // RLIMIT_NOFILE.
        let n = 2000.min(nofile_soft_limit().saturating_sub(256) / 2);
        assert!(n >= 300, "RLIMIT_NOFILE too low");
        let mut conns: Vec<H2Raw> = (0..n)
            .map(|k| {
                if k % 2 == 0 {
                    H2Raw::connect_to(&front, &[])
                } else {
                    H2Raw::tcp(front.addr)
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
        println!(
            "idle connections, {}: {closed} of {n} closed by the proxy",
            front.name()
        );
        assert_eq!(closed, n, "{}", front.name());
        drop(conns);
        still_serving(&p, "idle connections");
    }
}

#[test]
fn huge_request_bodies() {
    let b = common::backends(1);
    let p = TwoFronts::start(&b, UpstreamProtocol::H1, |c| {
        c.front.max_request_body = 1 << 20
    });
    for front in p.fronts() {
        let what = front.name();
        let mut c = H2Raw::connect_to(&front, &[]);
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
        assert!(seen, "{what}: no answer after {sent} bytes");
        // Past `max_request_body` (1 MiB) the stream is answered 413 (not buffered, not
        // forwarded further).
        let answered =
            c.read_until(Duration::from_secs(10), |_| true) && c.statuses().contains(&(1, 413));
        assert!(answered, "{what}: {:?}", c.statuses());
        assert!(sent < 4 << 20, "{what}: {sent} bytes taken");
        still_serving(&p, "huge bodies");
    }
}

#[test]
fn invalid_prefaces() {
    let b = common::backends(1);
    let p = TwoFronts::start(&b, UpstreamProtocol::H1, |c| {
        c.front.idle_timeout = Duration::from_secs(1)
    });
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
    for front in p.fronts() {
        for (name, bytes) in &cases {
            // Over TLS the bytes come after the handshake (ALPN h2).
            let mut c = H2Raw::open(&front);
            c.send(bytes);
            // Closed at once, or (bytes that hold no line end yet) after the idle timeout.
            assert!(
                c.wait_close(Duration::from_secs(10)),
                "{name} {}: still open",
                front.name()
            );
            if *name == "PING first" {
                // RFC 9113 §3.4: the preface must be followed by SETTINGS.
                assert_eq!(c.goaway(), Some(PROTOCOL_ERROR), "{name} {}", front.name());
            }
        }
    }
    still_serving(&p, "invalid prefaces");
}
