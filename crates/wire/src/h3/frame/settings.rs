//! SETTINGS frames (RFC 9114 §7.2.4) and the HTTP/3 settings identifiers (§7.2.4.1, RFC
//! 9204 §5, RFC 9220 §3, RFC 9297 §2.1.1).

use super::super::error::{is_reserved, ErrorCode, H3Error};
use super::super::varint;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5), default 0.
pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1), default unlimited.
pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5), default 0.
pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
/// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3), 0 or 1.
pub const ENABLE_CONNECT_PROTOCOL: u64 = 0x08;
/// SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1), 0 or 1.
pub const H3_DATAGRAM: u64 = 0x33;

/// RFC 9114 §7.2.4.1: "Setting identifiers that were defined in [HTTP/2] where there is no
/// corresponding HTTP/3 setting have also been reserved (Section 11.2.2). These reserved
/// settings MUST NOT be sent, and their receipt MUST be treated as a connection error of
/// type H3_SETTINGS_ERROR." (§11.2.2 lists 0x00 and 0x02 to 0x05.)
pub const RESERVED_HTTP2: [u64; 5] = [0x00, 0x02, 0x03, 0x04, 0x05];

/// The values of a SETTINGS frame (the defaults for absent identifiers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Settings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub qpack_max_table_capacity: u64,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE; `None` is the default, unlimited.
    pub max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub qpack_blocked_streams: u64,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL.
    pub enable_connect_protocol: bool,
    /// SETTINGS_H3_DATAGRAM.
    pub h3_datagram: bool,
    /// Send a reserved ("grease") setting with this identifier index `N` (identifier
    /// `0x1f * N + 0x21`, value 0), as RFC 9114 §7.2.4.1 suggests; not set on decode.
    pub grease: Option<u32>,
}

const FRAME_ERROR: H3Error = H3Error::connection(
    ErrorCode::H3_FRAME_ERROR,
    "RFC 9114 §7.1: SETTINGS payload ends inside an identifier or value",
);

impl Settings {
    /// Decodes a SETTINGS payload. Unknown and reserved identifiers are ignored (RFC 9114
    /// §7.2.4: "An implementation MUST ignore any parameter with an identifier it does not
    /// understand.").
    ///
    /// Errors (connection): H3_FRAME_ERROR for a truncated pair; H3_SETTINGS_ERROR for an
    /// HTTP/2-only identifier, a known identifier given twice, or a boolean setting other
    /// than 0 or 1.
    pub fn decode(payload: &[u8]) -> Result<Settings, H3Error> {
        let mut s = Settings::default();
        let mut seen = 0u64; // bit per known identifier (all < 64)
        let mut pos = 0;
        while pos < payload.len() {
            let (id, n) =
                varint::decode(payload.get(pos..).unwrap_or_default()).ok_or(FRAME_ERROR)?;
            pos += n;
            let (value, n) =
                varint::decode(payload.get(pos..).unwrap_or_default()).ok_or(FRAME_ERROR)?;
            pos += n;
            if RESERVED_HTTP2.contains(&id) {
                return Err(H3Error::connection(
                    ErrorCode::H3_SETTINGS_ERROR,
                    "RFC 9114 §7.2.4.1: an HTTP/2 setting identifier is reserved in HTTP/3",
                ));
            }
            if id < 64 {
                // RFC 9114 §7.2.4: "The same setting identifier MUST NOT occur more than
                // once in the SETTINGS frame. A receiver MAY treat the presence of duplicate
                // setting identifiers as a connection error of type H3_SETTINGS_ERROR."
                if seen & (1 << id) != 0 {
                    return Err(H3Error::connection(
                        ErrorCode::H3_SETTINGS_ERROR,
                        "RFC 9114 §7.2.4: a setting identifier occurs twice",
                    ));
                }
                seen |= 1 << id;
            }
            let boolean = || match value {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(H3Error::connection(
                    ErrorCode::H3_SETTINGS_ERROR,
                    "RFC 9220 §3 / RFC 9297 §2.1.1: a boolean setting other than 0 or 1",
                )),
            };
            match id {
                QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
                MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
                QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
                ENABLE_CONNECT_PROTOCOL => s.enable_connect_protocol = boolean()?,
                H3_DATAGRAM => s.h3_datagram = boolean()?,
                _ => {}
            }
        }
        Ok(s)
    }

    /// Appends the payload (non-default values only, then the grease setting if any).
    pub fn encode_payload(&self, dst: &mut Vec<u8>) {
        let mut pair = |id: u64, v: u64| {
            varint::encode(id, dst);
            varint::encode(v, dst);
        };
        if self.qpack_max_table_capacity != 0 {
            pair(QPACK_MAX_TABLE_CAPACITY, self.qpack_max_table_capacity);
        }
        if let Some(v) = self.max_field_section_size {
            pair(MAX_FIELD_SECTION_SIZE, v);
        }
        if self.qpack_blocked_streams != 0 {
            pair(QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams);
        }
        if self.enable_connect_protocol {
            pair(ENABLE_CONNECT_PROTOCOL, 1);
        }
        if self.h3_datagram {
            pair(H3_DATAGRAM, 1);
        }
        if let Some(n) = self.grease {
            let id = 0x1f * u64::from(n) + 0x21;
            debug_assert!(is_reserved(id));
            pair(id, 0);
        }
    }
}
