//! Large HTTP/1.x Content-Length response bodies to HTTP/1.1 clients: byte-exact 10 MB bodies
//! (a non-repeating pattern) over a reused upstream connection and over HTTP/1.0, a client
//! that stops reading mid-body (longer than the upstream timeout) and resumes, and an
//! upstream that cuts a body short (the client's response is cut too).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{wait_until, Client};
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};

const TEN_MB: usize = 10 * 1024 * 1024;

/// Body byte `i` of every response: not a repeating short pattern, so that a lost, doubled
/// or reordered block shows.
fn byte(i: usize) -> u8 {
    let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 29;
    (x ^ (i as u64 >> 12)) as u8
}

fn body(len: usize) -> Vec<u8> {
    (0..len).map(byte).collect()
}

/// An upstream answering every request head with `len` body bytes (`cut`: it closes after
/// half of them), keep-alive unless the request is HTTP/1.0. Counts body bytes written.
fn upstream(len: usize, cut: bool) -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let w = written.clone();
    // Made before the proxy can ask: a slow start would be an upstream timeout.
    let data = Arc::new(body(len));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let (data, w) = (data.clone(), w.clone());
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut b = [0u8; 4096];
                loop {
                    while let Some(i) = buf.windows(4).position(|x| x == b"\r\n\r\n") {
                        let http10 = buf.starts_with(b"GET / HTTP/1.0")
                            || buf[..i].windows(8).any(|x| x == b"HTTP/1.0");
                        buf.drain(..i + 4);
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {len}\r\n{}\r\n",
                            if http10 { "connection: close\r\n" } else { "" }
                        );
                        if s.write_all(head.as_bytes()).is_err() {
                            return;
                        }
                        let end = if cut { len / 2 } else { len };
                        for c in data[..end].chunks(256 * 1024) {
                            if s.write_all(c).is_err() {
                                return;
                            }
                            w.fetch_add(c.len() as u64, Ordering::Relaxed);
                        }
                        if cut || http10 {
                            return;
                        }
                    }
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                }
            });
        }
    });
    (addr, written)
}

fn proxy_to(addr: SocketAddr, proto: UpstreamProtocol) -> h2lab_proxy::RunningProxy {
    h2lab_proxy::spawn(ProxyConfig::local(vec![UpstreamAddr::Tcp(addr)], proto)).unwrap()
}

/// Short, so that the pause below outlasts it: holding a slow client's body back is the
/// proxy's doing, not an upstream timeout.
const UPSTREAM_TIMEOUT: Duration = Duration::from_millis(300);
/// What the proxy may hold for one client: its output high-water mark (64 KiB), a read's
/// worth (128 KiB) and slack.
const QUEUE_BOUND: u64 = 512 * 1024;

#[test]
fn ten_megabytes_are_byte_exact_over_a_reused_connection() {
    let expect = body(TEN_MB);
    for proto in [UpstreamProtocol::H1, UpstreamProtocol::H10] {
        let (addr, _) = upstream(TEN_MB, false);
        let p = proxy_to(addr, proto);
        let mut c = Client::connect(p.addr().unwrap());
        for round in 0..3 {
            let r = c.get("/");
            assert_eq!(r.status, 200, "{proto:?} {round}");
            assert_eq!(r.header("content-length"), Some("10485760"));
            assert!(r.header("transfer-encoding").is_none());
            assert_eq!(r.body.len(), TEN_MB, "{proto:?} {round}");
            assert!(r.body == expect, "{proto:?} {round}: body differs");
            assert!(r.keep_alive);
        }
        drop(c);
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.responses, 3, "{s}");
        assert_eq!(s.open_exchanges, 0, "{s}");
        if proto == UpstreamProtocol::H1 {
            assert_eq!(s.upstream_connections_reused, 2, "{s}");
        }
    }
}

#[test]
fn a_client_that_pauses_mid_body_gets_every_byte() {
    let (addr, written) = upstream(TEN_MB, false);
    let mut cfg = ProxyConfig::local(vec![UpstreamAddr::Tcp(addr)], UpstreamProtocol::H1);
    cfg.upstream_timeout = UPSTREAM_TIMEOUT;
    let p = h2lab_proxy::spawn(cfg).unwrap();
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(16 * 1024).unwrap();
    s.connect(&p.addr().unwrap().into()).unwrap();
    let mut s: std::net::TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut b = vec![0u8; 64 * 1024];
    while got.len() < 1024 * 1024 {
        let n = s
            .read(&mut b)
            .unwrap_or_else(|e| panic!("{e} after {} bytes", got.len()));
        assert!(n > 0);
        got.extend_from_slice(&b[..n]);
    }
    // Stop reading until the upstream stops writing (all it could write, or all it had, is
    // queued in socket buffers and the proxy's queue: the proxy's writes to this client
    // would block) and three upstream timeouts passed, or a bound passes.
    let t0 = std::time::Instant::now();
    let mut last = u64::MAX;
    wait_until(10, || {
        std::thread::sleep(Duration::from_millis(50));
        let now = written.load(Ordering::Relaxed);
        let still = now == last;
        last = now;
        still && t0.elapsed() >= 3 * UPSTREAM_TIMEOUT
    });
    let st = p.stats().snapshot(Duration::from_secs(1));
    assert!(st.largest_client_queue <= QUEUE_BOUND, "{st}");
    let head_end = got.windows(4).position(|x| x == b"\r\n\r\n").unwrap() + 4;
    let mut rest = got.split_off(head_end);
    while rest.len() < TEN_MB {
        let n = s.read(&mut b).unwrap();
        assert!(n > 0, "cut after {} bytes", rest.len());
        rest.extend_from_slice(&b[..n]);
    }
    assert_eq!(rest.len(), TEN_MB);
    assert!(rest == body(TEN_MB), "body differs");
    // Still usable: a second response on the same connection.
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut c = Client::from_stream(s);
    let r = c.read_response(false);
    assert!(r.body == body(TEN_MB));
    drop(c);
    p.shutdown();
    let st = p.join().unwrap();
    assert_eq!(st.open_exchanges, 0, "{st}");
    assert_eq!(st.bad_gateway_reset + st.gateway_timeout, 0, "{st}");
    assert_eq!(st.responses, 2, "{st}");
}

#[test]
fn a_cut_body_cuts_the_client_response() {
    let (addr, _) = upstream(TEN_MB, true);
    let p = proxy_to(addr, UpstreamProtocol::H1);
    let mut s = std::net::TcpStream::connect(p.addr().unwrap()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let head_end = got.windows(4).position(|x| x == b"\r\n\r\n").unwrap() + 4;
    assert!(got.starts_with(b"HTTP/1.1 200"));
    let rest = &got[head_end..];
    assert_eq!(
        rest.len(),
        TEN_MB / 2,
        "the client connection closes after what came"
    );
    assert!(rest == &body(TEN_MB)[..TEN_MB / 2]);
    p.shutdown();
    let st = p.join().unwrap();
    assert_eq!(st.open_exchanges, 0, "{st}");
}
