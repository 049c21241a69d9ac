//! Errors of the connection state machine.

use core::fmt;

use crate::frame::{ErrorCode, H2Error, StreamId};

/// Which endpoint ended the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Initiator {
    /// We detected a connection error and sent GOAWAY.
    Local,
    /// The peer sent GOAWAY with an error code.
    Remote,
}

/// A connection error (RFC 9113 §5.4.1). When it is [`Initiator::Local`], the
/// GOAWAY carrying `error.code` has already been written to `out`; the
/// caller flushes `out` and closes the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnError {
    /// Scope (always connection), code and the violated rule.
    pub error: H2Error,
    /// Who ended the connection.
    pub initiator: Initiator,
}

impl ConnError {
    /// The error code sent (or received) in GOAWAY.
    pub fn code(&self) -> ErrorCode {
        self.error.code
    }

    pub(crate) fn local(error: H2Error) -> Self {
        ConnError {
            error: H2Error::connection(error.code, error.rule),
            initiator: Initiator::Local,
        }
    }
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.initiator {
            Initiator::Local => write!(f, "{}", self.error),
            Initiator::Remote => write!(f, "peer sent GOAWAY {}", self.error.code),
        }
    }
}

impl std::error::Error for ConnError {}

/// Why a send operation was not performed. Nothing was written to `out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SendError {
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS is reached: retry after a
    /// stream closes.
    WouldBlock,
    /// A GOAWAY was sent or received: no new stream may be opened
    /// (RFC 9113 §6.8: "Receivers of a GOAWAY frame MUST NOT open additional
    /// streams on the connection").
    GoingAway,
    /// All 2^30 stream identifiers of our parity are used (RFC 9113 §5.1.1);
    /// open a new connection.
    StreamIdsExhausted,
    /// The stream is not open for sending (never opened, closed, reset, or we
    /// already sent END_STREAM).
    StreamClosed(StreamId),
    /// The operation does not exist in this role (e.g. `send_request` on a
    /// server).
    WrongRole,
    /// The connection ended with an error.
    ConnectionClosed,
    /// The peer sent SETTINGS_ENABLE_PUSH = 0 (or its SETTINGS have not
    /// arrived yet): no PUSH_PROMISE may be sent (RFC 9113 §6.5.2).
    PushDisabled,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::WouldBlock => f.write_str("peer's concurrent stream limit reached"),
            SendError::GoingAway => f.write_str("connection is going away (GOAWAY)"),
            SendError::StreamIdsExhausted => f.write_str("stream identifiers exhausted"),
            SendError::StreamClosed(id) => write!(f, "stream {id} is not open for sending"),
            SendError::WrongRole => f.write_str("operation not available in this role"),
            SendError::ConnectionClosed => f.write_str("connection closed"),
            SendError::PushDisabled => f.write_str("the peer disabled server push"),
        }
    }
}

impl std::error::Error for SendError {}
