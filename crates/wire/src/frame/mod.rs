//! HTTP/2 framing (RFC 9113).
//!
//! Sans-IO and zero-copy: decoders borrow payload slices from the caller's
//! buffer, encoders append to a caller-owned `Vec<u8>`.
//!
//! - [`FrameDecoder`] splits a byte stream into [`Frame`]s, handling partial
//!   input ([`Decoded::NeedMore`]) and SETTINGS_MAX_FRAME_SIZE.
//! - One module per frame type ([`Data`], [`Headers`], [`Priority`],
//!   [`RstStream`], [`Settings`], [`PushPromise`], [`Ping`], [`GoAway`],
//!   [`WindowUpdate`], [`Continuation`]); each `decode` enforces the RFC 9113
//!   §6.x rules of its type and each `encode` writes a complete frame.
//! - Hot-path encoders: [`encode_data_header`], [`encode_headers`] (splits
//!   into CONTINUATION), [`encode_push_promise`], [`encode_window_update`],
//!   [`encode_settings_ack`].
//! - [`HeaderBlockAssembler`] reassembles field blocks across CONTINUATION
//!   frames with bounded memory.
//! - [`Window`] / [`RecvWindow`]: flow-control arithmetic (§5.2, §6.9).
//! - [`check_preface`]: the client connection preface (§3.4).
//!
//! Errors are [`H2Error`] values carrying the [`Scope`] (connection or
//! stream) and [`ErrorCode`] the RFC prescribes; the session decides what
//! to send (GOAWAY or RST_STREAM). Rules that need connection state (stream
//! states, which side may send what, concurrency limits) are the session's
//! job, not this module's.

mod continuation;
mod data;
mod decoder;
mod error;
mod flow;
mod goaway;
mod head;
mod header_block;
mod headers;
mod padding;
mod ping;
mod preface;
mod priority;
mod priority_update;
mod push_promise;
mod rst_stream;
mod settings;
mod window_update;

pub use continuation::Continuation;
pub use data::{encode_data_header, Data};
pub use decoder::{Decoded, Frame, FrameDecoder};
pub use error::{ErrorCode, H2Error, Scope};
pub use flow::{RecvWindow, Window};
pub use goaway::GoAway;
pub use head::{flags, FrameHeader, FrameKind, StreamId};
pub use header_block::{
    Assembled, BlockKind, HeaderBlock, HeaderBlockAssembler, RULE_BLOCK_TOO_LARGE,
    RULE_TOO_MANY_CONTINUATIONS,
};
pub use headers::{encode_headers, Headers};
pub use ping::{Ping, PING_LEN};
pub use preface::{check_preface, PrefaceCheck, PREFACE};
pub use priority::{Priority, PrioritySpec, PRIORITY_LEN};
pub use priority_update::{PriorityUpdate, PRIORITY_UPDATE_TYPE};
pub use push_promise::{encode_push_promise, PushPromise};
pub use rst_stream::RstStream;
pub use settings::{
    encode_settings_ack, Settings, SettingsParam, SettingsValues, DEFAULT_ENABLE_CONNECT_PROTOCOL,
    DEFAULT_ENABLE_PUSH, DEFAULT_HEADER_TABLE_SIZE,
};
pub use window_update::{encode_window_update, WindowUpdate};

/// Length of the frame header (RFC 9113 §4.1).
pub const FRAME_HEADER_LEN: usize = 9;
/// Initial and minimum SETTINGS_MAX_FRAME_SIZE, 2^14 (RFC 9113 §4.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 1 << 14;
/// Largest legal SETTINGS_MAX_FRAME_SIZE, 2^24-1 (RFC 9113 §6.5.2).
pub const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// Initial flow-control window, 65535 (RFC 9113 §6.9.2).
pub const DEFAULT_INITIAL_WINDOW_SIZE: u32 = 65_535;
/// Largest flow-control window, 2^31-1 (RFC 9113 §6.9.1).
pub const MAX_WINDOW_SIZE: u32 = (1 << 31) - 1;
