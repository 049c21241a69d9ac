//! Typed QPACK errors (RFC 9204 §6).
//!
//! Every error names the rule it breaks and maps to one of the three QPACK error codes
//! through [`QpackError::code`], except [`QpackError::HeaderListTooLarge`], a local policy
//! limit that concerns one stream only (see [`QpackError::is_connection_error`]).

use std::fmt;

use crate::hpack::HpackError;

/// The QPACK error codes of RFC 9204 §6 (HTTP/3 application error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpackErrorCode {
    /// QPACK_DECOMPRESSION_FAILED (0x0200): "The decoder failed to interpret an encoded
    /// field section and is not able to continue decoding that field section."
    DecompressionFailed,
    /// QPACK_ENCODER_STREAM_ERROR (0x0201): "The decoder failed to interpret an encoder
    /// instruction that was received on the encoder stream."
    EncoderStreamError,
    /// QPACK_DECODER_STREAM_ERROR (0x0202): "The encoder failed to interpret a decoder
    /// instruction that was received on the decoder stream."
    DecoderStreamError,
}

impl QpackErrorCode {
    /// The code's value on the wire (an HTTP/3 error code).
    pub fn value(self) -> u64 {
        match self {
            QpackErrorCode::DecompressionFailed => 0x0200,
            QpackErrorCode::EncoderStreamError => 0x0201,
            QpackErrorCode::DecoderStreamError => 0x0202,
        }
    }
}

/// Where a malformed primitive was found: it decides the error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// An encoded field section (HEADERS or PUSH_PROMISE payload).
    FieldSection,
    /// The encoder stream (read by the decoder).
    EncoderStream,
    /// The decoder stream (read by the encoder).
    DecoderStream,
}

impl Source {
    fn code(self) -> QpackErrorCode {
        match self {
            Source::FieldSection => QpackErrorCode::DecompressionFailed,
            Source::EncoderStream => QpackErrorCode::EncoderStreamError,
            Source::DecoderStream => QpackErrorCode::DecoderStreamError,
        }
    }
}

/// Everything that can go wrong while decoding QPACK input (RFC 9204).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpackError {
    /// A prefix integer, string literal or Huffman code is malformed or truncated (the
    /// primitives of RFC 9204 §4.1, shared with HPACK: [`HpackError`] says which rule).
    /// On a stream (encoder/decoder) a truncated instruction is not an error: the rest is
    /// awaited; in a field section it is.
    Primitive {
        /// Where it was found.
        source: Source,
        /// The primitive's own error.
        error: HpackError,
    },
    /// The encoded Required Insert Count cannot be decoded (RFC 9204 §4.5.1.1: "If the
    /// decoder encounters a value of EncodedInsertCount that could not have been produced
    /// by a conformant encoder, it MUST treat this as a connection error of type
    /// QPACK_DECOMPRESSION_FAILED.").
    InvalidRequiredInsertCount {
        /// The encoded value found.
        encoded: usize,
    },
    /// The Base is negative (RFC 9204 §4.5.1.2: a sign bit of 1 with a Delta Base not
    /// smaller than the Required Insert Count; "Base = ReqInsertCount - DeltaBase - 1").
    NegativeBase,
    /// A field line referenced a dynamic entry that is evicted, not yet inserted, or at or
    /// above the Required Insert Count (RFC 9204 §2.2.3: "If the decoder encounters a
    /// reference in a field line representation to a dynamic table entry that has already
    /// been evicted or that has an absolute index greater than or equal to the declared
    /// Required Insert Count (Section 4.5.1), it MUST treat this as a connection error of
    /// type QPACK_DECOMPRESSION_FAILED.").
    InvalidDynamicReference {
        /// Where it was found.
        source: Source,
        /// The absolute index referenced (or the relative one if no absolute exists).
        index: u64,
    },
    /// A static index at or above 99 (RFC 9204 §3.1: "When the decoder encounters an
    /// invalid static table index in a field line format, it MUST treat this as a
    /// connection error of type QPACK_DECOMPRESSION_FAILED. If this index is received on
    /// the encoder stream, this MUST be treated as a connection error of type
    /// QPACK_ENCODER_STREAM_ERROR.").
    InvalidStaticIndex {
        /// Where it was found.
        source: Source,
        /// The index found.
        index: usize,
    },
    /// A field section declared a Required Insert Count above what it references. RFC 9204
    /// §4.5.1.1 defines the Required Insert Count as one more than the largest absolute
    /// index the section references; a larger value could have blocked the stream for
    /// nothing, and this decoder treats it as QPACK_DECOMPRESSION_FAILED.
    RequiredInsertCountTooLarge {
        /// The declared Required Insert Count.
        declared: u64,
        /// One more than the largest absolute index the section referenced (0 if none).
        used: u64,
    },
    /// More streams are blocked than SETTINGS_QPACK_BLOCKED_STREAMS allows (RFC 9204
    /// §2.1.2: "If a decoder encounters more blocked streams than it promised to support,
    /// it MUST treat this as a connection error of type QPACK_DECOMPRESSION_FAILED.").
    TooManyBlockedStreams {
        /// Our SETTINGS_QPACK_BLOCKED_STREAMS.
        max: usize,
    },
    /// A second field section for a stream that already has one blocked (a caller error:
    /// HTTP/3 delivers a stream's sections in order).
    AlreadyBlocked {
        /// The stream.
        stream_id: u64,
    },
    /// Set Dynamic Table Capacity above our SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204
    /// §4.3.1: "The decoder MUST treat a new dynamic table capacity value that exceeds
    /// this limit as a connection error of type QPACK_ENCODER_STREAM_ERROR.").
    CapacityTooLarge {
        /// The capacity requested.
        requested: usize,
        /// Our limit.
        max: usize,
    },
    /// An insert larger than the table capacity (RFC 9204 §3.2.2: "It is an error if the
    /// encoder attempts to add an entry that is larger than the dynamic table capacity; the
    /// decoder MUST treat this as a connection error of type QPACK_ENCODER_STREAM_ERROR.").
    EntryTooLarge {
        /// Size of the entry (name + value + 32).
        size: usize,
        /// The current capacity.
        capacity: usize,
    },
    /// A string literal above the decoder's limit (RFC 9204 §4.1.2 leaves the limit to the
    /// implementation).
    StringTooLong {
        /// Where it was found.
        source: Source,
        /// Length announced or produced.
        len: usize,
        /// The configured limit.
        max: usize,
    },
    /// Insert Count Increment of zero (RFC 9204 §4.4.3: "An encoder that receives an
    /// Increment field equal to zero ... MUST treat this as a connection error of type
    /// QPACK_DECODER_STREAM_ERROR.").
    ZeroIncrement,
    /// Insert Count Increment past the number of inserts sent (RFC 9204 §4.4.3: "... or
    /// one that increases the Known Received Count beyond what the encoder has sent MUST
    /// treat this as a connection error of type QPACK_DECODER_STREAM_ERROR.").
    IncrementTooLarge {
        /// Known Received Count it would reach.
        reached: u64,
        /// Inserts sent.
        sent: u64,
    },
    /// Section Acknowledgment for a stream without an unacknowledged field section (RFC
    /// 9204 §4.4.1: "If an encoder receives a Section Acknowledgment instruction referring
    /// to a stream on which every encoded field section with a non-zero Required Insert
    /// Count has already been acknowledged, this MUST be treated as a connection error of
    /// type QPACK_DECODER_STREAM_ERROR.").
    UnexpectedSectionAck {
        /// The stream named.
        stream_id: u64,
    },
    /// The decoded field section exceeds SETTINGS_MAX_FIELD_SECTION_SIZE (name + value +
    /// 32 per field, RFC 9114 §4.2.2). Not a connection error: the table is untouched by
    /// a field section, so only this stream is refused (the "QPACK bomb" defence).
    HeaderListTooLarge {
        /// The configured limit.
        max: usize,
    },
}

impl QpackError {
    /// The RFC 9204 §6 error code this error is reported with (the connection is closed
    /// with it, except for [`QpackError::HeaderListTooLarge`], see
    /// [`QpackError::is_connection_error`]).
    pub fn code(&self) -> QpackErrorCode {
        match self {
            QpackError::Primitive { source, .. }
            | QpackError::InvalidDynamicReference { source, .. }
            | QpackError::InvalidStaticIndex { source, .. }
            | QpackError::StringTooLong { source, .. } => source.code(),
            QpackError::InvalidRequiredInsertCount { .. }
            | QpackError::NegativeBase
            | QpackError::RequiredInsertCountTooLarge { .. }
            | QpackError::TooManyBlockedStreams { .. }
            | QpackError::AlreadyBlocked { .. }
            | QpackError::HeaderListTooLarge { .. } => QpackErrorCode::DecompressionFailed,
            QpackError::CapacityTooLarge { .. } | QpackError::EntryTooLarge { .. } => {
                QpackErrorCode::EncoderStreamError
            }
            QpackError::ZeroIncrement
            | QpackError::IncrementTooLarge { .. }
            | QpackError::UnexpectedSectionAck { .. } => QpackErrorCode::DecoderStreamError,
        }
    }

    /// `false` only for [`QpackError::HeaderListTooLarge`]: the decoder is still in sync
    /// and only the stream is refused; every other error closes the connection.
    pub fn is_connection_error(&self) -> bool {
        !matches!(self, QpackError::HeaderListTooLarge { .. })
    }

    pub(crate) fn primitive(source: Source) -> impl Fn(HpackError) -> QpackError {
        move |error| match error {
            HpackError::StringTooLong { len, max } => {
                QpackError::StringTooLong { source, len, max }
            }
            error => QpackError::Primitive { source, error },
        }
    }
}

impl fmt::Display for QpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QPACK ({:?}): ", self.code())?;
        match self {
            QpackError::Primitive { source, error } => write!(f, "{source:?}: {error}"),
            QpackError::InvalidRequiredInsertCount { encoded } => {
                write!(f, "invalid encoded Required Insert Count {encoded}")
            }
            QpackError::NegativeBase => f.write_str("negative Base"),
            QpackError::InvalidDynamicReference { source, index } => {
                write!(f, "{source:?}: invalid dynamic table reference {index}")
            }
            QpackError::InvalidStaticIndex { source, index } => {
                write!(f, "{source:?}: static index {index} out of range")
            }
            QpackError::RequiredInsertCountTooLarge { declared, used } => write!(
                f,
                "Required Insert Count {declared} but the section references only {used}"
            ),
            QpackError::TooManyBlockedStreams { max } => {
                write!(
                    f,
                    "more than SETTINGS_QPACK_BLOCKED_STREAMS ({max}) blocked streams"
                )
            }
            QpackError::AlreadyBlocked { stream_id } => {
                write!(f, "stream {stream_id} already has a blocked field section")
            }
            QpackError::CapacityTooLarge { requested, max } => write!(
                f,
                "dynamic table capacity {requested} above SETTINGS_QPACK_MAX_TABLE_CAPACITY {max}"
            ),
            QpackError::EntryTooLarge { size, capacity } => {
                write!(
                    f,
                    "entry of size {size} exceeds the table capacity {capacity}"
                )
            }
            QpackError::StringTooLong { source, len, max } => {
                write!(
                    f,
                    "{source:?}: string of {len} octets exceeds the limit {max}"
                )
            }
            QpackError::ZeroIncrement => f.write_str("Insert Count Increment of 0"),
            QpackError::IncrementTooLarge { reached, sent } => write!(
                f,
                "Insert Count Increment to {reached} but only {sent} inserts were sent"
            ),
            QpackError::UnexpectedSectionAck { stream_id } => {
                write!(
                    f,
                    "Section Acknowledgment for stream {stream_id} with nothing unacknowledged"
                )
            }
            QpackError::HeaderListTooLarge { max } => {
                write!(
                    f,
                    "field section larger than SETTINGS_MAX_FIELD_SECTION_SIZE {max}"
                )
            }
        }
    }
}

impl std::error::Error for QpackError {}
