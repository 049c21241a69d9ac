//! The 9-octet frame header (RFC 9113 §4.1), frame types, flags and stream
//! identifiers.

use core::fmt;

use super::FRAME_HEADER_LEN;

/// Largest value the 24-bit Length field can carry (2^24-1).
const MAX_LENGTH_FIELD: u32 = 0x00ff_ffff;

/// Mask removing the reserved R bit from a 32-bit stream identifier field.
const STREAM_ID_MASK: u32 = 0x7fff_ffff;

/// A 31-bit HTTP/2 stream identifier (RFC 9113 §5.1.1).
///
/// Constructing one with [`StreamId::new`] clears the reserved high bit, so
/// a `StreamId` is always in `0..=2^31-1`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(u32);

impl StreamId {
    /// Stream 0, the connection control stream.
    pub const ZERO: StreamId = StreamId(0);
    /// The largest stream identifier, 2^31-1.
    pub const MAX: StreamId = StreamId(STREAM_ID_MASK);

    /// A stream identifier from a 32-bit field, ignoring the reserved bit.
    ///
    /// RFC 9113 §4.1: the R bit "MUST remain unset (0x00) when sending and
    /// MUST be ignored when receiving".
    #[inline]
    pub const fn new(id: u32) -> StreamId {
        StreamId(id & STREAM_ID_MASK)
    }

    /// The identifier as a `u32` (always `<= 2^31-1`).
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// True for stream 0 (frames that apply to the whole connection).
    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// True for odd identifiers: streams initiated by a client (§5.1.1).
    #[inline]
    pub const fn is_client_initiated(self) -> bool {
        self.0 & 1 == 1
    }

    /// True for even non-zero identifiers: streams initiated by a server
    /// (§5.1.1).
    #[inline]
    pub const fn is_server_initiated(self) -> bool {
        self.0 != 0 && self.0 & 1 == 0
    }

    /// The next identifier of the same parity (`self + 2`), or `None` once
    /// the 31-bit space is exhausted (RFC 9113 §5.1.1: "Stream identifiers
    /// cannot be reused").
    #[inline]
    pub const fn next_same_parity(self) -> Option<StreamId> {
        match self.0.checked_add(2) {
            Some(n) if n <= STREAM_ID_MASK => Some(StreamId(n)),
            _ => None,
        }
    }
}

impl From<StreamId> for u32 {
    #[inline]
    fn from(id: StreamId) -> u32 {
        id.0
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StreamId({})", self.0)
    }
}

/// Frame flag bits (RFC 9113 §6). Which bits are meaningful depends on the
/// frame type; RFC 9113 §4.1: "Flags that have no defined semantics for a
/// particular frame type MUST be ignored and MUST be left unset (0x00) when
/// sending."
pub mod flags {
    /// END_STREAM (DATA, HEADERS).
    pub const END_STREAM: u8 = 0x01;
    /// ACK (SETTINGS, PING).
    pub const ACK: u8 = 0x01;
    /// END_HEADERS (HEADERS, PUSH_PROMISE, CONTINUATION).
    pub const END_HEADERS: u8 = 0x04;
    /// PADDED (DATA, HEADERS, PUSH_PROMISE).
    pub const PADDED: u8 = 0x08;
    /// PRIORITY (HEADERS).
    pub const PRIORITY: u8 = 0x20;
}

/// The frame type octet (RFC 9113 §6, §11.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// DATA (0x00).
    Data,
    /// HEADERS (0x01).
    Headers,
    /// PRIORITY (0x02).
    Priority,
    /// RST_STREAM (0x03).
    RstStream,
    /// SETTINGS (0x04).
    Settings,
    /// PUSH_PROMISE (0x05).
    PushPromise,
    /// PING (0x06).
    Ping,
    /// GOAWAY (0x07).
    GoAway,
    /// WINDOW_UPDATE (0x08).
    WindowUpdate,
    /// CONTINUATION (0x09).
    Continuation,
    /// Any other type. RFC 9113 §4.1: "Implementations MUST ignore and
    /// discard frames of unknown types." [`FrameKind::from_u8`] only
    /// produces this for values >= 0x0a.
    Unknown(u8),
}

impl FrameKind {
    /// Classify a type octet.
    #[inline]
    pub const fn from_u8(b: u8) -> FrameKind {
        match b {
            0x0 => FrameKind::Data,
            0x1 => FrameKind::Headers,
            0x2 => FrameKind::Priority,
            0x3 => FrameKind::RstStream,
            0x4 => FrameKind::Settings,
            0x5 => FrameKind::PushPromise,
            0x6 => FrameKind::Ping,
            0x7 => FrameKind::GoAway,
            0x8 => FrameKind::WindowUpdate,
            0x9 => FrameKind::Continuation,
            other => FrameKind::Unknown(other),
        }
    }

    /// The type octet.
    #[inline]
    pub const fn as_u8(self) -> u8 {
        match self {
            FrameKind::Data => 0x0,
            FrameKind::Headers => 0x1,
            FrameKind::Priority => 0x2,
            FrameKind::RstStream => 0x3,
            FrameKind::Settings => 0x4,
            FrameKind::PushPromise => 0x5,
            FrameKind::Ping => 0x6,
            FrameKind::GoAway => 0x7,
            FrameKind::WindowUpdate => 0x8,
            FrameKind::Continuation => 0x9,
            FrameKind::Unknown(b) => b,
        }
    }
}

/// The decoded 9-octet frame header (RFC 9113 §4.1).
///
/// ```text
/// +-----------------------------------------------+
/// |                 Length (24)                   |
/// +---------------+---------------+---------------+
/// |   Type (8)    |   Flags (8)   |
/// +-+-------------+---------------+-------------------------------+
/// |R|                 Stream Identifier (31)                      |
/// +=+=============================================================+
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameHeader {
    /// Payload length in octets (24 bits; the header itself is excluded).
    pub length: u32,
    /// Frame type.
    pub kind: FrameKind,
    /// Raw flag bits (see [`flags`]).
    pub flags: u8,
    /// Stream identifier (R bit already cleared).
    pub stream_id: StreamId,
}

impl FrameHeader {
    /// A header with the given fields.
    #[inline]
    pub const fn new(kind: FrameKind, flags: u8, stream_id: StreamId, length: u32) -> Self {
        FrameHeader {
            length,
            kind,
            flags,
            stream_id,
        }
    }

    /// Decode a header from exactly 9 octets. Never fails: every bit
    /// pattern is a syntactically valid header; the R bit is ignored.
    #[inline]
    pub const fn from_bytes(b: &[u8; FRAME_HEADER_LEN]) -> FrameHeader {
        FrameHeader {
            length: (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32,
            kind: FrameKind::from_u8(b[3]),
            flags: b[4],
            stream_id: StreamId::new(u32::from_be_bytes([b[5], b[6], b[7], b[8]])),
        }
    }

    /// Decode the header at the start of `buf`, or `None` if fewer than
    /// [`FRAME_HEADER_LEN`] octets are available.
    #[inline]
    pub fn parse(buf: &[u8]) -> Option<FrameHeader> {
        let head: &[u8; FRAME_HEADER_LEN] = buf.get(..FRAME_HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader::from_bytes(head))
    }

    /// The 9 wire octets. The length is truncated to 24 bits (a length above
    /// 2^24-1 is a caller bug, caught by a debug assertion) and the R bit is
    /// sent as zero.
    #[inline]
    pub const fn to_bytes(&self) -> [u8; FRAME_HEADER_LEN] {
        debug_assert!(
            self.length <= MAX_LENGTH_FIELD,
            "frame length exceeds 2^24-1"
        );
        let len = self.length & MAX_LENGTH_FIELD;
        let id = (self.stream_id.get() & STREAM_ID_MASK).to_be_bytes();
        [
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            self.kind.as_u8(),
            self.flags,
            id[0],
            id[1],
            id[2],
            id[3],
        ]
    }

    /// Append the 9 wire octets to `dst`.
    #[inline]
    pub fn encode(&self, dst: &mut Vec<u8>) {
        dst.extend_from_slice(&self.to_bytes());
    }

    /// True if every bit of `flag` is set.
    #[inline]
    pub const fn has_flag(&self, flag: u8) -> bool {
        self.flags & flag == flag
    }
}

/// Append a frame header; used by every encoder in this module.
#[inline]
pub(crate) fn write_header(
    dst: &mut Vec<u8>,
    kind: FrameKind,
    flags: u8,
    stream_id: StreamId,
    length: usize,
) {
    debug_assert!(
        length <= MAX_LENGTH_FIELD as usize,
        "frame length exceeds 2^24-1"
    );
    // Truncation is only reachable through the caller bug asserted above.
    let length = u32::try_from(length).unwrap_or(u32::MAX) & MAX_LENGTH_FIELD;
    FrameHeader::new(kind, flags, stream_id, length).encode(dst);
}

/// Read a big-endian `u32` at `at`, or `None` if out of bounds.
#[inline]
pub(crate) fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    let b: [u8; 4] = buf.get(at..end)?.try_into().ok()?;
    Some(u32::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_r_bit() {
        let bytes = [0x01, 0x02, 0x03, 0x00, 0x09, 0x80, 0x00, 0x00, 0x05];
        let h = FrameHeader::from_bytes(&bytes);
        assert_eq!(h.length, 0x010203);
        assert_eq!(h.kind, FrameKind::Data);
        assert_eq!(h.flags, 0x09);
        // R bit ignored on receipt.
        assert_eq!(h.stream_id, StreamId::new(5));
        let out = h.to_bytes();
        // R bit cleared on send.
        assert_eq!(out, [0x01, 0x02, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x05]);
        assert_eq!(FrameHeader::parse(&bytes[..8]), None);
        assert_eq!(FrameHeader::parse(&bytes), Some(h));
    }

    #[test]
    fn kinds() {
        for b in 0..=255u8 {
            let k = FrameKind::from_u8(b);
            assert_eq!(k.as_u8(), b);
            assert_eq!(matches!(k, FrameKind::Unknown(_)), b >= 0x0a);
        }
    }

    #[test]
    fn stream_ids() {
        assert!(StreamId::ZERO.is_zero());
        assert!(!StreamId::ZERO.is_client_initiated());
        assert!(!StreamId::ZERO.is_server_initiated());
        assert!(StreamId::new(1).is_client_initiated());
        assert!(StreamId::new(2).is_server_initiated());
        assert_eq!(StreamId::new(u32::MAX), StreamId::MAX);
        assert_eq!(StreamId::new(1).next_same_parity(), Some(StreamId::new(3)));
        assert_eq!(StreamId::MAX.next_same_parity(), None);
        assert_eq!(
            StreamId::new(0x7fff_fffd).next_same_parity(),
            Some(StreamId::MAX)
        );
        assert_eq!(format!("{}", StreamId::new(7)), "7");
    }
}
