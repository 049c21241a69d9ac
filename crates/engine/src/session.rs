//! The one stream-level interface that separates protocols from the worker.
//!
//! A [`Session`] is the protocol half of a client connection (like h2load's
//! `Session`): it turns "send request N" into bytes and received bytes into
//! [`SessionEvents`]. It never touches sockets, clocks or statistics — the
//! worker owns those. Requests are identified by *slots*: small indices into
//! a fixed per-connection array (`0..max_concurrent_streams`), so nothing is
//! allocated per request.
//!
//! Contract:
//! - Output goes into the caller's `out` buffer; the worker writes it once
//!   per loop turn.
//! - [`Session::on_read`] consumes *all* input; a partial frame or header
//!   section is kept inside the session.
//! - Every submitted slot ends in exactly one of [`SessionEvents::complete`],
//!   [`SessionEvents::reset`] or [`SessionEvents::refused`], or is still
//!   outstanding when the connection goes away (the worker then accounts for it).

use std::fmt;

use h2lab_wire::h1::H1Error;
use h2lab_wire::h2::ConnError;

/// Why a request could not be submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// The protocol does not allow another request now (peer
    /// MAX_CONCURRENT_STREAMS reached, GOAWAY received, pipelining depth full,
    /// connection closing). Try again after a completion, or reconnect.
    WouldBlock,
    /// Stream identifiers are exhausted on this connection: reconnect.
    Exhausted,
}

/// A connection-level failure detected by a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionError {
    /// The HTTP/1.1 response is malformed (the wire parser's reason).
    H1(H1Error),
    /// An HTTP/1.1 server answered `101 Switching Protocols` to a plain request.
    UnexpectedUpgrade,
    /// An HTTP/2 connection error. The session has already queued the GOAWAY
    /// the protocol requires into `out`.
    H2 {
        /// The wire crate's connection error (code, rule, who ended it).
        error: ConnError,
        /// The bytes that failed started like an HTTP/1.x status line: the server
        /// answered an h2c preface in HTTP/1.x.
        http1_reply: bool,
    },
    /// The peer closed the connection in the middle of a message.
    UnexpectedEof,
    /// An HTTP/3 connection error: the session closed the QUIC connection with this code.
    H3 {
        /// The HTTP/3 or QPACK error code (RFC 9114 §8.1, RFC 9204 §6).
        code: u64,
    },
}

impl SessionError {
    /// The peer violated the protocol (everything but [`SessionError::UnexpectedEof`]).
    pub fn is_protocol(&self) -> bool {
        !matches!(self, SessionError::UnexpectedEof)
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::H1(e) => write!(f, "invalid HTTP/1.1 response: {e}"),
            SessionError::UnexpectedUpgrade => f.write_str("unexpected 101 Switching Protocols"),
            SessionError::H2 { error, http1_reply } => {
                write!(f, "HTTP/2 connection error: {error}")?;
                if *http1_reply {
                    f.write_str(" (the server answered in HTTP/1.x: use --h1 or -p http/1.1)")?;
                }
                Ok(())
            }
            SessionError::UnexpectedEof => {
                f.write_str("connection closed in the middle of a response")
            }
            SessionError::H3 { code } => {
                let name = h2lab_wire::h3::ErrorCode(*code).name().unwrap_or("unknown");
                write!(f, "HTTP/3 connection error {name} (0x{code:x})")
            }
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::H1(e) => Some(e),
            SessionError::H2 { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// What a session reports while reading. Implemented by the worker, which does
/// all the statistics; the session only reports facts.
pub trait SessionEvents {
    /// A response header section started for `slot` with this status
    /// (called for interim 1xx responses too, then again for the final one).
    fn status(&mut self, slot: u32, status: u16);
    /// Header bytes received: as on the wire (HPACK-compressed block length
    /// for HTTP/2; QPACK-encoded section, the HEADERS frame payload, for HTTP/3;
    /// field names + values for HTTP/1.1) and decompressed.
    fn header_bytes(&mut self, wire: usize, decoded: usize);
    /// Response body bytes received for `slot`.
    fn body(&mut self, slot: u32, len: usize);
    /// The body bytes themselves, right after [`SessionEvents::body`] (for
    /// clients that keep bodies, like the fetch client reading a page's
    /// HTML). The benchmark worker ignores them: the default does nothing.
    #[inline]
    fn body_data(&mut self, slot: u32, data: &[u8]) {
        let _ = (slot, data);
    }
    /// The response for `slot` is complete (last byte received).
    fn complete(&mut self, slot: u32);
    /// The stream for `slot` was reset (HTTP/2 RST_STREAM or a stream error)
    /// before completing; `code` is the HTTP/2 error code.
    fn reset(&mut self, slot: u32, code: u32);
    /// The request in `slot` was provably not processed by the server
    /// (HTTP/2 stream above GOAWAY's last-stream-id, REFUSED_STREAM, or HTTP/1.1
    /// requests pipelined behind a `Connection: close` response): it may be retried.
    fn refused(&mut self, slot: u32);
    /// A GOAWAY was received.
    fn goaway(&mut self, last_stream_id: u32, code: u32);
    /// The server tried to push and was refused.
    fn push_refused(&mut self);
    /// Whether this client acts on `103 Early Hints` (RFC 8297): the sessions then decode
    /// interim responses' fields and report each `link` value with
    /// [`early_hint`](SessionEvents::early_hint). The benchmark does not (default).
    #[inline]
    fn wants_hints(&self) -> bool {
        false
    }
    /// A `link` field value of a `103 Early Hints` response to the request in `slot` (only
    /// when [`wants_hints`](SessionEvents::wants_hints)); the final response follows.
    #[inline]
    fn early_hint(&mut self, slot: u32, link: &[u8]) {
        let _ = (slot, link);
    }
    /// The server promised a push of `path` on stream `stream` (HTTP/2 with push
    /// accepted, [`crate::h2::H2Settings::enable_push`]). The pushed response follows
    /// with [`push_status`](SessionEvents::push_status),
    /// [`push_body`](SessionEvents::push_body) and [`push_end`](SessionEvents::push_end).
    #[inline]
    fn push_promise(&mut self, stream: u32, path: &[u8]) {
        let _ = (stream, path);
    }
    /// Final status of the pushed response on `stream`.
    #[inline]
    fn push_status(&mut self, stream: u32, status: u16) {
        let _ = (stream, status);
    }
    /// Body bytes of the pushed response on `stream`.
    #[inline]
    fn push_body(&mut self, stream: u32, len: usize) {
        let _ = (stream, len);
    }
    /// The pushed stream ended: `complete`, or reset.
    #[inline]
    fn push_end(&mut self, stream: u32, complete: bool) {
        let _ = (stream, complete);
    }
    /// A frame of `len` octets (frame head included) that carried a push arrived: a
    /// PUSH_PROMISE (or its CONTINUATION), or any frame on a promised stream. These bytes
    /// were read with the rest, but are no part of the requested responses.
    #[inline]
    fn push_frame(&mut self, len: usize) {
        let _ = len;
    }
}

/// The protocol side of one client connection.
pub trait Session {
    /// Called once the transport is ready: write the connection preface (HTTP/2).
    fn on_connect(&mut self, out: &mut Vec<u8>);
    /// Whether [`Session::submit`] would accept a request now.
    fn can_submit(&self) -> bool;
    /// Queues request `uri_idx` (index into the prepared URIs) for `slot`.
    fn submit(&mut self, slot: u32, uri_idx: usize, out: &mut Vec<u8>) -> Result<(), SubmitError>;
    /// Feeds received bytes (all consumed); may append output (ACKs, WINDOW_UPDATE).
    fn on_read(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError>;
    /// The peer closed the connection: complete a response delimited by close,
    /// or report the truncation.
    fn on_eof(&mut self, ev: &mut dyn SessionEvents) -> Result<(), SessionError>;
    /// Called before each write: queue pending output held back by flow
    /// control (request bodies waiting for WINDOW_UPDATE).
    fn on_write(&mut self, out: &mut Vec<u8>);
    /// [`Session::on_write`] has output to add (request bodies waiting for
    /// flow-control window).
    fn wants_write(&self) -> bool;
    /// How many requests may be outstanding right now (≤ `-m`; lowered by the
    /// peer's MAX_CONCURRENT_STREAMS).
    fn max_concurrency(&self) -> u32;
    /// Requests submitted and not yet finished.
    fn in_flight(&self) -> u32;
    /// A GOAWAY was received: no new requests on this connection.
    fn goaway_received(&self) -> bool;
    /// The connection should be closed once the output is written (HTTP/1.1
    /// `Connection: close` seen, HTTP/2 GOAWAY with nothing left in flight).
    fn wants_close(&self) -> bool;
    /// Graceful shutdown when the client is done (HTTP/2: GOAWAY NO_ERROR).
    fn terminate(&mut self, out: &mut Vec<u8>);
}

#[cfg(test)]
mod tests {
    use h2lab_wire::frame::{ErrorCode, H2Error};
    use h2lab_wire::h2::Initiator;

    use super::*;

    fn h2(http1_reply: bool) -> SessionError {
        SessionError::H2 {
            error: ConnError {
                error: H2Error::connection(ErrorCode(1), "RFC 9113 §4.1: frame too large"),
                initiator: Initiator::Local,
            },
            http1_reply,
        }
    }

    #[test]
    fn kinds_and_wording() {
        assert!(h2(false).is_protocol());
        assert!(SessionError::H1(H1Error::InvalidStatus).is_protocol());
        assert!(!SessionError::UnexpectedEof.is_protocol());
        let m = h2(false).to_string();
        assert!(m.starts_with("HTTP/2 connection error: "), "{m}");
        assert!(!m.contains("--h1"), "{m}");
        // An HTTP/1.x server answering the h2c preface: the hint says what to do.
        let m = h2(true).to_string();
        assert!(m.ends_with("(the server answered in HTTP/1.x: use --h1 or -p http/1.1)"));
        let m = SessionError::H1(H1Error::InvalidStatus).to_string();
        assert!(m.starts_with("invalid HTTP/1.1 response: "), "{m}");
        assert!(std::error::Error::source(&h2(false)).is_some());
    }
}
