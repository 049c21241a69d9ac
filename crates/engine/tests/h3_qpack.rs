//! The HTTP/3 client session's QPACK dynamic table ([`h2lab_engine::h3::QpackSettings`]):
//! against `h2lab serve --h3` with the table on (h2load's settings: the server answers with
//! dynamic-table references, our requests reference the inserts the server allowed) and off
//! (exact statuses and bodies both ways); against a scripted QUIC peer whose response section
//! references an insert it sends only once the section was delivered (blocked, then
//! resumed, with a Section Acknowledgment), and one that blocks more streams than we
//! announced (connection closed with QPACK_DECOMPRESSION_FAILED). No timing is involved:
//! the peer waits for QUIC's acknowledgment of the section before sending the insert.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use h2lab_engine::h3::QpackSettings;
use h2lab_quic::quinn_proto::{
    self, Connection, ConnectionError, Dir, Event, StreamEvent, StreamId, VarInt,
};
use h2lab_quic::{ConnApp, Shell, UdpIo};
use h2lab_server::ServerConfig;
use h2lab_wire::h3::control::write_control_stream_start;
use h2lab_wire::h3::frame::Settings;
use h2lab_wire::h3::request::{write_data_header, write_headers};
use h2lab_wire::h3::stream::UniStreamType;
use h2lab_wire::qpack::instructions::DecoderInstruction;
use h2lab_wire::qpack::{Encoder, EncoderConfig};
use mio::{Interest, Registry, Token};
use support::{start_serve, template, Close, Counts, Run};

/// Runs `n` requests for `path` on one connection with `m` streams; `peer` (a scripted
/// server shell) is driven in the same loop when given. Bounded by a 60 s deadline.
fn run(
    addr: SocketAddr,
    path: &str,
    n: u64,
    m: u32,
    qpack: QpackSettings,
    peer: Option<&mut Peer>,
) -> Counts {
    // With a peer: the client stays until the peer has its decoder-stream instructions (a
    // close at once could discard them, QUIC does not deliver stream data after a close).
    let wait_ack = peer.as_ref().is_some_and(|p| p.mode != Mode::Never);
    let extra: [(&[u8], &[u8]); 1] = [(b"x-custom", b"a fixed request field")];
    Run {
        qpack,
        keep_body: n == 1,
        close: if wait_ack {
            Close::AfterPeerHeardDecoder
        } else {
            Close::WhenDone
        },
        peer: peer.map(|p| p as &mut dyn support::Peer),
        ..Run::new(addr, template("localhost", path, &extra, qpack), n, 1, m)
    }
    .run(|_| {})
}

fn h2load_qpack() -> QpackSettings {
    QpackSettings {
        max_table_capacity: 4096,
        blocked_streams: 100,
        encoder_table_capacity: 4096,
    }
}

#[test]
fn serve_with_the_table_on_and_off_exact_bodies() {
    let (server, _dir) = start_serve(|_| {});
    let addr = server.h3_addr().unwrap();
    // One request: the body byte for byte (the server's /data body is deterministic).
    let on = run(addr, "/data?size=653", 1, 1, h2load_qpack(), None);
    let off = run(addr, "/data?size=653", 1, 1, QpackSettings::STATIC, None);
    assert_eq!((on.completed, on.status_200), (1, 1), "{on:?}");
    assert_eq!(on.body.len(), 653);
    assert_eq!(on.body, off.body);
    assert!(on.errors.is_empty() && off.errors.is_empty());
    for (qpack, label) in [(h2load_qpack(), "on"), (QpackSettings::STATIC, "off")] {
        let c = run(addr, "/data?size=653", 300, 10, qpack, None);
        assert_eq!(c.started, 300, "{label}: {c:?}");
        assert_eq!(c.completed, 300, "{label}: {c:?}");
        assert_eq!((c.status_200, c.other_status), (300, 0), "{label}");
        assert_eq!(c.body_bytes, 300 * 653, "{label}");
        assert_eq!((c.reset, c.refused, c.lost), (0, 0, 0), "{label}");
        assert!(c.errors.is_empty(), "{label}: {c:?}");
        assert!(c.header_wire > 0, "{label}");
        if label == "on" {
            // The server inserted its response fields into our table, and our requests
            // went over to the entries it acknowledged.
            assert!(c.decoder_inserts > 0, "{c:?}");
            assert!(c.requests_used_table, "{c:?}");
        } else {
            assert_eq!(c.decoder_inserts, 0);
            assert!(!c.requests_used_table);
            assert_eq!(c.sections_blocked, 0);
        }
    }
}

/// A scripted HTTP/3 server: SETTINGS with no table for our requests; each request is
/// answered at once with `:status 200`, an `x-late` field inserted into the client's table
/// and a 5-octet body. The insert is held back until QUIC says every response was delivered
/// (acknowledged, so the client has read it and found it blocked), never sent, or the
/// stream is reset after the section ([`Mode`]).
struct Peer {
    shell: Shell<PeerApp>,
    ctx: PeerCtx,
    mode: Mode,
    _dir: tempfile::TempDir,
}

/// What the scripted peer does with its responses' insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Sends it once the responses were acknowledged.
    Insert,
    /// Never sends it.
    Never,
    /// Never sends it, and resets each response stream after its section
    /// (H3_REQUEST_CANCELLED).
    Reset,
}

#[derive(Default)]
struct PeerCtx {
    /// The client's decoder-stream bytes (after the stream type).
    decoder_stream: Vec<u8>,
    /// The application error code the client closed with.
    closed_with: Option<u64>,
}

struct PeerApp {
    mode: Mode,
    encoder: Encoder,
    started: bool,
    encoder_stream: Option<StreamId>,
    /// Encoder-stream bytes held back until the responses are acknowledged.
    held: Vec<u8>,
    responses: Vec<StreamId>,
    /// The client's unidirectional streams: `None` until its type is read, then whether
    /// it is the decoder stream.
    client_uni: Vec<(StreamId, Option<bool>)>,
}

impl ConnApp for PeerApp {
    type Ctx = PeerCtx;
    fn drive(&mut self, conn: &mut Connection, ctx: &mut PeerCtx, _now: Instant) {
        if !self.started && !conn.is_handshaking() {
            self.started = true;
            let mut b = Vec::new();
            write_control_stream_start(Settings::default(), &mut b);
            let ctl = conn.streams().open(Dir::Uni).unwrap();
            conn.send_stream(ctl).write(&b).unwrap();
            b.clear();
            UniStreamType::QpackEncoder.write(&mut b);
            let enc = conn.streams().open(Dir::Uni).unwrap();
            conn.send_stream(enc).write(&b).unwrap();
            self.encoder_stream = Some(enc);
        }
        while let Some(e) = conn.poll() {
            match e {
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    while let Some(id) = conn.streams().accept(Dir::Bi) {
                        self.answer(conn, id);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = conn.streams().accept(Dir::Uni) {
                        self.client_uni.push((id, None));
                    }
                }
                Event::Stream(StreamEvent::Finished { id }) => {
                    self.responses.retain(|r| *r != id);
                    if self.responses.is_empty()
                        && self.mode == Mode::Insert
                        && !self.held.is_empty()
                    {
                        // The sections are delivered: now their inserts.
                        let enc = self.encoder_stream.unwrap();
                        conn.send_stream(enc).write(&self.held).unwrap();
                        self.held.clear();
                    }
                }
                Event::ConnectionLost {
                    reason: ConnectionError::ApplicationClosed(c),
                } => ctx.closed_with = Some(c.error_code.into_inner()),
                _ => {}
            }
        }
        for (id, kind) in &mut self.client_uni {
            let mut rs = conn.recv_stream(*id);
            let Ok(mut chunks) = rs.read(true) else {
                continue;
            };
            let mut data = Vec::new();
            while let Ok(Some(c)) = chunks.next(usize::MAX) {
                data.extend_from_slice(&c.bytes);
            }
            let _ = chunks.finalize();
            let mut rest = &data[..];
            if kind.is_none() {
                let Some((&ty, tail)) = rest.split_first() else {
                    continue;
                };
                *kind = Some(ty == 0x03);
                rest = tail;
            }
            if *kind == Some(true) {
                ctx.decoder_stream.extend_from_slice(rest);
            }
        }
    }
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn on_shutdown(&mut self, _conn: &mut Connection, _now: Instant) {}
}

impl PeerApp {
    fn new(mode: Mode) -> PeerApp {
        let mut encoder = Encoder::new(EncoderConfig::default());
        // What the client under test announces: h2load's 4096 octets; the encoder may
        // reference its unacknowledged insert on up to 100 streams.
        encoder.set_peer_settings(4096, 100);
        PeerApp {
            mode,
            encoder,
            started: false,
            encoder_stream: None,
            held: Vec::new(),
            responses: Vec::new(),
            client_uni: Vec::new(),
        }
    }

    /// Answers request stream `id` at once (its request is not read): a section that
    /// references the insert not sent yet, then a 5-octet body.
    fn answer(&mut self, conn: &mut Connection, id: StreamId) {
        let mut section = Vec::new();
        let fields: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"x-late", b"inserted later")];
        self.encoder
            .encode(u64::from(id), fields, &mut section, &mut self.held);
        assert_ne!(section[0], 0, "the section must reference the table");
        let mut frame = Vec::new();
        write_headers(&section, &mut frame);
        write_data_header(5, &mut frame);
        frame.extend_from_slice(b"hello");
        let mut s = conn.send_stream(id);
        assert_eq!(s.write(&frame).unwrap(), frame.len());
        if self.mode == Mode::Reset {
            s.reset(VarInt::from_u32(0x10c)).unwrap();
            return;
        }
        s.finish().unwrap();
        self.responses.push(id);
    }
}

impl Peer {
    fn new(mode: Mode) -> Peer {
        let dir = tempfile::tempdir().unwrap();
        let config = ServerConfig {
            cert_dir: Some(dir.path().to_path_buf()),
            alpn: vec![b"h3".to_vec()],
            quiet: true,
            ..ServerConfig::default()
        };
        let paths = h2lab_server::tls::ensure_certificate(&config).unwrap();
        let tls = h2lab_server::tls::server_config(&paths, &config).unwrap();
        let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let sc = Arc::new(quinn_proto::ServerConfig::with_crypto(Arc::new(crypto)));
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        Peer {
            shell: Shell::new(UdpIo::new(sock, true).unwrap(), Some(sc), 1),
            ctx: PeerCtx::default(),
            mode,
            _dir: dir,
        }
    }

    fn addr(&mut self) -> SocketAddr {
        self.shell.io().local_addr().unwrap()
    }
}

impl support::Peer for Peer {
    fn register(&mut self, registry: &Registry, token: Token) {
        registry
            .register(self.shell.io().socket(), token, Interest::READABLE)
            .unwrap();
    }

    fn drive(&mut self) {
        self.shell.drive(Instant::now(), &mut self.ctx);
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        self.shell.next_deadline()
    }

    fn read(&mut self) {
        let mode = self.mode;
        while self
            .shell
            .read(Instant::now(), &mut self.ctx, |_| PeerApp::new(mode))
            .unwrap()
        {}
        self.drive();
    }

    fn heard_decoder(&self) -> bool {
        !self.ctx.decoder_stream.is_empty()
    }
}

/// The client's decoder-stream instructions.
fn instructions(mut bytes: &[u8]) -> Vec<DecoderInstruction> {
    let mut out = Vec::new();
    while let Some((i, n)) = DecoderInstruction::parse(bytes).unwrap() {
        out.push(i);
        bytes = &bytes[n..];
    }
    assert!(bytes.is_empty(), "a truncated instruction: {bytes:?}");
    out
}

#[test]
fn a_blocked_response_waits_for_its_insert_and_resumes() {
    let mut peer = Peer::new(Mode::Insert);
    let addr = peer.addr();
    let c = run(addr, "/", 1, 1, h2load_qpack(), Some(&mut peer));
    assert_eq!((c.completed, c.status_200), (1, 1), "{c:?}");
    assert_eq!(c.body, b"hello");
    assert_eq!(
        c.sections_blocked, 1,
        "the section waited for its insert: {c:?}"
    );
    assert_eq!(c.decoder_inserts, 1);
    assert!(c.errors.is_empty(), "{c:?}");
    assert!(
        c.header_wire > 0,
        "the blocked section's encoded size is counted"
    );
    // RFC 9204 §4.4.1: the decoded section is acknowledged (which also tells the encoder
    // the insert arrived: no Insert Count Increment is needed).
    assert_eq!(
        instructions(&peer.ctx.decoder_stream),
        [DecoderInstruction::SectionAck { stream_id: 0 }]
    );
    assert_eq!(peer.ctx.closed_with, Some(0x100), "H3_NO_ERROR at the end");
}

#[test]
fn more_blocked_streams_than_announced_close_the_connection() {
    let mut peer = Peer::new(Mode::Never);
    let addr = peer.addr();
    let qpack = QpackSettings {
        blocked_streams: 1,
        ..h2load_qpack()
    };
    // Two requests at once: both responses reference an insert that never comes.
    let c = run(addr, "/", 2, 2, qpack, Some(&mut peer));
    assert_eq!(c.started, 2);
    assert_eq!(c.completed, 0, "{c:?}");
    // RFC 9204 §2.1.2: QPACK_DECOMPRESSION_FAILED (0x200), a connection error.
    assert_eq!(c.errors, [0x200], "{c:?}");
    assert_eq!(c.lost, 2);
    // The peer saw it too (the close can be lost: then the idle timeout ends it).
    assert!(matches!(peer.ctx.closed_with, Some(0x200) | None));
}

#[test]
fn a_reset_request_is_cancelled_on_the_decoder_stream() {
    let mut peer = Peer::new(Mode::Reset);
    let addr = peer.addr();
    let c = run(addr, "/", 1, 1, h2load_qpack(), Some(&mut peer));
    assert_eq!((c.completed, c.reset), (0, 1), "{c:?}");
    assert!(
        c.errors.is_empty(),
        "a stream reset is not a connection error: {c:?}"
    );
    // RFC 9204 §4.4.2: reading abandoned before the end (whether the section arrived and
    // waited, or the reset came first): Stream Cancellation, and nothing acknowledged.
    assert_eq!(
        instructions(&peer.ctx.decoder_stream),
        [DecoderInstruction::StreamCancel { stream_id: 0 }]
    );
}
