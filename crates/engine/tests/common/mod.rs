//! In-test HTTP/1.1 responder on raw blocking sockets (TCP, UNIX, TLS), with
//! scripted behaviour and exact counters.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use h2lab_engine::{AppProtocol, BenchConfig, NoopObserver, Observer, StopFlag, TlsInfo};

/// What the responder does.
#[derive(Clone, Default)]
pub struct Behavior {
    /// Response body size.
    pub body_len: usize,
    /// Use chunked transfer coding (64 KiB chunks).
    pub chunked: bool,
    /// Send `Connection: close` on this response number of each connection, then close.
    pub close_after: Option<u64>,
    /// Wait until this many requests are buffered before answering (pipelining check).
    pub batch: usize,
    /// After this many responses in total, stop answering and set `stop_flag`.
    pub respond_limit: Option<u64>,
    /// Set when `respond_limit` is reached.
    pub stop_flag: Option<StopFlag>,
    /// Never answer anything (timeouts).
    pub silent: bool,
    /// Status code (default 200).
    pub status: u16,
}

/// Counters shared with the responder threads.
#[derive(Default)]
pub struct Counters {
    /// Requests answered.
    pub requests: AtomicU64,
    /// Connections accepted.
    pub conns: AtomicU64,
    /// Requests answered per connection (pushed when a connection ends).
    pub per_conn: Mutex<Vec<u64>>,
    /// Largest number of complete requests seen buffered at once.
    pub max_pipelined: AtomicU64,
    /// Raw request heads seen (first 4 only).
    pub heads: Mutex<Vec<String>>,
}

/// Length of the first complete request in `buf` (head + Content-Length body).
fn request_len(buf: &[u8]) -> Option<usize> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let cl = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    (buf.len() >= end + cl).then_some(end + cl)
}

/// Serves one connection until EOF or a scripted close.
pub fn serve_conn<S: Read + Write>(mut s: S, b: &Behavior, c: &Counters) {
    let mut buf: Vec<u8> = Vec::new();
    let mut tmp = vec![0u8; 64 * 1024];
    let zeros = vec![b'z'; 256 * 1024];
    let mut served_here = 0u64;
    let mut stopped = false;
    loop {
        let mut lens = Vec::new();
        let mut off = 0;
        while let Some(l) = request_len(&buf[off..]) {
            lens.push(l);
            off += l;
        }
        c.max_pipelined
            .fetch_max(lens.len() as u64, Ordering::Relaxed);
        if !lens.is_empty() && lens.len() >= b.batch.max(1) && !b.silent && !stopped {
            let mut out = Vec::new();
            let mut consumed = 0;
            let mut close = false;
            for l in lens {
                {
                    let mut heads = c.heads.lock().unwrap();
                    if heads.len() < 4 {
                        heads.push(
                            String::from_utf8_lossy(&buf[consumed..consumed + l]).into_owned(),
                        );
                    }
                }
                consumed += l;
                if let Some(limit) = b.respond_limit {
                    if c.requests.load(Ordering::SeqCst) >= limit {
                        stopped = true;
                        if let Some(f) = &b.stop_flag {
                            f.stop();
                        }
                        break;
                    }
                }
                c.requests.fetch_add(1, Ordering::SeqCst);
                served_here += 1;
                close = b.close_after == Some(served_here);
                let status = if b.status == 0 { 200 } else { b.status };
                out.extend_from_slice(
                    format!("HTTP/1.1 {status} X\r\nServer: test\r\n").as_bytes(),
                );
                if close {
                    out.extend_from_slice(b"Connection: close\r\n");
                }
                if b.chunked {
                    out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                } else {
                    out.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", b.body_len).as_bytes(),
                    );
                }
                let mut left = b.body_len;
                while left > 0 {
                    let n = left.min(zeros.len());
                    if b.chunked {
                        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                    }
                    out.extend_from_slice(&zeros[..n]);
                    if b.chunked {
                        out.extend_from_slice(b"\r\n");
                    }
                    left -= n;
                    if out.len() > 1 << 20 {
                        if s.write_all(&out).is_err() {
                            return finish(c, served_here);
                        }
                        out.clear();
                    }
                }
                if b.chunked {
                    out.extend_from_slice(b"0\r\n\r\n");
                }
                if close {
                    break;
                }
            }
            if s.write_all(&out).and_then(|_| s.flush()).is_err() {
                return finish(c, served_here);
            }
            buf.drain(..consumed);
            if close {
                return finish(c, served_here);
            }
            continue;
        }
        match s.read(&mut tmp) {
            Ok(0) | Err(_) => return finish(c, served_here),
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

fn finish(c: &Counters, served: u64) {
    c.per_conn.lock().unwrap().push(served);
}

impl Counters {
    /// Per-connection request counts once `n` connections have ended. The responder
    /// threads record a connection when they see it close, which can happen just after
    /// the engine returns, so this polls (with a deadline) instead of reading once.
    pub fn per_conn_when(&self, n: usize) -> Vec<u64> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let per = self.per_conn.lock().unwrap().clone();
            if per.len() >= n || std::time::Instant::now() > deadline {
                return per;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// A TCP responder on 127.0.0.1:<ephemeral>.
pub fn tcp_server(b: Behavior) -> (SocketAddr, Arc<Counters>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let c = Arc::new(Counters::default());
    let c2 = Arc::clone(&c);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            c2.conns.fetch_add(1, Ordering::SeqCst);
            let (b, c) = (b.clone(), Arc::clone(&c2));
            std::thread::spawn(move || serve_conn(s, &b, &c));
        }
    });
    (addr, c)
}

/// A UNIX socket responder at a fresh path.
pub fn unix_server(b: Behavior) -> (scratch::Scratch, std::path::PathBuf, Arc<Counters>) {
    let dir = scratch::scratch("unix");
    let path = dir.join("s.sock");
    let _ = std::fs::remove_file(&path);
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let c = Arc::new(Counters::default());
    let c2 = Arc::clone(&c);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            c2.conns.fetch_add(1, Ordering::SeqCst);
            let (b, c) = (b.clone(), Arc::clone(&c2));
            std::thread::spawn(move || serve_conn(s, &b, &c));
        }
    });
    (dir, path, c)
}

/// A TLS responder (rustls, test certificate) offering `alpn`.
pub fn tls_server(b: Behavior, alpn: &[&str]) -> (SocketAddr, Arc<Counters>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    cfg.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let c = Arc::new(Counters::default());
    let c2 = Arc::clone(&c);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            c2.conns.fetch_add(1, Ordering::SeqCst);
            let (b, c, cfg) = (b.clone(), Arc::clone(&c2), Arc::clone(&cfg));
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(cfg).unwrap();
                serve_conn(rustls::StreamOwned::new(conn, s), &b, &c)
            });
        }
    });
    (addr, c)
}

/// A configuration for HTTP/1.1 against `url`, with an inactivity timeout as
/// a safety net so a broken client fails instead of hanging the test.
pub fn h1_config(url: &str) -> BenchConfig {
    let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
    cfg.protocol = h2lab_engine::ProtocolChoice::H1;
    cfg.connection_inactivity_timeout = Some(Duration::from_secs(20));
    cfg
}

/// Runs without an observer.
pub fn run(cfg: &BenchConfig) -> Result<h2lab_engine::RunResult, h2lab_engine::EngineError> {
    h2lab_engine::run(cfg, &NoopObserver, &StopFlag::new())
}

/// An observer that records what it is told.
#[derive(Default)]
pub struct Recorder {
    pub tls: Mutex<Option<TlsInfo>>,
    pub proto: Mutex<Option<AppProtocol>>,
    pub last_done: AtomicU64,
}

impl Observer for Recorder {
    fn progress(&self, done: u64, _total: u64, _elapsed: Duration, _errors: u64) {
        self.last_done.store(done, Ordering::SeqCst);
    }
    fn tls_info(&self, info: &TlsInfo) {
        *self.tls.lock().unwrap() = Some(info.clone());
    }
    fn protocol(&self, p: AppProtocol) {
        *self.proto.lock().unwrap() = Some(p);
    }
    fn interval(&self, _row: &h2lab_engine::IntervalRow) {}
    fn phase(&self, _thread: u32, _phase: h2lab_engine::TimedRunPhase) {}
}
pub mod anchors;
pub mod scratch;
