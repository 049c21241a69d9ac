//! Scripted misbehaving servers on raw sockets and a harness that runs the `h2lab` binary
//! against them: exit status, stdout/stderr, wall time, peak RSS (VmHWM sampled from /proc
//! while the process runs) and the JSON result.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use h2lab_wire::h2::testing::{self, kind, RawFrame, TestPeer};

/// Frame flags used by the scripts.
pub const END_STREAM: u8 = 0x1;
/// ACK (SETTINGS, PING).
pub const ACK: u8 = 0x1;
/// END_HEADERS.
pub const END_HEADERS: u8 = 0x4;

/// Starts a listener on 127.0.0.1:0 whose every accepted connection is handed to `script`
/// (with its 0-based index) on its own thread. The listener lives as long as the test process.
pub fn serve<F>(script: F) -> SocketAddr
where
    F: Fn(TcpStream, usize) + Send + Sync + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let script = Arc::new(script);
    let n = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let _ = s.set_nodelay(true);
            let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
            let i = n.fetch_add(1, Ordering::SeqCst);
            let script = Arc::clone(&script);
            std::thread::spawn(move || script(s, i));
        }
    });
    addr
}

/// Reads and discards until EOF or error (lets the peer's close arrive as a clean FIN).
pub fn drain(s: &mut TcpStream) {
    let mut tmp = [0u8; 16 * 1024];
    while matches!(s.read(&mut tmp), Ok(n) if n > 0) {}
}

/// Half-closes, then drains: the client sees EOF, not a reset.
pub fn close(mut s: TcpStream) {
    let _ = s.shutdown(Shutdown::Write);
    drain(&mut s);
}

/// The server side of an HTTP/2 connection, frame by frame.
pub struct H2Peer {
    /// The socket.
    pub sock: TcpStream,
    buf: Vec<u8>,
    /// HPACK contexts (our encoder for response blocks).
    pub hpack: TestPeer,
    /// GOAWAY error codes the client sent us.
    pub goaways: Vec<u32>,
    /// Acknowledge the client's SETTINGS as they are read (default true).
    pub auto_ack: bool,
}

impl H2Peer {
    /// Wraps an accepted socket.
    pub fn new(sock: TcpStream) -> H2Peer {
        H2Peer {
            sock,
            buf: Vec::new(),
            hpack: TestPeer::new(),
            goaways: Vec::new(),
            auto_ack: true,
        }
    }

    /// Reads the client preface and sends our SETTINGS (`params`). False at EOF or on a bad
    /// preface.
    pub fn handshake(&mut self, params: &[(u16, u32)]) -> bool {
        self.handshake_then(params, &[])
    }

    /// Like [`H2Peer::handshake`], with `extra` bytes in the same write as our SETTINGS.
    pub fn handshake_then(&mut self, params: &[(u16, u32)], extra: &[u8]) -> bool {
        if !self.preface() {
            return false;
        }
        let mut b = Vec::new();
        testing::settings(&mut b, params);
        b.extend_from_slice(extra);
        self.send(&b)
    }

    fn preface(&mut self) -> bool {
        while self.buf.len() < 24 {
            if !self.fill() {
                return false;
            }
        }
        if &self.buf[..24] != b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" {
            return false;
        }
        self.buf.drain(..24);
        true
    }

    /// Writes `b`; false if the client is gone.
    pub fn send(&mut self, b: &[u8]) -> bool {
        self.sock.write_all(b).is_ok()
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 64 * 1024];
        match self.sock.read(&mut tmp) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// The next frame from the client (SETTINGS are acknowledged, GOAWAY codes recorded), or
    /// `None` at EOF.
    pub fn frame(&mut self) -> Option<RawFrame> {
        loop {
            if self.buf.len() >= 9 {
                let len = (usize::from(self.buf[0]) << 16)
                    | (usize::from(self.buf[1]) << 8)
                    | usize::from(self.buf[2]);
                if self.buf.len() >= 9 + len {
                    let f = testing::read_frames(&self.buf[..9 + len]).pop()?;
                    self.buf.drain(..9 + len);
                    if self.auto_ack && f.kind == kind::SETTINGS && !f.has(ACK) {
                        let mut b = Vec::new();
                        testing::settings_ack(&mut b);
                        self.send(&b);
                    }
                    if f.kind == kind::GOAWAY {
                        if let Some(c) = f.error_code() {
                            self.goaways.push(c.0);
                        }
                    }
                    return Some(f);
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Reads until the client acknowledges our SETTINGS (it has then processed everything
    /// we sent before). False at EOF.
    pub fn wait_settings_ack(&mut self) -> bool {
        while let Some(f) = self.frame() {
            if f.kind == kind::SETTINGS && f.has(ACK) {
                return true;
            }
        }
        false
    }

    /// The stream id of the next request (HEADERS from the client), or `None` at EOF.
    pub fn request(&mut self) -> Option<u32> {
        while let Some(f) = self.frame() {
            if f.kind == kind::HEADERS {
                return Some(f.stream);
            }
        }
        None
    }

    /// Requests (HEADERS) among the frames already received and not yet read, without
    /// waiting for more (a client sends a burst of requests in one write).
    pub fn buffered_requests(&self) -> usize {
        testing::read_frames(&self.buf)
            .iter()
            .filter(|f| f.kind == kind::HEADERS)
            .count()
    }

    /// A complete response: HEADERS (`:status`), then DATA with `body` and END_STREAM.
    pub fn respond(&mut self, stream: u32, status: u16, body: &[u8]) -> bool {
        let block = self.hpack.response_block(status, &[]);
        let mut b = Vec::new();
        testing::headers(&mut b, stream, &block, body.is_empty());
        if !body.is_empty() {
            testing::data(&mut b, stream, body, true);
        }
        self.send(&b)
    }

    /// Reads until EOF (the client closed), keeping GOAWAY codes.
    pub fn drain(&mut self) {
        while self.frame().is_some() {}
    }
}

/// A shared log of GOAWAY codes the clients sent, across connections.
pub type Codes = Arc<Mutex<Vec<u32>>>;

/// HPACK integer with an N-bit prefix (RFC 7541 §5.1) and the given high bits.
pub fn hpack_int(value: usize, prefix_bits: u8, flags: u8, dst: &mut Vec<u8>) {
    h2lab_wire::hpack::integer::encode(value, prefix_bits, flags, dst);
}

/// What one `h2lab` run did.
#[derive(Debug)]
pub struct Run {
    /// Exit status (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
    /// Highest VmHWM seen in /proc/<pid>/status while the process ran (kB).
    pub peak_rss_kb: u64,
    /// The `--json` result, or `Null` when none was written.
    pub json: serde_json::Value,
}

impl Run {
    /// `requests.<field>` of the JSON result.
    pub fn req(&self, field: &str) -> u64 {
        self.json["requests"][field]
            .as_u64()
            .unwrap_or_else(|| panic!("no requests.{field} in {}", self.dump()))
    }

    /// `errors.<field>` of the JSON result (0 when absent).
    pub fn err(&self, field: &str) -> u64 {
        self.json["errors"][field].as_u64().unwrap_or(0)
    }

    /// Stream resets by error-code name.
    pub fn resets(&self, code: &str) -> u64 {
        self.json["errors"]["stream_resets"][code]
            .as_u64()
            .unwrap_or(0)
    }

    /// The run's output, for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "exit {:?} after {:?}, peak RSS {} kB\n--- stdout\n{}--- stderr\n{}",
            self.code, self.elapsed, self.peak_rss_kb, self.stdout, self.stderr
        )
    }

    /// The `requests:` line of the printed report.
    pub fn requests_line(&self) -> &str {
        self.stdout
            .lines()
            .find(|l| l.starts_with("requests: "))
            .unwrap_or_else(|| panic!("no report printed\n{}", self.dump()))
    }
}

/// Peak resident set size so far (VmHWM, kB) of process `pid`, if readable.
fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A fresh JSON path for one run.
fn json_path() -> std::path::PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("h2lab-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("run-{}.json", N.fetch_add(1, Ordering::SeqCst)))
}

/// Runs `h2lab bench <args> --json <tmp> <url>`; kills it and fails the test if it is still
/// running after `limit`.
pub fn bench(args: &[&str], url: &str, limit: Duration) -> Run {
    let json = json_path();
    let start = Instant::now();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("h2lab"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut peak = 0;
    let status = loop {
        if let Some(kb) = vm_hwm_kb(pid) {
            peak = peak.max(kb);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "h2lab bench {args:?} {url} still running after {limit:?}\n--- stdout\n{}",
                t_out.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let stdout = t_out.join().unwrap();
    let stderr = t_err.join().unwrap();
    let json = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    Run {
        code: status.code(),
        stdout,
        stderr,
        elapsed,
        peak_rss_kb: peak,
        json,
    }
}
