//! RST_STREAM frames (RFC 9113 §6.4).

use super::error::{ErrorCode, H2Error};
use super::head::{read_u32, write_header, FrameHeader, FrameKind, StreamId};

/// Payload length of RST_STREAM.
const RST_STREAM_LEN: usize = 4;

/// A RST_STREAM frame (type 0x03).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RstStream {
    /// The stream being reset; never 0.
    pub stream_id: StreamId,
    /// Why the stream is reset.
    pub error_code: ErrorCode,
}

impl RstStream {
    /// A RST_STREAM for `stream_id` with `error_code`.
    #[inline]
    pub const fn new(stream_id: StreamId, error_code: ErrorCode) -> Self {
        RstStream {
            stream_id,
            error_code,
        }
    }

    /// Decode and validate a RST_STREAM payload.
    ///
    /// Errors (connection scope): stream 0 → PROTOCOL_ERROR; length ≠ 4 →
    /// FRAME_SIZE_ERROR. (RST_STREAM on an idle stream is a session rule.)
    pub fn decode(header: FrameHeader, payload: &[u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.4: "If a RST_STREAM frame is received with a stream
        // identifier of 0x00, the recipient MUST treat this as a connection
        // error (Section 5.4.1) of type PROTOCOL_ERROR."
        if header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.4: RST_STREAM on stream 0",
            ));
        }
        // RFC 9113 §6.4: "A RST_STREAM frame with a length other than 4
        // octets MUST be treated as a connection error (Section 5.4.1) of
        // type FRAME_SIZE_ERROR."
        if payload.len() != RST_STREAM_LEN {
            return Err(H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §6.4: RST_STREAM length other than 4",
            ));
        }
        let code = read_u32(payload, 0).ok_or(H2Error::connection(
            ErrorCode::FRAME_SIZE_ERROR,
            "RFC 9113 §6.4: RST_STREAM length other than 4",
        ))?;
        Ok(RstStream {
            stream_id: header.stream_id,
            error_code: ErrorCode(code),
        })
    }

    /// Append the complete frame.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        write_header(dst, FrameKind::RstStream, 0, self.stream_id, RST_STREAM_LEN);
        dst.extend_from_slice(&self.error_code.0.to_be_bytes());
    }
}
