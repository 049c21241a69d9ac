//! HTTP/3 frames (RFC 9114 §7): the [`Frame`] enum with its per-type codecs, and the
//! streaming [`FrameDecoder`].
//!
//! RFC 9114 §7.1: every frame is "Type (i), Length (i), Frame Payload (..)", both integers
//! being QUIC varints ([`super::varint`]).

mod decoder;
mod settings;

pub use decoder::{Decoded, FrameDecoder, StreamContext, DEFAULT_MAX_FRAME_LEN};
pub use settings::{
    Settings, ENABLE_CONNECT_PROTOCOL, H3_DATAGRAM, MAX_FIELD_SECTION_SIZE, QPACK_BLOCKED_STREAMS,
    QPACK_MAX_TABLE_CAPACITY, RESERVED_HTTP2,
};

use super::error::{is_reserved, ErrorCode, H3Error};
use super::varint;

/// Frame type codes (RFC 9114 §7.2, §11.2.1).
pub mod types {
    /// DATA (§7.2.1).
    pub const DATA: u64 = 0x00;
    /// HEADERS (§7.2.2).
    pub const HEADERS: u64 = 0x01;
    /// CANCEL_PUSH (§7.2.3).
    pub const CANCEL_PUSH: u64 = 0x03;
    /// SETTINGS (§7.2.4).
    pub const SETTINGS: u64 = 0x04;
    /// PUSH_PROMISE (§7.2.5).
    pub const PUSH_PROMISE: u64 = 0x05;
    /// GOAWAY (§7.2.6).
    pub const GOAWAY: u64 = 0x07;
    /// MAX_PUSH_ID (§7.2.7).
    pub const MAX_PUSH_ID: u64 = 0x0d;
    /// HTTP/2 frame types reserved in HTTP/3 (§7.2.8: PRIORITY, PING, WINDOW_UPDATE,
    /// CONTINUATION).
    pub const RESERVED_HTTP2: [u64; 4] = [0x02, 0x06, 0x08, 0x09];
}

/// One complete HTTP/3 frame; payloads borrow from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Frame<'a> {
    /// DATA: a piece of message content.
    Data(&'a [u8]),
    /// HEADERS: a QPACK-encoded field section.
    Headers(&'a [u8]),
    /// CANCEL_PUSH: the push ID.
    CancelPush(u64),
    /// SETTINGS.
    Settings(Settings),
    /// PUSH_PROMISE: push ID and the request's encoded field section.
    PushPromise {
        /// The push ID.
        push_id: u64,
        /// The QPACK-encoded request field section.
        section: &'a [u8],
    },
    /// GOAWAY: a stream ID (sent by a server) or push ID (sent by a client).
    GoAway(u64),
    /// MAX_PUSH_ID: the largest push ID the client accepts.
    MaxPushId(u64),
    /// A frame of an unknown or reserved type, to be ignored (§9: "Implementations MUST
    /// discard frames ... that have unknown or unsupported types.").
    Unknown {
        /// Its type.
        ty: u64,
        /// Its payload.
        payload: &'a [u8],
    },
}

/// A payload that is exactly one varint (CANCEL_PUSH, GOAWAY, MAX_PUSH_ID). RFC 9114 §7.1:
/// "A frame payload that contains additional bytes after the identified fields or a frame
/// payload that terminates before the end of the identified fields MUST be treated as a
/// connection error of type H3_FRAME_ERROR."
fn single_varint(payload: &[u8], rule: &'static str) -> Result<u64, H3Error> {
    match varint::decode(payload) {
        Some((v, n)) if n == payload.len() => Ok(v),
        _ => Err(H3Error::connection(ErrorCode::H3_FRAME_ERROR, rule)),
    }
}

impl<'a> Frame<'a> {
    /// Decodes a complete frame of type `ty` from its payload, enforcing the payload rules
    /// of its type (which stream may carry it is [`FrameDecoder`]'s job).
    pub fn decode(ty: u64, payload: &'a [u8]) -> Result<Frame<'a>, H3Error> {
        Ok(match ty {
            types::DATA => Frame::Data(payload),
            types::HEADERS => Frame::Headers(payload),
            types::CANCEL_PUSH => Frame::CancelPush(single_varint(
                payload,
                "RFC 9114 §7.1, §7.2.3: CANCEL_PUSH payload is not exactly one push ID",
            )?),
            types::SETTINGS => Frame::Settings(Settings::decode(payload)?),
            types::PUSH_PROMISE => {
                let (push_id, n) = varint::decode(payload).ok_or(H3Error::connection(
                    ErrorCode::H3_FRAME_ERROR,
                    "RFC 9114 §7.1, §7.2.5: PUSH_PROMISE ends inside its push ID",
                ))?;
                Frame::PushPromise {
                    push_id,
                    section: payload.get(n..).unwrap_or_default(),
                }
            }
            types::GOAWAY => Frame::GoAway(single_varint(
                payload,
                "RFC 9114 §7.1, §7.2.6: GOAWAY payload is not exactly one identifier",
            )?),
            types::MAX_PUSH_ID => Frame::MaxPushId(single_varint(
                payload,
                "RFC 9114 §7.1, §7.2.7: MAX_PUSH_ID payload is not exactly one push ID",
            )?),
            t if types::RESERVED_HTTP2.contains(&t) => {
                // §7.2.8: "These frame types MUST NOT be sent, and their receipt MUST be
                // treated as a connection error of type H3_FRAME_UNEXPECTED."
                return Err(H3Error::connection(
                    ErrorCode::H3_FRAME_UNEXPECTED,
                    "RFC 9114 §7.2.8: an HTTP/2 frame type is reserved in HTTP/3",
                ));
            }
            ty => Frame::Unknown { ty, payload },
        })
    }

    /// The frame type code.
    pub fn ty(&self) -> u64 {
        match self {
            Frame::Data(_) => types::DATA,
            Frame::Headers(_) => types::HEADERS,
            Frame::CancelPush(_) => types::CANCEL_PUSH,
            Frame::Settings(_) => types::SETTINGS,
            Frame::PushPromise { .. } => types::PUSH_PROMISE,
            Frame::GoAway(_) => types::GOAWAY,
            Frame::MaxPushId(_) => types::MAX_PUSH_ID,
            Frame::Unknown { ty, .. } => *ty,
        }
    }

    /// Appends the complete frame (type, length, payload).
    pub fn encode(&self, dst: &mut Vec<u8>) {
        match *self {
            Frame::Data(p) | Frame::Headers(p) | Frame::Unknown { payload: p, .. } => {
                write_frame_header(self.ty(), p.len() as u64, dst);
                dst.extend_from_slice(p);
            }
            Frame::CancelPush(v) | Frame::GoAway(v) | Frame::MaxPushId(v) => {
                write_frame_header(self.ty(), varint::encoded_len(v) as u64, dst);
                varint::encode(v, dst);
            }
            Frame::Settings(s) => {
                let mut p = Vec::new();
                s.encode_payload(&mut p);
                write_frame_header(types::SETTINGS, p.len() as u64, dst);
                dst.extend_from_slice(&p);
            }
            Frame::PushPromise { push_id, section } => {
                let len = varint::encoded_len(push_id) + section.len();
                write_frame_header(types::PUSH_PROMISE, len as u64, dst);
                varint::encode(push_id, dst);
                dst.extend_from_slice(section);
            }
        }
    }
}

/// Appends a frame header (type and payload length). The hot paths write HEADERS and DATA
/// with it and then the payload from their own buffers.
#[inline]
pub fn write_frame_header(ty: u64, len: u64, dst: &mut Vec<u8>) {
    varint::encode(ty, dst);
    varint::encode(len, dst);
}

/// A reserved frame type for greasing (RFC 9114 §7.2.8: "Frame types of the format
/// 0x1f * N + 0x21 for non-negative integer values of N are reserved to exercise the
/// requirement that unknown types be ignored").
pub fn reserved_frame_type(n: u32) -> u64 {
    let t = 0x1f * u64::from(n) + 0x21;
    debug_assert!(is_reserved(t));
    t
}
