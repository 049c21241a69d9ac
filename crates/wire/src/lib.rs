//! Sans-IO wire codecs shared by the h2lab client (`engine`) and server.
//!
//! Nothing in this crate touches a socket, a clock or an async runtime: every
//! function takes bytes in and gives bytes (or typed events) out, so the same
//! code is driven by the load generator, the test server and the fuzzers.
//!
//! - [`frame`]: HTTP/2 framing (RFC 9113): the ten frame types, the connection
//!   preface, SETTINGS, header-block assembly and flow-control windows.
//! - [`hpack`]: HPACK header compression (RFC 7541), including a request
//!   template encoder for load generation.
//! - [`priority`]: RFC 9218 priority parameters (the `priority` header field
//!   and PRIORITY_UPDATE values).
//! - [`h1`]: HTTP/1.1 request encoding and parsing, response parsing (RFC 9112).
//! - [`h2`]: the sans-IO HTTP/2 connection state machine for both roles.
//! - [`qpack`]: QPACK field compression (RFC 9204) on HPACK's primitives: decoder with
//!   the dynamic table and blocked streams, encoder with an optional dynamic table, request
//!   templates, encoder/decoder-stream instructions.
//! - [`h3`]: HTTP/3 framing (RFC 9114): QUIC varints, frames and SETTINGS, the streaming
//!   frame decoder, unidirectional stream types, error codes, field validation shared with
//!   HTTP/2, and the request-stream state machine. No QUIC: the transport hands over
//!   stream bytes.

pub mod frame;
pub mod h1;
pub mod h2;
pub mod h3;
pub mod hpack;
pub mod priority;
pub mod qpack;
