//! HTTP/3 framing and stream rules (RFC 9114), sans-IO: no QUIC here. The transport (a
//! QUIC stack) hands over stream bytes; these types say what they mean and what is wrong
//! with them.
//!
//! - [`varint`]: QUIC variable-length integers (RFC 9000 §16).
//! - [`frame`]: the frames (DATA, HEADERS, CANCEL_PUSH, SETTINGS, PUSH_PROMISE, GOAWAY,
//!   MAX_PUSH_ID; reserved and unknown types skipped, HTTP/2-only types rejected), the
//!   SETTINGS identifiers, and the streaming zero-copy [`frame::FrameDecoder`] that knows
//!   which frames each stream may carry.
//! - [`stream`]: unidirectional stream types (control, push, QPACK encoder/decoder,
//!   reserved), the one-of-each and never-closed rules, GOAWAY/MAX_PUSH_ID ordering.
//! - [`control`]: the peer's control stream read end to end (SETTINGS first, GOAWAY,
//!   MAX_PUSH_ID, CANCEL_PUSH) and the start of ours.
//! - [`fields`]: request/response field validation, shared with HTTP/2; [`packed`]: field
//!   lines packed in one buffer (how the section memo hands a section's fields over).
//! - [`request`]: the request-stream state machine (HEADERS, DATA, trailers; content-length)
//!   for both roles, receive side and send side, and [`testing`], a mock peer for tests.
//! - [`ErrorCode`] (H3_* and QPACK_*), [`H3Error`] with its [`Scope`] and the rule broken.
//!
//! Field sections are QPACK ([`crate::qpack`]).

pub mod control;
mod error;
pub mod fields;
pub mod frame;
pub(crate) mod memo;
pub mod packed;
pub mod request;
pub mod stream;
pub mod testing;
pub mod varint;

pub use crate::h2::Role;
pub use error::{is_reserved, ErrorCode, H3Error, Scope};
