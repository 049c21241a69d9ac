//! Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2) and the rules about the
//! peer's unidirectional streams.

use super::error::{is_reserved, ErrorCode, H3Error};
use super::varint;
use crate::h2::Role;

/// Stream type codes (RFC 9114 §6.2, §11.2.4; RFC 9204 §4.2).
pub mod types {
    /// Control stream (§6.2.1).
    pub const CONTROL: u64 = 0x00;
    /// Push stream (§6.2.2).
    pub const PUSH: u64 = 0x01;
    /// QPACK encoder stream (RFC 9204 §4.2).
    pub const QPACK_ENCODER: u64 = 0x02;
    /// QPACK decoder stream (RFC 9204 §4.2).
    pub const QPACK_DECODER: u64 = 0x03;
}

/// The type of a unidirectional stream, from its first varint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UniStreamType {
    /// The control stream.
    Control,
    /// A push stream, with its push ID (the varint after the type).
    Push(u64),
    /// The QPACK encoder stream.
    QpackEncoder,
    /// The QPACK decoder stream.
    QpackDecoder,
    /// A reserved type `0x1f * N + 0x21` (§6.2.3), or any other unknown type.
    Unknown(u64),
}

impl UniStreamType {
    /// Parses the stream header at the start of `input`: `Some((type, length))`, or `None`
    /// if more bytes are needed.
    pub fn parse(input: &[u8]) -> Option<(UniStreamType, usize)> {
        let (ty, n) = varint::decode(input)?;
        Some(match ty {
            types::CONTROL => (UniStreamType::Control, n),
            types::PUSH => {
                let (id, m) = varint::decode(input.get(n..)?)?;
                (UniStreamType::Push(id), n + m)
            }
            types::QPACK_ENCODER => (UniStreamType::QpackEncoder, n),
            types::QPACK_DECODER => (UniStreamType::QpackDecoder, n),
            t => (UniStreamType::Unknown(t), n),
        })
    }

    /// Appends the stream header (type, and the push ID of a push stream).
    pub fn write(&self, dst: &mut Vec<u8>) {
        match *self {
            UniStreamType::Control => varint::encode(types::CONTROL, dst),
            UniStreamType::Push(id) => {
                varint::encode(types::PUSH, dst);
                varint::encode(id, dst);
            }
            UniStreamType::QpackEncoder => varint::encode(types::QPACK_ENCODER, dst),
            UniStreamType::QpackDecoder => varint::encode(types::QPACK_DECODER, dst),
            UniStreamType::Unknown(t) => varint::encode(t, dst),
        }
    }

    /// `true` for a reserved (grease) type.
    pub fn is_reserved(&self) -> bool {
        matches!(self, UniStreamType::Unknown(t) if is_reserved(*t))
    }
}

/// What to do with a new unidirectional stream of the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UniAction {
    /// Read it as the peer's control stream.
    Control,
    /// Read it as a push stream.
    Push(u64),
    /// Feed it to the QPACK decoder ([`crate::qpack::Decoder::feed_encoder_stream`]).
    QpackEncoder,
    /// Feed it to the QPACK encoder ([`crate::qpack::Encoder::feed_decoder_stream`]).
    QpackDecoder,
    /// Unknown type: abort reading with this code (RFC 9114 §6.2: "Recipients of unknown
    /// stream types MUST either abort reading of the stream or discard incoming data
    /// without further processing. If reading is aborted, the recipient SHOULD use the
    /// H3_STREAM_CREATION_ERROR error code").
    Ignore(ErrorCode),
}

/// The peer's critical unidirectional streams: at most one of each, never closed.
#[derive(Clone, Copy, Debug)]
pub struct PeerStreams {
    local: Role,
    control: Option<u64>,
    encoder: Option<u64>,
    decoder: Option<u64>,
}

impl PeerStreams {
    /// Tracker for an endpoint of role `local`.
    pub fn new(local: Role) -> Self {
        PeerStreams {
            local,
            control: None,
            encoder: None,
            decoder: None,
        }
    }

    /// A peer-initiated unidirectional stream `stream_id` announced type `ty`.
    pub fn open(&mut self, stream_id: u64, ty: UniStreamType) -> Result<UniAction, H3Error> {
        let creation = |rule| {
            Err(H3Error::connection(
                ErrorCode::H3_STREAM_CREATION_ERROR,
                rule,
            ))
        };
        let slot = match ty {
            UniStreamType::Control => &mut self.control,
            UniStreamType::QpackEncoder => &mut self.encoder,
            UniStreamType::QpackDecoder => &mut self.decoder,
            UniStreamType::Push(id) => {
                // §6.2.2: "Only servers can push; if a server receives a client-initiated
                // push stream, this MUST be treated as a connection error of type
                // H3_STREAM_CREATION_ERROR."
                if self.local == Role::Server {
                    return creation("RFC 9114 §6.2.2: a client opened a push stream");
                }
                return Ok(UniAction::Push(id));
            }
            UniStreamType::Unknown(_) => {
                return Ok(UniAction::Ignore(ErrorCode::H3_STREAM_CREATION_ERROR))
            }
        };
        if slot.is_some() {
            // §6.2.1: "Only one control stream per peer is permitted; receipt of a second
            // stream claiming to be a control stream MUST be treated as a connection error
            // of type H3_STREAM_CREATION_ERROR." RFC 9204 §4.2: "Receipt of a second
            // instance of either stream type MUST be treated as a connection error of type
            // H3_STREAM_CREATION_ERROR."
            return creation(
                "RFC 9114 §6.2.1 / RFC 9204 §4.2: a second control, encoder or decoder stream",
            );
        }
        *slot = Some(stream_id);
        Ok(match ty {
            UniStreamType::Control => UniAction::Control,
            UniStreamType::QpackEncoder => UniAction::QpackEncoder,
            _ => UniAction::QpackDecoder,
        })
    }

    /// The peer closed or reset unidirectional stream `stream_id`.
    pub fn closed(&self, stream_id: u64) -> Result<(), H3Error> {
        // §6.2.1: "If either control stream is closed at any point, this MUST be treated as
        // a connection error of type H3_CLOSED_CRITICAL_STREAM." RFC 9204 §4.2: "Closure of
        // either unidirectional stream type MUST be treated as a connection error of type
        // H3_CLOSED_CRITICAL_STREAM."
        if [self.control, self.encoder, self.decoder].contains(&Some(stream_id)) {
            return Err(H3Error::connection(
                ErrorCode::H3_CLOSED_CRITICAL_STREAM,
                "RFC 9114 §6.2.1 / RFC 9204 §4.2: a critical stream was closed",
            ));
        }
        Ok(())
    }
}

/// State carried by the peer's control stream: GOAWAY and MAX_PUSH_ID identifiers.
#[derive(Clone, Copy, Debug)]
pub struct ControlState {
    local: Role,
    goaway: Option<u64>,
    max_push_id: Option<u64>,
}

impl ControlState {
    /// State for an endpoint of role `local`.
    pub fn new(local: Role) -> Self {
        ControlState {
            local,
            goaway: None,
            max_push_id: None,
        }
    }

    /// The last GOAWAY identifier received.
    pub fn goaway(&self) -> Option<u64> {
        self.goaway
    }

    /// A GOAWAY arrived with identifier `id` (a stream ID from a server, a push ID from a
    /// client).
    pub fn on_goaway(&mut self, id: u64) -> Result<(), H3Error> {
        // §5.2: "A client MUST treat receipt of a GOAWAY frame containing a stream ID of any
        // other type [than client-initiated bidirectional] as a connection error of type
        // H3_ID_ERROR."
        if self.local == Role::Client && id % 4 != 0 {
            return Err(H3Error::connection(
                ErrorCode::H3_ID_ERROR,
                "RFC 9114 §5.2: GOAWAY stream ID is not client-initiated bidirectional",
            ));
        }
        // §5.2: "An endpoint MAY send multiple GOAWAY frames indicating different
        // identifiers, but the identifier in each frame MUST NOT be greater than the
        // identifier in any previous frame ... Receiving a GOAWAY containing a larger
        // identifier than previously received MUST be treated as a connection error of
        // type H3_ID_ERROR."
        if self.goaway.is_some_and(|prev| id > prev) {
            return Err(H3Error::connection(
                ErrorCode::H3_ID_ERROR,
                "RFC 9114 §5.2: GOAWAY identifier larger than a previous one",
            ));
        }
        self.goaway = Some(id);
        Ok(())
    }

    /// A MAX_PUSH_ID arrived (server role; the frame decoder rejects it on a client).
    pub fn on_max_push_id(&mut self, id: u64) -> Result<(), H3Error> {
        // §7.2.7: "A MAX_PUSH_ID frame cannot reduce the maximum push ID; receipt of a
        // MAX_PUSH_ID frame that contains a smaller value than previously received MUST be
        // treated as a connection error of type H3_ID_ERROR."
        if self.max_push_id.is_some_and(|prev| id < prev) {
            return Err(H3Error::connection(
                ErrorCode::H3_ID_ERROR,
                "RFC 9114 §7.2.7: MAX_PUSH_ID reduced",
            ));
        }
        self.max_push_id = Some(id);
        Ok(())
    }
}
