//! The server side of the HTTP/1.1 `Upgrade: h2c` mechanism (RFC 7540
//! §3.2; RFC 9113 §3.1 deprecates it but clients such as curl still use
//! it): the `HTTP2-Settings` payload becomes the peer's settings and the
//! upgraded request becomes stream 1.

use crate::frame::{ErrorCode, FrameHeader, FrameKind, H2Error, Settings, StreamId};

use super::conn::{Connection, HeaderEncoder, Role};
use super::error::ConnError;
use super::events::{Events, HeadersDone, HeadersKind};
use super::fields::{BlockKind, FieldCheck, Malformed};
use super::store::flag;

/// RFC 7541 §4.1: "The size of an entry is the sum of its name's length in
/// octets ..., its value's length in octets, and 32."
const ENTRY_OVERHEAD: usize = 32;

impl<E: HeaderEncoder> Connection<E> {
    /// Make a fresh server connection the HTTP/2 side of an h2c upgrade
    /// (RFC 7540 §3.2), after the caller queued `101 Switching Protocols`
    /// on the transport. Call it before any [`recv`](Connection::recv).
    ///
    /// - Our SETTINGS go to `out` (RFC 7540 §3.5: "The first HTTP/2 frame
    ///   sent by the server MUST be a server connection preface").
    /// - `http2_settings` is the base64url-decoded `HTTP2-Settings` header
    ///   field: RFC 7540 §3.2.1 "A server decodes and interprets these values
    ///   as it would any other SETTINGS frame. Explicit acknowledgement of
    ///   these settings is not necessary, since a 101 response serves as
    ///   implicit acknowledgement." No ACK is written.
    /// - `request` is the HTTP/1.1 request as HTTP/2 fields (pseudo-header
    ///   fields first, lowercase names, no connection-specific fields). It
    ///   opens stream 1, "implicitly half-closed from the client toward the
    ///   server" (RFC 7540 §3.2): `sink` gets its [`Events::header`] calls and
    ///   [`Events::headers_done`] with `end_stream`, exactly as for a HEADERS
    ///   frame; answer it with [`send_headers`](Connection::send_headers).
    ///   A request HTTP/2 finds malformed (RFC 9113 §8.1.1) or too large
    ///   (SETTINGS_MAX_HEADER_LIST_SIZE) resets stream 1 instead, as `recv`
    ///   would.
    ///
    /// The client then sends the connection preface and its SETTINGS
    /// (RFC 7540 §3.2: "Upon receiving the 101 response, the client MUST
    /// send a connection preface"), which `recv` expects as usual
    /// ([`preface_received`](Connection::preface_received) tells when it
    /// came).
    ///
    /// Errors: an invalid `HTTP2-Settings` payload is a connection error
    /// (FRAME_SIZE_ERROR, PROTOCOL_ERROR or FLOW_CONTROL_ERROR, as for a
    /// SETTINGS frame); calling this on a client or on a connection that
    /// already received input is INTERNAL_ERROR. GOAWAY is in `out` then.
    pub fn upgrade_server(
        &mut self,
        http2_settings: &[u8],
        request: &[(&[u8], &[u8])],
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<StreamId, ConnError> {
        let st = &mut self.st;
        if let Some(e) = st.error {
            return Err(e);
        }
        if st.role != Role::Server || !st.awaiting_preface || st.last_peer_id != 0 {
            let e = H2Error::connection(
                ErrorCode::INTERNAL_ERROR,
                "h2c upgrade on a client or a connection already in use",
            );
            return Err(st.fail(e, out));
        }
        st.start(out);
        let len = u32::try_from(http2_settings.len()).unwrap_or(u32::MAX);
        let header = FrameHeader::new(FrameKind::Settings, 0, StreamId::ZERO, len);
        let applied =
            Settings::decode(header, http2_settings).and_then(|s| st.apply_peer_settings(&s));
        if let Err(e) = applied {
            return Err(st.fail(e, out));
        }
        if let Some(n) = st.enc_pending.take() {
            self.enc.set_max_table_size(n);
        }
        sink.settings_changed();

        // RFC 7540 §3.2: "The HTTP/1.1 request that is sent prior to upgrade
        // is assigned a stream identifier of 1 (see Section 5.1.1) with
        // default priority values (Section 5.3.5). Stream 1 is implicitly
        // "half-closed" from the client toward the server (see Section 5.1),
        // since the request is completed as an HTTP/1.1 request."
        let id = StreamId::new(1);
        st.last_peer_id = id.get();
        st.guard.stream_opened(&st.limits);
        st.streams.insert(st.new_stream(id, flag::RECV_CLOSED));
        let refused = st.local.max_concurrent_streams == Some(0);
        let list_limit = st
            .local
            .max_header_list_size
            .unwrap_or(st.limits.max_header_list_size) as usize;
        let list_size: usize = request
            .iter()
            .map(|(n, v)| n.len() + v.len() + ENTRY_OVERHEAD)
            .sum();
        let error = if refused {
            // RFC 9113 §5.1.2: a stream over the advertised limit gets
            // PROTOCOL_ERROR or REFUSED_STREAM.
            Some(H2Error::stream(
                id,
                ErrorCode::REFUSED_STREAM,
                "RFC 9113 §5.1.2: concurrent stream limit exceeded",
            ))
        } else if list_size > list_limit {
            Some(H2Error::stream(
                id,
                ErrorCode::REFUSED_STREAM,
                "RFC 9113 §10.5.1: header list larger than SETTINGS_MAX_HEADER_LIST_SIZE",
            ))
        } else {
            check_request(request).err().map(|rule| {
                // RFC 9113 §8.1.1: "Malformed requests or responses that are
                // detected MUST be treated as a stream error (Section 5.4.2)
                // of type PROTOCOL_ERROR."
                H2Error::stream(id, ErrorCode::PROTOCOL_ERROR, rule)
            })
        };
        if let Some(e) = error {
            // Only stream errors here; the flood guard cannot trip on one.
            st.stream_error(e, out, sink).map_err(|e| st.fail(e, out))?;
            return Ok(id);
        }
        let mut decoded_len = 0usize;
        for (name, value) in request {
            decoded_len = decoded_len.saturating_add(name.len() + value.len());
            sink.header(id, name, value);
        }
        if let Some(s) = st.streams.get_mut(id) {
            s.set(flag::GOT_HEADERS);
        }
        st.guard.progress();
        sink.headers_done(
            id,
            HeadersDone {
                kind: HeadersKind::Request,
                end_stream: true,
                block_len: 0,
                decoded_len,
                status: None,
                // The content (if any) came as HTTP/1.1; no DATA will follow.
                content_length: None,
            },
        );
        Ok(id)
    }
}

/// RFC 9113 §8.2, §8.3 rules for the upgraded request's fields.
fn check_request(request: &[(&[u8], &[u8])]) -> Result<(), Malformed> {
    let mut check = FieldCheck::new(BlockKind::Request);
    for (name, value) in request {
        check.field(name, value)?;
    }
    check.finish().map(|_| ())
}
