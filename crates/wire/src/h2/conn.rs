//! The [`Connection`] type: construction, state and accessors. The send API is in
//! `send.rs`, the receive path in `recv.rs`.

use crate::frame::{
    self, encode_window_update, FrameDecoder, H2Error, HeaderBlockAssembler, RecvWindow, Scope,
    StreamId, Window, FRAME_HEADER_LEN, PREFACE,
};
use crate::hpack;

use super::error::{ConnError, SendError};
use super::guard::Guard;
use super::settings::{Limits, LocalSettings, PeerSettings};
use super::store::{flag, Closed, RecentlyClosed, Store, Stream};

/// The HPACK encoding context of a connection's send direction. The
/// connection tells it about the peer's SETTINGS_HEADER_TABLE_SIZE; header
/// blocks are written by the closures passed to
/// [`Connection::send_request`] / [`Connection::send_headers`], which get it.
///
/// Implemented by [`hpack::Encoder`] (general use, servers) and
/// [`hpack::RequestTemplate`] (load generator requests).
pub trait HeaderEncoder {
    /// The peer's decoder accepts a dynamic table of `size` octets
    /// (already capped by [`LocalSettings::encoder_table_size`]); the next
    /// block must start with the matching size update (RFC 7541 §4.2).
    fn set_max_table_size(&mut self, size: usize);
    /// The underlying general-purpose encoder.
    fn encoder(&mut self) -> &mut hpack::Encoder;
}

impl HeaderEncoder for hpack::Encoder {
    fn set_max_table_size(&mut self, size: usize) {
        hpack::Encoder::set_max_table_size(self, size);
    }
    fn encoder(&mut self) -> &mut hpack::Encoder {
        self
    }
}

impl HeaderEncoder for hpack::RequestTemplate {
    fn set_max_table_size(&mut self, size: usize) {
        self.set_peer_table_size(size);
    }
    fn encoder(&mut self) -> &mut hpack::Encoder {
        self.encoder_mut()
    }
}

/// Which end of the connection we are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// We send the connection preface and requests (odd stream ids).
    Client,
    /// We receive requests and send responses.
    Server,
}

/// A sans-IO HTTP/2 connection (RFC 9113) for either role.
///
/// Feed received bytes to [`recv`](Connection::recv); everything to send is
/// appended to a caller-owned `out` buffer, which the caller writes to the
/// transport (one write per loop turn) and clears. Decoded headers and data
/// are delivered to an [`Events`](super::Events) sink with borrowed slices.
///
/// The connection answers PING and SETTINGS, returns receive windows with
/// WINDOW_UPDATE (batched: when half of a window has been consumed), applies
/// the peer's SETTINGS (initial window delta, HPACK table size, frame size,
/// concurrency), validates field blocks (RFC 9113 §8.2, §8.3), and enforces
/// the limits in [`Limits`]. On a connection error it writes GOAWAY to `out`
/// and returns [`ConnError`]; on a stream error it writes RST_STREAM and
/// reports [`Events::reset`](super::Events::reset).
///
/// Memory: one slab slot per concurrently open stream (about 64 bytes),
/// reused; the field-block reassembly buffer and the HPACK tables. Nothing is
/// allocated per stream or per frame in steady state.
///
/// `E` is the HPACK encoder of our send direction (see [`HeaderEncoder`]).
#[derive(Debug)]
pub struct Connection<E = hpack::Encoder> {
    pub(crate) asm: HeaderBlockAssembler,
    pub(crate) st: State,
    pub(crate) enc: E,
}

/// Everything but the header-block assembler (split so a completed block
/// borrowed from the assembler can be processed while the rest mutates).
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) role: Role,
    pub(crate) local: LocalSettings,
    pub(crate) limits: Limits,
    pub(crate) peer: PeerSettings,
    pub(crate) frames: FrameDecoder,
    pub(crate) dec: hpack::Decoder,
    /// Table size the encoder was last told to use.
    pub(crate) enc_size: usize,
    /// A table size the encoder must be told about (set by SETTINGS).
    pub(crate) enc_pending: Option<usize>,
    pub(crate) streams: Store,
    pub(crate) closed: RecentlyClosed,
    /// Next stream id we would open.
    pub(crate) next_local_id: u32,
    /// Highest stream id the peer opened (or tried to).
    pub(crate) last_peer_id: u32,
    pub(crate) conn_send: Window,
    pub(crate) conn_recv: RecvWindow,
    /// Receive window of new streams: 65535 until the peer acknowledges our
    /// SETTINGS_INITIAL_WINDOW_SIZE (RFC 9113 §6.9.3).
    pub(crate) recv_initial: u32,
    pub(crate) settings_unacked: u32,
    pub(crate) local_applied: bool,
    pub(crate) started: bool,
    pub(crate) awaiting_preface: bool,
    pub(crate) awaiting_settings: bool,
    pub(crate) goaway_sent: Option<StreamId>,
    pub(crate) goaway_recv: Option<StreamId>,
    pub(crate) error: Option<ConnError>,
    pub(crate) remote_error: Option<ConnError>,
    /// Stream error found in the HEADERS frame that opened the pending
    /// field block (priority self-dependency), applied once it is decoded.
    pub(crate) block_error: Option<H2Error>,
    pub(crate) guard: Guard,
    /// Idle client streams named by a PRIORITY_UPDATE (server role; RFC 9218
    /// §7.1 bounds them, with the active streams, by MAX_CONCURRENT_STREAMS).
    pub(crate) prio_idle: Vec<u32>,
    /// The last response field block and what it decoded to (`recv/memo.rs`).
    pub(crate) memo: super::recv::memo::BlockMemo,
    /// Stream receive windows are returned by
    /// [`release_stream_window`](Connection::release_stream_window) only.
    pub(crate) manual_stream_windows: bool,
}

impl Connection<hpack::Encoder> {
    /// A connection in `role` advertising `local`, defended by `limits`,
    /// with a general-purpose HPACK encoder.
    /// Nothing is sent until [`start`](Connection::start) (or the first
    /// [`recv`](Connection::recv), which starts the connection if needed).
    pub fn new(role: Role, local: LocalSettings, limits: Limits) -> Self {
        let enc = hpack::Encoder::new(frame::DEFAULT_HEADER_TABLE_SIZE as usize);
        Connection::with_encoder(role, local, limits, enc)
    }
}

impl<E: HeaderEncoder> Connection<E> {
    /// Like [`Connection::new`] with a given encoder, e.g. a
    /// [`hpack::RequestTemplate`] built for the peer's default table size
    /// (4096).
    pub fn with_encoder(role: Role, local: LocalSettings, limits: Limits, mut enc: E) -> Self {
        let local = local.sanitized();
        let mut dec = hpack::Decoder::new(frame::DEFAULT_HEADER_TABLE_SIZE as usize);
        let list = local
            .max_header_list_size
            .unwrap_or(limits.max_header_list_size);
        dec.set_max_header_list_size(list as usize);
        let enc_size = (local
            .encoder_table_size
            .min(frame::DEFAULT_HEADER_TABLE_SIZE)) as usize;
        if enc_size != frame::DEFAULT_HEADER_TABLE_SIZE as usize {
            enc.set_max_table_size(enc_size);
        }
        let dflt = frame::DEFAULT_INITIAL_WINDOW_SIZE;
        Connection {
            enc,
            asm: HeaderBlockAssembler::new(
                limits.max_header_block_bytes,
                limits.max_continuation_frames,
            ),
            st: State {
                role,
                local,
                limits,
                peer: PeerSettings::INITIAL,
                frames: FrameDecoder::with_max_frame_size(local.max_frame_size),
                dec,
                enc_size,
                enc_pending: None,
                streams: Store::default(),
                closed: RecentlyClosed::new(limits.closed_stream_memory),
                next_local_id: if role == Role::Client { 1 } else { 2 },
                last_peer_id: 0,
                conn_send: Window::new(dflt),
                conn_recv: RecvWindow::new(dflt, local.connection_window),
                recv_initial: dflt,
                settings_unacked: 0,
                local_applied: false,
                started: false,
                awaiting_preface: role == Role::Server,
                awaiting_settings: true,
                goaway_sent: None,
                goaway_recv: None,
                error: None,
                remote_error: None,
                block_error: None,
                guard: Guard::default(),
                prio_idle: Vec::new(),
                memo: Default::default(),
                manual_stream_windows: false,
            },
        }
    }

    /// Write what we send first: for a client the connection preface
    /// (RFC 9113 §3.4), then our SETTINGS, then a WINDOW_UPDATE on stream 0 if
    /// [`LocalSettings::connection_window`] is above 65535. Idempotent.
    pub fn start(&mut self, out: &mut Vec<u8>) {
        self.st.start(out);
    }

    /// Our HPACK encoder (e.g. the request template, for its statistics).
    pub fn encoder(&self) -> &E {
        &self.enc
    }

    /// Our HPACK encoder, mutably.
    pub fn encoder_mut(&mut self) -> &mut E {
        &mut self.enc
    }

    /// The peer's settings in force.
    pub fn peer_settings(&self) -> &PeerSettings {
        &self.st.peer
    }

    /// The settings we advertise.
    pub fn local_settings(&self) -> &LocalSettings {
        &self.st.local
    }

    /// Our role.
    pub fn role(&self) -> Role {
        self.st.role
    }

    /// Whether [`send_request`](Connection::send_request) would open a stream
    /// now (no GOAWAY, no error, below the peer's concurrency limit).
    pub fn can_open_stream(&self) -> bool {
        let st = &self.st;
        st.role == Role::Client
            && st.error.is_none()
            && st.goaway_recv.is_none()
            && st.goaway_sent.is_none()
            && st.next_local_id <= StreamId::MAX.get()
            && st.can_open_stream()
    }

    /// Number of open streams (any state but idle and closed).
    pub fn active_streams(&self) -> usize {
        self.st.streams.len()
    }

    /// Whether `stream` is open for sending.
    pub fn can_send(&self, stream: StreamId) -> bool {
        self.st
            .streams
            .get(stream)
            .is_some_and(|s| !s.has(flag::SEND_CLOSED))
    }

    /// How many DATA bytes `stream` may send now (minimum of the stream and
    /// connection send windows, 0 when not open for sending).
    pub fn send_capacity(&self, stream: StreamId) -> usize {
        match self.st.streams.get(stream) {
            Some(s) if !s.has(flag::SEND_CLOSED) => {
                s.send.available().min(self.st.conn_send.available()) as usize
            }
            _ => 0,
        }
    }

    /// The last stream id of a GOAWAY received from the peer.
    pub fn goaway_received(&self) -> Option<StreamId> {
        self.st.goaway_recv
    }

    /// The error that ended the connection: ours (after we sent GOAWAY) or the
    /// peer's (a GOAWAY with an error code other than NO_ERROR).
    pub fn error(&self) -> Option<ConnError> {
        self.st.error.or(self.st.remote_error)
    }

    /// True when the connection has nothing left to do: it failed, or a GOAWAY
    /// was sent or received and no stream is open. The caller then flushes
    /// `out` and closes the transport.
    pub fn is_finished(&self) -> bool {
        let st = &self.st;
        st.error.is_some()
            || ((st.goaway_sent.is_some() || st.goaway_recv.is_some()) && st.streams.len() == 0)
    }

    /// Whether the peer's connection preface (RFC 9113 §3.4) has been
    /// received: always true for a client; for a server, once
    /// [`recv`](Connection::recv) consumed the 24-octet preface string.
    pub fn preface_received(&self) -> bool {
        !self.st.awaiting_preface
    }

    /// Whether the peer acknowledged our first SETTINGS frame (RFC 9113 §6.5.3): one
    /// round trip after [`start`](Connection::start), which a server can use as an RTT
    /// sample.
    pub fn settings_acked(&self) -> bool {
        self.st.local_applied
    }

    /// Manual stream flow control: when on, DATA received on a stream is not
    /// returned to the peer when the sink has taken it, only when the caller
    /// says so with [`release_stream_window`](Connection::release_stream_window)
    /// (a proxy returns it once the bytes left for their destination, so a
    /// slow destination stops its stream at the stream window while the
    /// others flow). The connection window is still returned automatically.
    pub fn set_manual_stream_windows(&mut self, on: bool) {
        self.st.manual_stream_windows = on;
    }

    /// With [`set_manual_stream_windows`](Connection::set_manual_stream_windows):
    /// the caller is done with `n` received DATA octets of `stream`; a
    /// WINDOW_UPDATE is queued in `out` once half the stream window is owed.
    /// Nothing happens for a stream that is closed or no longer receiving.
    pub fn release_stream_window(&mut self, stream: StreamId, n: usize, out: &mut Vec<u8>) {
        if let Some(s) = self.st.streams.get_mut(stream) {
            if s.has(flag::RECV_CLOSED) {
                return;
            }
            s.recv.release(u32::try_from(n).unwrap_or(u32::MAX));
            if let Some(inc) = s.recv.take_update() {
                encode_window_update(stream, inc, out);
            }
        }
    }

    /// Size a read buffer must be able to hold so that any frame we accept
    /// fits in it: 9 + our SETTINGS_MAX_FRAME_SIZE.
    pub fn max_frame_len(&self) -> usize {
        FRAME_HEADER_LEN + self.st.local.max_frame_size as usize
    }
}

impl State {
    pub(crate) fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let client = self.role == Role::Client;
        if client {
            // RFC 9113 §3.4: "the connection preface starts with the string
            // PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n. This sequence MUST be followed
            // by a SETTINGS frame".
            out.extend_from_slice(PREFACE);
        }
        // RFC 9113 §3.4: "The server connection preface consists of a
        // potentially empty SETTINGS frame (Section 6.5) that MUST be the first
        // frame the server sends in the HTTP/2 connection."
        self.local.to_frame(client).encode(out);
        self.settings_unacked += 1;
        // RFC 9113 §6.9.2: the connection window can only be changed with
        // WINDOW_UPDATE.
        let inc = self
            .local
            .connection_window
            .saturating_sub(frame::DEFAULT_INITIAL_WINDOW_SIZE);
        if inc > 0
            && self
                .conn_recv
                .window_mut()
                .increase(inc, Scope::Connection)
                .is_ok()
        {
            encode_window_update(StreamId::ZERO, inc, out);
        }
    }

    pub(crate) fn check_open(&self) -> Result<(), SendError> {
        if self.error.is_some() {
            return Err(SendError::ConnectionClosed);
        }
        Ok(())
    }

    pub(crate) fn can_open_stream(&self) -> bool {
        // RFC 9113 §5.1.2: "Endpoints MUST NOT exceed the limit set by their
        // peer."
        let max = match self.peer.max_concurrent_streams {
            Some(max) => max,
            None if self.awaiting_settings => self.limits.max_streams_before_settings,
            None => return true,
        };
        self.streams.local_active() < max as usize
    }

    pub(crate) fn new_stream(&self, id: StreamId, flags: u8) -> Stream {
        Stream::new(
            id,
            Window::new(self.peer.initial_window_size),
            RecvWindow::new(self.recv_initial, self.recv_initial),
            flags,
        )
    }

    /// We sent END_STREAM on `id`.
    pub(crate) fn send_end(&mut self, id: StreamId) {
        if let Some(s) = self.streams.get_mut(id) {
            s.set(flag::SEND_CLOSED);
            if s.is_closed() {
                self.streams.remove(id);
                self.closed.push(id, Closed::Normally);
            }
        }
    }
}
