//! `--push` end to end with the wire crate's client: a `/page` pushes its CSS and JS
//! (PUSH_PROMISE before the page's DATA, answered by the router), names them in `link`,
//! pushes nothing to a client that sent SETTINGS_ENABLE_PUSH = 0, and a pushed stream the
//! client resets is dropped without harming the connection.

mod common;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};

use common::h2_client::{H2Client, Sink};
use common::start;
use h2lab_wire::h2::{ErrorCode, Events, HeadersDone, LocalSettings, StreamId};

#[derive(Debug, PartialEq, Eq)]
enum Ev {
    Promise(u32, u32),
    Data(u32),
}

#[derive(Default)]
struct Recorder {
    order: Vec<Ev>,
    promised_paths: HashMap<u32, String>,
    headers: HashMap<u32, Vec<(String, String)>>,
    status: HashMap<u32, u16>,
    body: HashMap<u32, usize>,
    ended: Vec<u32>,
    settings: bool,
}

impl Events for Recorder {
    fn header(&mut self, s: StreamId, n: &[u8], v: &[u8]) {
        self.headers.entry(s.get()).or_default().push((
            String::from_utf8_lossy(n).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ));
    }
    fn headers_done(&mut self, s: StreamId, d: HeadersDone) {
        if let Some(st) = d.status {
            self.status.insert(s.get(), st);
        }
        if d.end_stream {
            self.ended.push(s.get());
        }
    }
    fn data(&mut self, s: StreamId, data: &[u8], end: bool) {
        if self.order.last() != Some(&Ev::Data(s.get())) {
            self.order.push(Ev::Data(s.get()));
        }
        *self.body.entry(s.get()).or_default() += data.len();
        if end {
            self.ended.push(s.get());
        }
    }
    fn settings_changed(&mut self) {
        self.settings = true;
    }
    fn promised_header(&mut self, p: StreamId, n: &[u8], v: &[u8]) {
        if n == b":path" {
            self.promised_paths
                .insert(p.get(), String::from_utf8_lossy(v).into_owned());
        }
    }
    fn push_promise(&mut self, parent: StreamId, p: StreamId) {
        self.order.push(Ev::Promise(parent.get(), p.get()));
    }
}

impl Sink for Recorder {
    fn settings_seen(&self) -> bool {
        self.settings
    }
}

type Client = H2Client<Recorder>;

fn connect(addr: SocketAddr, enable_push: bool) -> Client {
    let local = LocalSettings {
        enable_push,
        ..LocalSettings::client()
    };
    H2Client::handshake(TcpStream::connect(addr).unwrap(), local)
}

const PAGE: &str = "/page?n=3&seed=5&css=2&js=1&css_size=4k&js_size=8k";

#[test]
fn page_pushes_its_css_and_js_before_its_data() {
    let server = start(|c| c.push = true);
    let mut c = connect(server.addr().unwrap(), true);
    let page = c.get(PAGE);
    c.until(|s| s.ended.contains(&page) && s.ended.len() == 4);
    let s = &c.sink;
    // Two stylesheets and one script promised on the page's stream, even ids.
    let promised: Vec<u32> = s
        .order
        .iter()
        .filter_map(|e| match e {
            Ev::Promise(p, id) if *p == page => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(promised, vec![2, 4, 6]);
    // RFC 9113 §8.4: the promises come before the page's content.
    let first_page_data = s.order.iter().position(|e| *e == Ev::Data(page)).unwrap();
    let last_promise = s
        .order
        .iter()
        .rposition(|e| matches!(e, Ev::Promise(..)))
        .unwrap();
    assert!(last_promise < first_page_data, "{:?}", s.order);
    let link = s.headers[&page]
        .iter()
        .find(|(n, _)| n == "link")
        .map(|(_, v)| v.clone())
        .expect("link header");
    for id in promised {
        let path = &s.promised_paths[&id];
        assert!(path.starts_with("/asset/5/"), "{path}");
        assert!(link.contains(&format!("<{path}>; rel=preload")), "{link}");
        assert_eq!(s.status[&id], 200);
        // The router answered it: the asset's size is in its name.
        let size: usize = path
            .rsplit('-')
            .next()
            .and_then(|t| t.split('.').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(s.body[&id], size, "{path}");
    }
    assert!(link.contains("as=style") && link.contains("as=script"));
}

#[test]
fn client_refusing_push_never_receives_a_pushed_byte() {
    let server = start(|c| c.push = true);
    let mut c = connect(server.addr().unwrap(), false);
    let page = c.get(PAGE);
    c.until(|s| s.ended.contains(&page));
    // A PUSH_PROMISE would have been a connection error (the client's recv expects none).
    assert!(c.sink.order.iter().all(|e| *e == Ev::Data(page)));
    assert!(c.sink.body.keys().all(|&id| id == page));
    // The page still names its assets for the client to fetch.
    assert!(c.sink.headers[&page].iter().any(|(n, _)| n == "link"));
    // Every byte read belongs to the page: its body plus frame and head overhead only.
    let body = c.sink.body[&page];
    assert!(
        c.read < body + 2048,
        "read {} for a {body}-byte page",
        c.read
    );
}

#[test]
fn push_is_off_by_default() {
    let server = start(|_| {});
    let mut c = connect(server.addr().unwrap(), true);
    let page = c.get(PAGE);
    c.until(|s| s.ended.contains(&page));
    assert!(c.sink.order.iter().all(|e| *e == Ev::Data(page)));
    assert!(!c.sink.headers[&page].iter().any(|(n, _)| n == "link"));
}

#[test]
fn reset_push_is_cancelled_and_the_connection_goes_on() {
    let server = start(|c| c.push = true);
    let mut c = connect(server.addr().unwrap(), true);
    let page = c.get("/page?n=1&seed=5&js=1&js_size=2m");
    c.until(|s| s.order.iter().any(|e| matches!(e, Ev::Promise(..))));
    // Cancel the 1-3 MB script while at most a window (64 KiB) of it can be in flight.
    assert!(c
        .conn
        .reset(StreamId::new(2), ErrorCode::CANCEL, &mut c.out));
    c.flush();
    c.until(|s| s.ended.contains(&page));
    // The connection still serves: a new request completes after the cancelled push.
    let again = c.get("/ping");
    c.until(|s| s.ended.contains(&again));
    assert!(
        !c.sink.ended.contains(&2),
        "cancelled push did not complete"
    );
    // Far less than the script was read: the server stopped sending it.
    assert!(c.read < 1 << 20, "read {} bytes", c.read);
}
