//! SETTINGS frames (RFC 9113 §6.5) and setting identifiers/defaults.

use core::fmt;

use super::error::{ErrorCode, H2Error};
use super::head::{flags, write_header, FrameHeader, FrameKind, StreamId};
use super::{
    DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_LEN, MAX_MAX_FRAME_SIZE,
    MAX_WINDOW_SIZE,
};

/// Size of one setting on the wire (16-bit id + 32-bit value).
const SETTING_LEN: usize = 6;

/// Initial SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2).
pub const DEFAULT_HEADER_TABLE_SIZE: u32 = 4096;
/// Initial SETTINGS_ENABLE_PUSH (RFC 9113 §6.5.2: "The initial value is 1").
pub const DEFAULT_ENABLE_PUSH: bool = true;
/// Initial SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §3: default 0).
pub const DEFAULT_ENABLE_CONNECT_PROTOCOL: bool = false;

/// A setting identifier (RFC 9113 §6.5.2, §11.3). A `u16` newtype so that
/// unknown identifiers can be represented; they are ignored on receipt.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SettingsParam(pub u16);

impl SettingsParam {
    /// SETTINGS_HEADER_TABLE_SIZE (0x1).
    pub const HEADER_TABLE_SIZE: SettingsParam = SettingsParam(0x1);
    /// SETTINGS_ENABLE_PUSH (0x2).
    pub const ENABLE_PUSH: SettingsParam = SettingsParam(0x2);
    /// SETTINGS_MAX_CONCURRENT_STREAMS (0x3).
    pub const MAX_CONCURRENT_STREAMS: SettingsParam = SettingsParam(0x3);
    /// SETTINGS_INITIAL_WINDOW_SIZE (0x4).
    pub const INITIAL_WINDOW_SIZE: SettingsParam = SettingsParam(0x4);
    /// SETTINGS_MAX_FRAME_SIZE (0x5).
    pub const MAX_FRAME_SIZE: SettingsParam = SettingsParam(0x5);
    /// SETTINGS_MAX_HEADER_LIST_SIZE (0x6).
    pub const MAX_HEADER_LIST_SIZE: SettingsParam = SettingsParam(0x6);
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (0x8, RFC 8441).
    pub const ENABLE_CONNECT_PROTOCOL: SettingsParam = SettingsParam(0x8);
    /// SETTINGS_NO_RFC7540_PRIORITIES (0x9, RFC 9218 §2.1).
    pub const NO_RFC7540_PRIORITIES: SettingsParam = SettingsParam(0x9);

    /// The registered name, or `None` for an identifier unknown to this
    /// crate.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x1 => "SETTINGS_HEADER_TABLE_SIZE",
            0x2 => "SETTINGS_ENABLE_PUSH",
            0x3 => "SETTINGS_MAX_CONCURRENT_STREAMS",
            0x4 => "SETTINGS_INITIAL_WINDOW_SIZE",
            0x5 => "SETTINGS_MAX_FRAME_SIZE",
            0x6 => "SETTINGS_MAX_HEADER_LIST_SIZE",
            0x8 => "SETTINGS_ENABLE_CONNECT_PROTOCOL",
            0x9 => "SETTINGS_NO_RFC7540_PRIORITIES",
            _ => return None,
        })
    }
}

impl fmt::Display for SettingsParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "UNKNOWN_SETTING({:#x})", self.0),
        }
    }
}

impl fmt::Debug for SettingsParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A SETTINGS frame (type 0x04), owned: one optional value per known
/// parameter. When a parameter appears several times the last value wins
/// (RFC 9113 §6.5.3: values are processed in order); unknown parameters are
/// dropped (§6.5.2: "An endpoint that receives a SETTINGS frame with any
/// unknown or unsupported identifier MUST ignore that setting.").
///
/// Role-specific rules are left to the session, e.g. a client receiving
/// SETTINGS_ENABLE_PUSH = 1 (§6.5.2) or ENABLE_CONNECT_PROTOCOL going from 1
/// to 0 (RFC 8441 §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Settings {
    /// ACK flag. An ACK carries no parameters: [`Settings::encode`] ignores
    /// the value fields when `ack` is set.
    pub ack: bool,
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub header_table_size: Option<u32>,
    /// SETTINGS_ENABLE_PUSH (validated to 0/1).
    pub enable_push: Option<bool>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE (validated `<= 2^31-1`).
    pub initial_window_size: Option<u32>,
    /// SETTINGS_MAX_FRAME_SIZE (validated in `2^14..=2^24-1`).
    pub max_frame_size: Option<u32>,
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list_size: Option<u32>,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441, validated to 0/1).
    pub enable_connect_protocol: Option<bool>,
    /// SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 §2.1, validated to 0/1).
    pub no_rfc7540_priorities: Option<bool>,
}

impl Settings {
    /// A SETTINGS frame with the ACK flag (RFC 9113 §6.5.3).
    #[inline]
    pub const fn ack() -> Settings {
        Settings {
            ack: true,
            header_table_size: None,
            enable_push: None,
            max_concurrent_streams: None,
            initial_window_size: None,
            max_frame_size: None,
            max_header_list_size: None,
            enable_connect_protocol: None,
            no_rfc7540_priorities: None,
        }
    }

    /// Decode and validate a SETTINGS payload.
    ///
    /// Errors (all connection scope): stream ≠ 0 → PROTOCOL_ERROR; ACK with
    /// a payload → FRAME_SIZE_ERROR; length not a multiple of 6 →
    /// FRAME_SIZE_ERROR; value errors as in [`Settings::set`].
    pub fn decode(header: FrameHeader, payload: &[u8]) -> Result<Settings, H2Error> {
        // RFC 9113 §6.5: "If an endpoint receives a SETTINGS frame whose
        // Stream Identifier field is anything other than 0x00, the endpoint
        // MUST respond with a connection error (Section 5.4.1) of type
        // PROTOCOL_ERROR."
        if !header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.5: SETTINGS on a non-zero stream",
            ));
        }
        if header.has_flag(flags::ACK) {
            // RFC 9113 §6.5: "Receipt of a SETTINGS frame with the ACK flag
            // set and a length field value other than 0 MUST be treated as a
            // connection error (Section 5.4.1) of type FRAME_SIZE_ERROR."
            if !payload.is_empty() {
                return Err(H2Error::connection(
                    ErrorCode::FRAME_SIZE_ERROR,
                    "RFC 9113 §6.5: SETTINGS ACK with a payload",
                ));
            }
            return Ok(Settings::ack());
        }
        // RFC 9113 §6.5: "A SETTINGS frame with a length other than a
        // multiple of 6 octets MUST be treated as a connection error (Section
        // 5.4.1) of type FRAME_SIZE_ERROR."
        if payload.len() % SETTING_LEN != 0 {
            return Err(H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §6.5: SETTINGS length not a multiple of 6",
            ));
        }
        let mut s = Settings::default();
        for chunk in payload.chunks_exact(SETTING_LEN) {
            if let [a, b, c, d, e, f] = *chunk {
                let id = SettingsParam(u16::from_be_bytes([a, b]));
                s.set(id, u32::from_be_bytes([c, d, e, f]))?;
            }
        }
        Ok(s)
    }

    /// Set `param` to `value` after validating it; unknown parameters are
    /// ignored.
    ///
    /// Errors (connection scope): ENABLE_PUSH, ENABLE_CONNECT_PROTOCOL or
    /// NO_RFC7540_PRIORITIES not 0/1 → PROTOCOL_ERROR; INITIAL_WINDOW_SIZE > 2^31-1 →
    /// FLOW_CONTROL_ERROR; MAX_FRAME_SIZE outside 2^14..=2^24-1 →
    /// PROTOCOL_ERROR.
    pub fn set(&mut self, param: SettingsParam, value: u32) -> Result<(), H2Error> {
        match param {
            SettingsParam::HEADER_TABLE_SIZE => self.header_table_size = Some(value),
            SettingsParam::ENABLE_PUSH => {
                // RFC 9113 §6.5.2: "Any value other than 0 or 1 MUST be
                // treated as a connection error (Section 5.4.1) of type
                // PROTOCOL_ERROR."
                self.enable_push = Some(bool_setting(
                    value,
                    "RFC 9113 §6.5.2: SETTINGS_ENABLE_PUSH other than 0 or 1",
                )?);
            }
            SettingsParam::MAX_CONCURRENT_STREAMS => self.max_concurrent_streams = Some(value),
            SettingsParam::INITIAL_WINDOW_SIZE => {
                // RFC 9113 §6.5.2: "Values above the maximum flow-control
                // window size of 2^31-1 MUST be treated as a connection error
                // (Section 5.4.1) of type FLOW_CONTROL_ERROR."
                if value > MAX_WINDOW_SIZE {
                    return Err(H2Error::connection(
                        ErrorCode::FLOW_CONTROL_ERROR,
                        "RFC 9113 §6.5.2: SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                    ));
                }
                self.initial_window_size = Some(value);
            }
            SettingsParam::MAX_FRAME_SIZE => {
                // RFC 9113 §6.5.2: "The value advertised by an endpoint MUST be
                // between this initial value [2^14] and the maximum allowed
                // frame size (2^24-1 or 16,777,215 octets), inclusive. Values
                // outside this range MUST be treated as a connection error
                // (Section 5.4.1) of type PROTOCOL_ERROR."
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) {
                    return Err(H2Error::connection(
                        ErrorCode::PROTOCOL_ERROR,
                        "RFC 9113 §6.5.2: SETTINGS_MAX_FRAME_SIZE outside 2^14..2^24-1",
                    ));
                }
                self.max_frame_size = Some(value);
            }
            SettingsParam::MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(value),
            SettingsParam::ENABLE_CONNECT_PROTOCOL => {
                // RFC 8441 §3: "Using a SETTINGS_ENABLE_CONNECT_PROTOCOL value
                // other than 0 or 1 MUST be treated as a connection error of
                // type PROTOCOL_ERROR."
                self.enable_connect_protocol = Some(bool_setting(
                    value,
                    "RFC 8441 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL other than 0 or 1",
                )?);
            }
            SettingsParam::NO_RFC7540_PRIORITIES => {
                // RFC 9218 §2.1: "The value of SETTINGS_NO_RFC7540_PRIORITIES
                // MUST be 0 or 1. Any value other than 0 or 1 MUST be treated
                // as a connection error (Section 5.4.1 of [HTTP/2]) of type
                // PROTOCOL_ERROR."
                self.no_rfc7540_priorities = Some(bool_setting(
                    value,
                    "RFC 9218 §2.1: SETTINGS_NO_RFC7540_PRIORITIES other than 0 or 1",
                )?);
            }
            // RFC 9113 §6.5.2: unknown identifiers MUST be ignored.
            _ => {}
        }
        Ok(())
    }

    /// The parameters that are set, as `(id, value)` in identifier order.
    pub fn iter(&self) -> impl Iterator<Item = (SettingsParam, u32)> {
        let b = |v: Option<bool>| v.map(u32::from);
        [
            (SettingsParam::HEADER_TABLE_SIZE, self.header_table_size),
            (SettingsParam::ENABLE_PUSH, b(self.enable_push)),
            (
                SettingsParam::MAX_CONCURRENT_STREAMS,
                self.max_concurrent_streams,
            ),
            (SettingsParam::INITIAL_WINDOW_SIZE, self.initial_window_size),
            (SettingsParam::MAX_FRAME_SIZE, self.max_frame_size),
            (
                SettingsParam::MAX_HEADER_LIST_SIZE,
                self.max_header_list_size,
            ),
            (
                SettingsParam::ENABLE_CONNECT_PROTOCOL,
                b(self.enable_connect_protocol),
            ),
            (
                SettingsParam::NO_RFC7540_PRIORITIES,
                b(self.no_rfc7540_priorities),
            ),
        ]
        .into_iter()
        .filter_map(|(p, v)| v.map(|v| (p, v)))
    }

    /// Payload length when encoded (0 for an ACK).
    pub fn payload_len(&self) -> usize {
        if self.ack {
            0
        } else {
            self.iter().count() * SETTING_LEN
        }
    }

    /// Append the complete frame. An ACK is encoded empty.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let len = self.payload_len();
        let f = if self.ack { flags::ACK } else { 0 };
        dst.reserve(FRAME_HEADER_LEN + len);
        write_header(dst, FrameKind::Settings, f, StreamId::ZERO, len);
        if !self.ack {
            for (p, v) in self.iter() {
                dst.extend_from_slice(&p.0.to_be_bytes());
                dst.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
}

fn bool_setting(value: u32, rule: &'static str) -> Result<bool, H2Error> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(H2Error::connection(ErrorCode::PROTOCOL_ERROR, rule)),
    }
}

/// Append a SETTINGS frame with the ACK flag.
#[inline]
pub fn encode_settings_ack(dst: &mut Vec<u8>) {
    write_header(dst, FrameKind::Settings, flags::ACK, StreamId::ZERO, 0);
}

/// The effective value of every setting for one direction, starting from the
/// RFC 9113 §6.5.2 initial values and updated with [`SettingsValues::apply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SettingsValues {
    /// SETTINGS_HEADER_TABLE_SIZE (initially 4096).
    pub header_table_size: u32,
    /// SETTINGS_ENABLE_PUSH (initially true).
    pub enable_push: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS (initially `None`: no limit).
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE (initially 65535).
    pub initial_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE (initially 16384).
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE (initially `None`: unlimited).
    pub max_header_list_size: Option<u32>,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (initially false).
    pub enable_connect_protocol: bool,
    /// SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218 §2.1: "The initial value is
    /// 0").
    pub no_rfc7540_priorities: bool,
}

impl SettingsValues {
    /// The RFC initial values.
    pub const INITIAL: SettingsValues = SettingsValues {
        header_table_size: DEFAULT_HEADER_TABLE_SIZE,
        enable_push: DEFAULT_ENABLE_PUSH,
        max_concurrent_streams: None,
        initial_window_size: DEFAULT_INITIAL_WINDOW_SIZE,
        max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        max_header_list_size: None,
        enable_connect_protocol: DEFAULT_ENABLE_CONNECT_PROTOCOL,
        no_rfc7540_priorities: false,
    };

    /// Overwrite every value present in `s` (an ACK changes nothing). The
    /// caller must apply the INITIAL_WINDOW_SIZE delta to open streams
    /// itself (see [`Window::apply_initial_window_size_delta`](super::Window::apply_initial_window_size_delta)),
    /// reading the old value before calling this.
    pub fn apply(&mut self, s: &Settings) {
        if s.ack {
            return;
        }
        if let Some(v) = s.header_table_size {
            self.header_table_size = v;
        }
        if let Some(v) = s.enable_push {
            self.enable_push = v;
        }
        if let Some(v) = s.max_concurrent_streams {
            self.max_concurrent_streams = Some(v);
        }
        if let Some(v) = s.initial_window_size {
            self.initial_window_size = v;
        }
        if let Some(v) = s.max_frame_size {
            self.max_frame_size = v;
        }
        if let Some(v) = s.max_header_list_size {
            self.max_header_list_size = Some(v);
        }
        if let Some(v) = s.enable_connect_protocol {
            self.enable_connect_protocol = v;
        }
        if let Some(v) = s.no_rfc7540_priorities {
            self.no_rfc7540_priorities = v;
        }
    }
}

impl Default for SettingsValues {
    fn default() -> Self {
        SettingsValues::INITIAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_names() {
        assert_eq!(
            SettingsParam::ENABLE_CONNECT_PROTOCOL.to_string(),
            "SETTINGS_ENABLE_CONNECT_PROTOCOL"
        );
        assert_eq!(SettingsParam(0x7).to_string(), "UNKNOWN_SETTING(0x7)");
        assert_eq!(SettingsParam(0x0).name(), None);
    }

    #[test]
    fn set_validates_and_ignores_unknown() {
        let mut s = Settings::default();
        s.set(SettingsParam(0x99), 12345).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(
            s.set(SettingsParam::MAX_FRAME_SIZE, 100).unwrap_err().code,
            ErrorCode::PROTOCOL_ERROR
        );
        assert_eq!(s.max_frame_size, None, "unchanged on error");
        s.set(SettingsParam::ENABLE_PUSH, 1).unwrap();
        assert_eq!(s.enable_push, Some(true));
        assert_eq!(s.payload_len(), 6);
        // ACK frames are encoded empty whatever the fields say.
        let mut buf = Vec::new();
        Settings { ack: true, ..s }.encode(&mut buf);
        assert_eq!(buf, [0, 0, 0, 4, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn values_apply() {
        let mut v = SettingsValues::default();
        assert_eq!(v.initial_window_size, 65_535);
        assert_eq!(v.max_frame_size, 16_384);
        assert_eq!(v.header_table_size, 4096);
        assert!(v.enable_push);
        assert_eq!(v.max_concurrent_streams, None);
        let s = Settings {
            max_concurrent_streams: Some(100),
            enable_push: Some(false),
            initial_window_size: Some(0),
            ..Settings::default()
        };
        v.apply(&s);
        assert_eq!(v.max_concurrent_streams, Some(100));
        assert!(!v.enable_push);
        assert_eq!(v.initial_window_size, 0);
        assert_eq!(v.max_frame_size, 16_384);
        let before = v;
        v.apply(&Settings::ack());
        assert_eq!(v, before);
    }
}
