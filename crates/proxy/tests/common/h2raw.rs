//! A raw HTTP/2 client for the proxy's h2c front, on the wire crate's frame builders and
//! frame reader (`h2lab_wire::h2::testing`): scripts what a real client would not send
//! (resets, floods, bombs, broken prefaces) and reads back exactly what the proxy sent.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use h2lab_wire::h2::testing::{self, kind, RawFrame, TestPeer};

/// END_STREAM flag.
pub const END_STREAM: u8 = 0x1;

/// A client connection and everything read from it.
pub struct H2Raw {
    /// The socket.
    pub s: TcpStream,
    /// Every byte the proxy sent (kept whole: tests read a bounded amount).
    pub buf: Vec<u8>,
    /// The proxy closed (EOF or reset).
    pub closed: bool,
    /// Encoder of the request blocks.
    pub peer: TestPeer,
}

impl H2Raw {
    /// A TCP connection, nothing sent yet.
    pub fn tcp(addr: SocketAddr) -> H2Raw {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        H2Raw {
            s,
            buf: Vec::new(),
            closed: false,
            peer: TestPeer::new(),
        }
    }

    /// Connects with the preface and SETTINGS (`settings`), and acknowledges the proxy's
    /// SETTINGS once they arrive (within 5 s).
    pub fn connect(addr: SocketAddr, settings: &[(u16, u32)]) -> H2Raw {
        let mut r = H2Raw::tcp(addr);
        let mut b = Vec::new();
        testing::preface(&mut b);
        testing::settings(&mut b, settings);
        r.send(&b);
        let got = r.read_until(Duration::from_secs(5), |f| {
            f.iter()
                .any(|f| f.kind == kind::SETTINGS && f.flags & 0x1 == 0)
        });
        assert!(got, "no SETTINGS from the proxy");
        let mut ack = Vec::new();
        testing::settings_ack(&mut ack);
        r.send(&ack);
        r
    }

    /// Writes `b`; false (and `closed`) when the proxy is gone.
    pub fn send(&mut self, b: &[u8]) -> bool {
        if self.s.write_all(b).is_err() {
            self.closed = true;
        }
        !self.closed
    }

    /// A request HEADERS frame for `path` on `stream`.
    pub fn request(&mut self, stream: u32, method: &str, path: &str, end: bool) -> bool {
        let block = self.peer.request_block(method, path, &[]);
        let mut b = Vec::new();
        testing::headers(&mut b, stream, &block, end);
        self.send(&b)
    }

    /// Reads what is there, waiting at most `wait` for the first byte; notes EOF.
    pub fn read_some(&mut self, wait: Duration) -> usize {
        let _ = self
            .s
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))));
        let mut tmp = [0u8; 64 * 1024];
        match self.s.read(&mut tmp) {
            Ok(0) => {
                self.closed = true;
                0
            }
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                n
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => 0,
            Err(e) if e.kind() == ErrorKind::Interrupted => 0,
            Err(_) => {
                self.closed = true;
                0
            }
        }
    }

    /// Reads until `cond` holds for the frames read so far, the proxy closes, or `limit`
    /// passes; returns whether `cond` held.
    pub fn read_until(&mut self, limit: Duration, cond: impl Fn(&[RawFrame]) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if cond(&self.frames()) {
                return true;
            }
            let now = Instant::now();
            if self.closed || now >= deadline {
                return false;
            }
            self.read_some((deadline - now).min(Duration::from_millis(50)));
        }
    }

    /// Reads until the proxy closes the connection (or `limit` passes); true if it did.
    pub fn wait_close(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.closed && Instant::now() < deadline {
            self.read_some(Duration::from_millis(50));
        }
        self.closed
    }

    /// The frames read so far.
    pub fn frames(&self) -> Vec<RawFrame> {
        testing::read_frames(&self.buf)
    }

    /// Error code of the first GOAWAY read.
    pub fn goaway(&self) -> Option<u32> {
        self.frames()
            .iter()
            .find(|f| f.kind == kind::GOAWAY)
            .and_then(|f| f.error_code())
            .map(|c| c.0)
    }

    /// The `:status` of every response HEADERS read, by stream.
    pub fn statuses(&self) -> Vec<(u32, u16)> {
        TestPeer::new()
            .decode_headers(&self.frames())
            .into_iter()
            .filter_map(|(id, fields)| {
                let s = fields.iter().find(|(n, _)| n == ":status")?;
                Some((id, s.1.parse().ok()?))
            })
            .collect()
    }

    /// Body bytes read on `stream`, and whether it ended.
    pub fn body(&self, stream: u32) -> (Vec<u8>, bool) {
        let mut body = Vec::new();
        let mut ended = false;
        for f in self.frames().iter().filter(|f| f.stream == stream) {
            if f.kind == kind::DATA {
                body.extend_from_slice(&f.payload);
            }
            if (f.kind == kind::DATA || f.kind == kind::HEADERS) && f.flags & END_STREAM != 0 {
                ended = true;
            }
        }
        (body, ended)
    }
}

/// A fresh HTTP/2 connection gets `GET /ping` answered 200 "pong" (the proxy still serves
/// HTTP/2 clients).
pub fn ping_h2(addr: SocketAddr) {
    let mut c = H2Raw::connect(addr, &[]);
    assert!(c.request(1, "GET", "/ping", true));
    let done = c.read_until(Duration::from_secs(10), |fr| {
        fr.iter()
            .any(|f| f.stream == 1 && f.flags & END_STREAM != 0 && f.kind <= kind::HEADERS)
    });
    assert!(done, "no response to /ping: {:?}", c.frames());
    assert_eq!(c.statuses(), [(1, 200)]);
    assert_eq!(c.body(1).0, b"pong");
}
