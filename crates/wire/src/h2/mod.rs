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
//! and [`Connection::ping`]; every frame goes into a caller-owned `Vec<u8>`
//! that the caller writes to the transport once per loop turn.
//! [`Connection::send_data_header`] is the zero-copy DATA path: it writes
//! only the frame header and the caller writes the payload from its own
//! buffer (`writev`). [`Connection::upgrade_server`] takes over a connection
//! after an HTTP/1.1 `Upgrade: h2c` (RFC 7540 §3.2).
//!
//! The same code serves the load generator (client role, usually with a
//! [`crate::hpack::RequestTemplate`] as its encoder) and the test server
//! (server role, with defences against rapid reset, CONTINUATION and
//! control-frame floods and HPACK bombs; see [`Limits`]).
//!
//! A server loop, in outline:
//!
//! ```
//! use h2lab_wire::h2::{Connection, Events, HeadersDone, Limits, LocalSettings, Role, StreamId};
//!
//! #[derive(Default)]
//! struct App { done: Vec<StreamId> }
//! impl Events for App {
//!     fn header(&mut self, _stream: StreamId, _name: &[u8], _value: &[u8]) {}
//!     fn headers_done(&mut self, stream: StreamId, d: HeadersDone) {
//!         if d.end_stream { self.done.push(stream) }
//!     }
//! }
//!
//! let mut conn = Connection::new(Role::Server, LocalSettings::server(), Limits::new());
//! let (mut out, mut app) = (Vec::new(), App::default());
//! let mut read_buf: Vec<u8> = Vec::new(); // bytes from the socket
//! # h2lab_wire::h2::testing::preface(&mut read_buf);
//! # h2lab_wire::h2::testing::settings(&mut read_buf, &[]);
//! match conn.recv(&read_buf, &mut out, &mut app) {
//!     Ok(consumed) => { read_buf.drain(..consumed); }
//!     Err(_) => { /* GOAWAY is in `out`: write it, then close */ }
//! }
//! for id in app.done.drain(..) {
//!     conn.send_header_fields(id, &[(b":status", b"200")], false, &mut out).unwrap();
//!     let _sent = conn.send_data(id, b"hello", true, &mut out).unwrap();
//! }
//! // write `out` to the socket, then `out.clear()`
//! # assert!(!out.is_empty());
//! ```
//!
//! [`testing`] has frame builders, a frame reader, an HPACK helper and a
//! recording sink for tests that play the peer.

mod conn;
mod error;
mod events;
pub(crate) mod fields;
mod guard;
mod push;
mod recv;
mod send;
mod settings;
mod store;
pub mod testing;
mod upgrade;

pub use conn::{Connection, HeaderEncoder, Role};
pub use error::{ConnError, Initiator, SendError};
pub use events::{Events, HeadersDone, HeadersKind};
pub use settings::{Limits, LocalSettings, PeerSettings, DEFAULT_MAX_CONCURRENT_STREAMS};

pub use crate::frame::{ErrorCode, StreamId};
