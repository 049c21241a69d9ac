//! The page fetcher sends each request's own RFC 9218 `priority` (CSS `u=0`, JS `u=1`,
//! images `u=5, i`), not the first request's: a scripted HTTP/2 server (the wire crate's
//! server role) records the `priority` field of every request it receives.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher};
use h2lab_engine::Target;
use h2lab_wire::h2::{Connection, Events, HeadersDone, Limits, LocalSettings, Role, StreamId};

#[derive(Default)]
struct Rec {
    fields: HashMap<u32, (String, String)>,
    done: Vec<u32>,
}

impl Events for Rec {
    fn header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) {
        let e = self.fields.entry(stream.get()).or_default();
        let v = String::from_utf8_lossy(value).into_owned();
        match name {
            b":path" => e.0 = v,
            b"priority" => e.1 = v,
            _ => {}
        }
    }
    fn headers_done(&mut self, stream: StreamId, d: HeadersDone) {
        if d.end_stream {
            self.done.push(stream.get());
        }
    }
}

/// Serves one HTTP/2 connection: every request gets an empty 200; returns path → priority.
fn serve_one(l: TcpListener, requests: usize) -> HashMap<String, String> {
    let (mut sock, _) = l.accept().unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
    let (mut rec, mut inbuf, mut out) = (Rec::default(), Vec::new(), Vec::new());
    let mut answered = 0;
    while answered < requests {
        let mut b = [0u8; 16 * 1024];
        let n = sock.read(&mut b).unwrap();
        assert!(n > 0, "client closed early");
        inbuf.extend_from_slice(&b[..n]);
        let used = conn.recv(&inbuf, &mut out, &mut rec).unwrap();
        inbuf.drain(..used);
        for id in rec.done.drain(..) {
            conn.send_header_fields(StreamId::new(id), &[(b":status", b"200")], true, &mut out)
                .unwrap();
            answered += 1;
        }
        sock.write_all(&out).unwrap();
        out.clear();
    }
    rec.fields.into_values().collect()
}

#[test]
fn each_request_carries_its_own_browser_priority() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let paths: Vec<String> = ["/page", "/a.css", "/b.js", "/c.png", "/d.png"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let n = paths.len();
    let server = std::thread::spawn(move || serve_one(l, n));
    let origin = Target::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
    let mut f = Fetcher::new(FetchConfig::browser(origin, FetchProtocol::H2), &paths).unwrap();
    let all: Vec<usize> = (0..n).collect();
    let b = f.fetch(&all, false).unwrap();
    assert!(b.records.iter().all(|r| r.status == 200));
    let got = server.join().unwrap();
    let want: HashMap<String, String> = [
        ("/page", "u=0, i"),
        ("/a.css", "u=0"),
        ("/b.js", "u=1"),
        ("/c.png", "u=5, i"),
        ("/d.png", "u=5, i"),
    ]
    .iter()
    .map(|(p, v)| (p.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want);
}
