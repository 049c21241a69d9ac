//! Test helpers: in-process `h2lab serve` backends, a proxy in front of them, and a blocking
//! HTTP/1.1 client that parses responses with h2lab's own parser.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use h2lab_proxy::{ProxyConfig, RunningProxy, UpstreamAddr, UpstreamProtocol};
use h2lab_server::{RunningServer, ServerConfig};
use h2lab_wire::h1::{Event, ResponseParser};

pub mod h2raw;

/// `n` backends on port 0.
pub fn backends(n: usize) -> Vec<RunningServer> {
    (0..n)
        .map(|_| h2lab_server::spawn(ServerConfig::local()).expect("backend"))
        .collect()
}

/// A proxy in front of `backends` speaking `proto` upstream.
pub fn proxy(
    backends: &[RunningServer],
    proto: UpstreamProtocol,
    tweak: impl FnOnce(&mut ProxyConfig),
) -> RunningProxy {
    let ups = backends
        .iter()
        .map(|b| UpstreamAddr::Tcp(b.addr().expect("addr")))
        .collect();
    let mut c = ProxyConfig::local(ups, proto);
    tweak(&mut c);
    h2lab_proxy::spawn(c).expect("proxy")
}

/// A parsed response.
#[derive(Debug, Default)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub trailers: Vec<(String, String)>,
    pub keep_alive: bool,
    /// Interim responses before the final one: status and `link` field.
    pub interim: Vec<(u16, Option<String>)>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A blocking keep-alive HTTP/1.1 client.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_nodelay(true).unwrap();
        Client { s, buf: Vec::new() }
    }

    /// Wraps a connected socket.
    pub fn from_stream(s: TcpStream) -> Client {
        Client { s, buf: Vec::new() }
    }

    /// Sends `head` then `body`, reads one response (`head_req`: it answers a HEAD).
    pub fn send(&mut self, head: &str, body: &[u8], head_req: bool) -> Resp {
        self.s.write_all(head.as_bytes()).expect("write head");
        for c in body.chunks(64 * 1024) {
            self.s.write_all(c).expect("write body");
        }
        self.read_response(head_req)
    }

    pub fn get(&mut self, path: &str) -> Resp {
        self.send(
            &format!("GET {path} HTTP/1.1\r\nHost: test.example\r\n\r\n"),
            b"",
            false,
        )
    }

    pub fn read_response(&mut self, head_req: bool) -> Resp {
        let mut p = ResponseParser::new();
        p.start(!head_req);
        let mut r = Resp::default();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            loop {
                let (n, ev) = p.parse(&self.buf).expect("valid response");
                let mut done = false;
                match ev {
                    Event::Interim(h) => r.interim.push((
                        h.status,
                        h.headers
                            .get("link")
                            .map(|v| String::from_utf8_lossy(v).into_owned()),
                    )),
                    Event::Head(h) => {
                        r.status = h.status;
                        r.headers = h
                            .headers
                            .iter()
                            .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into()))
                            .collect();
                    }
                    Event::Body(b) => r.body.extend_from_slice(b),
                    Event::Trailers { headers, .. } => {
                        r.trailers = headers
                            .iter()
                            .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into()))
                            .collect();
                    }
                    Event::End { keep_alive } => {
                        r.keep_alive = keep_alive;
                        done = true;
                    }
                    Event::NeedMore => {
                        self.buf.drain(..n);
                        break;
                    }
                    other => panic!("unexpected {other:?}"),
                }
                self.buf.drain(..n);
                if done {
                    return r;
                }
            }
            let n = self.s.read(&mut chunk).expect("read");
            if n == 0 {
                match p.eof().expect("clean end") {
                    Event::End { keep_alive } => {
                        r.keep_alive = keep_alive;
                        return r;
                    }
                    other => panic!("connection closed mid-response: {other:?}"),
                }
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Polls `cond` until it holds or `secs` pass.
pub fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}
