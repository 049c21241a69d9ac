//! Sans-IO tests of [`H3Conn`] with the exact octets Chromium sends: two `quinn-proto`
//! endpoints joined in memory (no socket, no clock: time is a value handed to both), a client
//! that writes Chromium's control, QPACK and request streams byte for byte as captured from
//! Chromium 156 against `h2lab serve --h3`, and the server's connection driven as the serve
//! loop drives it.
//!
//! Chromium's request HEADERS reference QPACK dynamic-table entries that its encoder stream
//! inserts in the same flight (Required Insert Count 15 on the very first request): when the
//! request stream is read before the encoder stream, the section is blocked (RFC 9204 §2.1.2)
//! and the request is complete only once the inserts arrive — on another stream. The server
//! must then answer it; before that was done a browser's page never loaded over HTTP/3.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    StreamId,
};

use super::H3Conn;
use crate::config::ServerConfig;
use crate::date::DateCache;
use crate::endpoints::Router;
use crate::http3::Ctx;
use crate::quic::ConnApp;

/// Chromium's control stream: type 0x00, SETTINGS (with a GREASE setting and
/// SETTINGS_H3_DATAGRAM), then a PRIORITY_UPDATE (0xf0700) for stream 0, `u=0, i`.
const CONTROL: &str =
    "00041f018001000006800400000740643301c000000bbea2358ac00000005418bd43c00000154bd19c3b028d31\
                       800f07000700753d302c2069";
/// Chromium's QPACK decoder stream (type 0x03, nothing else yet).
const DECODER: &str = "03";
/// Chromium's QPACK encoder stream: type 0x02, Set Dynamic Table Capacity, then 15 inserts
/// (user-agent, sec-ch-ua, accept, ...) that its first request references.
const ENCODER: &str = "023fe11fc08ba0e41d139d09b8cbef3adfc18762b1cc5ff2a819674148b1275ad1ffa2fe749d37215aed83aa4fe7\
efbc1fcbdfcfd29fcde9ec3d26b69fe7efbc1fc85b73f96b4148b1275ad1ad49e33505023f306d4148b1275ad1ad5d034ca7b29f07224c696e75\
7822ff20d3d07f66a281b0dae053fafc087ed4ce6aadf2a7979c89c6bfb521aeba0bc8b1e632586d975765c53facd8f7e8cff4a506ea5531149d4\
ffda98ca39282a117a7b0f49580b6e2e05c0b814dc394761986d975765cddec497ca589d34d1f43aeba0c41a4c7a98f33a69a3fdf9a68fa1d75d\
0620d263d4c79a68fbed00177fe8d48e62b1d3cd1f46a4731581f734bf46a473158f058ebfa352398ac0ebaa6faf963e7efb4005defa1d75d062\
0d263d4c20d35459162f924e3aa62fdf782367efb4005dd6a4148b4a549275906497f83a8f5176a4148b4a549275a93c85f86a87dcd30d25f6a4\
148b4a549275ad416cf023f316a4148b4a549275a42a13f8690e4b692d49fdf929bd9abfa5242cb40d25fa523b3e94f684c9fff098b2d4b70ddf4\
5abefb4005df66aec31ec327d785b6007d286f";
/// Chromium's first request on stream 0 (`GET /page?n=3`, FIN with it): one HEADERS frame of
/// 20 octets, Required Insert Count 15, every field but `:path` a dynamic-table reference.
const REQUEST: &str = "01140f00d18dd78c8b8a89ff1f888786858483828180";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Both endpoints, their one connection each, the server's HTTP/3 state, a virtual clock.
struct Pair {
    now: Instant,
    client_ep: Endpoint,
    server_ep: Endpoint,
    client: (ConnectionHandle, Connection),
    server: Option<(ConnectionHandle, Connection, H3Conn)>,
    server_config: Arc<quinn_proto::ServerConfig>,
    ctx: Ctx,
    _dir: tempfile::TempDir,
}

const CLIENT_ADDR: &str = "127.0.0.1:40000";
const SERVER_ADDR: &str = "127.0.0.1:443";

impl Pair {
    fn new() -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::local();
        config.cert_dir = Some(dir.path().to_path_buf());
        let server_config = crate::http3::quic_server_config(&config).unwrap();
        let paths = crate::tls::ensure_certificate(&config).unwrap();
        let client_config = client_config(&paths.cert);
        let now = Instant::now();
        let mut client_ep = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let server_ep = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::clone(&server_config)),
            true,
            None,
        );
        let client = client_ep
            .connect(
                now,
                client_config,
                SERVER_ADDR.parse().unwrap(),
                "localhost",
            )
            .unwrap();
        let ctx = Ctx {
            router: Router::new(&config).unwrap(),
            date: DateCache::default(),
            scratch: Vec::with_capacity(64 * 1024),
            max_request_body: config.max_request_body,
            max_field_section: config.max_header_list_size as usize,
        };
        Pair {
            now,
            client_ep,
            server_ep,
            client,
            server: None,
            server_config,
            ctx,
            _dir: dir,
        }
    }

    /// Moves datagrams both ways and drives the server's HTTP/3 state until nothing moves
    /// (a timer due is fired by advancing the virtual clock to it).
    fn settle(&mut self) {
        let mut buf = Vec::new();
        for _ in 0..10_000 {
            let mut moved = false;
            // Client → server.
            buf.clear();
            while let Some(t) = self.client.1.poll_transmit(self.now, 1, &mut buf) {
                moved = true;
                let data = BytesMut::from(&buf[..t.size]);
                buf.clear();
                self.deliver_to_server(data);
            }
            while let Some(ev) = self.client.1.poll_endpoint_events() {
                if let Some(ce) = self.client_ep.handle_event(self.client.0, ev) {
                    self.client.1.handle_event(ce);
                }
            }
            while self.client.1.poll().is_some() {}
            // Server: the app first (it writes), then server → client.
            if let Some((ch, conn, app)) = &mut self.server {
                app.drive(conn, &mut self.ctx, self.now);
                while let Some(ev) = conn.poll_endpoint_events() {
                    if let Some(ce) = self.server_ep.handle_event(*ch, ev) {
                        conn.handle_event(ce);
                    }
                }
                buf.clear();
                while let Some(t) = conn.poll_transmit(self.now, 1, &mut buf) {
                    moved = true;
                    let data = BytesMut::from(&buf[..t.size]);
                    buf.clear();
                    if let Some(DatagramEvent::ConnectionEvent(_, ev)) = self.client_ep.handle(
                        self.now,
                        SERVER_ADDR.parse().unwrap(),
                        None,
                        None,
                        data,
                        &mut Vec::new(),
                    ) {
                        self.client.1.handle_event(ev);
                    }
                }
            }
            if !moved {
                // Fire the next timer only while it is near (ACK delay, pacing); the idle
                // timeout is not something to wait for.
                let next = [
                    self.client.1.poll_timeout(),
                    self.server.as_mut().and_then(|s| s.1.poll_timeout()),
                ]
                .into_iter()
                .flatten()
                .min();
                match next {
                    Some(t) if t <= self.now + Duration::from_millis(100) => {
                        self.now = self.now.max(t);
                        self.client.1.handle_timeout(self.now);
                        if let Some((_, conn, _)) = &mut self.server {
                            conn.handle_timeout(self.now);
                        }
                    }
                    _ => return,
                }
            }
        }
        panic!("the in-memory pair never settled");
    }

    fn deliver_to_server(&mut self, data: BytesMut) {
        let mut resp = Vec::new();
        let ev = self.server_ep.handle(
            self.now,
            CLIENT_ADDR.parse().unwrap(),
            None,
            None,
            data,
            &mut resp,
        );
        match ev {
            Some(DatagramEvent::NewConnection(incoming)) => {
                let (ch, conn) = self
                    .server_ep
                    .accept(
                        incoming,
                        self.now,
                        &mut resp,
                        Some(Arc::clone(&self.server_config)),
                    )
                    .unwrap();
                self.server = Some((ch, conn, H3Conn::new(16 * 1024, true, None)));
            }
            Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                if let Some((_, conn, _)) = &mut self.server {
                    conn.handle_event(ev);
                }
            }
            _ => {}
        }
    }

    /// Opens a stream of `dir` on the client and writes `bytes` (FIN after them if `fin`).
    fn send(&mut self, dir: Dir, bytes: &[u8], fin: bool) -> StreamId {
        let id = self.client.1.streams().open(dir).unwrap();
        let mut s = self.client.1.send_stream(id);
        assert_eq!(s.write(bytes).unwrap(), bytes.len());
        if fin {
            s.finish().unwrap();
        }
        id
    }

    /// What the client has received on `id` so far, and whether the stream ended.
    fn received(&mut self, id: StreamId) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut rs = self.client.1.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return (out, false);
        };
        let mut fin = false;
        while let Ok(c) = chunks.next(usize::MAX) {
            match c {
                Some(c) => out.extend_from_slice(&c.bytes),
                None => {
                    fin = true;
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        (out, fin)
    }
}

fn client_config(cert: &std::path::Path) -> ClientConfig {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    ClientConfig::new(Arc::new(crypto))
}

/// A handshake completed, the server's SETTINGS read by nobody (Chromium sends its streams
/// right away).
fn connected() -> Pair {
    let mut p = Pair::new();
    p.settle();
    assert!(!p.client.1.is_handshaking(), "the handshake completed");
    p
}

/// The response on `id`: a HEADERS frame first, the stream ended, a body with the page.
fn assert_answered(p: &mut Pair, id: StreamId) {
    let (bytes, fin) = p.received(id);
    assert!(
        !bytes.is_empty(),
        "no response to Chromium's request on stream {id}"
    );
    assert_eq!(bytes[0], 0x01, "the response starts with HEADERS");
    assert!(fin, "the response ended");
    let body = String::from_utf8_lossy(&bytes);
    assert!(body.contains("<img"), "the page's HTML came back: {body}");
}

#[test]
fn a_request_blocked_on_qpack_inserts_is_answered_when_they_arrive() {
    let mut p = connected();
    p.send(Dir::Uni, &hex(CONTROL), false);
    p.send(Dir::Uni, &hex(DECODER), false);
    // The request stream is read first: its section waits for the 15 inserts.
    let req = p.send(Dir::Bi, &hex(REQUEST), true);
    p.settle();
    assert!(p.received(req).0.is_empty(), "blocked until the inserts");
    p.send(Dir::Uni, &hex(ENCODER), false);
    p.settle();
    assert_answered(&mut p, req);
}

#[test]
fn chromium_streams_in_one_flight_are_answered() {
    let mut p = connected();
    p.send(Dir::Uni, &hex(CONTROL), false);
    p.send(Dir::Uni, &hex(DECODER), false);
    let req = p.send(Dir::Bi, &hex(REQUEST), true);
    p.send(Dir::Uni, &hex(ENCODER), false);
    p.settle();
    assert_answered(&mut p, req);
}
