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

pub mod frame;
pub mod h1;
pub mod h2;
pub mod hpack;
pub mod priority;
