//! HPACK header compression (RFC 7541).
//!
//! - [`Decoder`]: decodes header blocks into borrowed [`Field`]s through a callback, with
//!   limits on the table size (SETTINGS_HEADER_TABLE_SIZE), the header list size
//!   (SETTINGS_MAX_HEADER_LIST_SIZE) and string literals.
//! - [`Encoder`]: general encoder (static/dynamic matching, incremental indexing,
//!   never-indexed sensitive fields, Huffman when shorter, table size updates).
//! - [`RequestTemplate`]: per-connection request encoder for the load generator; steady
//!   state is a few `memcpy`s.
//! - [`huffman`], [`integer`], [`table`]: the primitives (RFC 7541 §5, Appendix A/B).
//!
//! Errors: every [`HpackError`] is a connection error of type COMPRESSION_ERROR (RFC 9113
//! §4.3: "A decoding error in a field block MUST be treated as a connection error (Section
//! 5.4.1) of type COMPRESSION_ERROR.") except [`HpackError::HeaderListTooLarge`], which
//! concerns one stream only (see [`HpackError::is_connection_error`]).

mod decoder;
mod encoder;
mod error;
mod huffcache;
pub mod huffman;
pub mod integer;
pub mod table;
mod template;

pub(crate) use decoder::{DecodeContext, DecodeLog};
pub use decoder::{Decoder, Field, DEFAULT_MAX_HEADER_LIST_SIZE, DEFAULT_MAX_STRING_LEN};
pub(crate) use encoder::is_sensitive;
pub use encoder::{Encoder, Indexing, SHORT_COOKIE_LEN};
pub use error::{HpackError, TemplateError};
pub(crate) use huffcache::HuffmanCache;
pub use template::RequestTemplate;

/// The default SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2: "The initial value is 4,096
/// octets.").
pub const DEFAULT_TABLE_SIZE: usize = 4096;
