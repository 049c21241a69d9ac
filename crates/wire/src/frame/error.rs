//! HTTP/2 error codes (RFC 9113 §7) and the typed error every decoder returns.

use core::fmt;

use super::head::StreamId;

/// An HTTP/2 error code (RFC 9113 §7), as carried by RST_STREAM and GOAWAY.
///
/// This is a `u32` newtype rather than an enum because RFC 9113 §7 says
/// "Unknown or unsupported error codes MUST NOT trigger any special behavior.
/// These MAY be treated by an implementation as being equivalent to
/// INTERNAL_ERROR." We keep the raw value so that a protocol lab can report
/// exactly what the peer sent.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// `NO_ERROR` (0x0): graceful shutdown.
    pub const NO_ERROR: ErrorCode = ErrorCode(0x0);
    /// `PROTOCOL_ERROR` (0x1): unspecific protocol error.
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x1);
    /// `INTERNAL_ERROR` (0x2): unexpected internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(0x2);
    /// `FLOW_CONTROL_ERROR` (0x3): flow-control protocol violated.
    pub const FLOW_CONTROL_ERROR: ErrorCode = ErrorCode(0x3);
    /// `SETTINGS_TIMEOUT` (0x4): SETTINGS not acknowledged in time.
    pub const SETTINGS_TIMEOUT: ErrorCode = ErrorCode(0x4);
    /// `STREAM_CLOSED` (0x5): frame received on a half-closed stream.
    pub const STREAM_CLOSED: ErrorCode = ErrorCode(0x5);
    /// `FRAME_SIZE_ERROR` (0x6): frame with an invalid size.
    pub const FRAME_SIZE_ERROR: ErrorCode = ErrorCode(0x6);
    /// `REFUSED_STREAM` (0x7): stream refused before any processing.
    pub const REFUSED_STREAM: ErrorCode = ErrorCode(0x7);
    /// `CANCEL` (0x8): stream no longer needed.
    pub const CANCEL: ErrorCode = ErrorCode(0x8);
    /// `COMPRESSION_ERROR` (0x9): field compression context cannot be maintained.
    pub const COMPRESSION_ERROR: ErrorCode = ErrorCode(0x9);
    /// `CONNECT_ERROR` (0xa): the CONNECT tunnel was reset or closed.
    pub const CONNECT_ERROR: ErrorCode = ErrorCode(0xa);
    /// `ENHANCE_YOUR_CALM` (0xb): the peer is generating excessive load.
    pub const ENHANCE_YOUR_CALM: ErrorCode = ErrorCode(0xb);
    /// `INADEQUATE_SECURITY` (0xc): transport security is insufficient.
    pub const INADEQUATE_SECURITY: ErrorCode = ErrorCode(0xc);
    /// `HTTP_1_1_REQUIRED` (0xd): use HTTP/1.1 instead.
    pub const HTTP_1_1_REQUIRED: ErrorCode = ErrorCode(0xd);

    /// The raw 32-bit value as carried on the wire.
    #[inline]
    pub const fn as_u32(self) -> u32 {
        self.0
    }

    /// The RFC 9113 §7 name (e.g. `"PROTOCOL_ERROR"`), or `None` for a code
    /// this crate does not know.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0 => "NO_ERROR",
            0x1 => "PROTOCOL_ERROR",
            0x2 => "INTERNAL_ERROR",
            0x3 => "FLOW_CONTROL_ERROR",
            0x4 => "SETTINGS_TIMEOUT",
            0x5 => "STREAM_CLOSED",
            0x6 => "FRAME_SIZE_ERROR",
            0x7 => "REFUSED_STREAM",
            0x8 => "CANCEL",
            0x9 => "COMPRESSION_ERROR",
            0xa => "CONNECT_ERROR",
            0xb => "ENHANCE_YOUR_CALM",
            0xc => "INADEQUATE_SECURITY",
            0xd => "HTTP_1_1_REQUIRED",
            _ => return None,
        })
    }
}

impl From<u32> for ErrorCode {
    #[inline]
    fn from(v: u32) -> Self {
        ErrorCode(v)
    }
}

impl From<ErrorCode> for u32 {
    #[inline]
    fn from(v: ErrorCode) -> Self {
        v.0
    }
}

impl fmt::Display for ErrorCode {
    /// The RFC name, or `UNKNOWN_ERROR(0x…)` for codes outside RFC 9113 §7.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "UNKNOWN_ERROR({:#x})", self.0),
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Whether an error affects the whole connection or a single stream
/// (RFC 9113 §5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A connection error (§5.4.1): send GOAWAY with the code, then close.
    Connection,
    /// A stream error (§5.4.2): send RST_STREAM on this stream with the code;
    /// the connection stays usable.
    Stream(StreamId),
}

/// A protocol violation detected while decoding, with the scope and error
/// code the RFC prescribes and a short citation of the violated rule.
///
/// The codec never sends anything itself: the session code maps
/// [`Scope::Connection`] to GOAWAY and [`Scope::Stream`] to RST_STREAM, both
/// carrying [`H2Error::code`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct H2Error {
    /// Connection or stream error.
    pub scope: Scope,
    /// The error code to send in GOAWAY / RST_STREAM.
    pub code: ErrorCode,
    /// A short citation of the violated rule, e.g.
    /// `"RFC 9113 §6.8: GOAWAY on a non-zero stream"`.
    pub rule: &'static str,
}

impl H2Error {
    /// A connection error (RFC 9113 §5.4.1).
    #[inline]
    pub const fn connection(code: ErrorCode, rule: &'static str) -> Self {
        H2Error {
            scope: Scope::Connection,
            code,
            rule,
        }
    }

    /// A stream error (RFC 9113 §5.4.2) on `stream`.
    #[inline]
    pub const fn stream(stream: StreamId, code: ErrorCode, rule: &'static str) -> Self {
        H2Error {
            scope: Scope::Stream(stream),
            code,
            rule,
        }
    }

    /// True for a connection error.
    #[inline]
    pub const fn is_connection_error(&self) -> bool {
        matches!(self.scope, Scope::Connection)
    }

    /// The stream of a stream error, `None` for a connection error.
    #[inline]
    pub const fn stream_id(&self) -> Option<StreamId> {
        match self.scope {
            Scope::Stream(id) => Some(id),
            Scope::Connection => None,
        }
    }
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope {
            Scope::Connection => write!(f, "connection error {}: {}", self.code, self.rule),
            Scope::Stream(id) => write!(
                f,
                "stream error {} on stream {}: {}",
                self.code, id, self.rule
            ),
        }
    }
}

impl std::error::Error for H2Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_unknown_codes() {
        assert_eq!(ErrorCode::NO_ERROR.to_string(), "NO_ERROR");
        assert_eq!(
            ErrorCode::HTTP_1_1_REQUIRED.to_string(),
            "HTTP_1_1_REQUIRED"
        );
        assert_eq!(ErrorCode(0xd).name(), Some("HTTP_1_1_REQUIRED"));
        assert_eq!(ErrorCode(0xe).name(), None);
        assert_eq!(ErrorCode(0x1234).to_string(), "UNKNOWN_ERROR(0x1234)");
        assert_eq!(u32::from(ErrorCode::from(0xdead_beef)), 0xdead_beef);
        for v in 0..=0xd {
            assert!(ErrorCode(v).name().is_some());
        }
    }

    #[test]
    fn display_error() {
        let e = H2Error::connection(ErrorCode::PROTOCOL_ERROR, "RFC 9113 §6.8: x");
        assert_eq!(
            e.to_string(),
            "connection error PROTOCOL_ERROR: RFC 9113 §6.8: x"
        );
        assert!(e.is_connection_error());
        let e = H2Error::stream(StreamId::new(3), ErrorCode::CANCEL, "r");
        assert_eq!(e.to_string(), "stream error CANCEL on stream 3: r");
        assert_eq!(e.stream_id(), Some(StreamId::new(3)));
    }
}
