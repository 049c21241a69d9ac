//! A raw HTTP/2 client for the proxy's fronts (h2c, or h2 over TLS by ALPN), on the wire
//! crate's frame builders and frame reader (`h2lab_wire::h2::testing`): scripts what a real
//! client would not send (resets, floods, bombs, broken prefaces) and reads back exactly what
//! the proxy sent.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_proxy::RunningProxy;
use h2lab_wire::h2::testing::{self, kind, RawFrame, TestPeer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// END_STREAM flag.
pub const END_STREAM: u8 = 0x1;

/// Where a raw client connects: the cleartext port (h2c by prior knowledge) or the TLS port
/// (HTTP/2 by ALPN, trusting the proxy's certificate).
#[derive(Clone)]
pub struct Front {
    /// The port's address.
    pub addr: SocketAddr,
    /// TLS client settings (ALPN `h2`) for the TLS port.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// A TLS client configuration that trusts `p`'s certificate and offers ALPN `alpn` only.
pub fn client_config(p: &RunningProxy, alpn: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(p.cert_path().expect("certificate")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cc = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cc.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(cc)
}

impl Front {
    /// The cleartext port at `addr`.
    pub fn h2c(addr: SocketAddr) -> Front {
        Front { addr, tls: None }
    }

    /// The TLS port of `p` (which needs `tls_listen`), ALPN `h2` only.
    pub fn tls(p: &RunningProxy) -> Front {
        Front {
            addr: p.tls_addr().expect("TLS port"),
            tls: Some(client_config(p, b"h2")),
        }
    }

    /// `h2c` or `h2 (TLS)`, for messages.
    pub fn name(&self) -> &'static str {
        if self.tls.is_some() {
            "h2 (TLS)"
        } else {
            "h2c"
        }
    }
}

/// A client socket: cleartext, or TLS on top of it.
pub enum Sock {
    /// The cleartext port.
    Tcp(TcpStream),
    /// The TLS port, handshake done.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Sock {
    /// The TCP socket underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Sock::Tcp(s) => s,
            Sock::Tls(t) => &t.sock,
        }
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.flush(),
            Sock::Tls(t) => t.flush(),
        }
    }
}

/// A client connection and everything read from it.
pub struct H2Raw {
    /// The socket.
    pub s: Sock,
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
            s: Sock::Tcp(s),
            buf: Vec::new(),
            closed: false,
            peer: TestPeer::new(),
        }
    }

    /// A connection to `front`, nothing sent yet: for the TLS port, the handshake done
    /// (within 10 s) and ALPN `h2` agreed.
    pub fn open(front: &Front) -> H2Raw {
        let mut r = H2Raw::tcp(front.addr);
        let Some(cc) = &front.tls else { return r };
        let Sock::Tcp(tcp) = r.s else { unreachable!() };
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(cc.clone(), name).unwrap();
        let mut t = rustls::StreamOwned::new(conn, tcp);
        t.sock
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        while t.conn.is_handshaking() {
            t.conn.complete_io(&mut t.sock).expect("TLS handshake");
        }
        assert_eq!(t.conn.alpn_protocol(), Some(&b"h2"[..]), "ALPN");
        r.s = Sock::Tls(Box::new(t));
        r
    }

    /// Connects with the preface and SETTINGS (`settings`), and acknowledges the proxy's
    /// SETTINGS once they arrive (within 5 s).
    pub fn connect(addr: SocketAddr, settings: &[(u16, u32)]) -> H2Raw {
        H2Raw::connect_to(&Front::h2c(addr), settings)
    }

    /// As [`H2Raw::connect`], to `front`.
    pub fn connect_to(front: &Front, settings: &[(u16, u32)]) -> H2Raw {
        let mut r = H2Raw::open(front);
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
            .tcp()
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
    ping_h2_to(&Front::h2c(addr));
}

/// As [`ping_h2`], on `front`.
pub fn ping_h2_to(front: &Front) {
    let mut c = H2Raw::connect_to(front, &[]);
    assert!(c.request(1, "GET", "/ping", true));
    let done = c.read_until(Duration::from_secs(10), |fr| {
        fr.iter()
            .any(|f| f.stream == 1 && f.flags & END_STREAM != 0 && f.kind <= kind::HEADERS)
    });
    assert!(done, "no response to /ping: {:?}", c.frames());
    assert_eq!(c.statuses(), [(1, 200)]);
    assert_eq!(c.body(1).0, b"pong");
}
