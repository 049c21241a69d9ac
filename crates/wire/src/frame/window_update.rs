//! WINDOW_UPDATE frames (RFC 9113 §6.9).

use super::error::{ErrorCode, H2Error};
use super::head::{read_u32, write_header, FrameHeader, FrameKind, StreamId};

/// Payload length of WINDOW_UPDATE.
const WINDOW_UPDATE_LEN: usize = 4;

/// A WINDOW_UPDATE frame (type 0x08).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowUpdate {
    /// 0 for the connection window, otherwise the stream.
    pub stream_id: StreamId,
    /// Window Size Increment, 1..=2^31-1 once decoded.
    pub increment: u32,
}

impl WindowUpdate {
    /// A WINDOW_UPDATE for `stream_id` (0 = connection).
    #[inline]
    pub const fn new(stream_id: StreamId, increment: u32) -> Self {
        WindowUpdate {
            stream_id,
            increment,
        }
    }

    /// Decode and validate a WINDOW_UPDATE payload.
    ///
    /// Errors: length ≠ 4 → connection FRAME_SIZE_ERROR; increment 0 →
    /// PROTOCOL_ERROR, stream scope on a stream, connection scope on stream
    /// 0. (Window overflow is checked by [`Window::increase`](super::Window::increase).)
    pub fn decode(header: FrameHeader, payload: &[u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.9: "A WINDOW_UPDATE frame with a length other than 4
        // octets MUST be treated as a connection error (Section 5.4.1) of
        // type FRAME_SIZE_ERROR."
        let raw = match read_u32(payload, 0) {
            Some(v) if payload.len() == WINDOW_UPDATE_LEN => v,
            _ => {
                return Err(H2Error::connection(
                    ErrorCode::FRAME_SIZE_ERROR,
                    "RFC 9113 §6.9: WINDOW_UPDATE length other than 4",
                ))
            }
        };
        // The reserved bit is ignored (RFC 9113 §6.9: "Reserved: A reserved
        // 1-bit field.").
        let increment = raw & 0x7fff_ffff;
        // RFC 9113 §6.9: "A receiver MUST treat the receipt of a WINDOW_UPDATE
        // frame with a flow-control window increment of 0 as a stream error
        // (Section 5.4.2) of type PROTOCOL_ERROR; errors on the connection
        // flow-control window MUST be treated as a connection error (Section
        // 5.4.1)."
        if increment == 0 {
            return Err(if header.stream_id.is_zero() {
                H2Error::connection(
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §6.9: WINDOW_UPDATE increment of 0 on the connection",
                )
            } else {
                H2Error::stream(
                    header.stream_id,
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §6.9: WINDOW_UPDATE increment of 0",
                )
            });
        }
        Ok(WindowUpdate {
            stream_id: header.stream_id,
            increment,
        })
    }

    /// Append the complete frame. The increment is sent with the reserved
    /// bit cleared.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        write_header(
            dst,
            FrameKind::WindowUpdate,
            0,
            self.stream_id,
            WINDOW_UPDATE_LEN,
        );
        dst.extend_from_slice(&(self.increment & 0x7fff_ffff).to_be_bytes());
    }
}

/// Append a WINDOW_UPDATE frame (hot-path convenience).
#[inline]
pub fn encode_window_update(stream_id: StreamId, increment: u32, dst: &mut Vec<u8>) {
    WindowUpdate::new(stream_id, increment).encode(dst);
}
