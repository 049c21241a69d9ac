//! PRIORITY frames (RFC 9113 §6.3) and the priority fields shared with
//! HEADERS.
//!
//! RFC 9113 §5.3.2 deprecates the RFC 7540 priority scheme, but the frame
//! must still be parsed and its size and self-dependency rules enforced.

use super::error::{ErrorCode, H2Error};
use super::head::{read_u32, write_header, FrameHeader, FrameKind, StreamId};

/// Length of a PRIORITY payload and of the HEADERS priority fields.
pub const PRIORITY_LEN: usize = 5;

/// Stream dependency, exclusive flag and weight (RFC 9113 §6.3; semantics in
/// RFC 7540 §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrioritySpec {
    /// The stream this one depends on (0 = the root).
    pub dependency: StreamId,
    /// The E bit: exclusive dependency.
    pub exclusive: bool,
    /// The weight octet as on the wire; the effective weight is `weight + 1`.
    pub weight: u8,
}

impl PrioritySpec {
    /// Parse the 5 priority octets.
    #[inline]
    pub fn from_bytes(b: &[u8; PRIORITY_LEN]) -> PrioritySpec {
        let dep = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        PrioritySpec {
            dependency: StreamId::new(dep),
            exclusive: dep & 0x8000_0000 != 0,
            weight: b[4],
        }
    }

    /// Parse the priority octets at the start of `buf`, or `None` if fewer
    /// than 5 octets are available.
    #[inline]
    pub(crate) fn parse(buf: &[u8]) -> Option<PrioritySpec> {
        let dep = read_u32(buf, 0)?;
        let weight = *buf.get(4)?;
        Some(PrioritySpec {
            dependency: StreamId::new(dep),
            exclusive: dep & 0x8000_0000 != 0,
            weight,
        })
    }

    /// The 5 wire octets.
    #[inline]
    pub fn to_bytes(&self) -> [u8; PRIORITY_LEN] {
        let mut dep = self.dependency.get();
        if self.exclusive {
            dep |= 0x8000_0000;
        }
        let d = dep.to_be_bytes();
        [d[0], d[1], d[2], d[3], self.weight]
    }

    /// The effective weight, 1..=256.
    #[inline]
    pub fn effective_weight(&self) -> u16 {
        u16::from(self.weight) + 1
    }

    /// RFC 7540 §5.3.1 (kept in force for the deprecated scheme): "A stream
    /// cannot depend on itself. An endpoint MUST treat this as a stream error
    /// (Section 5.4.2) of type PROTOCOL_ERROR."
    #[inline]
    pub(crate) fn check_not_self(
        &self,
        stream_id: StreamId,
        rule: &'static str,
    ) -> Result<(), H2Error> {
        if self.dependency == stream_id {
            return Err(H2Error::stream(stream_id, ErrorCode::PROTOCOL_ERROR, rule));
        }
        Ok(())
    }
}

/// A PRIORITY frame (type 0x02).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Priority {
    /// The stream being (re)prioritised; never 0.
    pub stream_id: StreamId,
    /// The priority fields.
    pub spec: PrioritySpec,
}

impl Priority {
    /// Decode and validate a PRIORITY payload.
    ///
    /// Errors: stream 0 → connection PROTOCOL_ERROR; length ≠ 5 → stream
    /// FRAME_SIZE_ERROR; dependency on itself → stream PROTOCOL_ERROR.
    pub fn decode(header: FrameHeader, payload: &[u8]) -> Result<Priority, H2Error> {
        // RFC 9113 §6.3: "If a PRIORITY frame is received with a stream
        // identifier of 0x00, the recipient MUST respond with a connection
        // error of type PROTOCOL_ERROR."
        if header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.3: PRIORITY on stream 0",
            ));
        }
        // RFC 9113 §6.3: "A PRIORITY frame with a length other than 5 octets
        // MUST be treated as a stream error (Section 5.4.2) of type
        // FRAME_SIZE_ERROR."
        let spec = match <&[u8; PRIORITY_LEN]>::try_from(payload) {
            Ok(b) => PrioritySpec::from_bytes(b),
            Err(_) => {
                return Err(H2Error::stream(
                    header.stream_id,
                    ErrorCode::FRAME_SIZE_ERROR,
                    "RFC 9113 §6.3: PRIORITY length other than 5",
                ))
            }
        };
        spec.check_not_self(
            header.stream_id,
            "RFC 7540 §5.3.1: PRIORITY depends on its own stream",
        )?;
        Ok(Priority {
            stream_id: header.stream_id,
            spec,
        })
    }

    /// Append the complete frame (header + 5 octets).
    pub fn encode(&self, dst: &mut Vec<u8>) {
        write_header(dst, FrameKind::Priority, 0, self.stream_id, PRIORITY_LEN);
        dst.extend_from_slice(&self.spec.to_bytes());
    }
}
