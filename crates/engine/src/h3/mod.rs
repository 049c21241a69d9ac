//! The client half of HTTP/3 (RFC 9114) on h2lab's QUIC shell ([`h2lab_quic`]): one
//! [`H3Client`] per QUIC connection, driven by a [`Shell`](h2lab_quic::Shell) in the owner's
//! mio loop (the shell's timers come from quinn-proto's `poll_timeout`).
//!
//! What it does: opens our control stream (SETTINGS) and the QPACK encoder/decoder streams,
//! reads the server's control stream (SETTINGS, GOAWAY) and QPACK streams, and keeps up to
//! `max_streams` requests in flight, never more than the peer's MAX_STREAMS allows (quinn-proto
//! refuses to open a stream beyond it; a request then waits for credit). Each request is the
//! QPACK section of a pre-encoded [`RequestTemplate`] (static table and literals; we announce
//! a QPACK table of 0 so responses never block) in one HEADERS frame on a new bidirectional
//! stream, finished at once. Responses are read with the wire crate's [`RequestStream`].
//! After a GOAWAY no request is opened; requests on streams at or above its identifier are
//! counted as refused. Per request the only allocations are quinn-proto's own.
//!
//! Status: a building block. `h2lab bench --h3` does not use it yet (the worker loop's
//! transport for QUIC is not wired); its tests drive it against `h2lab serve --h3`.

use std::collections::HashMap;
use std::time::Instant;

use h2lab_quic::quinn_proto::{
    Connection, Dir, Event, ReadError, StreamEvent, StreamId, VarInt, WriteError,
};
use h2lab_quic::ConnApp;
use h2lab_wire::h3::control::{write_control_stream_start, ControlEvent, ControlReader};
use h2lab_wire::h3::fields::{SectionFacts, SectionKind};
use h2lab_wire::h3::frame::Settings;
use h2lab_wire::h3::request::{write_headers, RecvError, RequestEvents, RequestStream};
use h2lab_wire::h3::stream::{PeerStreams, UniAction, UniStreamType};
use h2lab_wire::h3::{ErrorCode, Role};
use h2lab_wire::qpack::{Decoder, RequestTemplate};

/// What the connections of one loop report (the worker's statistics would go here).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct H3Counts {
    /// Requests sent.
    pub started: u64,
    /// Responses complete.
    pub completed: u64,
    /// Final responses by class (1xx not counted): 2xx, 3xx, 4xx, 5xx.
    pub status: [u64; 4],
    /// Response content octets.
    pub body_bytes: u64,
    /// Requests reset by the server before completing.
    pub reset: u64,
    /// Requests the server provably did not process (at or above a GOAWAY's identifier).
    pub refused: u64,
    /// Requests in flight when their connection was lost (closed by the peer or idle).
    pub lost: u64,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Connections that ended with a protocol error (ours or the peer's).
    pub protocol_errors: u64,
}

/// The requests a connection sends, and how many.
#[derive(Debug)]
pub struct H3Work {
    /// Requests still to send (shared by the loop's connections).
    pub todo: u64,
    /// Counters.
    pub counts: H3Counts,
}

/// One request in flight.
struct Req {
    recv: RequestStream,
    inbuf: Vec<u8>,
    status: Option<u16>,
    done: bool,
}

/// Response sink of one stream (status and content length).
struct Sink<'a> {
    status: &'a mut Option<u16>,
    body: &'a mut u64,
    done: &'a mut bool,
}

impl RequestEvents for Sink<'_> {
    fn field(&mut self, _name: &[u8], _value: &[u8]) {}
    fn section_done(&mut self, kind: SectionKind, facts: SectionFacts, informational: bool) {
        if !informational && matches!(kind, SectionKind::Response) {
            *self.status = facts.status;
        }
    }
    fn data(&mut self, chunk: &[u8]) {
        *self.body += chunk.len() as u64;
    }
    fn end(&mut self) {
        *self.done = true;
    }
}

/// What a peer unidirectional stream is.
enum Uni {
    Header(Vec<u8>),
    Control(Vec<u8>),
    QpackEncoder,
    QpackDecoder,
    Ignored,
}

/// One of our unidirectional streams and what it still has to write.
#[derive(Default)]
struct OutStream {
    id: Option<StreamId>,
    buf: Vec<u8>,
}

impl OutStream {
    fn flush(&mut self, conn: &mut Connection) -> bool {
        let Some(id) = self.id else {
            return true;
        };
        while !self.buf.is_empty() {
            match conn.send_stream(id).write(&self.buf) {
                Ok(n) => {
                    self.buf.drain(..n);
                }
                Err(WriteError::Blocked) => return true,
                Err(_) => return false,
            }
        }
        true
    }
}

/// The client side of one HTTP/3 connection (see the module docs).
pub struct H3Client {
    template: RequestTemplate,
    max_streams: usize,
    next_path: usize,
    started: bool,
    control: OutStream,
    encoder_out: OutStream,
    decoder_out: OutStream,
    uni: HashMap<StreamId, Uni>,
    peer_streams: PeerStreams,
    control_in: ControlReader,
    qdec: Decoder,
    reqs: HashMap<StreamId, Req>,
    pool: Vec<Req>,
    section: Vec<u8>,
    frame: Vec<u8>,
    encoder_scratch: Vec<u8>,
    goaway: Option<u64>,
    closed: bool,
}

fn h3_code(code: u64) -> VarInt {
    VarInt::from_u64(code).unwrap_or(VarInt::MAX)
}

impl H3Client {
    /// A connection sending `template`'s requests, at most `max_streams` at once (`-m`).
    pub fn new(template: RequestTemplate, max_streams: u32) -> H3Client {
        H3Client {
            template,
            max_streams: max_streams.max(1) as usize,
            next_path: 0,
            started: false,
            control: OutStream::default(),
            encoder_out: OutStream::default(),
            decoder_out: OutStream::default(),
            uni: HashMap::new(),
            peer_streams: PeerStreams::new(Role::Client),
            control_in: ControlReader::new(Role::Client),
            qdec: Decoder::new(0, 0),
            reqs: HashMap::with_capacity(max_streams as usize),
            pool: Vec::new(),
            section: Vec::with_capacity(256),
            frame: Vec::with_capacity(256),
            encoder_scratch: Vec::new(),
            goaway: None,
            closed: false,
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.reqs.len()
    }

    /// The server sent GOAWAY, or the connection is over: no new requests here.
    pub fn is_done(&self) -> bool {
        self.closed || self.goaway.is_some()
    }

    fn start(&mut self, conn: &mut Connection) {
        if self.started || conn.is_handshaking() {
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
        // A QPACK table of 0: the server's sections never wait for inserts.
        write_control_stream_start(Settings::default(), &mut self.control.buf);
        UniStreamType::QpackEncoder.write(&mut self.encoder_out.buf);
        UniStreamType::QpackDecoder.write(&mut self.decoder_out.buf);
    }

    fn close(&mut self, conn: &mut Connection, code: ErrorCode) {
        if !self.closed {
            self.closed = true;
            conn.close(Instant::now(), h3_code(code.0), bytes_empty());
        }
    }

    /// Opens request streams while there is work, room under `-m` and stream credit.
    fn submit(&mut self, conn: &mut Connection, work: &mut H3Work) {
        while self.started
            && !self.closed
            && self.goaway.is_none()
            && work.todo > 0
            && self.reqs.len() < self.max_streams
        {
            let Some(id) = conn.streams().open(Dir::Bi) else {
                break; // the peer's MAX_STREAMS: wait for credit
            };
            self.section.clear();
            self.template.encode_next(
                u64::from(id),
                self.next_path,
                &mut self.section,
                &mut self.encoder_scratch,
            );
            self.next_path = self.next_path.wrapping_add(1);
            self.frame.clear();
            write_headers(&self.section, &mut self.frame);
            let mut s = conn.send_stream(id);
            // A new stream has the whole initial stream window: a request head fits.
            match s.write(&self.frame) {
                Ok(n) if n == self.frame.len() => {}
                _ => {
                    let _ = s.reset(h3_code(ErrorCode::H3_INTERNAL_ERROR.0));
                    self.close(conn, ErrorCode::H3_INTERNAL_ERROR);
                    return;
                }
            }
            let _ = s.finish();
            work.todo -= 1;
            work.counts.started += 1;
            let req = match self.pool.pop() {
                Some(mut r) => {
                    r.recv = RequestStream::new(Role::Client, u64::from(id));
                    r.inbuf.clear();
                    r.status = None;
                    r.done = false;
                    r
                }
                None => Req {
                    recv: RequestStream::new(Role::Client, u64::from(id)),
                    inbuf: Vec::new(),
                    status: None,
                    done: false,
                },
            };
            self.reqs.insert(id, req);
        }
    }

    fn on_event(&mut self, conn: &mut Connection, ev: Event, work: &mut H3Work) {
        match ev {
            Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                while let Some(id) = conn.streams().accept(Dir::Uni) {
                    self.uni.insert(id, Uni::Header(Vec::new()));
                    self.read(conn, id, work);
                }
            }
            Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                // RFC 9114 §6.1: a server never opens bidirectional streams.
                self.close(conn, ErrorCode::H3_STREAM_CREATION_ERROR);
            }
            Event::Stream(StreamEvent::Readable { id }) => self.read(conn, id, work),
            Event::ConnectionLost { .. } => {
                self.closed = true;
                // Requests still in flight are lost with the connection.
                work.counts.lost += self.reqs.len() as u64;
                self.reqs.clear();
            }
            _ => {}
        }
    }

    fn read(&mut self, conn: &mut Connection, id: StreamId, work: &mut H3Work) {
        let bidi = id.dir() == Dir::Bi;
        let mut rs = conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        let mut fin = false;
        let mut reset = false;
        let mut err: Option<ErrorCode> = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if err.is_none() {
                        err = if bidi {
                            self.feed_request(id, &chunk.bytes, false, work)
                        } else {
                            self.feed_uni(id, &chunk.bytes, false, work)
                        };
                    }
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    reset = true;
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        if err.is_none() && fin {
            err = if bidi {
                self.feed_request(id, &[], true, work)
            } else {
                Some(ErrorCode::H3_CLOSED_CRITICAL_STREAM)
            };
        }
        if reset && bidi && self.reqs.contains_key(&id) {
            self.finish(id, work, true);
        }
        if let Some(code) = err {
            work.counts.protocol_errors += 1;
            self.close(conn, code);
        }
    }

    /// Ends request `id`: complete, or reset (refused when above the GOAWAY identifier).
    fn finish(&mut self, id: StreamId, work: &mut H3Work, reset: bool) {
        let Some(r) = self.reqs.remove(&id) else {
            return;
        };
        if reset {
            if self.goaway.is_some_and(|g| u64::from(id) >= g) {
                work.counts.refused += 1;
            } else {
                work.counts.reset += 1;
            }
        } else {
            work.counts.completed += 1;
            if let Some(s) = r.status {
                if let Some(c) = work
                    .counts
                    .status
                    .get_mut(usize::from(s / 100).wrapping_sub(2))
                {
                    *c += 1;
                }
            }
        }
        if self.pool.len() < self.max_streams {
            self.pool.push(r);
        }
    }

    fn feed_request(
        &mut self,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
        work: &mut H3Work,
    ) -> Option<ErrorCode> {
        let r = self.reqs.get_mut(&id)?;
        let mut sink = Sink {
            status: &mut r.status,
            body: &mut work.counts.body_bytes,
            done: &mut r.done,
        };
        let res: Result<(), RecvError> = if r.inbuf.is_empty() {
            r.recv.recv(bytes, fin, &mut self.qdec, &mut sink).map(|p| {
                r.inbuf
                    .extend_from_slice(bytes.get(p.consumed..).unwrap_or_default());
            })
        } else {
            r.inbuf.extend_from_slice(bytes);
            let input = std::mem::take(&mut r.inbuf);
            let res = r.recv.recv(&input, fin, &mut self.qdec, &mut sink);
            let used = res.as_ref().map_or(0, |p| p.consumed);
            r.inbuf = input;
            r.inbuf.drain(..used);
            res.map(|_| ())
        };
        match res {
            Ok(()) => {
                if r.done {
                    self.finish(id, work, false);
                }
                None
            }
            Err(e) => Some(e.code()),
        }
    }

    fn feed_uni(
        &mut self,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
        work: &mut H3Work,
    ) -> Option<ErrorCode> {
        let mut input: &[u8] = bytes;
        let mut owned: Vec<u8>;
        if let Some(Uni::Header(buf)) = self.uni.get_mut(&id) {
            buf.extend_from_slice(bytes);
            let (ty, n) = UniStreamType::parse(buf)?;
            owned = std::mem::take(buf);
            owned.drain(..n);
            let next = match self.peer_streams.open(u64::from(id), ty) {
                Ok(UniAction::Control) => Uni::Control(Vec::new()),
                Ok(UniAction::QpackEncoder) => Uni::QpackEncoder,
                Ok(UniAction::QpackDecoder) => Uni::QpackDecoder,
                Ok(UniAction::Push(_) | UniAction::Ignore(_)) => Uni::Ignored,
                Err(e) => return Some(e.code),
            };
            self.uni.insert(id, next);
            input = &owned;
        }
        match self.uni.get_mut(&id)? {
            Uni::Header(_) | Uni::Ignored => None,
            Uni::Control(tail) => {
                let mut data = std::mem::take(tail);
                data.extend_from_slice(input);
                let mut settings = None;
                let mut goaway = None;
                let res = self.control_in.recv(&data, fin, |ev| match ev {
                    ControlEvent::Settings(s) => settings = Some(s),
                    ControlEvent::GoAway(g) => goaway = Some(g),
                    _ => {}
                });
                if let Some(s) = settings {
                    self.template.set_peer_settings(
                        usize::try_from(s.qpack_max_table_capacity).unwrap_or(usize::MAX),
                        usize::try_from(s.qpack_blocked_streams).unwrap_or(usize::MAX),
                    );
                }
                if let Some(g) = goaway {
                    work.counts.goaways += 1;
                    self.goaway = Some(g);
                }
                match res {
                    Ok(used) => {
                        data.drain(..used);
                        if let Some(Uni::Control(t)) = self.uni.get_mut(&id) {
                            *t = data;
                        }
                        None
                    }
                    Err(e) => Some(e.code),
                }
            }
            Uni::QpackEncoder => match self.qdec.feed_encoder_stream(input) {
                Ok(()) => None,
                Err(e) => Some(ErrorCode::from_qpack(e.code())),
            },
            Uni::QpackDecoder => match self.template.feed_decoder_stream(input) {
                Ok(()) => None,
                Err(e) => Some(ErrorCode::from_qpack(e.code())),
            },
        }
    }
}

fn bytes_empty() -> bytes::Bytes {
    bytes::Bytes::new()
}

impl ConnApp for H3Client {
    type Ctx = H3Work;

    fn drive(&mut self, conn: &mut Connection, work: &mut H3Work, _now: Instant) {
        if self.closed {
            while conn.poll().is_some() {}
            return;
        }
        while let Some(ev) = conn.poll() {
            self.on_event(conn, ev, work);
            if self.closed {
                return;
            }
        }
        self.start(conn);
        self.submit(conn, work);
        self.encoder_out.buf.append(&mut self.encoder_scratch);
        self.qdec.take_decoder_stream(&mut self.decoder_out.buf);
        let flushed = self.control.flush(conn)
            && self.encoder_out.flush(conn)
            && self.decoder_out.flush(conn);
        if !flushed {
            self.close(conn, ErrorCode::H3_CLOSED_CRITICAL_STREAM);
        }
        if self.goaway.is_some() && self.reqs.is_empty() {
            // Drained after GOAWAY: close cleanly (H3_NO_ERROR).
            self.close(conn, ErrorCode::H3_NO_ERROR);
        }
    }

    fn deadline(&self) -> Option<Instant> {
        None
    }

    fn on_shutdown(&mut self, conn: &mut Connection, _now: Instant) {
        if !self.closed {
            self.close(conn, ErrorCode::H3_NO_ERROR);
        }
    }
}

/// The QUIC client configuration for `-p h3`: rustls as on TCP (h2load's suite order,
/// certificate verification off unless `insecure` is false), ALPN `h3`.
pub fn quic_client_config(
    insecure: bool,
    opts: &crate::tls_opts::TlsOptions,
) -> Result<h2lab_quic::quinn_proto::ClientConfig, crate::error::TransportError> {
    let tls = crate::transport::client_config(&["h3".to_owned()], insecure, opts)?;
    let crypto = h2lab_quic::quinn_proto::crypto::rustls::QuicClientConfig::try_from(
        std::sync::Arc::new(tls),
    )
    .map_err(|_| {
        crate::error::TransportError::Setup(rustls::Error::General(
            "QUIC needs TLS 1.3 with TLS_AES_128_GCM_SHA256".into(),
        ))
    })?;
    Ok(h2lab_quic::quinn_proto::ClientConfig::new(
        std::sync::Arc::new(crypto),
    ))
}
