//! Shared by the end-to-end fuzz targets: an oracle for the bytes an endpoint writes, and the
//! way fuzzed input is cut into reads.
#![allow(dead_code)] // each fuzz target uses a different subset of these helpers

use h2lab_wire::frame::{Decoded, Frame, FrameDecoder, PREFACE};
use h2lab_wire::hpack::Decoder;

/// Checks that everything an HTTP/2 endpoint writes is a sequence of complete, valid frames
/// (each output buffer ends on a frame boundary) and that its header blocks decode with the
/// peer's HPACK decoder, in order, across the whole connection.
pub struct WireCheck {
    frames: FrameDecoder,
    hpack: Decoder,
    block: Vec<u8>,
    in_block: bool,
    preface_left: bool,
    /// Frames seen so far.
    pub frames_seen: usize,
}

impl WireCheck {
    /// `client`: the output starts with the connection preface.
    pub fn new(client: bool) -> WireCheck {
        let mut hpack = Decoder::new(4096);
        hpack.set_max_header_list_size(usize::MAX);
        WireCheck {
            frames: FrameDecoder::with_max_frame_size(16_777_215),
            hpack,
            block: Vec::new(),
            in_block: false,
            preface_left: client,
            frames_seen: 0,
        }
    }

    /// Checks one output buffer.
    pub fn feed(&mut self, mut out: &[u8]) {
        if self.preface_left && !out.is_empty() {
            out = out
                .strip_prefix(PREFACE.as_slice())
                .expect("a client's output starts with the preface");
            self.preface_left = false;
        }
        while !out.is_empty() {
            let (frame, consumed) = match self.frames.decode(out) {
                Ok(Decoded::Frame { frame, consumed }) => (frame, consumed),
                Ok(Decoded::StreamError { error, .. }) => panic!("we wrote a bad frame: {error}"),
                Ok(Decoded::NeedMore(_)) => panic!("output ends inside a frame"),
                Err(e) => panic!("we wrote an invalid frame: {e}"),
            };
            self.frames_seen += 1;
            match frame {
                Frame::Headers(h) => {
                    assert!(!self.in_block, "HEADERS inside a field block");
                    self.block.clear();
                    self.block.extend_from_slice(h.fragment);
                    self.in_block = !h.end_headers;
                    if h.end_headers {
                        self.decode_block();
                    }
                }
                Frame::Continuation(c) => {
                    assert!(self.in_block, "CONTINUATION outside a field block");
                    self.block.extend_from_slice(c.fragment);
                    if c.end_headers {
                        self.in_block = false;
                        self.decode_block();
                    }
                }
                _ => assert!(!self.in_block, "a frame inside a field block"),
            }
            out = &out[consumed..];
        }
    }

    fn decode_block(&mut self) {
        let block = std::mem::take(&mut self.block);
        if let Err(e) = self.hpack.decode(&block, |_| {}) {
            panic!("our header block does not decode: {e:?}");
        }
        self.block = block;
    }
}

/// Read sizes from a seed byte (xorshift32): 1..=`max` bytes each, so fuzzed input arrives
/// split at varying points, as from a socket.
pub struct Reads {
    state: u32,
    max: usize,
}

impl Reads {
    /// Read sizes derived from `seed`, at most `max` bytes each.
    pub fn new(seed: u8, max: usize) -> Reads {
        Reads {
            state: u32::from(seed) | 0x100,
            max: max.max(1),
        }
    }

    /// The size of the next read.
    pub fn next_len(&mut self) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        1 + (self.state as usize) % self.max
    }
}
