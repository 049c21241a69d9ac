//! Sans-IO HTTP/2 connection state machine (RFC 9113) for both roles.
//!
//! [`Connection`] sits between the transport and the application: bytes read
//! from the socket go into [`Connection::recv`], which decodes frames with
//! [`crate::frame`] and field blocks with [`crate::hpack`], enforces the
//! stream state machine (RFC 9113 §5.1), flow control (§5.2, §6.9), SETTINGS
//! synchronisation (§6.5.3) and HTTP message rules (§8), and reports what it
//! decoded to an [`Events`] sink. The application sends with
//! [`Connection::send_request`], [`Connection::send_headers`],
//! [`Connection::send_data`], [`Connection::reset`], [`Connection::goaway`]
//! and [`Connection::ping`]; every frame goes into a caller-owned `Vec<u8>`.
//!
//! The same code serves the load generator (client role) and the test
//! server (server role, with defences against rapid reset, CONTINUATION and
//! control-frame floods and HPACK bombs; see [`Limits`]).
//!
//! [`testing`] has frame builders and a frame reader for tests that play the
//! peer.

mod conn;
mod error;
mod events;
mod fields;
mod guard;
mod recv;
mod settings;
mod store;
pub mod testing;

pub use conn::{Connection, HeaderEncoder, Role};
pub use error::{ConnError, Initiator, SendError};
pub use events::{Events, HeadersDone, HeadersKind};
pub use settings::{Limits, LocalSettings, PeerSettings, DEFAULT_MAX_CONCURRENT_STREAMS};

pub use crate::frame::{ErrorCode, StreamId};
