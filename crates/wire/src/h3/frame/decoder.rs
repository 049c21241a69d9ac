//! The incremental, zero-copy HTTP/3 frame decoder of one stream.

use super::super::error::{ErrorCode, H3Error};
use super::super::varint;
use super::{types, Frame};
use crate::h2::Role;

/// Default limit on the payload of a frame other than DATA (and unknown types, which are
/// skipped without buffering): 64 KiB plus room for a QPACK prefix and a push ID.
pub const DEFAULT_MAX_FRAME_LEN: u64 = 64 * 1024 + 64;

/// Which stream the decoder reads: it decides which frame types are allowed (RFC 9114
/// §6.2.1 and the rules of each frame type in §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamContext {
    /// The peer's control stream, read by an endpoint of role `local`.
    Control {
        /// Our role.
        local: Role,
    },
    /// A request stream: a server reads a request, a client reads a response.
    Request {
        /// Our role.
        local: Role,
    },
    /// A push stream (read by a client).
    Push,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// At a frame boundary.
    Header,
    /// Inside a DATA payload, this many octets left.
    Data(u64),
    /// Inside an unknown frame's payload, skipped.
    Skip(u64),
}

/// What [`FrameDecoder::decode`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A complete frame other than DATA (and other than unknown types).
    Frame(Frame<'a>),
    /// A piece of a DATA frame's payload, borrowed from the input (DATA is never buffered:
    /// a 10 MB DATA frame comes out in the pieces the transport delivers). `end` is set on
    /// the last piece of the frame (an empty DATA frame is one empty piece with `end`).
    Data {
        /// The bytes.
        chunk: &'a [u8],
        /// Last piece of this DATA frame.
        end: bool,
    },
    /// Part of a frame of unknown or reserved type was skipped (RFC 9114 §9: such frames
    /// are discarded; they are never buffered whatever their length).
    Skipped {
        /// Its type.
        ty: u64,
    },
    /// The input ends inside a frame header or a non-DATA payload: call again with more.
    NeedMore,
}

/// Splits one stream's bytes into frames, enforcing which frames the stream may carry.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    context: StreamContext,
    state: State,
    max_frame_len: u64,
    /// Frames started so far.
    frames: u64,
    skipping: u64,
}

impl FrameDecoder {
    /// A decoder for a stream of the given context.
    pub fn new(context: StreamContext) -> Self {
        FrameDecoder {
            context,
            state: State::Header,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            frames: 0,
            skipping: 0,
        }
    }

    /// Limits the payload of frames other than DATA and unknown types; a longer one is a
    /// connection error of type H3_EXCESSIVE_LOAD (RFC 9114 §10.5 on denial of service:
    /// the frame would otherwise have to be buffered whole).
    pub fn set_max_frame_len(&mut self, n: u64) {
        self.max_frame_len = n;
    }

    /// The stream context.
    pub fn context(&self) -> StreamContext {
        self.context
    }

    /// `true` at a frame boundary (the stream may end here without truncating a frame).
    pub fn at_boundary(&self) -> bool {
        self.state == State::Header
    }

    /// Decodes from the start of `input`: returns what was found and how many octets of
    /// `input` it consumed (the caller drops them and calls again).
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(Decoded<'a>, usize), H3Error> {
        match self.state {
            State::Data(left) => {
                if input.is_empty() {
                    return Ok((Decoded::NeedMore, 0));
                }
                let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                let left = left - n as u64;
                self.state = if left == 0 {
                    State::Header
                } else {
                    State::Data(left)
                };
                Ok((
                    Decoded::Data {
                        chunk: input.get(..n).unwrap_or_default(),
                        end: left == 0,
                    },
                    n,
                ))
            }
            State::Skip(left) => {
                if input.is_empty() {
                    return Ok((Decoded::NeedMore, 0));
                }
                let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                let left = left - n as u64;
                self.state = if left == 0 {
                    State::Header
                } else {
                    State::Skip(left)
                };
                Ok((Decoded::Skipped { ty: self.skipping }, n))
            }
            State::Header => self.header(input),
        }
    }

    fn header<'a>(&mut self, input: &'a [u8]) -> Result<(Decoded<'a>, usize), H3Error> {
        let Some((ty, a)) = varint::decode(input) else {
            return Ok((Decoded::NeedMore, 0));
        };
        let Some((len, b)) = varint::decode(input.get(a..).unwrap_or_default()) else {
            return Ok((Decoded::NeedMore, 0));
        };
        let hdr = a + b;
        self.check(ty)?;
        let known = matches!(
            ty,
            types::DATA
                | types::HEADERS
                | types::CANCEL_PUSH
                | types::SETTINGS
                | types::PUSH_PROMISE
                | types::GOAWAY
                | types::MAX_PUSH_ID
        ) || types::RESERVED_HTTP2.contains(&ty);
        if ty == types::DATA || !known {
            self.frames += 1;
            let rest = input.get(hdr..).unwrap_or_default();
            if ty == types::DATA {
                self.state = State::Data(len);
                if len == 0 {
                    self.state = State::Header;
                    return Ok((
                        Decoded::Data {
                            chunk: &[],
                            end: true,
                        },
                        hdr,
                    ));
                }
                if rest.is_empty() {
                    return Ok((
                        Decoded::Data {
                            chunk: &[],
                            end: false,
                        },
                        hdr,
                    ));
                }
                let (d, n) = self.decode(rest)?;
                return Ok((d, hdr + n));
            }
            self.skipping = ty;
            self.state = if len == 0 {
                State::Header
            } else {
                State::Skip(len)
            };
            if len == 0 || rest.is_empty() {
                return Ok((Decoded::Skipped { ty }, hdr));
            }
            let (d, n) = self.decode(rest)?;
            return Ok((d, hdr + n));
        }
        if len > self.max_frame_len {
            return Err(H3Error::connection(
                ErrorCode::H3_EXCESSIVE_LOAD,
                "RFC 9114 §10.5: frame longer than the local limit",
            ));
        }
        let end = hdr + len as usize;
        let Some(payload) = input.get(hdr..end) else {
            return Ok((Decoded::NeedMore, 0));
        };
        let frame = Frame::decode(ty, payload)?;
        self.frames += 1;
        Ok((Decoded::Frame(frame), end))
    }

    /// Which frame types the stream may carry (RFC 9114 §7.2.x, each "MUST be treated as a
    /// connection error of type H3_FRAME_UNEXPECTED").
    fn check(&self, ty: u64) -> Result<(), H3Error> {
        let unexpected = |rule| Err(H3Error::connection(ErrorCode::H3_FRAME_UNEXPECTED, rule));
        match self.context {
            StreamContext::Control { local } => {
                if self.frames == 0 && ty != types::SETTINGS {
                    // §6.2.1: "If the first frame of the control stream is any other frame
                    // type, this MUST be treated as a connection error of type
                    // H3_MISSING_SETTINGS."
                    return Err(H3Error::connection(
                        ErrorCode::H3_MISSING_SETTINGS,
                        "RFC 9114 §6.2.1: the control stream does not start with SETTINGS",
                    ));
                }
                match ty {
                    // §7.2.4: "If an endpoint receives a second SETTINGS frame on the
                    // control stream, the endpoint MUST respond with a connection error of
                    // type H3_FRAME_UNEXPECTED."
                    types::SETTINGS if self.frames > 0 => {
                        unexpected("RFC 9114 §7.2.4: a second SETTINGS frame")
                    }
                    // §7.2.1, §7.2.2, §7.2.5: DATA, HEADERS and PUSH_PROMISE on the control
                    // stream.
                    types::DATA => unexpected("RFC 9114 §7.2.1: DATA on the control stream"),
                    types::HEADERS => unexpected("RFC 9114 §7.2.2: HEADERS on the control stream"),
                    types::PUSH_PROMISE => {
                        unexpected("RFC 9114 §7.2.5: PUSH_PROMISE on the control stream")
                    }
                    // §7.2.7: "A MAX_PUSH_ID frame ... If a client receives a MAX_PUSH_ID
                    // frame, it MUST treat this as a connection error of type
                    // H3_FRAME_UNEXPECTED."
                    types::MAX_PUSH_ID if local == Role::Client => {
                        unexpected("RFC 9114 §7.2.7: MAX_PUSH_ID sent by a server")
                    }
                    _ => Ok(()),
                }
            }
            StreamContext::Request { .. } | StreamContext::Push => match ty {
                // §7.2.3, §7.2.4, §7.2.6, §7.2.7: control-stream frames on a request or
                // push stream.
                types::CANCEL_PUSH => {
                    unexpected("RFC 9114 §7.2.3: CANCEL_PUSH outside the control stream")
                }
                types::SETTINGS => {
                    unexpected("RFC 9114 §7.2.4: SETTINGS outside the control stream")
                }
                types::GOAWAY => unexpected("RFC 9114 §7.2.6: GOAWAY outside the control stream"),
                types::MAX_PUSH_ID => {
                    unexpected("RFC 9114 §7.2.7: MAX_PUSH_ID outside the control stream")
                }
                // §7.2.5: "A client MUST NOT send a PUSH_PROMISE frame. A server MUST treat
                // the receipt of a PUSH_PROMISE frame as a connection error of type
                // H3_FRAME_UNEXPECTED." Push streams carry a response only.
                types::PUSH_PROMISE
                    if self.context == StreamContext::Push
                        || self.context
                            == (StreamContext::Request {
                                local: Role::Server,
                            }) =>
                {
                    unexpected("RFC 9114 §7.2.5: PUSH_PROMISE from a client or on a push stream")
                }
                _ => Ok(()),
            },
        }
    }
}
