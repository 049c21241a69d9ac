//! GOAWAY frames (RFC 9113 §6.8).

use super::error::{ErrorCode, H2Error};
use super::head::{read_u32, write_header, FrameHeader, FrameKind, StreamId};
use super::FRAME_HEADER_LEN;

/// Length of the fixed GOAWAY fields (Last-Stream-ID + Error Code).
const GOAWAY_FIXED_LEN: usize = 8;

/// A GOAWAY frame (type 0x07); `debug_data` borrows from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GoAway<'a> {
    /// Highest stream id the sender might have processed (R bit ignored).
    pub last_stream_id: StreamId,
    /// Why the connection is closing.
    pub error_code: ErrorCode,
    /// Opaque diagnostic data.
    pub debug_data: &'a [u8],
}

impl<'a> GoAway<'a> {
    /// A GOAWAY without debug data.
    #[inline]
    pub const fn new(last_stream_id: StreamId, error_code: ErrorCode) -> Self {
        GoAway {
            last_stream_id,
            error_code,
            debug_data: &[],
        }
    }

    /// Decode and validate a GOAWAY payload.
    ///
    /// Errors (connection scope): stream ≠ 0 → PROTOCOL_ERROR; shorter than
    /// 8 octets → FRAME_SIZE_ERROR.
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.8: "An endpoint MUST treat a GOAWAY frame with a stream
        // identifier other than 0x00 as a connection error (Section 5.4.1) of
        // type PROTOCOL_ERROR."
        if !header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.8: GOAWAY on a non-zero stream",
            ));
        }
        // RFC 9113 §4.2: a frame "too small to contain mandatory frame data"
        // is a FRAME_SIZE_ERROR (connection error: stream 0).
        let too_small = H2Error::connection(
            ErrorCode::FRAME_SIZE_ERROR,
            "RFC 9113 §4.2: GOAWAY shorter than 8 octets",
        );
        let last = read_u32(payload, 0).ok_or(too_small)?;
        let code = read_u32(payload, 4).ok_or(too_small)?;
        Ok(GoAway {
            last_stream_id: StreamId::new(last),
            error_code: ErrorCode(code),
            debug_data: payload.get(GOAWAY_FIXED_LEN..).unwrap_or_default(),
        })
    }

    /// Append the complete frame. The caller keeps `debug_data` within the
    /// peer's SETTINGS_MAX_FRAME_SIZE.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let len = GOAWAY_FIXED_LEN + self.debug_data.len();
        dst.reserve(FRAME_HEADER_LEN + len);
        write_header(dst, FrameKind::GoAway, 0, StreamId::ZERO, len);
        dst.extend_from_slice(&self.last_stream_id.get().to_be_bytes());
        dst.extend_from_slice(&self.error_code.0.to_be_bytes());
        dst.extend_from_slice(self.debug_data);
    }
}
