//! The frame enum and the incremental, zero-copy [`FrameDecoder`].

use super::continuation::Continuation;
use super::data::Data;
use super::error::{ErrorCode, H2Error};
use super::goaway::GoAway;
use super::head::{FrameHeader, FrameKind, StreamId};
use super::headers::Headers;
use super::ping::Ping;
use super::priority::Priority;
use super::push_promise::PushPromise;
use super::rst_stream::RstStream;
use super::settings::Settings;
use super::window_update::WindowUpdate;
use super::{DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_LEN, MAX_MAX_FRAME_SIZE};

/// Any decoded frame. Variable-length parts borrow from the input buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Frame<'a> {
    /// DATA (§6.1).
    Data(Data<'a>),
    /// HEADERS (§6.2).
    Headers(Headers<'a>),
    /// PRIORITY (§6.3).
    Priority(Priority),
    /// RST_STREAM (§6.4).
    RstStream(RstStream),
    /// SETTINGS (§6.5).
    Settings(Settings),
    /// PUSH_PROMISE (§6.6).
    PushPromise(PushPromise<'a>),
    /// PING (§6.7).
    Ping(Ping),
    /// GOAWAY (§6.8).
    GoAway(GoAway<'a>),
    /// WINDOW_UPDATE (§6.9).
    WindowUpdate(WindowUpdate),
    /// CONTINUATION (§6.10).
    Continuation(Continuation<'a>),
    /// A frame of an unknown type, to be ignored (RFC 9113 §4.1, §5.5) —
    /// except inside a field block, where
    /// [`HeaderBlockAssembler`](super::HeaderBlockAssembler) rejects it.
    Unknown {
        /// Its header (`kind` is `FrameKind::Unknown`).
        header: FrameHeader,
        /// Its raw payload.
        payload: &'a [u8],
    },
}

impl<'a> Frame<'a> {
    /// Decode one frame from its header and complete payload, enforcing
    /// every rule of its type. Stream-scoped violations are returned as
    /// `Err` too; [`FrameDecoder::decode`] separates them.
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Frame<'a>, H2Error> {
        Ok(match header.kind {
            FrameKind::Data => Frame::Data(Data::decode(header, payload)?),
            FrameKind::Headers => Frame::Headers(Headers::decode(header, payload)?),
            FrameKind::Priority => Frame::Priority(Priority::decode(header, payload)?),
            FrameKind::RstStream => Frame::RstStream(RstStream::decode(header, payload)?),
            FrameKind::Settings => Frame::Settings(Settings::decode(header, payload)?),
            FrameKind::PushPromise => Frame::PushPromise(PushPromise::decode(header, payload)?),
            FrameKind::Ping => Frame::Ping(Ping::decode(header, payload)?),
            FrameKind::GoAway => Frame::GoAway(GoAway::decode(header, payload)?),
            FrameKind::WindowUpdate => Frame::WindowUpdate(WindowUpdate::decode(header, payload)?),
            FrameKind::Continuation => Frame::Continuation(Continuation::decode(header, payload)?),
            FrameKind::Unknown(_) => Frame::Unknown {
                // Keep the header consistent with the payload actually given.
                header: FrameHeader {
                    length: u32::try_from(payload.len()).unwrap_or(u32::MAX),
                    ..header
                },
                payload,
            },
        })
    }

    /// The frame type.
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Data(_) => FrameKind::Data,
            Frame::Headers(_) => FrameKind::Headers,
            Frame::Priority(_) => FrameKind::Priority,
            Frame::RstStream(_) => FrameKind::RstStream,
            Frame::Settings(_) => FrameKind::Settings,
            Frame::PushPromise(_) => FrameKind::PushPromise,
            Frame::Ping(_) => FrameKind::Ping,
            Frame::GoAway(_) => FrameKind::GoAway,
            Frame::WindowUpdate(_) => FrameKind::WindowUpdate,
            Frame::Continuation(_) => FrameKind::Continuation,
            Frame::Unknown { header, .. } => header.kind,
        }
    }

    /// The stream the frame is sent on (0 for connection-level frames).
    pub fn stream_id(&self) -> StreamId {
        match self {
            Frame::Data(f) => f.stream_id,
            Frame::Headers(f) => f.stream_id,
            Frame::Priority(f) => f.stream_id,
            Frame::RstStream(f) => f.stream_id,
            Frame::PushPromise(f) => f.stream_id,
            Frame::WindowUpdate(f) => f.stream_id,
            Frame::Continuation(f) => f.stream_id,
            Frame::Settings(_) | Frame::Ping(_) | Frame::GoAway(_) => StreamId::ZERO,
            Frame::Unknown { header, .. } => header.stream_id,
        }
    }

    /// Append the complete frame (header + payload). Decoding the output
    /// yields an equal `Frame` (unknown flag bits and reserved bits are not
    /// preserved; padding is re-encoded as zeros).
    pub fn encode(&self, dst: &mut Vec<u8>) {
        match self {
            Frame::Data(f) => f.encode(dst),
            Frame::Headers(f) => f.encode(dst),
            Frame::Priority(f) => f.encode(dst),
            Frame::RstStream(f) => f.encode(dst),
            Frame::Settings(f) => f.encode(dst),
            Frame::PushPromise(f) => f.encode(dst),
            Frame::Ping(f) => f.encode(dst),
            Frame::GoAway(f) => f.encode(dst),
            Frame::WindowUpdate(f) => f.encode(dst),
            Frame::Continuation(f) => f.encode(dst),
            Frame::Unknown { header, payload } => {
                dst.reserve(FRAME_HEADER_LEN + payload.len());
                super::head::write_header(
                    dst,
                    header.kind,
                    header.flags,
                    header.stream_id,
                    payload.len(),
                );
                dst.extend_from_slice(payload);
            }
        }
    }
}

/// Outcome of [`FrameDecoder::decode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// The buffer holds no complete frame; at least this many more octets
    /// are needed (exact once the 9-octet header is present). Nothing was
    /// consumed or copied: call again with the same bytes plus more.
    NeedMore(usize),
    /// A valid frame; drop `consumed` octets (header + payload) from the
    /// front of the buffer after you are done with `frame`.
    Frame {
        /// The frame, borrowing from the buffer.
        frame: Frame<'a>,
        /// Octets used by this frame.
        consumed: usize,
    },
    /// The frame is complete but violates a rule whose scope is a single
    /// stream (`error.scope` is always `Scope::Stream`): send RST_STREAM
    /// with `error.code`, skip `consumed` octets, keep the connection.
    ///
    /// `frame` is `Some` only for a HEADERS frame (self-dependency): its
    /// field block must still be passed through the
    /// [`HeaderBlockAssembler`](super::HeaderBlockAssembler) and the HPACK
    /// decoder to keep the compression context in sync (RFC 9113 §4.3);
    /// the decoded fields are then discarded.
    StreamError {
        /// The stream error.
        error: H2Error,
        /// The decoded HEADERS frame, if any (see above).
        frame: Option<Frame<'a>>,
        /// Octets used by this frame.
        consumed: usize,
    },
}

/// Incremental, zero-copy frame decoder.
///
/// It holds only the local SETTINGS_MAX_FRAME_SIZE and owns no buffer: the
/// caller keeps its read buffer, calls [`decode`](FrameDecoder::decode) on
/// the unread part, and drops `consumed` octets after each frame.
///
/// ```
/// use h2lab_wire::frame::{Decoded, FrameDecoder};
/// let dec = FrameDecoder::new();
/// let mut buf: &[u8] = &[0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
/// while let Ok(Decoded::Frame { frame, consumed }) = dec.decode(buf) {
///     println!("{frame:?}");
///     buf = &buf[consumed..];
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameDecoder {
    max_frame_size: u32,
}

impl FrameDecoder {
    /// A decoder accepting payloads up to the default 16384 octets.
    #[inline]
    pub const fn new() -> Self {
        FrameDecoder {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        }
    }

    /// A decoder accepting payloads up to `max_frame_size`, clamped to the
    /// legal range 2^14..=2^24-1.
    #[inline]
    pub fn with_max_frame_size(max_frame_size: u32) -> Self {
        FrameDecoder {
            max_frame_size: max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE),
        }
    }

    /// The largest payload accepted.
    #[inline]
    pub fn max_frame_size(&self) -> u32 {
        self.max_frame_size
    }

    /// Change the largest payload accepted (clamped to 2^14..=2^24-1).
    ///
    /// A new local SETTINGS_MAX_FRAME_SIZE only binds the peer once it has
    /// acknowledged it: when lowering, keep the old value until the ACK;
    /// when raising, the new value may be set right away.
    #[inline]
    pub fn set_max_frame_size(&mut self, max_frame_size: u32) {
        self.max_frame_size = max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE);
    }

    /// Decode the frame at the start of `buf`.
    ///
    /// `Err` is always a connection error. A length above the max frame
    /// size is rejected as soon as the 9-octet header is present, without
    /// waiting for the payload, as a connection FRAME_SIZE_ERROR. (RFC 9113
    /// §4.2 would allow a stream error for an oversized DATA frame; this
    /// decoder always uses connection scope, which the RFC also permits.)
    pub fn decode<'a>(&self, buf: &'a [u8]) -> Result<Decoded<'a>, H2Error> {
        let Some(header) = FrameHeader::parse(buf) else {
            return Ok(Decoded::NeedMore(FRAME_HEADER_LEN - buf.len()));
        };
        // RFC 9113 §4.2: "An endpoint MUST send an error code of
        // FRAME_SIZE_ERROR if a frame exceeds the size defined in
        // SETTINGS_MAX_FRAME_SIZE".
        if header.length > self.max_frame_size {
            return Err(H2Error::connection(
                ErrorCode::FRAME_SIZE_ERROR,
                "RFC 9113 §4.2: frame exceeds SETTINGS_MAX_FRAME_SIZE",
            ));
        }
        // length <= 2^24-1, so this cannot overflow even on 32-bit targets.
        let consumed = FRAME_HEADER_LEN + header.length as usize;
        let Some(payload) = buf.get(FRAME_HEADER_LEN..consumed) else {
            return Ok(Decoded::NeedMore(consumed - buf.len()));
        };
        let result = match header.kind {
            FrameKind::Headers => {
                let h = Headers::decode_lenient(header, payload)?;
                match h.check_priority() {
                    Ok(()) => Ok(Frame::Headers(h)),
                    Err(error) => {
                        return Ok(Decoded::StreamError {
                            error,
                            frame: Some(Frame::Headers(h)),
                            consumed,
                        })
                    }
                }
            }
            _ => Frame::decode(header, payload),
        };
        match result {
            Ok(frame) => Ok(Decoded::Frame { frame, consumed }),
            Err(error) if !error.is_connection_error() => Ok(Decoded::StreamError {
                error,
                frame: None,
                consumed,
            }),
            Err(error) => Err(error),
        }
    }
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new()
    }
}
