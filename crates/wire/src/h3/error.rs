//! HTTP/3 error codes (RFC 9114 §8.1, RFC 9204 §6) and typed errors.

use std::fmt;

/// An HTTP/3 application error code (a QUIC varint in RESET_STREAM, STOP_SENDING and
/// CONNECTION_CLOSE). Unknown codes are kept as they are (RFC 9114 §9: "Implementations
/// MUST treat unknown or unsupported values in all extensible protocol elements as ...
/// equivalent to H3_NO_ERROR" for error codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub u64);

impl ErrorCode {
    /// "No error. This is used when the connection or stream needs to be closed, but there
    /// is no error to signal."
    pub const H3_NO_ERROR: ErrorCode = ErrorCode(0x0100);
    /// "Peer violated protocol requirements in a way that does not match a more specific
    /// error code or endpoint declines to use the more specific error code."
    pub const H3_GENERAL_PROTOCOL_ERROR: ErrorCode = ErrorCode(0x0101);
    /// "An internal error has occurred in the HTTP stack."
    pub const H3_INTERNAL_ERROR: ErrorCode = ErrorCode(0x0102);
    /// "The endpoint detected that its peer created a stream that it will not accept."
    pub const H3_STREAM_CREATION_ERROR: ErrorCode = ErrorCode(0x0103);
    /// "A stream required by the HTTP/3 connection was closed or reset."
    pub const H3_CLOSED_CRITICAL_STREAM: ErrorCode = ErrorCode(0x0104);
    /// "A frame was received that was not permitted in the current state or on the current
    /// stream."
    pub const H3_FRAME_UNEXPECTED: ErrorCode = ErrorCode(0x0105);
    /// "A frame that fails to satisfy layout requirements or with an invalid size was
    /// received."
    pub const H3_FRAME_ERROR: ErrorCode = ErrorCode(0x0106);
    /// "The endpoint detected that its peer is exhibiting a behavior that might be
    /// generating excessive load."
    pub const H3_EXCESSIVE_LOAD: ErrorCode = ErrorCode(0x0107);
    /// "A stream ID or push ID was used incorrectly, such as exceeding a limit, reducing a
    /// limit, or being reused."
    pub const H3_ID_ERROR: ErrorCode = ErrorCode(0x0108);
    /// "An endpoint detected an error in the payload of a SETTINGS frame."
    pub const H3_SETTINGS_ERROR: ErrorCode = ErrorCode(0x0109);
    /// "No SETTINGS frame was received at the beginning of the control stream."
    pub const H3_MISSING_SETTINGS: ErrorCode = ErrorCode(0x010a);
    /// "A server rejected a request without performing any application processing."
    pub const H3_REQUEST_REJECTED: ErrorCode = ErrorCode(0x010b);
    /// "The request or its response (including pushed response) is cancelled."
    pub const H3_REQUEST_CANCELLED: ErrorCode = ErrorCode(0x010c);
    /// "The client's stream terminated without containing a fully formed request."
    pub const H3_REQUEST_INCOMPLETE: ErrorCode = ErrorCode(0x010d);
    /// "An HTTP message was malformed and cannot be processed."
    pub const H3_MESSAGE_ERROR: ErrorCode = ErrorCode(0x010e);
    /// "The TCP connection established in response to a CONNECT request was reset or
    /// abnormally closed."
    pub const H3_CONNECT_ERROR: ErrorCode = ErrorCode(0x010f);
    /// "The requested operation cannot be served over HTTP/3. The peer should retry over
    /// HTTP/1.1."
    pub const H3_VERSION_FALLBACK: ErrorCode = ErrorCode(0x0110);
    /// QPACK_DECOMPRESSION_FAILED (RFC 9204 §6).
    pub const QPACK_DECOMPRESSION_FAILED: ErrorCode = ErrorCode(0x0200);
    /// QPACK_ENCODER_STREAM_ERROR (RFC 9204 §6).
    pub const QPACK_ENCODER_STREAM_ERROR: ErrorCode = ErrorCode(0x0201);
    /// QPACK_DECODER_STREAM_ERROR (RFC 9204 §6).
    pub const QPACK_DECODER_STREAM_ERROR: ErrorCode = ErrorCode(0x0202);

    /// The code's name, or `None` for codes this crate does not know (including the
    /// reserved `0x1f * N + 0x21` codes, RFC 9114 §8.1).
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0100 => "H3_NO_ERROR",
            0x0101 => "H3_GENERAL_PROTOCOL_ERROR",
            0x0102 => "H3_INTERNAL_ERROR",
            0x0103 => "H3_STREAM_CREATION_ERROR",
            0x0104 => "H3_CLOSED_CRITICAL_STREAM",
            0x0105 => "H3_FRAME_UNEXPECTED",
            0x0106 => "H3_FRAME_ERROR",
            0x0107 => "H3_EXCESSIVE_LOAD",
            0x0108 => "H3_ID_ERROR",
            0x0109 => "H3_SETTINGS_ERROR",
            0x010a => "H3_MISSING_SETTINGS",
            0x010b => "H3_REQUEST_REJECTED",
            0x010c => "H3_REQUEST_CANCELLED",
            0x010d => "H3_REQUEST_INCOMPLETE",
            0x010e => "H3_MESSAGE_ERROR",
            0x010f => "H3_CONNECT_ERROR",
            0x0110 => "H3_VERSION_FALLBACK",
            0x0200 => "QPACK_DECOMPRESSION_FAILED",
            0x0201 => "QPACK_ENCODER_STREAM_ERROR",
            0x0202 => "QPACK_DECODER_STREAM_ERROR",
            _ => return None,
        })
    }

    /// The QPACK error code for a [`crate::qpack::QpackErrorCode`].
    pub fn from_qpack(code: crate::qpack::QpackErrorCode) -> ErrorCode {
        ErrorCode(code.value())
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "0x{:x}", self.0),
        }
    }
}

/// Whether an error closes the connection or only the stream it occurred on (RFC 9114
/// §8: "connection error" vs. "stream error").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Close the connection (CONNECTION_CLOSE with the code).
    Connection,
    /// Reset the stream (RESET_STREAM / STOP_SENDING with the code).
    Stream,
}

/// A protocol violation found while decoding: the code to send, its scope and the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct H3Error {
    /// The error code to send.
    pub code: ErrorCode,
    /// Connection or stream.
    pub scope: Scope,
    /// The violated rule, as a citation ("RFC 9114 §7.2.4: ...").
    pub rule: &'static str,
}

impl H3Error {
    /// A connection error.
    pub const fn connection(code: ErrorCode, rule: &'static str) -> Self {
        H3Error {
            code,
            scope: Scope::Connection,
            rule,
        }
    }

    /// A stream error.
    pub const fn stream(code: ErrorCode, rule: &'static str) -> Self {
        H3Error {
            code,
            scope: Scope::Stream,
            rule,
        }
    }
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?}): {}", self.code, self.scope, self.rule)
    }
}

impl std::error::Error for H3Error {}

/// `true` for the reserved ("grease") values `0x1f * N + 0x21` used by frame types, stream
/// types, settings identifiers and error codes (RFC 9114 §7.2.8, §6.2.3, §7.2.4.1, §8.1).
#[inline]
pub fn is_reserved(v: u64) -> bool {
    v >= 0x21 && (v - 0x21) % 0x1f == 0
}
