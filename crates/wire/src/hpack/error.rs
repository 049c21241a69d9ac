//! Typed HPACK errors.
//!
//! RFC 9113 §4.3: "A decoding error in a field block MUST be treated as a connection error
//! (Section 5.4.1) of type COMPRESSION_ERROR." Every [`HpackError`] therefore maps to a
//! connection error of type COMPRESSION_ERROR, **except**
//! [`HpackError::HeaderListTooLarge`]: that one is a local policy limit
//! (SETTINGS_MAX_HEADER_LIST_SIZE), the decoder keeps its dynamic table in sync when it
//! reports it, and the endpoint may answer the single stream (a server with 431 or
//! RST_STREAM(REFUSED_STREAM), a client by resetting the stream) and keep the connection.
//! Use [`HpackError::is_connection_error`] to tell them apart.

use std::fmt;

/// Everything that can go wrong while decoding an HPACK header block (RFC 7541).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HpackError {
    /// An indexed representation used index 0 (RFC 7541 §6.1: "The index value of 0 is not
    /// used. It MUST be treated as a decoding error if found in an indexed header field
    /// representation.").
    ZeroIndex,
    /// An index above the static table plus the current dynamic table (RFC 7541 §2.3.3:
    /// "Indices strictly greater than the sum of the lengths of both tables MUST be treated
    /// as a decoding error.").
    IndexOutOfRange {
        /// The index found in the block.
        index: usize,
        /// The highest valid index at that point (61 + dynamic table length).
        max: usize,
    },
    /// A Huffman-coded string contained the EOS symbol (RFC 7541 §5.2: "A Huffman-encoded
    /// string literal containing the EOS symbol MUST be treated as a decoding error.").
    HuffmanEos,
    /// A Huffman-coded string ended with more than 7 bits of padding (RFC 7541 §5.2: "A
    /// padding strictly longer than 7 bits MUST be treated as a decoding error.").
    HuffmanPaddingTooLong,
    /// A Huffman-coded string ended with padding that is not a prefix of EOS, i.e. not all
    /// ones, or with an incomplete code (RFC 7541 §5.2: "A padding not corresponding to the
    /// most significant bits of the code for the EOS symbol MUST be treated as a decoding
    /// error.").
    HuffmanInvalidPadding,
    /// A prefix integer does not fit in 32 bits or uses an absurdly long run of
    /// continuation octets (RFC 7541 §5.1: "Integer encodings that exceed implementation
    /// limits -- in value or octet length -- MUST be treated as decoding errors.").
    IntegerOverflow,
    /// A string literal is longer than the decoder's limit
    /// ([`crate::hpack::Decoder::set_max_string_len`]; RFC 7541 §7.4 allows such limits).
    StringTooLong {
        /// Length announced (octets on the wire) or produced (after Huffman decoding).
        len: usize,
        /// The configured limit.
        max: usize,
    },
    /// The block ended in the middle of a representation (an integer or a string literal).
    Truncated,
    /// A dynamic table size update came after a header field representation (RFC 7541 §4.2:
    /// "This dynamic table size update MUST occur at the beginning of the first header block
    /// following the change to the dynamic table size."; §6.3).
    SizeUpdateNotAtStart,
    /// A dynamic table size update above SETTINGS_HEADER_TABLE_SIZE (RFC 7541 §6.3: "The
    /// new maximum size MUST be lower than or equal to the limit determined by the
    /// protocol using HPACK. A value that exceeds this limit MUST be treated as a decoding
    /// error.").
    SizeUpdateTooLarge {
        /// Size requested by the peer.
        requested: usize,
        /// The limit we advertised.
        max: usize,
    },
    /// We lowered SETTINGS_HEADER_TABLE_SIZE below the peer's current table size, and the
    /// next header block did not start with a dynamic table size update at or below the
    /// smallest value we advertised (RFC 7541 §4.2: "the smallest maximum table size that
    /// occurs in that interval MUST be signaled in a dynamic table size update").
    MissingSizeUpdate {
        /// The size update the block had to contain (at most this value).
        required_at_most: usize,
    },
    /// The decoded header list exceeds SETTINGS_MAX_HEADER_LIST_SIZE (sum of name + value +
    /// 32 per field, RFC 9113 §6.5.2). Not a COMPRESSION_ERROR: the dynamic table is still
    /// in sync, only this block's fields must be discarded (RFC 9113 §10.5.1: a server "can
    /// send an HTTP 431 (Request Header Fields Too Large) status code").
    HeaderListTooLarge {
        /// The configured limit.
        max: usize,
    },
}

impl HpackError {
    /// `true` for every error that RFC 9113 §4.3 turns into a connection error of type
    /// COMPRESSION_ERROR; `false` only for [`HpackError::HeaderListTooLarge`], after which
    /// the decoder can still be used for the next block.
    pub fn is_connection_error(&self) -> bool {
        !matches!(self, HpackError::HeaderListTooLarge { .. })
    }
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpackError::ZeroIndex => f.write_str("HPACK: index 0 in an indexed representation"),
            HpackError::IndexOutOfRange { index, max } => {
                write!(f, "HPACK: index {index} out of range (max {max})")
            }
            HpackError::HuffmanEos => f.write_str("HPACK: EOS symbol inside a Huffman string"),
            HpackError::HuffmanPaddingTooLong => {
                f.write_str("HPACK: Huffman padding longer than 7 bits")
            }
            HpackError::HuffmanInvalidPadding => {
                f.write_str("HPACK: Huffman padding is not a prefix of EOS")
            }
            HpackError::IntegerOverflow => f.write_str("HPACK: integer overflow"),
            HpackError::StringTooLong { len, max } => {
                write!(f, "HPACK: string literal of {len} octets exceeds the limit of {max}")
            }
            HpackError::Truncated => f.write_str("HPACK: header block truncated"),
            HpackError::SizeUpdateNotAtStart => {
                f.write_str("HPACK: dynamic table size update after a header field")
            }
            HpackError::SizeUpdateTooLarge { requested, max } => write!(
                f,
                "HPACK: dynamic table size update to {requested} exceeds SETTINGS_HEADER_TABLE_SIZE {max}"
            ),
            HpackError::MissingSizeUpdate { required_at_most } => write!(
                f,
                "HPACK: expected a dynamic table size update <= {required_at_most} at the start of the block"
            ),
            HpackError::HeaderListTooLarge { max } => {
                write!(f, "header list larger than SETTINGS_MAX_HEADER_LIST_SIZE {max}")
            }
        }
    }
}

impl std::error::Error for HpackError {}

/// Errors from [`crate::hpack::RequestTemplate::new`] (local configuration, not peer data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateError {
    /// No `:path` value was given; a request needs at least one (RFC 9113 §8.3.1).
    NoPaths,
    /// The fixed fields contain `:path`; paths must be passed separately.
    PathInFields,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::NoPaths => f.write_str("request template needs at least one :path"),
            TemplateError::PathInFields => {
                f.write_str("request template fields must not contain :path (pass it as a path)")
            }
        }
    }
}

impl std::error::Error for TemplateError {}
