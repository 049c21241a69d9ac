//! The sans-IO HTTP/3 request-stream state machine (RFC 9114 §4.1), for both roles.
//!
//! A [`RequestStream`] reads one bidirectional stream: a server reads the request, a client
//! the response. It splits the bytes into frames ([`FrameDecoder`]), decodes field
//! sections with the connection's QPACK [`Decoder`] (a blocked section pauses the stream
//! until the encoder stream delivers its inserts), validates them
//! ([`FieldValidator`], shared with HTTP/2), enforces the frame sequence of §4.1 and the
//! content-length rule of §4.1.2, and reports to a [`RequestEvents`] sink. DATA is passed
//! through in the pieces the transport delivered (zero copy); a HEADERS frame must be
//! complete in the input ([`RecvProgress::consumed`] stops before an incomplete one).
//!
//! §4.1: "An HTTP message (request or response) consists of: 1. the header section,
//! including message control data, sent as a single HEADERS frame, 2. optionally, the
//! content, if present, sent as a series of DATA frames, and 3. optionally, the trailer
//! section, if present, sent as a single HEADERS frame." "Receipt of an invalid sequence of
//! frames MUST be treated as a connection error of type H3_FRAME_UNEXPECTED."

use std::fmt;

use super::error::{ErrorCode, H3Error, Scope};
use super::fields::{FieldValidator, SectionFacts, SectionKind};
use super::frame::{
    types, write_frame_header, Decoded as FrameDecoded, Frame, FrameDecoder, StreamContext,
};
use super::memo::SectionMemo;
use crate::h2::Role;
use crate::qpack::{Decoded, Decoder, QpackError};

/// What the stream reports, in order.
pub trait RequestEvents {
    /// A HEADERS frame of `encoded_len` payload octets (the QPACK-encoded section) is about
    /// to be decoded (h2load counts these octets as the compressed header bytes).
    fn section_start(&mut self, _encoded_len: usize) {}
    /// One validated field of the current section.
    fn field(&mut self, name: &[u8], value: &[u8]);
    /// Whether the sink needs [`RequestEvents::field`] for every field. A sink that needs
    /// only the facts and sizes answers `false`: a static-only section byte-identical to the
    /// connection's previous one is then not decoded again, and
    /// [`RequestEvents::fields_skipped`] stands for its fields.
    fn wants_fields(&self) -> bool {
        true
    }
    /// The current section's fields were not delivered (see [`RequestEvents::wants_fields`]):
    /// the sum of their names' and values' lengths.
    fn fields_skipped(&mut self, _decoded_len: usize) {}
    /// The current section's validated fields all at once, replayed from the connection's
    /// section memo, packed as [`super::packed`] describes. Return
    /// `true` when taken; `false` (the default) has them delivered one by one through
    /// [`RequestEvents::field`] instead. Called only for sinks that want fields.
    fn packed_fields(&mut self, _packed: &[u8]) -> bool {
        false
    }
    /// The section is complete and valid. `informational` for a 1xx response (more header
    /// sections follow).
    fn section_done(&mut self, kind: SectionKind, facts: SectionFacts, informational: bool);
    /// A piece of content.
    fn data(&mut self, chunk: &[u8]);
    /// A PUSH_PROMISE (client role): the push ID; its request section is not decoded here.
    fn push_promise(&mut self, _push_id: u64) {}
    /// The message is complete (the stream ended after a valid message).
    fn end(&mut self);
}

/// A failure while reading a request stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvError {
    /// An HTTP/3 rule.
    H3(H3Error),
    /// QPACK could not decode a section.
    Qpack(QpackError),
}

impl RecvError {
    /// The error code to send.
    pub fn code(&self) -> ErrorCode {
        match self {
            RecvError::H3(e) => e.code,
            RecvError::Qpack(QpackError::HeaderListTooLarge { .. }) => ErrorCode::H3_EXCESSIVE_LOAD,
            RecvError::Qpack(e) => ErrorCode::from_qpack(e.code()),
        }
    }

    /// Connection or stream.
    pub fn scope(&self) -> Scope {
        match self {
            RecvError::H3(e) => e.scope,
            // RFC 9114 §4.2.2: a section above SETTINGS_MAX_FIELD_SECTION_SIZE concerns this
            // request only.
            RecvError::Qpack(e) if !e.is_connection_error() => Scope::Stream,
            RecvError::Qpack(_) => Scope::Connection,
        }
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::H3(e) => e.fmt(f),
            RecvError::Qpack(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RecvError {}

impl From<H3Error> for RecvError {
    fn from(e: H3Error) -> Self {
        RecvError::H3(e)
    }
}

impl From<QpackError> for RecvError {
    fn from(e: QpackError) -> Self {
        RecvError::Qpack(e)
    }
}

/// How far [`RequestStream::recv`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvProgress {
    /// Octets of the input consumed; keep the rest and pass it again with more.
    pub consumed: usize,
    /// The stream waits for QPACK inserts: call [`RequestStream::resume`] once
    /// [`Decoder::next_unblocked`] names this stream, then `recv` the rest.
    pub blocked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the (next) header section.
    Head,
    /// Header section done: content or trailers.
    Body,
    /// Trailers received: only the end of the stream may follow.
    Trailers,
    /// The message is complete.
    Done,
}

/// Receive side of one request stream (see the module docs).
#[derive(Clone, Debug)]
pub struct RequestStream {
    local: Role,
    stream_id: u64,
    frames: FrameDecoder,
    phase: Phase,
    blocked: bool,
    content_length: Option<u64>,
    received: u64,
    /// Content is not counted against content-length (HEAD responses, 204, 304).
    no_content_check: bool,
    request_was_head: bool,
}

const UNEXPECTED_DATA: H3Error = H3Error::connection(
    ErrorCode::H3_FRAME_UNEXPECTED,
    "RFC 9114 §4.1: DATA before the header section or after the trailers",
);
/// §7.1: "When a stream terminates cleanly, if the last frame on the stream was truncated,
/// this MUST be treated as a connection error of type H3_FRAME_ERROR."
const TRUNCATED: H3Error = H3Error::connection(
    ErrorCode::H3_FRAME_ERROR,
    "RFC 9114 §7.1: the stream ends inside a frame",
);
const UNEXPECTED_HEADERS: H3Error = H3Error::connection(
    ErrorCode::H3_FRAME_UNEXPECTED,
    "RFC 9114 §4.1: HEADERS after the trailer section",
);

impl RequestStream {
    /// The receive side of request stream `stream_id` for an endpoint of role `local`.
    pub fn new(local: Role, stream_id: u64) -> Self {
        RequestStream {
            local,
            stream_id,
            frames: FrameDecoder::new(StreamContext::Request { local }),
            phase: Phase::Head,
            blocked: false,
            content_length: None,
            received: 0,
            no_content_check: false,
            request_was_head: false,
        }
    }

    /// Client role: the request was HEAD, so the response's content-length describes no
    /// content (RFC 9110 §8.6).
    pub fn set_request_was_head(&mut self, head: bool) {
        self.request_was_head = head;
    }

    /// `true` once the message is complete.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Reads `input` (stream bytes in order); `fin` says the stream ends after it. See
    /// [`RecvProgress`]. Errors carry their code and scope ([`RecvError::scope`]).
    pub fn recv<E: RequestEvents>(
        &mut self,
        input: &[u8],
        fin: bool,
        qpack: &mut Decoder,
        ev: &mut E,
    ) -> Result<RecvProgress, RecvError> {
        let mut pos = 0;
        while !self.blocked {
            let rest = input.get(pos..).unwrap_or_default();
            let (d, n) = self.frames.decode(rest)?;
            pos += n;
            match d {
                FrameDecoded::NeedMore => break,
                FrameDecoded::Skipped { .. } => {}
                FrameDecoded::Data { chunk, end } => self.data(chunk, end, ev)?,
                FrameDecoded::Frame(Frame::Headers(section)) => self.headers(section, qpack, ev)?,
                FrameDecoded::Frame(Frame::PushPromise { push_id, .. }) => ev.push_promise(push_id),
                // The frame decoder rejects every other type on a request stream.
                FrameDecoded::Frame(_) => {}
            }
            if n == 0 {
                break;
            }
        }
        if fin && !self.blocked {
            if pos < input.len() {
                // The stream ends inside a frame header or a HEADERS payload.
                return Err(TRUNCATED.into());
            }
            self.finish(ev)?;
        }
        Ok(RecvProgress {
            consumed: pos,
            blocked: self.blocked,
        })
    }

    /// Decodes the section that blocked the stream, once QPACK released it.
    pub fn resume<E: RequestEvents>(
        &mut self,
        qpack: &mut Decoder,
        ev: &mut E,
    ) -> Result<bool, RecvError> {
        if !self.blocked {
            return Ok(true);
        }
        let kind = self.section_kind();
        let mut v = FieldValidator::new(kind);
        let mut bad = None;
        let r = qpack.decode_unblocked(self.stream_id, |f| {
            if bad.is_none() {
                match v.field(f.name, f.value) {
                    Ok(()) => ev.field(f.name, f.value),
                    Err(e) => bad = Some(e),
                }
            }
        })?;
        if r == Decoded::Blocked {
            return Ok(false);
        }
        self.blocked = false;
        if let Some(e) = bad {
            return Err(e.into());
        }
        self.section_done(kind, &v, ev)?;
        Ok(true)
    }

    fn section_kind(&self) -> SectionKind {
        match (self.phase, self.local) {
            (Phase::Head, Role::Server) => SectionKind::Request,
            (Phase::Head, Role::Client) => SectionKind::Response,
            _ => SectionKind::Trailers,
        }
    }

    fn headers<E: RequestEvents>(
        &mut self,
        section: &[u8],
        qpack: &mut Decoder,
        ev: &mut E,
    ) -> Result<(), RecvError> {
        if matches!(self.phase, Phase::Trailers | Phase::Done) {
            return Err(UNEXPECTED_HEADERS.into());
        }
        let kind = self.section_kind();
        ev.section_start(section.len());
        let memo = SectionMemo::eligible(section);
        if memo {
            if let Some((facts, decoded_len, required)) =
                qpack.memo.hit(kind, section, qpack.memo_state())
            {
                if required > 0 {
                    qpack.ack_replayed(self.stream_id, required);
                }
                if ev.wants_fields() {
                    if !ev.packed_fields(qpack.memo.packed()) {
                        qpack.memo.replay(|n, v| ev.field(n, v));
                    }
                } else {
                    ev.fields_skipped(decoded_len);
                }
                return self.section_facts(kind, facts, ev);
            }
        }
        let mut v = FieldValidator::new(kind);
        let mut bad = None;
        let mut decoded_len = 0usize;
        // The memo lives in the decoder, which decodes: taken out meanwhile (no allocation).
        let mut m = std::mem::take(&mut qpack.memo);
        m.start();
        let r = qpack.decode_section(self.stream_id, section, |f| {
            if bad.is_none() {
                match v.field(f.name, f.value) {
                    Ok(()) => {
                        decoded_len += f.name.len() + f.value.len();
                        if memo {
                            m.collect(f.name, f.value);
                        }
                        ev.field(f.name, f.value);
                    }
                    Err(e) => bad = Some(e),
                }
            }
        });
        qpack.memo = m;
        if r? == Decoded::Blocked {
            self.blocked = true;
            return Ok(());
        }
        if let Some(e) = bad {
            return Err(e.into());
        }
        let facts = v.finish()?;
        if memo {
            let required = qpack.required_of(section);
            let state = qpack.memo_state();
            qpack
                .memo
                .remember(kind, section, facts, decoded_len, required, state);
        }
        self.section_facts(kind, facts, ev)
    }

    fn section_done<E: RequestEvents>(
        &mut self,
        kind: SectionKind,
        v: &FieldValidator,
        ev: &mut E,
    ) -> Result<(), RecvError> {
        let facts = v.finish()?;
        self.section_facts(kind, facts, ev)
    }

    fn section_facts<E: RequestEvents>(
        &mut self,
        kind: SectionKind,
        facts: SectionFacts,
        ev: &mut E,
    ) -> Result<(), RecvError> {
        let informational =
            kind == SectionKind::Response && facts.status.is_some_and(|s| (100..200).contains(&s));
        match kind {
            SectionKind::Trailers => self.phase = Phase::Trailers,
            _ if informational => {}
            _ => {
                self.phase = Phase::Body;
                self.content_length = facts.content_length;
                self.no_content_check = self.request_was_head
                    || facts.is_head
                    || matches!(facts.status, Some(204) | Some(304));
            }
        }
        ev.section_done(kind, facts, informational);
        Ok(())
    }

    fn data<E: RequestEvents>(
        &mut self,
        chunk: &[u8],
        _end: bool,
        ev: &mut E,
    ) -> Result<(), RecvError> {
        if self.phase != Phase::Body {
            return Err(UNEXPECTED_DATA.into());
        }
        self.received += chunk.len() as u64;
        if !self.no_content_check && self.content_length.is_some_and(|cl| self.received > cl) {
            return Err(content_length_mismatch().into());
        }
        if !chunk.is_empty() {
            ev.data(chunk);
        }
        Ok(())
    }

    fn finish<E: RequestEvents>(&mut self, ev: &mut E) -> Result<(), RecvError> {
        if !self.frames.at_boundary() {
            return Err(H3Error::connection(
                ErrorCode::H3_FRAME_ERROR,
                "RFC 9114 §7.1: stream ends inside a frame",
            )
            .into());
        }
        match self.phase {
            Phase::Head => {
                // §4.1.2 / §8.1: a request stream that ends without a complete message:
                // H3_REQUEST_INCOMPLETE; a response without its final header section is
                // malformed.
                let e = match self.local {
                    Role::Server => H3Error::stream(
                        ErrorCode::H3_REQUEST_INCOMPLETE,
                        "RFC 9114 §4.1: request stream ended before its header section",
                    ),
                    Role::Client => H3Error::stream(
                        ErrorCode::H3_MESSAGE_ERROR,
                        "RFC 9114 §4.1: response stream ended before its final header section",
                    ),
                };
                Err(e.into())
            }
            Phase::Body | Phase::Trailers => {
                if !self.no_content_check
                    && self.content_length.is_some_and(|cl| cl != self.received)
                {
                    return Err(content_length_mismatch().into());
                }
                self.phase = Phase::Done;
                ev.end();
                Ok(())
            }
            Phase::Done => Ok(()),
        }
    }
}

/// RFC 9114 §4.1.2: "A request or response that is defined as having content when it
/// contains a Content-Length header field (Section 8.6 of [HTTP]) is malformed if the value
/// of the Content-Length header field does not equal the sum of the DATA frame lengths
/// received."
fn content_length_mismatch() -> H3Error {
    H3Error::stream(
        ErrorCode::H3_MESSAGE_ERROR,
        "RFC 9114 §4.1.2: content-length differs from the DATA received",
    )
}

/// Appends a HEADERS frame carrying `section` (an encoded QPACK field section).
pub fn write_headers(section: &[u8], dst: &mut Vec<u8>) {
    write_frame_header(types::HEADERS, section.len() as u64, dst);
    dst.extend_from_slice(section);
}

/// Appends the header of a DATA frame of `len` octets; the caller writes the payload from
/// its own buffer (zero copy).
pub fn write_data_header(len: u64, dst: &mut Vec<u8>) {
    write_frame_header(types::DATA, len, dst);
}

/// Why a send was refused: the message would be malformed (a local error, nothing is
/// written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SendError {
    /// Content or trailers before the header section, or after the trailers.
    OutOfOrder,
    /// More content than the content-length declared.
    TooMuchContent,
    /// The message ends with less content than the content-length declared.
    TooLittleContent,
    /// Already finished.
    Finished,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::OutOfOrder => "HTTP/3 message parts out of order (RFC 9114 §4.1)",
            SendError::TooMuchContent => "more content than content-length (RFC 9114 §4.1.2)",
            SendError::TooLittleContent => "less content than content-length (RFC 9114 §4.1.2)",
            SendError::Finished => "message already finished",
        })
    }
}

impl std::error::Error for SendError {}

/// Send side of one request stream: writes HEADERS and DATA frames in the order §4.1
/// allows (informational header sections, then the final one, content, trailers) and keeps
/// the content within the declared content-length. Frames go to a caller-owned buffer; DATA
/// payloads are written by the caller after [`SendStream::data_header`] (zero copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendStream {
    phase: Phase,
    content_length: Option<u64>,
    sent: u64,
}

impl Default for SendStream {
    fn default() -> Self {
        SendStream::new()
    }
}

impl SendStream {
    /// A stream with nothing sent.
    pub const fn new() -> Self {
        SendStream {
            phase: Phase::Head,
            content_length: None,
            sent: 0,
        }
    }

    /// Writes a header section (an encoded QPACK section). `informational` for a 1xx
    /// response (another header section follows); `content_length` as declared in it.
    pub fn headers(
        &mut self,
        section: &[u8],
        informational: bool,
        content_length: Option<u64>,
        dst: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        match self.phase {
            Phase::Head => {
                if !informational {
                    self.phase = Phase::Body;
                    self.content_length = content_length;
                }
            }
            Phase::Body => return Err(SendError::OutOfOrder),
            Phase::Trailers => return Err(SendError::OutOfOrder),
            Phase::Done => return Err(SendError::Finished),
        }
        write_headers(section, dst);
        Ok(())
    }

    /// Writes the header of a DATA frame of `len` octets (the caller writes the payload).
    pub fn data_header(&mut self, len: u64, dst: &mut Vec<u8>) -> Result<(), SendError> {
        match self.phase {
            Phase::Body => {}
            Phase::Done => return Err(SendError::Finished),
            _ => return Err(SendError::OutOfOrder),
        }
        let total = self.sent.saturating_add(len);
        if self.content_length.is_some_and(|cl| total > cl) {
            return Err(SendError::TooMuchContent);
        }
        self.sent = total;
        write_data_header(len, dst);
        Ok(())
    }

    /// Writes the trailer section.
    pub fn trailers(&mut self, section: &[u8], dst: &mut Vec<u8>) -> Result<(), SendError> {
        match self.phase {
            Phase::Body => {}
            Phase::Done => return Err(SendError::Finished),
            _ => return Err(SendError::OutOfOrder),
        }
        self.check_complete()?;
        self.phase = Phase::Trailers;
        write_headers(section, dst);
        Ok(())
    }

    /// The message is complete: the caller ends the stream (FIN).
    pub fn finish(&mut self) -> Result<(), SendError> {
        match self.phase {
            Phase::Body | Phase::Trailers => {}
            Phase::Done => return Err(SendError::Finished),
            Phase::Head => return Err(SendError::OutOfOrder),
        }
        self.check_complete()?;
        self.phase = Phase::Done;
        Ok(())
    }

    fn check_complete(&self) -> Result<(), SendError> {
        if self.content_length.is_some_and(|cl| self.sent < cl) {
            return Err(SendError::TooLittleContent);
        }
        Ok(())
    }
}
