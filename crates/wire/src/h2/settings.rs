//! What we advertise ([`LocalSettings`]), what the peer advertised
//! ([`PeerSettings`]) and the defensive [`Limits`] of a [`Connection`](super::Connection).

use crate::frame::{self, Settings};

/// The peer's settings as currently in force (RFC 9113 §6.5.2 initial values
/// until its first SETTINGS frame arrives).
pub type PeerSettings = frame::SettingsValues;

/// Default for [`LocalSettings::max_concurrent_streams`] (server role).
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 128;

/// The settings we advertise in our SETTINGS frame, plus the size of the
/// connection-level receive window (sent as a WINDOW_UPDATE on stream 0,
/// because SETTINGS cannot change it, RFC 9113 §6.9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalSettings {
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK dynamic table size our decoder
    /// accepts (RFC 7541 §4.2). Default 4096.
    pub header_table_size: u32,
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams the peer may open. `None`
    /// leaves it unlimited (not advertised). Default: 128 for a server, `None`
    /// for a client (servers cannot open streams since push is disabled).
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE: receive window of every stream
    /// (`<= 2^31-1`). Default 65535.
    pub initial_window_size: u32,
    /// Receive window of the whole connection (`65535..=2^31-1`). Default
    /// 65535. h2load's `-W` sets this.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE: largest frame payload we accept
    /// (`2^14..=2^24-1`). Default 16384.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: largest decoded field section we
    /// accept (RFC 9113 §6.5.2: name + value + 32 per field). `None` leaves it
    /// unadvertised, but [`Limits::max_header_list_size`] still applies.
    pub max_header_list_size: Option<u32>,
    /// Not advertised: the largest HPACK dynamic table our *encoder* uses
    /// (the peer's SETTINGS_HEADER_TABLE_SIZE is the other bound; h2load's
    /// `--encoder-header-table-size`). Default 4096.
    pub encoder_table_size: u32,
    /// SETTINGS_NO_RFC7540_PRIORITIES = 1 (RFC 9218 §2.1): we ignore the
    /// RFC 7540 priority signals (a server scheduling by RFC 9218 says so).
    /// Default false (not advertised).
    pub no_rfc7540_priorities: bool,
    /// Client role: accept server push (SETTINGS_ENABLE_PUSH = 1, RFC 9113
    /// §8.4). Default false: a client sends SETTINGS_ENABLE_PUSH = 0, as
    /// browsers now do, and a PUSH_PROMISE received anyway is a connection
    /// error. Ignored in the server role (a server never sends the setting).
    pub enable_push: bool,
}

impl LocalSettings {
    /// Defaults for a client: RFC initial values, no stream limit.
    pub const fn client() -> Self {
        LocalSettings {
            header_table_size: frame::DEFAULT_HEADER_TABLE_SIZE,
            max_concurrent_streams: None,
            initial_window_size: frame::DEFAULT_INITIAL_WINDOW_SIZE,
            connection_window: frame::DEFAULT_INITIAL_WINDOW_SIZE,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: None,
            encoder_table_size: frame::DEFAULT_HEADER_TABLE_SIZE,
            no_rfc7540_priorities: false,
            enable_push: false,
        }
    }

    /// Defaults for a server: RFC initial values, at most
    /// [`DEFAULT_MAX_CONCURRENT_STREAMS`] streams, 64 KiB header lists.
    pub const fn server() -> Self {
        LocalSettings {
            max_concurrent_streams: Some(DEFAULT_MAX_CONCURRENT_STREAMS),
            max_header_list_size: Some(64 * 1024),
            ..LocalSettings::client()
        }
    }

    /// The SETTINGS frame carrying these values. Values equal to the RFC
    /// initial values are omitted, except MAX_CONCURRENT_STREAMS; a client
    /// always sends SETTINGS_ENABLE_PUSH, 0 unless [`LocalSettings::enable_push`]
    /// (RFC 9113 §8.4: "A client can request that server push be disabled"),
    /// a server never sends it
    /// (RFC 9113 §6.5.2: "A server MUST NOT explicitly set this value to 1").
    pub(crate) fn to_frame(self, client: bool) -> Settings {
        let differs = |v: u32, d: u32| (v != d).then_some(v);
        Settings {
            ack: false,
            header_table_size: differs(self.header_table_size, frame::DEFAULT_HEADER_TABLE_SIZE),
            enable_push: client.then_some(self.enable_push),
            max_concurrent_streams: self.max_concurrent_streams,
            initial_window_size: differs(
                self.initial_window_size,
                frame::DEFAULT_INITIAL_WINDOW_SIZE,
            ),
            max_frame_size: differs(self.max_frame_size, frame::DEFAULT_MAX_FRAME_SIZE),
            max_header_list_size: self.max_header_list_size,
            enable_connect_protocol: None,
            // RFC 9218 §2.1: "If endpoints use SETTINGS_NO_RFC7540_PRIORITIES,
            // they MUST send it in the first SETTINGS frame."
            no_rfc7540_priorities: self.no_rfc7540_priorities.then_some(true),
        }
    }

    /// Clamp every value into its legal range (RFC 9113 §6.5.2) so a
    /// misconfiguration cannot make us send an invalid SETTINGS frame.
    pub(crate) fn sanitized(mut self) -> Self {
        self.initial_window_size = self.initial_window_size.min(frame::MAX_WINDOW_SIZE);
        self.connection_window = self
            .connection_window
            .clamp(frame::DEFAULT_INITIAL_WINDOW_SIZE, frame::MAX_WINDOW_SIZE);
        self.max_frame_size = self
            .max_frame_size
            .clamp(frame::DEFAULT_MAX_FRAME_SIZE, frame::MAX_MAX_FRAME_SIZE);
        self
    }
}

impl Default for LocalSettings {
    /// Same as [`LocalSettings::client`].
    fn default() -> Self {
        LocalSettings::client()
    }
}

/// Defensive limits. None of them is visible to a well-behaved peer; a peer
/// that crosses one gets a GOAWAY (ENHANCE_YOUR_CALM unless stated) or an
/// RST_STREAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Encoded size of one field block (HEADERS + CONTINUATION fragments);
    /// beyond it: GOAWAY ENHANCE_YOUR_CALM (HPACK state would be lost).
    pub max_header_block_bytes: usize,
    /// CONTINUATION frames per field block (CONTINUATION flood); beyond it:
    /// GOAWAY ENHANCE_YOUR_CALM.
    pub max_continuation_frames: usize,
    /// Decoded field-section size (RFC 9113 §6.5.2 accounting: name, value
    /// and 32 octets per field) accepted when
    /// [`LocalSettings::max_header_list_size`] is not advertised. Beyond the effective limit the stream is reset
    /// (the block is still decoded to keep HPACK in sync; RFC 9113 §10.5.1).
    pub max_header_list_size: u32,
    /// Rapid reset (CVE-2023-44487), server role: at most this many streams
    /// may be reset by the peer before we finished them, per
    /// [`rapid_reset_window`](Limits::rapid_reset_window) streams opened.
    pub rapid_reset_budget: u32,
    /// Width, in peer-opened streams, of the rapid-reset accounting window.
    pub rapid_reset_window: u32,
    /// PING frames (without ACK) accepted between two frames that carry
    /// requests or data ("progress"); beyond it: GOAWAY ENHANCE_YOUR_CALM.
    pub max_pings_without_progress: u32,
    /// SETTINGS frames (without ACK) accepted between two progress frames.
    pub max_settings_without_progress: u32,
    /// Frames without useful effect (empty DATA without END_STREAM, empty
    /// HEADERS/CONTINUATION fragments that do not end the block, PRIORITY,
    /// unknown frames, WINDOW_UPDATE on closed streams, frames ignored on
    /// closed streams) accepted between two progress frames.
    pub max_idle_frames_without_progress: u32,
    /// RST_STREAMs we are made to send for errors (stream errors, refused
    /// streams) between two progress frames.
    pub max_stream_errors_without_progress: u32,
    /// Client role: streams we open before the peer's first SETTINGS frame
    /// tells us its SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2's
    /// `peer_max_concurrent_streams`, also 100). RFC 9113 §6.5.2 lets the
    /// initial value be unlimited, but a server with a lower limit would
    /// refuse the excess.
    pub max_streams_before_settings: u32,
    /// Streams we reset whose late frames are still ignored (RFC 9113 §5.1:
    /// "An endpoint MUST ignore frames that it receives on closed streams
    /// after it has sent a RST_STREAM frame. An endpoint MAY choose to limit
    /// the period over which it ignores frames"), and, separately, as many
    /// normally closed streams remembered to tell "closed" (STREAM_CLOSED)
    /// from "never opened" (PROTOCOL_ERROR).
    pub closed_stream_memory: usize,
}

impl Limits {
    /// Conservative defaults suitable for both roles.
    pub const fn new() -> Self {
        Limits {
            max_header_block_bytes: 64 * 1024,
            max_continuation_frames: 32,
            max_header_list_size: 256 * 1024,
            rapid_reset_budget: 200,
            rapid_reset_window: 1000,
            max_pings_without_progress: 100,
            max_settings_without_progress: 100,
            max_idle_frames_without_progress: 1000,
            max_stream_errors_without_progress: 200,
            max_streams_before_settings: 100,
            closed_stream_memory: 128,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::new()
    }
}
