//! DATA frames (RFC 9113 §6.1).

use super::error::{ErrorCode, H2Error};
use super::head::{flags, write_header, FrameHeader, FrameKind, StreamId};
use super::padding;

/// A DATA frame (type 0x00); `data` borrows from the input buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Data<'a> {
    /// The stream; never 0.
    pub stream_id: StreamId,
    /// Application data, padding removed.
    pub data: &'a [u8],
    /// END_STREAM flag.
    pub end_stream: bool,
    /// `Some(n)` if the frame is PADDED with `n` octets of padding.
    pub pad_len: Option<u8>,
}

impl<'a> Data<'a> {
    /// An unpadded DATA frame without END_STREAM.
    #[inline]
    pub const fn new(stream_id: StreamId, data: &'a [u8]) -> Self {
        Data {
            stream_id,
            data,
            end_stream: false,
            pad_len: None,
        }
    }

    /// Decode and validate a DATA payload (`payload` is the whole frame
    /// payload, its length is taken from the slice).
    ///
    /// Errors (all connection scope): stream 0 → PROTOCOL_ERROR; PADDED with
    /// an empty payload → FRAME_SIZE_ERROR; padding ≥ payload →
    /// PROTOCOL_ERROR.
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.1: "If a DATA frame is received whose Stream Identifier
        // field is 0x00, the recipient MUST respond with a connection error
        // (Section 5.4.1) of type PROTOCOL_ERROR."
        if header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.1: DATA on stream 0",
            ));
        }
        let (pad_len, data) = padding::split(
            payload,
            header.has_flag(flags::PADDED),
            0,
            "RFC 9113 §4.2: PADDED DATA too short for Pad Length",
            "RFC 9113 §6.1: DATA padding not smaller than payload",
        )?;
        Ok(Data {
            stream_id: header.stream_id,
            data,
            end_stream: header.has_flag(flags::END_STREAM),
            pad_len,
        })
    }

    /// The payload length, which is what flow control counts.
    ///
    /// RFC 9113 §6.1: "The entire DATA frame payload is included in flow
    /// control, including the Pad Length and Padding fields if present."
    /// Decoded frames always fit (their payload is at most 2^24-1 octets);
    /// the value saturates for oversized frames built by hand.
    #[inline]
    pub fn flow_controlled_len(&self) -> u32 {
        u32::try_from(self.payload_len()).unwrap_or(u32::MAX)
    }

    /// Payload length of this frame when encoded.
    #[inline]
    pub fn payload_len(&self) -> usize {
        self.data.len() + padding::overhead(self.pad_len)
    }

    /// Append the complete frame (header, optional Pad Length, data,
    /// zeroed padding). The caller must keep the payload within the peer's
    /// SETTINGS_MAX_FRAME_SIZE.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let mut f = 0;
        if self.end_stream {
            f |= flags::END_STREAM;
        }
        if self.pad_len.is_some() {
            f |= flags::PADDED;
        }
        let len = self.payload_len();
        dst.reserve(super::FRAME_HEADER_LEN + len);
        write_header(dst, FrameKind::Data, f, self.stream_id, len);
        if let Some(p) = self.pad_len {
            dst.push(p);
            dst.extend_from_slice(self.data);
            padding::write_padding(dst, p);
        } else {
            dst.extend_from_slice(self.data);
        }
    }
}

/// Hot path: append only the 9-octet header of an unpadded DATA frame whose
/// `len` payload octets the caller appends next (e.g. straight from a body
/// buffer or a file), avoiding an intermediate copy.
///
/// `len` must not exceed the peer's SETTINGS_MAX_FRAME_SIZE.
#[inline]
pub fn encode_data_header(stream_id: StreamId, len: u32, end_stream: bool, dst: &mut Vec<u8>) {
    let f = if end_stream { flags::END_STREAM } else { 0 };
    FrameHeader::new(FrameKind::Data, f, stream_id, len).encode(dst);
}
