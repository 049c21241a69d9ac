//! QPACK field compression for HTTP/3 (RFC 9204).
//!
//! - [`Decoder`]: decodes field sections into borrowed [`Field`]s through a callback, reads
//!   the encoder stream, writes the decoder stream, holds blocked sections until their
//!   inserts arrive (within SETTINGS_QPACK_BLOCKED_STREAMS), and bounds the decoded
//!   section size (SETTINGS_MAX_FIELD_SECTION_SIZE).
//! - [`Encoder`]: static table and literals, or the dynamic table too within the peer's
//!   capacity and blocked-streams limit, tracking the decoder's acknowledgments.
//! - [`RequestTemplate`]: a request field section encoded once and copied per request.
//! - [`instructions`], [`prim`], [`table`]: the encoder/decoder-stream instructions, the
//!   primitives (HPACK's prefix integers and Huffman code, [`crate::hpack`]) and the
//!   static (99 entries) and dynamic tables.
//!
//! Errors: [`QpackError`], each mapped to its RFC 9204 §6 code by [`QpackError::code`].

mod decoder;
mod encoder;
mod error;
pub mod instructions;
pub mod prim;
pub mod table;
mod template;

pub use crate::hpack::Field;
pub use decoder::{Decoded, Decoder, DEFAULT_MAX_FIELD_SECTION_SIZE, DEFAULT_MAX_STRING_LEN};
pub use encoder::{Encoder, EncoderConfig, Replay, SectionRefs, MAX_UNACKED_SECTIONS};
pub use error::{QpackError, QpackErrorCode, Source};
pub use template::RequestTemplate;
