//! Shared helpers for the server integration tests: start a server in-process on port 0 and
//! speak HTTP/1.1 over raw sockets.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use h2lab_server::{RunningServer, ServerConfig};

pub mod h2_client;
pub mod h3;
pub mod matrix;

/// Starts a quiet server on 127.0.0.1:0 with `f` applied to the config.
pub fn start(f: impl FnOnce(&mut ServerConfig)) -> RunningServer {
    let mut cfg = ServerConfig::local();
    f(&mut cfg);
    h2lab_server::spawn(cfg).expect("server starts")
}

/// Starts a server with a TLS port too; the certificate is generated into a temp dir.
pub fn start_tls(f: impl FnOnce(&mut ServerConfig)) -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let s = start(move |c| {
        c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
        c.cert_dir = Some(d);
        f(c)
    });
    (s, dir)
}

/// A parsed HTTP/1.x response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A blocking HTTP/1.1 client over any byte stream, keeping unread bytes between responses
/// (so pipelined responses can be read one by one).
pub struct Client<S: Read + Write> {
    pub stream: S,
    buf: Vec<u8>,
}

pub fn connect(addr: SocketAddr) -> Client<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    Client::new(s)
}

impl<S: Read + Write> Client<S> {
    pub fn new(stream: S) -> Self {
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
        self.stream.flush().unwrap();
    }

    pub fn get(&mut self, target: &str) -> Resp {
        self.send(format!("GET {target} HTTP/1.1\r\nhost: test\r\n\r\n").as_bytes());
        self.read_response(false)
    }

    fn fill(&mut self) -> usize {
        let mut tmp = [0u8; 65536];
        match self.stream.read(&mut tmp) {
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                n
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => panic!("read: {e}"),
        }
    }

    /// Reads one response (`head`: the request was HEAD, no body).
    pub fn read_response(&mut self, head: bool) -> Resp {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(
                self.fill() > 0,
                "EOF before a response head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head_text = String::from_utf8(self.buf[..end].to_vec()).unwrap();
        self.buf.drain(..end);
        let mut lines = head_text.split("\r\n");
        let status_line = lines.next().unwrap();
        assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
        let status: u16 = status_line[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        let mut r = Resp {
            status,
            headers,
            body: Vec::new(),
        };
        if head || status == 204 || status == 304 || (100..200).contains(&status) {
            return r;
        }
        match r.header("content-length") {
            Some(cl) => {
                let n: usize = cl.parse().unwrap();
                while self.buf.len() < n {
                    assert!(self.fill() > 0, "EOF in body");
                }
                r.body = self.buf.drain(..n).collect();
            }
            None => {
                while self.fill() > 0 {}
                r.body = std::mem::take(&mut self.buf);
            }
        }
        r
    }

    /// Asserts the server closed the connection (EOF, possibly after nothing else).
    pub fn expect_eof(&mut self) {
        assert!(
            self.buf.is_empty(),
            "unexpected bytes: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        let n = self.fill();
        assert_eq!(
            n,
            0,
            "expected EOF, got {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }
}

/// A rustls client config trusting `cert` and offering `alpn`.
pub fn tls_client_config(cert: &std::path::Path, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

/// A blocking TLS client to `addr` (SNI `localhost`).
pub fn connect_tls(
    addr: SocketAddr,
    cert: &std::path::Path,
    alpn: &[&[u8]],
) -> Client<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let cfg = tls_client_config(cert, alpn);
    let conn = rustls::ClientConnection::new(cfg, "localhost".try_into().unwrap()).unwrap();
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    Client::new(rustls::StreamOwned::new(conn, s))
}

/// Whether missing client tools must fail the tests: CI installs every anchor
/// (`.ci/install-anchors.sh`), so there a missing tool is an error, not a skip.
pub fn tools_required() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The first of `candidates` that exists. When none does: panics under `CI=true`, else
/// prints that the test is skipped and returns `None`.
pub fn tool(name: &str, candidates: &[std::path::PathBuf]) -> Option<std::path::PathBuf> {
    let found = tool_in(tools_required(), name, candidates);
    if found.is_none() {
        h2lab_testkit::note_skip(name);
    }
    found
}

/// [`tool`] with the CI rule given (`required`: a missing tool panics), without recording a skip.
pub fn tool_in(
    required: bool,
    name: &str,
    candidates: &[std::path::PathBuf],
) -> Option<std::path::PathBuf> {
    if let Some(p) = candidates.iter().find(|p| p.exists()) {
        return Some(p.clone());
    }
    assert!(
        !required,
        "{name} is not installed (looked at {candidates:?}); CI=true requires it \
         (.ci/install-anchors.sh)"
    );
    None
}

/// `curl` if installed (see [`tool`]).
pub fn curl() -> Option<&'static str> {
    const PATHS: [&str; 2] = ["/usr/bin/curl", "/usr/local/bin/curl"];
    let found = tool("curl", &PATHS.map(std::path::PathBuf::from))?;
    PATHS.into_iter().find(|p| std::path::Path::new(p) == found)
}
