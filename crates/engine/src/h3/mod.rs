//! The client half of HTTP/3 (RFC 9114) on a `quinn-proto` connection: [`H3Session`], the
//! HTTP/3 counterpart of the engine's HTTP/2 session. Like every session it owns no socket
//! and no clock and does no statistics: requests are identified by the caller's *slots* and
//! everything it learns is reported through [`SessionEvents`] (status, header and body
//! bytes, complete, reset, refused, GOAWAY), so the worker's accounting is the same as for
//! HTTP/1.1 and HTTP/2. The QUIC connection is passed in by the owner of the transport (the
//! QUIC shell, [`h2lab_quic`]).
//!
//! What it does: opens our control stream (SETTINGS) and the QPACK encoder/decoder streams,
//! reads the server's control stream (SETTINGS, GOAWAY) and QPACK streams, and sends each
//! request as the QPACK section of a pre-encoded [`RequestTemplate`] (static table and
//! literals, then references to the entries it inserted into the table the server allows)
//! in one HEADERS frame on a new bidirectional stream, finished at once (with `-d`, one DATA frame
//! follows, written as flow control allows, and the stream is finished after its last
//! byte). At most `-m` requests are
//! in flight, and never more than the server's MAX_STREAMS allows: quinn-proto refuses to
//! open a stream beyond it and [`H3Session::submit`] then says
//! [`SubmitError::WouldBlock`] until a stream closes and credit comes back. Responses are
//! read with the wire crate's [`RequestStream`] (frame sequence, content-length, QPACK);
//! with the QPACK table we announce ([`QpackSettings`], h2load's by default) a section that
//! references inserts not received yet waits, with its stream's later bytes, until the
//! server's encoder stream delivers them (`response.rs`).
//! After a GOAWAY nothing new is opened; requests on streams at or above its identifier,
//! or rejected with H3_REQUEST_REJECTED, are reported refused (not processed: they may be
//! retried on a new connection). Per request nothing is allocated here (request states and
//! their buffers are pooled, and a request head identical to the previous one is handed to
//! quinn-proto as a reference-counted clone, not copied into a new buffer); quinn-proto
//! allocates its own stream state.
//!
//! Files: this one holds the session's state, its setup and the QUIC event dispatch;
//! `send.rs` sends requests and their bodies, `recv.rs` reads the server's streams (GOAWAY,
//! resets), `response.rs` parses response streams, `streams.rs` holds the unidirectional
//! streams. [`H3Conn`] (`conn.rs`) puts the session and its QUIC connection behind the
//! engine's `Session` trait; the QUIC transport is `crate::conn::quic`.

mod conn;
mod recv;
mod response;
mod send;
mod settings;
mod sink;
pub mod stats;
mod streams;

pub use conn::{quic_client_config, H3Conn};
pub use settings::{QpackSettings, H2LOAD_BLOCKED_STREAMS};

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use h2lab_quic::hash::{stream_map, StreamMap};
use h2lab_quic::quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId, VarInt};
use h2lab_wire::h3::control::write_control_stream_start;
use h2lab_wire::h3::frame::Settings;
use h2lab_wire::h3::request::{write_headers, RequestStream};
use h2lab_wire::h3::stream::UniStreamType;
use h2lab_wire::h3::{ErrorCode, Role};
use h2lab_wire::qpack::{Decoder, RequestTemplate};

use crate::session::{SessionEvents, SubmitError};
use sink::Sink;
use streams::{ControlNews, OutStream, PeerUni};

/// One request in flight.
struct Req {
    slot: u32,
    recv: RequestStream,
    /// Bytes of an incomplete HEADERS frame.
    inbuf: Vec<u8>,
    done: bool,
    /// Request body (`-d`) octets written so far; `None` once it is all written (or there is
    /// none) and the stream is finished.
    body_sent: Option<usize>,
    /// A response section waits for QPACK inserts (RFC 9204 §2.1.2): the stream's later
    /// bytes wait in `inbuf` until the decoder releases it.
    blocked: bool,
    /// The stream ended while blocked.
    fin: bool,
    /// QPACK-encoded size of the blocked section (counted when it is decoded).
    held_encoded: usize,
}

/// The client side of one HTTP/3 connection (see the module docs).
pub struct H3Session {
    template: RequestTemplate,
    /// What we announce for our QPACK decoder.
    qpack: QpackSettings,
    /// Response sections that waited for QPACK inserts.
    sections_blocked: u64,
    max_streams: usize,
    started: bool,
    control: OutStream,
    encoder_out: OutStream,
    decoder_out: OutStream,
    peer: PeerUni,
    qdec: Decoder,
    reqs: StreamMap<Req>,
    pool: Vec<Req>,
    section: Vec<u8>,
    frame: Vec<u8>,
    /// The last request head handed to QUIC, shared: the next identical head (the same
    /// template section, as in a steady run) is a reference-counted clone of it instead of
    /// a fresh allocation and copy inside quinn-proto's send buffer.
    frame_shared: Bytes,
    encoder_scratch: Vec<u8>,
    goaway: Option<u64>,
    closed: bool,
    /// The connection error we closed with, if any.
    error: Option<ErrorCode>,
    /// The request body (`-d`), sent in one DATA frame after each request's HEADERS.
    body: Option<Arc<[u8]>>,
    /// Requests whose body is not all written yet (waiting for flow control).
    bodies_pending: usize,
    /// Send sides to reset: the response completed before the request body was all sent.
    abandon: Vec<StreamId>,
    /// Scratch list of stream ids (reused).
    scratch_ids: Vec<StreamId>,
}

fn code(c: ErrorCode) -> VarInt {
    VarInt::from_u64(c.0).unwrap_or(VarInt::MAX)
}

impl H3Session {
    /// A session sending `template`'s requests, at most `max_streams` at once (`-m`).
    pub fn new(template: RequestTemplate, max_streams: u32) -> H3Session {
        let max_streams = max_streams.max(1) as usize;
        H3Session {
            template,
            qpack: QpackSettings::STATIC,
            sections_blocked: 0,
            max_streams,
            started: false,
            control: OutStream::default(),
            encoder_out: OutStream::default(),
            decoder_out: OutStream::default(),
            peer: PeerUni::new(),
            qdec: Decoder::new(0, 0),
            reqs: stream_map(max_streams),
            pool: Vec::with_capacity(max_streams),
            section: Vec::with_capacity(256),
            frame: Vec::with_capacity(256),
            frame_shared: Bytes::new(),
            encoder_scratch: Vec::new(),
            goaway: None,
            closed: false,
            error: None,
            body: None,
            bodies_pending: 0,
            abandon: Vec::new(),
            scratch_ids: Vec::new(),
        }
    }

    /// Announces `qpack`'s table capacity and blocked streams for our decoder (the server
    /// may then answer with dynamic-table references; sections that wait for inserts are
    /// held). The request encoder's table is the template's business ([`QpackSettings::
    /// encoder_config`]). Without this call: no table, as [`QpackSettings::STATIC`].
    pub fn with_qpack(mut self, qpack: QpackSettings) -> H3Session {
        self.qpack = qpack;
        self.qdec = Decoder::new(
            qpack.max_table_capacity as usize,
            qpack.blocked_streams as usize,
        );
        self
    }

    /// The QPACK settings we announce.
    pub fn qpack_settings(&self) -> QpackSettings {
        self.qpack
    }

    /// Whether requests now use sections referencing the dynamic table (the server allowed
    /// a table and acknowledged our inserts).
    pub fn requests_use_dynamic_table(&self) -> bool {
        self.template.uses_dynamic_table()
    }

    /// Response sections so far that had to wait for the inserts they reference.
    pub fn sections_blocked(&self) -> u64 {
        self.sections_blocked
    }

    /// Entries in our decoder's dynamic table (inserted by the server's encoder).
    pub fn decoder_insert_count(&self) -> u64 {
        self.qdec.table().insert_count()
    }

    /// Sends `body` with every request (`-d`): HEADERS (with its content-length, from the
    /// template), then one DATA frame, written as QUIC flow control allows.
    pub fn with_body(mut self, body: Option<Arc<[u8]>>) -> H3Session {
        self.body = body.filter(|b| !b.is_empty());
        self
    }

    /// Requests submitted and not yet finished.
    pub fn in_flight(&self) -> u32 {
        self.reqs.len() as u32
    }

    /// Slots of the requests in flight (those outstanding when the connection is lost).
    pub fn in_flight_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.reqs.values().map(|r| r.slot)
    }

    /// Bytes of the HEADERS frame of the last request submitted (QPACK section included),
    /// written to its QUIC stream rather than to the caller's output buffer: what the page
    /// fetcher counts as request header bytes.
    pub fn last_request_bytes(&self) -> usize {
        self.frame.len()
    }

    /// Most requests in flight (`-m`; the server's MAX_STREAMS is enforced by QUIC).
    pub fn max_concurrency(&self) -> u32 {
        self.max_streams as u32
    }

    /// Whether [`H3Session::submit`] may accept a request now (stream credit aside).
    pub fn can_submit(&self) -> bool {
        self.started && !self.closed && self.goaway.is_none() && self.reqs.len() < self.max_streams
    }

    /// A GOAWAY was received: no new requests on this connection.
    pub fn goaway_received(&self) -> bool {
        self.goaway.is_some()
    }

    /// The connection is over (closed by us, or lost).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The HTTP/3 error we closed the connection with (a protocol violation by the server).
    pub fn error(&self) -> Option<ErrorCode> {
        self.error
    }

    /// GOAWAY received and nothing left in flight: the connection should be closed.
    pub fn wants_close(&self) -> bool {
        self.goaway.is_some() && self.reqs.is_empty()
    }

    /// Graceful close when the client is done (H3_NO_ERROR).
    pub fn terminate(&mut self, conn: &mut Connection) {
        self.close(conn, ErrorCode::H3_NO_ERROR);
    }

    fn close(&mut self, conn: &mut Connection, c: ErrorCode) {
        if !self.closed {
            self.closed = true;
            if c != ErrorCode::H3_NO_ERROR {
                self.error = Some(c);
            }
            conn.close(Instant::now(), code(c), bytes::Bytes::new());
        }
    }

    /// Opens our three unidirectional streams once the handshake allows it: when it is
    /// complete, or at once with 0-RTT keys (`--0rtt`; the server's SETTINGS are not known
    /// yet, so requests use the defaults, RFC 9114 §7.2.4.2: the static QPACK table until
    /// the SETTINGS arrive).
    pub(crate) fn start(&mut self, conn: &mut Connection) {
        if self.started || self.closed || (conn.is_handshaking() && !conn.has_0rtt()) {
            return;
        }
        let mut ids = [None; 3];
        for id in ids.iter_mut() {
            *id = conn.streams().open(Dir::Uni);
        }
        let [Some(c), Some(e), Some(d)] = ids else {
            self.close(conn, ErrorCode::H3_STREAM_CREATION_ERROR);
            return;
        };
        self.started = true;
        self.control.id = Some(c);
        self.encoder_out.id = Some(e);
        self.decoder_out.id = Some(d);
        // Our QPACK decoder's limits (0 and 0: the server's sections never wait).
        let settings = Settings {
            qpack_max_table_capacity: u64::from(self.qpack.max_table_capacity),
            qpack_blocked_streams: u64::from(self.qpack.blocked_streams),
            ..Settings::default()
        };
        write_control_stream_start(settings, &mut self.control.buf);
        UniStreamType::QpackEncoder.write(&mut self.encoder_out.buf);
        UniStreamType::QpackDecoder.write(&mut self.decoder_out.buf);
    }

    /// Handles what QUIC has for the application (stream data, GOAWAY, the connection
    /// ending) and reports it through `ev`; then writes our pending stream data.
    pub fn on_quic(&mut self, conn: &mut Connection, ev: &mut dyn SessionEvents) {
        while let Some(e) = conn.poll() {
            // quinn-proto reports the connection lost before the stream data that came with
            // the close (a GOAWAY just before CONNECTION_CLOSE): keep reading it then.
            if self.error.is_some() {
                continue;
            }
            match e {
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = conn.streams().accept(Dir::Uni) {
                        self.peer
                            .streams
                            .insert(id, streams::Uni::Header(Vec::new()));
                        self.read(conn, id, ev);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) if !self.closed => {
                    // RFC 9114 §6.1: a server never opens bidirectional streams.
                    self.close(conn, ErrorCode::H3_STREAM_CREATION_ERROR);
                }
                Event::Stream(StreamEvent::Readable { id }) => self.read(conn, id, ev),
                Event::Stream(StreamEvent::Writable { id }) => self.write_body(conn, id),
                Event::ConnectionLost { .. } => self.closed = true,
                _ => {}
            }
        }
        // Server streams opened before the session existed (0.5-RTT) had their events
        // taken by nobody: accept them here.
        while !self.closed {
            let Some(id) = conn.streams().accept(Dir::Uni) else {
                break;
            };
            self.peer
                .streams
                .insert(id, streams::Uni::Header(Vec::new()));
            self.read(conn, id, ev);
        }
        self.start(conn);
        self.write_bodies(conn);
        self.flush(conn);
    }

    /// Writes what our unidirectional streams hold (SETTINGS, QPACK instructions).
    pub fn flush(&mut self, conn: &mut Connection) {
        if self.closed || !self.started {
            return;
        }
        self.encoder_out.buf.append(&mut self.encoder_scratch);
        self.qdec.take_decoder_stream(&mut self.decoder_out.buf);
        let ok = self.control.flush(conn)
            && self.encoder_out.flush(conn)
            && self.decoder_out.flush(conn);
        if !ok {
            self.close(conn, ErrorCode::H3_CLOSED_CRITICAL_STREAM);
        }
    }
}
