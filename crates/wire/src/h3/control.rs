//! The peer's control stream, read end to end (RFC 9114 §6.2.1): the stream type has been
//! read ([`super::stream::PeerStreams`]); what follows is SETTINGS first, then GOAWAY,
//! CANCEL_PUSH, MAX_PUSH_ID and ignored unknown frames, never the end of the stream.

use super::error::{ErrorCode, H3Error};
use super::frame::{Decoded, Frame, FrameDecoder, Settings, StreamContext};
use super::stream::{ControlState, UniStreamType};
use crate::h2::Role;

/// What the peer's control stream said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlEvent {
    /// Its SETTINGS (exactly once, first).
    Settings(Settings),
    /// GOAWAY with a stream ID (from a server) or push ID (from a client), never larger
    /// than a previous one.
    GoAway(u64),
    /// CANCEL_PUSH.
    CancelPush(u64),
    /// MAX_PUSH_ID (server role only), never smaller than a previous one.
    MaxPushId(u64),
}

/// Reads the peer's control stream (after its stream type).
#[derive(Clone, Debug)]
pub struct ControlReader {
    frames: FrameDecoder,
    state: ControlState,
    settings: Option<Settings>,
}

impl ControlReader {
    /// A reader for an endpoint of role `local`.
    pub fn new(local: Role) -> Self {
        ControlReader {
            frames: FrameDecoder::new(StreamContext::Control { local }),
            state: ControlState::new(local),
            settings: None,
        }
    }

    /// The peer's SETTINGS, once received.
    pub fn settings(&self) -> Option<Settings> {
        self.settings
    }

    /// Reads `input`, reporting each event; returns the octets consumed (an incomplete
    /// frame is left for the next call). `fin`: the stream ended after `input`, which is
    /// always an error (RFC 9114 §6.2.1: "If either control stream is closed at any point,
    /// this MUST be treated as a connection error of type H3_CLOSED_CRITICAL_STREAM.").
    pub fn recv<F: FnMut(ControlEvent)>(
        &mut self,
        input: &[u8],
        fin: bool,
        mut on_event: F,
    ) -> Result<usize, H3Error> {
        let mut pos = 0;
        loop {
            let (d, n) = self.frames.decode(input.get(pos..).unwrap_or_default())?;
            pos += n;
            let ev = match d {
                Decoded::NeedMore => break,
                // The frame decoder rejects DATA on a control stream.
                Decoded::Skipped { .. } | Decoded::Data { .. } => continue,
                Decoded::Frame(Frame::Settings(s)) => {
                    self.settings = Some(s);
                    ControlEvent::Settings(s)
                }
                Decoded::Frame(Frame::GoAway(id)) => {
                    self.state.on_goaway(id)?;
                    ControlEvent::GoAway(id)
                }
                Decoded::Frame(Frame::MaxPushId(id)) => {
                    self.state.on_max_push_id(id)?;
                    ControlEvent::MaxPushId(id)
                }
                Decoded::Frame(Frame::CancelPush(id)) => ControlEvent::CancelPush(id),
                // Rejected by the frame decoder on a control stream.
                Decoded::Frame(_) => continue,
            };
            on_event(ev);
        }
        if fin {
            return Err(H3Error::connection(
                ErrorCode::H3_CLOSED_CRITICAL_STREAM,
                "RFC 9114 §6.2.1: the control stream was closed",
            ));
        }
        Ok(pos)
    }
}

/// Appends the start of our control stream: its type and our SETTINGS (RFC 9114 §6.2.1:
/// "Each side MUST initiate a single control stream at the beginning of the connection and
/// send its SETTINGS frame as the first frame on this stream.").
pub fn write_control_stream_start(settings: Settings, dst: &mut Vec<u8>) {
    UniStreamType::Control.write(dst);
    Frame::Settings(settings).encode(dst);
}
