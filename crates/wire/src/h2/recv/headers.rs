//! Field blocks: HEADERS (+ CONTINUATION) and PUSH_PROMISE, stream opening, HPACK decoding
//! and field validation (RFC 9113 §6.2, §6.6, §8).

use crate::frame::{BlockKind, ErrorCode, H2Error, HeaderBlock, StreamId};
use crate::hpack::{DecodeLog, HpackError};

use super::{conn_err, protocol, Absent};
use crate::h2::conn::{Role, State};
use crate::h2::events::{Events, HeadersDone, HeadersKind};
use crate::h2::fields::{BlockFacts, BlockKind as Expect, FieldCheck, Malformed};
use crate::h2::store::{flag, Closed};

impl State {
    pub(super) fn on_block(
        &mut self,
        block: HeaderBlock<'_>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let pre = self.block_error.take();
        match block.kind {
            BlockKind::Headers { end_stream, .. } => {
                self.on_headers(block.stream_id, end_stream, block.block, pre, out, sink)
            }
            BlockKind::PushPromise { promised_stream_id } => {
                self.on_push_promise(block.stream_id, promised_stream_id, block.block, out, sink)
            }
        }
    }

    /// A complete PUSH_PROMISE (client role, push enabled): reserve the
    /// promised stream ("reserved (remote)", RFC 9113 §5.1) and deliver the
    /// promised request through [`Events::promised_header`] and
    /// [`Events::push_promise`].
    fn on_push_promise(
        &mut self,
        parent: StreamId,
        promised: StreamId,
        block: &[u8],
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if self.role != Role::Client || !self.local.enable_push {
            return Err(protocol("RFC 9113 §8.4: unexpected PUSH_PROMISE"));
        }
        // RFC 9113 §6.6: "PUSH_PROMISE frames MUST only be sent on a
        // peer-initiated stream that is in either the "open" or "half-closed
        // (remote)" state. ... If the stream identifier field specifies the
        // value 0x00, a recipient MUST respond with a connection error of type
        // PROTOCOL_ERROR." A promise on a stream we reset is still processed
        // (its block feeds HPACK) and the promised stream refused below.
        let parent_open = self
            .streams
            .get(parent)
            .is_some_and(|s| s.has(flag::LOCAL) && !s.has(flag::RECV_CLOSED));
        let parent_reset = self.closed.find(parent) == Some(Closed::ByUs);
        if !parent_open && !parent_reset {
            return Err(protocol(
                "RFC 9113 §6.6: PUSH_PROMISE on a stream that is not open",
            ));
        }
        // RFC 9113 §6.6: "A receiver MUST treat the receipt of a PUSH_PROMISE
        // that promises an illegal stream identifier (Section 5.1.1) as a
        // connection error (Section 5.4.1) of type PROTOCOL_ERROR." The
        // promised id must be new (idle) and even (checked by the decoder).
        if !matches!(self.absent(promised), Absent::Idle) {
            return Err(protocol(
                "RFC 9113 §5.1.1: PUSH_PROMISE promises a stream id already used",
            ));
        }
        self.last_peer_id = promised.get();
        if !parent_open || self.goaway_sent.is_some() {
            // Not wanted: keep HPACK in sync, refuse the promised stream.
            self.discard_block(block)?;
            crate::frame::RstStream::new(promised, ErrorCode::CANCEL).encode(out);
            self.closed.push(promised, Closed::ByUs);
            return self.guard.idle(&self.limits);
        }
        // RFC 9113 §8.4: "The header fields in PUSH_PROMISE and any subsequent
        // CONTINUATION frames MUST be a valid and complete set of request
        // header fields (Section 8.3.1)."
        let mut check = FieldCheck::new(Expect::Request);
        let mut bad: Option<Malformed> = None;
        let res = self.dec.decode(block, |f| {
            if bad.is_some() {
                return;
            }
            match check.field(f.name, f.value) {
                Ok(()) => sink.promised_header(promised, f.name, f.value),
                Err(m) => bad = Some(m),
            }
        });
        match res {
            Ok(()) | Err(HpackError::HeaderListTooLarge { .. }) => {}
            Err(e) => return Err(compression_error(e)),
        }
        if let Some(rule) = bad.map_or_else(|| check.finish().err(), Some) {
            // RFC 9113 §8.4: "If a client receives a PUSH_PROMISE that does
            // not include a complete and valid set of header fields ... it
            // MUST respond with a stream error (Section 5.4.2) of type
            // PROTOCOL_ERROR." The stream is reserved, then reset.
            let stream = self.new_stream(promised, flag::SEND_CLOSED);
            self.streams.insert(stream);
            let e = H2Error::stream(promised, ErrorCode::PROTOCOL_ERROR, rule);
            return self.stream_error(e, out, sink);
        }
        // RFC 9113 §5.1: "Receiving a PUSH_PROMISE frame causes the stream to
        // become "reserved (remote)"": we send nothing on it but
        // RST_STREAM, WINDOW_UPDATE and PRIORITY.
        let stream = self.new_stream(promised, flag::SEND_CLOSED);
        self.streams.insert(stream);
        self.guard.progress();
        sink.push_promise(parent, promised);
        Ok(())
    }

    pub(super) fn on_headers(
        &mut self,
        id: StreamId,
        end_stream: bool,
        block: &[u8],
        pre: Option<H2Error>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if let Some(s) = self.streams.get(id) {
            let kind = if s.has(flag::GOT_HEADERS) {
                Expect::Trailers
            } else {
                Expect::Response
            };
            let recv_closed = s.has(flag::RECV_CLOSED);
            let e = if recv_closed {
                // RFC 9113 §5.1 half-closed (remote): additional frames "MUST"
                // get "a stream error (Section 5.4.2) of type STREAM_CLOSED".
                Some(H2Error::stream(
                    id,
                    ErrorCode::STREAM_CLOSED,
                    "RFC 9113 §5.1: HEADERS on a half-closed (remote) stream",
                ))
            } else if pre.is_some() {
                pre
            } else if kind == Expect::Trailers && !end_stream {
                // RFC 9113 §8.1: "An endpoint that receives a HEADERS frame
                // without the END_STREAM flag set after receiving the HEADERS
                // frame that opens a request or after receiving a final
                // (non-informational) status code MUST treat the corresponding
                // request or response as malformed (Section 8.1.1)."
                Some(H2Error::stream(
                    id,
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §8.1: second HEADERS without END_STREAM",
                ))
            } else {
                None
            };
            if let Some(e) = e {
                self.discard_block(block)?;
                return self.stream_error(e, out, sink);
            }
            return self.deliver_block(id, kind, end_stream, block, out, sink);
        }

        match self.absent(id) {
            Absent::Closed => match self.closed.find(id) {
                Some(Closed::ByUs) => {
                    // RFC 9113 §5.1: frames on a stream we reset are ignored,
                    // but the block still updates the HPACK context (§4.3).
                    self.discard_block(block)?;
                    self.guard.idle(&self.limits)
                }
                // RFC 9113 §5.1 closed: "an endpoint that receives any frames
                // after receiving a frame with the END_STREAM flag set MUST
                // treat that as a connection error (Section 5.4.1) of type
                // STREAM_CLOSED".
                Some(Closed::Normally) => Err(conn_err(
                    ErrorCode::STREAM_CLOSED,
                    "RFC 9113 §5.1: HEADERS on a closed stream",
                )),
                // RFC 9113 §5.1.1: "The identifier of a newly established
                // stream MUST be numerically greater than all streams that the
                // initiating endpoint has opened or reserved. ... An endpoint
                // that receives an unexpected stream identifier MUST respond
                // with a connection error (Section 5.4.1) of type
                // PROTOCOL_ERROR."
                None => Err(protocol(
                    "RFC 9113 §5.1.1: HEADERS on a stream id already used",
                )),
            },
            Absent::Idle => {
                if self.role == Role::Client {
                    // RFC 9113 §5.1 idle: for a stream the server would
                    // initiate, "receiving a HEADERS frame MUST also be treated
                    // as a connection error (Section 5.4.1) of type
                    // PROTOCOL_ERROR"; a stream we have not opened is idle.
                    return Err(protocol("RFC 9113 §5.1: HEADERS on an idle stream"));
                }
                if !self.peer_initiated(id) {
                    // RFC 9113 §5.1.1: "Streams initiated by a client MUST use
                    // odd-numbered stream identifiers".
                    return Err(protocol("RFC 9113 §5.1.1: client stream with an even id"));
                }
                self.open_peer_stream(id, end_stream, block, pre, out, sink)
            }
        }
    }

    pub(super) fn open_peer_stream(
        &mut self,
        id: StreamId,
        end_stream: bool,
        block: &[u8],
        pre: Option<H2Error>,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        self.last_peer_id = id.get();
        if self.goaway_sent.is_some_and(|last| id > last) {
            // RFC 9113 §6.8: "the sender can discard frames for streams
            // initiated by the receiver with identifiers higher than the
            // identified last stream." The block still feeds HPACK.
            self.discard_block(block)?;
            self.closed.push(id, Closed::ByUs);
            return self.guard.idle(&self.limits);
        }
        self.guard.stream_opened(&self.limits);
        let refuse = match self.local.max_concurrent_streams {
            Some(max) => self.streams.remote_active() >= max as usize,
            None => false,
        };
        let e = if let Some(e) = pre {
            Some(e)
        } else if refuse {
            // RFC 9113 §5.1.2: "An endpoint that receives a HEADERS frame that
            // causes its advertised concurrent stream limit to be exceeded MUST
            // treat this as a stream error (Section 5.4.2) of type
            // PROTOCOL_ERROR or REFUSED_STREAM."
            Some(H2Error::stream(
                id,
                ErrorCode::REFUSED_STREAM,
                "RFC 9113 §5.1.2: concurrent stream limit exceeded",
            ))
        } else {
            None
        };
        if let Some(e) = e {
            self.discard_block(block)?;
            return self.stream_error(e, out, sink);
        }
        let stream = self.new_stream(id, 0);
        self.streams.insert(stream);
        self.deliver_block(id, Expect::Request, end_stream, block, out, sink)
    }

    /// Decode a block only to keep the HPACK context in sync.
    pub(super) fn discard_block(&mut self, block: &[u8]) -> Result<(), H2Error> {
        match self.dec.decode(block, |_| {}) {
            Ok(()) | Err(HpackError::HeaderListTooLarge { .. }) => Ok(()),
            Err(e) => Err(compression_error(e)),
        }
    }

    /// Decode, validate and deliver a field block on the open stream `id`.
    pub(super) fn deliver_block(
        &mut self,
        id: StreamId,
        kind: Expect,
        end_stream: bool,
        block: &[u8],
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        // A response block equal to the last one, in a state it decodes the same under,
        // gives the same fields and facts (see `memo`): when the sink does not want the
        // fields, replay it instead of decoding and validating it again.
        let memo = kind == Expect::Response && !sink.wants_fields();
        let known = if memo {
            self.memo.replay(block, &mut self.dec)
        } else {
            None
        };
        let (facts, decoded_len) = match known {
            Some(known) => known,
            None => {
                let before = if memo { self.dec.context() } else { None };
                let mut log = DecodeLog::default();
                match self.decode_block(id, kind, block, &mut log, out, sink)? {
                    Some((facts, decoded_len)) => {
                        if let Some(before) = before {
                            self.memo
                                .remember(block, before, log, &self.dec, facts, decoded_len);
                        }
                        (facts, decoded_len)
                    }
                    None => return Ok(()),
                }
            }
        };
        let client = self.role == Role::Client;
        let Some(s) = self.streams.get_mut(id) else {
            return Ok(());
        };
        let mut malformed: Option<Malformed> = None;
        let hk = match kind {
            Expect::Request => HeadersKind::Request,
            Expect::Trailers => HeadersKind::Trailers,
            Expect::Response => match facts.status {
                // RFC 9113 §8.6: "The 101 (Switching Protocols) informational
                // status code (Section 15.2.2 of [HTTP]) MUST NOT be used in
                // HTTP/2" — treat as malformed.
                Some(101) => {
                    malformed = Some("RFC 9113 §8.6: 101 Switching Protocols in HTTP/2");
                    HeadersKind::Informational
                }
                Some(100..=199) => {
                    // RFC 9113 §8.1: "A HEADERS frame with the END_STREAM flag
                    // set that carries an informational status code is
                    // malformed (Section 8.1.1)."
                    if end_stream {
                        malformed = Some("RFC 9113 §8.1: informational response with END_STREAM");
                    }
                    HeadersKind::Informational
                }
                _ => HeadersKind::Response,
            },
        };
        match hk {
            HeadersKind::Request | HeadersKind::Response => {
                s.set(flag::GOT_HEADERS);
                s.content_length = facts.content_length;
                // RFC 9110 §8.6: 204 and 304 responses carry no content
                // whatever content-length says.
                if matches!(facts.status, Some(204 | 304)) {
                    s.set(flag::NO_BODY);
                }
                // RFC 9113 §8.1.1: content-length must equal the DATA sum; a
                // request ending with its HEADERS has none. (A response ending
                // here may answer HEAD, RFC 9110 §9.3.2, which we cannot know.)
                if end_stream && !client && s.content_length.is_some_and(|n| n > 0) {
                    malformed = Some("RFC 9113 §8.1.1: content-length without DATA");
                }
            }
            HeadersKind::Trailers => {
                // RFC 9113 §8.1.1 at the end of the content. A client cannot
                // tell a response to HEAD: it only checks when DATA came.
                if let Some(cl) = s.content_length.filter(|_| !s.has(flag::NO_BODY)) {
                    if s.received != cl && (!client || s.received > 0) {
                        malformed =
                            Some("RFC 9113 §8.1.1: DATA length does not match content-length");
                    }
                }
            }
            HeadersKind::Informational => {}
        }
        if let Some(rule) = malformed {
            return self.stream_error(
                H2Error::stream(id, ErrorCode::PROTOCOL_ERROR, rule),
                out,
                sink,
            );
        }
        self.guard.progress();
        sink.headers_done(
            id,
            HeadersDone {
                kind: hk,
                end_stream,
                block_len: block.len(),
                decoded_len,
                status: facts.status,
                content_length: facts.content_length,
            },
        );
        if end_stream {
            self.recv_end(id);
        }
        Ok(())
    }

    /// Decodes and validates a field block, delivering its fields to `sink`: its facts
    /// and decoded length, or `None` when it was malformed (the stream was reset).
    fn decode_block(
        &mut self,
        id: StreamId,
        kind: Expect,
        block: &[u8],
        log: &mut DecodeLog,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<Option<(BlockFacts, usize)>, H2Error> {
        let mut check = FieldCheck::new(kind);
        let mut bad: Option<Malformed> = None;
        let mut decoded_len = 0usize;
        let res = self.dec.decode_logged(
            block,
            |f| {
                if bad.is_some() {
                    return;
                }
                match check.field(f.name, f.value) {
                    Ok(()) => {
                        decoded_len = decoded_len.saturating_add(f.name.len() + f.value.len());
                        sink.header(id, f.name, f.value);
                    }
                    Err(m) => bad = Some(m),
                }
            },
            log,
        );
        match res {
            Ok(()) => {}
            // RFC 9113 §10.5.1: "A server that receives a larger field block
            // than it is willing to handle can send an HTTP 431 (Request Header
            // Fields Too Large) status code. A client can discard responses
            // that it cannot process." The decoder kept the HPACK context in
            // sync; the stream is refused.
            Err(HpackError::HeaderListTooLarge { .. }) => {
                let e = H2Error::stream(
                    id,
                    ErrorCode::REFUSED_STREAM,
                    "RFC 9113 §10.5.1: header list larger than SETTINGS_MAX_HEADER_LIST_SIZE",
                );
                return self.stream_error(e, out, sink).map(|()| None);
            }
            Err(e) => return Err(compression_error(e)),
        }
        match bad.map_or_else(|| check.finish(), Err) {
            Ok(facts) => Ok(Some((facts, decoded_len))),
            Err(rule) => self
                .stream_error(
                    H2Error::stream(id, ErrorCode::PROTOCOL_ERROR, rule),
                    out,
                    sink,
                )
                .map(|()| None),
        }
    }
}

/// RFC 9113 §4.3: "A decoding error in a field block MUST be treated as a
/// connection error (Section 5.4.1) of type COMPRESSION_ERROR."
fn compression_error(e: HpackError) -> H2Error {
    let rule = match e {
        HpackError::ZeroIndex => "RFC 7541 §6.1: index 0",
        HpackError::IndexOutOfRange { .. } => "RFC 7541 §2.3.3: index out of range",
        HpackError::HuffmanEos => "RFC 7541 §5.2: EOS in a Huffman string",
        HpackError::HuffmanPaddingTooLong => "RFC 7541 §5.2: Huffman padding longer than 7 bits",
        HpackError::HuffmanInvalidPadding => "RFC 7541 §5.2: Huffman padding is not EOS",
        HpackError::IntegerOverflow => "RFC 7541 §5.1: integer overflow",
        HpackError::StringTooLong { .. } => "RFC 7541 §7.4: string literal too long",
        HpackError::Truncated => "RFC 9113 §4.3: truncated field block",
        HpackError::SizeUpdateNotAtStart => "RFC 7541 §4.2: size update after a field",
        HpackError::SizeUpdateTooLarge { .. } => {
            "RFC 7541 §6.3: size update above SETTINGS_HEADER_TABLE_SIZE"
        }
        HpackError::MissingSizeUpdate { .. } => {
            "RFC 9113 §4.3.1: missing dynamic table size update"
        }
        HpackError::HeaderListTooLarge { .. } => "RFC 9113 §10.5.1: header list too large",
    };
    conn_err(ErrorCode::COMPRESSION_ERROR, rule)
}
