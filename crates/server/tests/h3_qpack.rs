//! HTTP/3 response heads and the QPACK dynamic table (`http3::head`, `Encoder::replay`): a
//! raw QUIC client with the wire crate's QPACK decoder checks every response field and body
//! byte, that a head referencing the dynamic table is sent again octet for octet (the head
//! cache replays it instead of encoding it), that a burst beyond the client's
//! blocked-streams limit is answered without exceeding it, and the same with the server's
//! table turned off. Nothing here depends on timing: sections are compared within one
//! `date` value.

mod common;

use common::h3::{filler, get_frame, quinn_endpoint, rt};

use std::collections::HashMap;
use std::net::SocketAddr;

use h2lab_server::RunningServer;
use h2lab_wire::h3::stream::UniStreamType;
use h2lab_wire::qpack::{Decoded, Decoder};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn start_h3(table: bool) -> (RunningServer, tempfile::TempDir) {
    common::h3::start_h3(|c| c.h3_qpack_dynamic_table = table)
}

/// A raw HTTP/3 client: our SETTINGS (a 4096-octet QPACK table, `blocked` streams), our
/// QPACK decoder stream, the server's encoder stream read into our decoder on demand.
struct Peer {
    _ep: quinn::Endpoint,
    conn: quinn::Connection,
    _ctrl: quinn::SendStream,
    dec_tx: quinn::SendStream,
    enc_rx: quinn::RecvStream,
    qdec: Decoder,
}

impl Peer {
    async fn connect(server: &RunningServer, blocked: u64) -> Peer {
        let ep = quinn_endpoint(server);
        let addr: SocketAddr = server.h3_addr().unwrap();
        let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
        let mut ctrl = conn.open_uni().await.unwrap();
        let mut buf = Vec::new();
        let settings = h2lab_wire::h3::frame::Settings {
            qpack_max_table_capacity: 4096,
            qpack_blocked_streams: blocked,
            ..Default::default()
        };
        h2lab_wire::h3::control::write_control_stream_start(settings, &mut buf);
        ctrl.write_all(&buf).await.unwrap();
        let mut dec_tx = conn.open_uni().await.unwrap();
        buf.clear();
        UniStreamType::QpackDecoder.write(&mut buf);
        dec_tx.write_all(&buf).await.unwrap();
        // The server's encoder stream (type 0x02); its control stream is drained.
        let mut enc_rx = None;
        for _ in 0..3 {
            let mut rx = conn.accept_uni().await.unwrap();
            let mut first = [0u8; 1];
            rx.read_exact(&mut first).await.unwrap();
            if first[0] == 0x02 {
                enc_rx = Some(rx);
                break;
            }
            tokio::spawn(async move {
                let _ = rx.read_to_end(1 << 20).await;
            });
        }
        Peer {
            _ep: ep,
            conn,
            _ctrl: ctrl,
            dec_tx,
            enc_rx: enc_rx.expect("the server's QPACK encoder stream"),
            qdec: Decoder::new(4096, blocked as usize),
        }
    }

    /// Sends a GET for `path` (static table and literals); returns the stream.
    async fn send(&self, path: &str) -> (u64, quinn::RecvStream) {
        let frame = get_frame(path);
        let (mut tx, rx) = self.conn.open_bi().await.unwrap();
        tx.write_all(&frame).await.unwrap();
        tx.finish().unwrap();
        (u64::from(tx.id()), rx)
    }

    /// Decodes the response `section` of stream `sid`, reading the encoder stream while it
    /// is blocked.
    async fn decode(&mut self, sid: u64, section: &[u8]) -> Fields {
        let mut fields = Fields::new();
        let mut push =
            |f: h2lab_wire::qpack::Field<'_>| fields.push((f.name.to_vec(), f.value.to_vec()));
        let mut r = self.qdec.decode_section(sid, section, &mut push).unwrap();
        while r == Decoded::Blocked {
            let mut chunk = [0u8; 4096];
            let k = self
                .enc_rx
                .read(&mut chunk)
                .await
                .unwrap()
                .expect("encoder stream open");
            self.qdec.feed_encoder_stream(&chunk[..k]).unwrap();
            r = self.qdec.decode_unblocked(sid, &mut push).unwrap();
        }
        fields
    }

    /// GET `path` (exact response checked), acknowledged: the section octets.
    async fn get_acked(&mut self, path: &str) -> Vec<u8> {
        let (sid, mut rx) = self.send(path).await;
        let bytes = rx.read_to_end(1 << 20).await.unwrap();
        let (section, body) = split(&bytes);
        let fields = self.decode(sid, &section).await;
        check(path, &fields, &body);
        self.ack().await;
        section
    }

    /// Requests `/ping` until the server uses the dynamic table: a request it reads before
    /// our SETTINGS (another stream, no order between them) gets a static-only head.
    /// Bounded by a count, not a time: the SETTINGS were sent first and do arrive.
    async fn until_the_table_is_used(&mut self) {
        for _ in 0..1000 {
            if required(&self.get_acked("/ping").await) > 0 {
                return;
            }
        }
        panic!("the server never used the dynamic table");
    }

    /// Sends our pending Section Acknowledgments and Insert Count Increment.
    async fn ack(&mut self) {
        let mut buf = Vec::new();
        self.qdec.take_decoder_stream(&mut buf);
        self.dec_tx.write_all(&buf).await.unwrap();
    }
}

/// The HEADERS section and the DATA payloads of a whole response stream.
fn split(bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut section, mut body) = (None, Vec::new());
    let mut rest = bytes;
    while !rest.is_empty() {
        let (ty, n) = h2lab_wire::h3::varint::decode(rest).unwrap();
        let (len, m) = h2lab_wire::h3::varint::decode(&rest[n..]).unwrap();
        let payload = &rest[n + m..n + m + len as usize];
        match ty {
            0x01 => {
                assert!(section.is_none(), "one HEADERS frame, no trailers");
                section = Some(payload.to_vec());
            }
            0x00 => body.extend_from_slice(payload),
            t => panic!("unexpected frame type {t:#x}"),
        }
        rest = &rest[n + m + len as usize..];
    }
    (section.expect("a HEADERS frame"), body)
}

fn get<'a>(fields: &'a Fields, name: &[u8]) -> Option<&'a [u8]> {
    fields
        .iter()
        .find(|(n, _)| n.as_slice() == name)
        .map(|(_, v)| v.as_slice())
}

/// Checks an exact `/ping` or `/data?size=N` response; returns its `date`.
fn check(path: &str, fields: &Fields, body: &[u8]) -> Vec<u8> {
    let expected: Vec<u8> = match path.strip_prefix("/data?size=") {
        Some(n) => filler(n.parse().unwrap()),
        None => b"pong".to_vec(),
    };
    assert_eq!(get(fields, b":status"), Some(&b"200"[..]), "{path}");
    assert_eq!(get(fields, b"server"), Some(&b"h2lab"[..]), "{path}");
    assert_eq!(
        get(fields, b"content-length"),
        Some(expected.len().to_string().as_bytes()),
        "{path}"
    );
    assert_eq!(body, expected.as_slice(), "{path}");
    let date = get(fields, b"date").expect("date").to_vec();
    assert_eq!(date.len(), 29, "{date:?}");
    date
}

/// The Required Insert Count of a section whose insert counts stay small (the encoded
/// value is then the count plus one, RFC 9204 §4.5.1.1, with 128 entries at most).
fn required(section: &[u8]) -> u64 {
    assert!(section[0] < 0xff, "a small insert count");
    u64::from(section[0].saturating_sub(1))
}

#[test]
fn responses_use_the_qpack_dynamic_table_the_client_allows() {
    // Our own QPACK decoder (4096-byte table, 16 blocked streams) reads the server's encoder
    // stream and the response sections; the server must insert and reference entries, and
    // every section must decode to the right head and body.
    let (server, _dir) = start_h3(true);
    rt().block_on(async {
        let mut peer = Peer::connect(&server, 16).await;
        peer.until_the_table_is_used().await;
        for path in ["/ping", "/ping", "/data?size=77", "/ping"] {
            peer.get_acked(path).await;
        }
        assert!(
            peer.qdec.table().insert_count() > 0,
            "the server never used the dynamic table"
        );
    });
}

#[test]
fn table_referencing_heads_are_replayed_octet_for_octet() {
    let (server, _dir) = start_h3(true);
    rt().block_on(async {
        let mut p = Peer::connect(&server, 16).await;
        p.until_the_table_is_used().await;
        // Same head and date ⇒ same octets: the replayed section, not a new encoding
        // (which would index the entries relative to a later Base).
        let mut seen: HashMap<(String, Vec<u8>), Vec<u8>> = HashMap::new();
        let mut referencing = 0;
        for i in 0..60 {
            let path = if i % 4 == 3 { "/data?size=77" } else { "/ping" };
            let (sid, mut rx) = p.send(path).await;
            let bytes = rx.read_to_end(1 << 20).await.unwrap();
            let (section, body) = split(&bytes);
            let fields = p.decode(sid, &section).await;
            let date = check(path, &fields, &body);
            if required(&section) > 0 {
                referencing += 1;
            }
            let first = seen
                .entry((path.to_string(), date))
                .or_insert(section.clone());
            assert_eq!(*first, section, "request {i}: {path}");
            p.ack().await;
        }
        assert_eq!(referencing, 60, "every head references the table");
        assert!(p.qdec.table().insert_count() > 0);
    });
}

#[test]
fn a_burst_beyond_the_blocked_streams_limit_never_exceeds_it() {
    const BLOCKED: u64 = 4;
    let (server, _dir) = start_h3(true);
    rt().block_on(async {
        let mut p = Peer::connect(&server, BLOCKED).await;
        p.until_the_table_is_used().await;
        let acked = p.qdec.table().insert_count();
        // 24 requests at once for a head with a new entry (its content-length), nothing
        // acknowledged meanwhile: at most BLOCKED of them may reference inserts beyond
        // what we acknowledged before (RFC 9204 §2.1.2); the others are encoded anew.
        let path = "/data?size=1234";
        let mut streams = Vec::new();
        for _ in 0..24 {
            streams.push(p.send(path).await);
        }
        let mut responses = Vec::new();
        for (sid, mut rx) in streams {
            responses.push((sid, rx.read_to_end(1 << 20).await.unwrap()));
        }
        let mut beyond = 0;
        for (sid, bytes) in &responses {
            let (section, body) = split(bytes);
            if required(&section) > acked {
                beyond += 1;
            }
            let fields = p.decode(*sid, &section).await;
            check(path, &fields, &body);
        }
        assert!(beyond <= BLOCKED, "{beyond} sections could block");
        assert!(beyond > 0, "the new entry was referenced");
        p.ack().await;
        // Acknowledged: the same head again, exact.
        for _ in 0..8 {
            p.get_acked(path).await;
        }
    });
}

#[test]
fn with_the_table_off_heads_are_static_and_exact() {
    let (server, _dir) = start_h3(false);
    rt().block_on(async {
        let mut p = Peer::connect(&server, 16).await;
        let mut seen: HashMap<(String, Vec<u8>), Vec<u8>> = HashMap::new();
        for i in 0..20 {
            let path = if i % 2 == 1 { "/data?size=77" } else { "/ping" };
            let (sid, mut rx) = p.send(path).await;
            let bytes = rx.read_to_end(1 << 20).await.unwrap();
            let (section, body) = split(&bytes);
            assert_eq!(section[..2], [0, 0], "static table and literals only");
            let fields = p.decode(sid, &section).await;
            let date = check(path, &fields, &body);
            let first = seen
                .entry((path.to_string(), date))
                .or_insert(section.clone());
            assert_eq!(*first, section, "request {i}: {path}");
            p.ack().await;
        }
        assert_eq!(p.qdec.table().insert_count(), 0);
    });
}
