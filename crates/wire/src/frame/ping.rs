//! PING frames (RFC 9113 §6.7).

use super::error::{ErrorCode, H2Error};
use super::head::{flags, write_header, FrameHeader, FrameKind, StreamId};

/// Payload length of PING.
pub const PING_LEN: usize = 8;

/// A PING frame (type 0x06). The 8 opaque octets are copied (they are
/// small and usually compared against a stored value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ping {
    /// ACK flag: this is a response.
    pub ack: bool,
    /// Opaque data.
    pub payload: [u8; PING_LEN],
}

impl Ping {
    /// A PING request.
    #[inline]
    pub const fn new(payload: [u8; PING_LEN]) -> Self {
        Ping {
            ack: false,
            payload,
        }
    }

    /// The response to a PING request. RFC 9113 §6.7: "Receivers of a PING
    /// frame that does not include an ACK flag MUST send a PING frame with
    /// the ACK flag set in response, with an identical frame payload."
    #[inline]
    pub const fn pong(payload: [u8; PING_LEN]) -> Self {
        Ping { ack: true, payload }
    }

    /// Decode and validate a PING payload.
    ///
    /// Errors (connection scope): stream ≠ 0 → PROTOCOL_ERROR; length ≠ 8 →
    /// FRAME_SIZE_ERROR.
    pub fn decode(header: FrameHeader, payload: &[u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.7: "If a PING frame is received with a Stream
        // Identifier field value other than 0x00, the recipient MUST respond
        // with a connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        if !header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.7: PING on a non-zero stream",
            ));
        }
        // RFC 9113 §6.7: "Receipt of a PING frame with a length field value
        // other than 8 MUST be treated as a connection error (Section 5.4.1)
        // of type FRAME_SIZE_ERROR."
        let payload: [u8; PING_LEN] = payload.try_into().map_err(|_| {
            H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §6.7: PING length other than 8",
            )
        })?;
        Ok(Ping {
            ack: header.has_flag(flags::ACK),
            payload,
        })
    }

    /// Append the complete frame.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let f = if self.ack { flags::ACK } else { 0 };
        write_header(dst, FrameKind::Ping, f, StreamId::ZERO, PING_LEN);
        dst.extend_from_slice(&self.payload);
    }
}
