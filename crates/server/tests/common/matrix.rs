//! The protocol table of the behaviour tests (`tests/protocols.rs`), in the style of hyper's
//! `tests/support`: every row is a way to reach `h2lab serve`, and [`Conn`] gives each the
//! same blocking request API, so a behaviour test is written once and a new protocol is one
//! more [`Proto`] row (and one more [`Conn`] variant).
//!
//! HTTP/1.1 rows use the raw-socket [`Client`] of `common`; HTTP/2 rows use the `h2` crate
//! (an independent implementation) on a current-thread tokio runtime.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request};

use super::{connect, connect_tls, Client, Resp};

/// One way to reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// HTTP/1.1 on the cleartext port.
    Http1,
    /// HTTP/1.1 over TLS (ALPN `http/1.1`).
    Http1Tls,
    /// HTTP/2 with prior knowledge on the cleartext port.
    H2c,
    /// HTTP/2 over TLS (ALPN `h2`).
    H2Tls,
}

impl Proto {
    /// Every row.
    pub const ALL: [Proto; 4] = [Proto::Http1, Proto::Http1Tls, Proto::H2c, Proto::H2Tls];

    /// HTTP/2 (multiplexed) rather than HTTP/1.1 (pipelined).
    pub fn is_h2(self) -> bool {
        matches!(self, Proto::H2c | Proto::H2Tls)
    }

    /// Over TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Proto::Http1Tls | Proto::H2Tls)
    }

    /// What `/info` reports as `protocol`.
    pub fn info_name(self) -> &'static str {
        if self.is_h2() {
            "HTTP/2"
        } else {
            "HTTP/1.1"
        }
    }
}

/// Where the server listens.
#[derive(Debug, Clone)]
pub struct Target {
    /// Cleartext port.
    pub addr: SocketAddr,
    /// TLS port.
    pub tls_addr: SocketAddr,
    /// The certificate the TLS port presents.
    pub cert: PathBuf,
}

impl Target {
    /// The ports of a server started with [`super::start_tls`].
    pub fn of(s: &h2lab_server::RunningServer) -> Target {
        Target {
            addr: s.addr().unwrap(),
            tls_addr: s.tls_addr().unwrap(),
            cert: s.cert_path().unwrap().to_path_buf(),
        }
    }
}

/// A byte stream the HTTP/1.1 client can own (TCP or TLS over TCP).
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// One client connection of any row.
pub enum Conn {
    /// HTTP/1.1 (cleartext or TLS).
    H1(Client<Box<dyn Stream>>),
    /// HTTP/2 (h2c or TLS).
    H2(H2Conn),
}

/// An `h2` crate connection driven by its own current-thread runtime.
pub struct H2Conn {
    rt: tokio::runtime::Runtime,
    send: SendRequest<Bytes>,
    conn: Option<tokio::task::JoinHandle<Result<(), h2::Error>>>,
}

/// How the server ended a connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// HTTP/1.1: EOF after complete responses. HTTP/2: the `h2` crate's connection finished
    /// without error (no error GOAWAY, no reset; the GOAWAY frames themselves are checked in
    /// `h2_raw.rs`).
    Clean,
    /// Anything else (the text says what).
    Other(String),
}

const PATIENCE: Duration = Duration::from_secs(20);

impl Conn {
    /// Opens a connection of row `proto` to `target` (HTTP/2: handshake done).
    pub fn open(proto: Proto, target: &Target) -> Conn {
        match proto {
            Proto::Http1 => {
                let c = connect(target.addr);
                Conn::H1(Client::new(Box::new(c.stream)))
            }
            Proto::Http1Tls => {
                let c = connect_tls(target.tls_addr, &target.cert, &[b"http/1.1"]);
                Conn::H1(Client::new(Box::new(c.stream)))
            }
            Proto::H2c | Proto::H2Tls => Conn::H2(H2Conn::open(proto, target)),
        }
    }

    /// One request (`body`: sent with a content length); waits for the whole response.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        match self {
            Conn::H1(c) => {
                c.send(&h1_request(method, path, headers, body));
                c.read_response(method == "HEAD")
            }
            Conn::H2(c) => {
                let req = h2_request(method, path, headers);
                let send = c.send.clone();
                let body = body.map(Bytes::copy_from_slice);
                c.rt.block_on(async move { h2_exchange(send, req, body).await })
            }
        }
    }

    /// `GET path`.
    pub fn get(&mut self, path: &str) -> Resp {
        self.send("GET", path, &[], None)
    }

    /// `GET` every path with all requests in flight at once (HTTP/1.1: pipelined on this
    /// connection; HTTP/2: concurrent streams); responses in request order.
    pub fn get_all(&mut self, paths: &[String]) -> Vec<Resp> {
        match self {
            Conn::H1(c) => {
                let mut batch = Vec::new();
                for p in paths {
                    batch.extend_from_slice(&h1_request("GET", p, &[], None));
                }
                c.send(&batch);
                paths.iter().map(|_| c.read_response(false)).collect()
            }
            Conn::H2(c) => {
                let tasks: Vec<_> = paths
                    .iter()
                    .map(|p| {
                        let req = h2_request("GET", p, &[]);
                        let send = c.send.clone();
                        c.rt.spawn(async move { h2_exchange(send, req, None).await })
                    })
                    .collect();
                c.rt.block_on(async move {
                    let mut out = Vec::with_capacity(tasks.len());
                    for t in tasks {
                        out.push(t.await.expect("request task"));
                    }
                    out
                })
            }
        }
    }

    /// Waits until the server ends the connection; says how.
    pub fn wait_end(&mut self) -> Ended {
        match self {
            Conn::H1(c) => {
                let mut b = [0u8; 1024];
                match c.stream.read(&mut b) {
                    Ok(0) => Ended::Clean,
                    Ok(n) => Ended::Other(format!(
                        "unexpected bytes {:?}",
                        String::from_utf8_lossy(&b[..n])
                    )),
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ended::Clean,
                    Err(e) => Ended::Other(e.to_string()),
                }
            }
            Conn::H2(c) => {
                let conn = c.conn.take().expect("connection not yet ended");
                match c
                    .rt
                    .block_on(async { tokio::time::timeout(PATIENCE, conn).await })
                {
                    Ok(Ok(Ok(()))) => Ended::Clean,
                    Ok(Ok(Err(e))) => Ended::Other(format!("connection error: {e}")),
                    Ok(Err(e)) => Ended::Other(format!("connection task: {e}")),
                    Err(_) => Ended::Other("still open".into()),
                }
            }
        }
    }
}

impl H2Conn {
    fn open(proto: Proto, target: &Target) -> H2Conn {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (send, conn) = rt.block_on(async {
            if proto == Proto::H2Tls {
                let cfg = super::tls_client_config(&target.cert, &[b"h2"]);
                let tcp = tokio::net::TcpStream::connect(target.tls_addr)
                    .await
                    .unwrap();
                tcp.set_nodelay(true).unwrap();
                let tls = tokio_rustls::TlsConnector::from(cfg)
                    .connect("localhost".try_into().unwrap(), tcp)
                    .await
                    .unwrap();
                assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
                let (send, conn) = h2::client::handshake(tls).await.unwrap();
                (send, tokio::spawn(conn))
            } else {
                let tcp = tokio::net::TcpStream::connect(target.addr).await.unwrap();
                tcp.set_nodelay(true).unwrap();
                let (send, conn) = h2::client::handshake(tcp).await.unwrap();
                (send, tokio::spawn(conn))
            }
        });
        let c = H2Conn {
            rt,
            send,
            conn: Some(conn),
        };
        // One exchange first so the client has the server's SETTINGS (before them it may
        // open more streams than the server allows, which it refuses, as it should).
        let req = h2_request("GET", "/ping", &[]);
        let send = c.send.clone();
        let r =
            c.rt.block_on(async move { h2_exchange(send, req, None).await });
        assert_eq!(r.body, b"pong");
        c
    }
}

fn h1_request(method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nhost: test\r\n").into_bytes();
    for (n, v) in headers {
        r.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    if let Some(b) = body {
        r.extend_from_slice(format!("content-length: {}\r\n\r\n", b.len()).as_bytes());
        r.extend_from_slice(b);
    } else {
        r.extend_from_slice(b"\r\n");
    }
    r
}

fn h2_request(method: &str, path: &str, headers: &[(&str, &str)]) -> Request<()> {
    let mut b = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(format!("http://localhost{path}"));
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    b.body(()).unwrap()
}

async fn h2_exchange(client: SendRequest<Bytes>, req: Request<()>, body: Option<Bytes>) -> Resp {
    let mut client = client.ready().await.expect("connection ready");
    let (fut, mut send) = client
        .send_request(req, body.is_none())
        .expect("request sent");
    if let Some(b) = body {
        send.send_data(b, true).unwrap();
    }
    let resp = fut.await.expect("response");
    let (parts, mut recv) = resp.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.expect("response body");
        data.extend_from_slice(&chunk);
        let _ = recv.flow_control().release_capacity(chunk.len());
    }
    Resp {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap().to_string()))
            .collect(),
        body: data,
    }
}
