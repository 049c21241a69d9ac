//! PRIORITY_UPDATE frames (RFC 9218 §7.1): a client's reprioritisation of a
//! response, or its initial priority sent apart from the request.
//!
//! ```text
//! HTTP/2 PRIORITY_UPDATE Frame {
//!   Length (24), Type (8) = 0x10, Unused Flags (8),
//!   Reserved (1), Stream Identifier (31),
//!   Reserved (1), Prioritized Stream ID (31),
//!   Priority Field Value (..),
//! }
//! ```
//!
//! The type is not in RFC 9113's table, so [`FrameDecoder`](super::FrameDecoder)
//! hands it over as [`Frame::Unknown`](super::Frame::Unknown); a session that
//! implements RFC 9218 decodes it with [`PriorityUpdate::decode`]. The field
//! value is the text of the `priority` header field, parsed by
//! [`crate::priority`].

use super::error::{ErrorCode, H2Error};
use super::head::{read_u32, write_header, FrameHeader, FrameKind, StreamId};

/// The frame type octet of PRIORITY_UPDATE (RFC 9218 §7.1: "type=0x10").
pub const PRIORITY_UPDATE_TYPE: u8 = 0x10;

/// Length of the fixed part (the prioritized stream identifier).
const FIXED_LEN: usize = 4;

/// A PRIORITY_UPDATE frame; the field value borrows from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PriorityUpdate<'a> {
    /// The stream whose priority is signalled (never 0).
    pub prioritized_stream_id: StreamId,
    /// The Priority Field Value: "The priority update value in ASCII text,
    /// encoded using Structured Fields. This is the same representation as
    /// the Priority header field value." (RFC 9218 §7.1)
    pub field_value: &'a [u8],
}

impl<'a> PriorityUpdate<'a> {
    /// Decode and validate a PRIORITY_UPDATE payload (`header.kind` must be
    /// `FrameKind::Unknown(0x10)`; the type is not checked here).
    ///
    /// Errors (all connection scope): frame stream ≠ 0 → PROTOCOL_ERROR;
    /// payload shorter than 4 → FRAME_SIZE_ERROR; prioritized stream 0 →
    /// PROTOCOL_ERROR.
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        // RFC 9218 §7.1: "The Stream Identifier field (see Section 5.1.1 of
        // [HTTP/2]) in the PRIORITY_UPDATE frame header MUST be zero (0x0).
        // Receiving a PRIORITY_UPDATE frame with a field of any other value
        // MUST be treated as a connection error of type PROTOCOL_ERROR."
        if !header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9218 §7.1: PRIORITY_UPDATE on a stream other than 0",
            ));
        }
        // RFC 9113 §4.2: "An endpoint MUST send an error code of
        // FRAME_SIZE_ERROR if a frame ... is too small to contain mandatory
        // frame data" — here the 4-octet Prioritized Stream ID; a frame that
        // "could alter the state of the entire connection MUST be treated as
        // a connection error".
        let Some(raw) = read_u32(payload, 0) else {
            return Err(H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §4.2: PRIORITY_UPDATE shorter than its 4-octet stream identifier",
            ));
        };
        // RFC 9218 §7.1: the Reserved bit is ignored on receipt.
        let id = StreamId::new(raw);
        // RFC 9218 §7.1: "If a PRIORITY_UPDATE frame is received with a
        // prioritized stream ID of 0x0, the recipient MUST respond with a
        // connection error of type PROTOCOL_ERROR."
        if id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9218 §7.1: PRIORITY_UPDATE for stream 0",
            ));
        }
        Ok(PriorityUpdate {
            prioritized_stream_id: id,
            field_value: payload.get(FIXED_LEN..).unwrap_or_default(),
        })
    }

    /// Append the complete frame (sent by clients only: RFC 9218 §7.1
    /// "Servers MUST NOT send PRIORITY_UPDATE frames.").
    pub fn encode(&self, dst: &mut Vec<u8>) {
        write_header(
            dst,
            FrameKind::Unknown(PRIORITY_UPDATE_TYPE),
            0,
            StreamId::ZERO,
            FIXED_LEN + self.field_value.len(),
        );
        dst.extend_from_slice(&self.prioritized_stream_id.get().to_be_bytes());
        dst.extend_from_slice(self.field_value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(len: usize, stream: u32) -> FrameHeader {
        FrameHeader::new(
            FrameKind::Unknown(PRIORITY_UPDATE_TYPE),
            0,
            StreamId::new(stream),
            len as u32,
        )
    }

    #[test]
    fn roundtrip() {
        let f = PriorityUpdate {
            prioritized_stream_id: StreamId::new(7),
            field_value: b"u=0, i",
        };
        let mut buf = Vec::new();
        f.encode(&mut buf);
        assert_eq!(&buf[..9], &[0, 0, 10, 0x10, 0, 0, 0, 0, 0]);
        let h = header(buf.len() - 9, 0);
        assert_eq!(PriorityUpdate::decode(h, &buf[9..]).unwrap(), f);
    }

    #[test]
    fn rules() {
        let e = PriorityUpdate::decode(header(5, 1), &[0, 0, 0, 1, b'u']).unwrap_err();
        assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
        let e = PriorityUpdate::decode(header(3, 0), &[0, 0, 1]).unwrap_err();
        assert_eq!(e.code, ErrorCode::FRAME_SIZE_ERROR);
        let e = PriorityUpdate::decode(header(4, 0), &[0x80, 0, 0, 0]).unwrap_err();
        assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
        // Reserved bit ignored, empty field value allowed (defaults).
        let f = PriorityUpdate::decode(header(4, 0), &[0x80, 0, 0, 3]).unwrap();
        assert_eq!(f.prioritized_stream_id, StreamId::new(3));
        assert!(f.field_value.is_empty());
    }
}
