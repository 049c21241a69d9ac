//! HTTP/1.1 (RFC 9112), sans-IO.
//!
//! - Client side: [`encode_request`] builds the exact bytes of a request once
//!   ([`RequestBytes`], with its head size for h2load's "headers" count);
//!   [`ResponseParser`] turns the bytes of pipelined keep-alive responses into
//!   [`Event`]s (interim 1xx, head, body slices, trailers, end), on partial
//!   input, without copying or allocating.
//! - Server side: [`RequestParser`] parses request heads on partial input under
//!   [`Limits`] (request-line → 414, field section → 431, body → 413), decides
//!   body framing, persistence, `Expect: 100-continue` and h2c upgrades;
//!   [`encode_chunk`] writes chunked bodies (the proxy's); `h2lab serve`
//!   writes its fixed response heads itself (`crates/server/src/http1.rs`).
//! - Both: [`BodyDecoder`] decodes Content-Length, chunked and close-delimited
//!   bodies in place; [`Headers`] is a zero-copy view over a field section.
//!
//! Every parser error is an [`H1Error`]; [`H1Error::status_code`] tells a
//! server what to answer. Framing is strict where it matters for request
//! smuggling: Transfer-Encoding together with Content-Length is always an
//! error, differing Content-Length values are an error, chunked framing
//! requires CRLF (no bare LF), chunk sizes are checked for overflow.
//!
//! All parsers take the unconsumed bytes of the connection and return how
//! many they consumed; heads (and trailer sections) are only consumed once
//! complete, so the caller keeps their bytes and appends the next read.

mod body;
mod digits;
mod error;
mod headers;
mod request;
mod respond;
mod response;
mod scan;
mod server;
mod summary;
mod syntax;
mod upgrade;
mod version;

pub use body::{
    BodyDecoder, BodyEvent, Framing, DEFAULT_MAX_TRAILER_BYTES, MAX_CHUNK_LINE, MAX_TRAILERS,
};
pub use digits::push_decimal;
pub use error::H1Error;
pub use headers::{Header, HeaderIter, Headers};
pub use request::{encode_request, RequestBytes};
pub use respond::{encode_chunk, encode_informational, reason_phrase, CONTINUE_100};
pub use response::{Event, ResponseHead, ResponseLimits, ResponseParser};
pub use server::{Limits, Parsed, RequestHead, RequestParser, MAX_HEADERS};
pub use upgrade::{decode_base64url, encode_http2_settings, H2cUpgrade, H2C_SWITCHING_PROTOCOLS};
pub use version::Version;
