//! Reassembly of field blocks split over HEADERS / PUSH_PROMISE +
//! CONTINUATION frames (RFC 9113 §4.3, §6.10), with bounded buffering.

use super::decoder::Frame;
use super::error::{ErrorCode, H2Error};
use super::head::StreamId;
use super::priority::PrioritySpec;

/// Which frame opened a field block, with the metadata of that frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Opened by HEADERS.
    Headers {
        /// END_STREAM of the HEADERS frame.
        end_stream: bool,
        /// Priority fields of the HEADERS frame.
        priority: Option<PrioritySpec>,
    },
    /// Opened by PUSH_PROMISE.
    PushPromise {
        /// The reserved stream.
        promised_stream_id: StreamId,
    },
}

/// A complete field block, ready for the HPACK decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeaderBlock<'a> {
    /// The stream of the HEADERS / PUSH_PROMISE frame.
    pub stream_id: StreamId,
    /// HEADERS or PUSH_PROMISE, with that frame's metadata.
    pub kind: BlockKind,
    /// The encoded field block: borrowed from the input for a single-frame
    /// block, from the assembler's buffer otherwise.
    pub block: &'a [u8],
}

/// Result of [`HeaderBlockAssembler::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assembled<'a> {
    /// The frame is not part of a field block (no block is open and it is
    /// not HEADERS / PUSH_PROMISE / CONTINUATION): handle it normally.
    Other,
    /// The fragment was buffered; CONTINUATION frames must follow.
    Pending,
    /// A field block is complete.
    Complete(HeaderBlock<'a>),
}

/// Internal result of a state transition (does not borrow the assembler).
enum Step<'f> {
    Other,
    Pending,
    Borrowed(HeaderBlock<'f>),
    Buffered {
        stream_id: StreamId,
        kind: BlockKind,
    },
}

#[derive(Clone, Copy, Debug)]
struct Open {
    stream_id: StreamId,
    kind: BlockKind,
    continuations: usize,
}

/// Reassembles field blocks with bounded memory.
///
/// Feed it **every** decoded frame, in order, with
/// [`push`](HeaderBlockAssembler::push): it enforces that nothing but
/// CONTINUATION frames of the same stream arrive while a block is open.
///
/// - A HEADERS / PUSH_PROMISE frame with END_HEADERS yields its fragment
///   directly (zero copy).
/// - Multi-frame blocks are copied into one internal buffer that is cleared,
///   never freed, between blocks, so the steady state does not allocate.
///
/// Limits (all connection errors, because a partially processed field block
/// leaves the HPACK context unusable, RFC 9113 §4.3 / §10.5.1):
/// - a block (sum of its fragments) larger than `max_block_size` →
///   ENHANCE_YOUR_CALM, rule `"header block exceeds the configured limit"`.
///   A server wanting to answer 431 instead must configure a larger limit
///   here and check the decoded header list size itself.
/// - more than `max_continuations` CONTINUATION frames in one block →
///   ENHANCE_YOUR_CALM (CONTINUATION flood defence, also stops floods of
///   empty CONTINUATION frames).
#[derive(Debug)]
pub struct HeaderBlockAssembler {
    buf: Vec<u8>,
    open: Option<Open>,
    max_block_size: usize,
    max_continuations: usize,
}

/// Rule text of the block-size limit error.
pub const RULE_BLOCK_TOO_LARGE: &str =
    "RFC 9113 §10.5.1: header block exceeds the configured limit";
/// Rule text of the CONTINUATION count limit error.
pub const RULE_TOO_MANY_CONTINUATIONS: &str =
    "RFC 9113 §10.5: too many CONTINUATION frames in one header block";

impl HeaderBlockAssembler {
    /// Default `max_block_size`: 64 KiB of encoded field block.
    pub const DEFAULT_MAX_BLOCK_SIZE: usize = 64 * 1024;
    /// Default `max_continuations`: 16 CONTINUATION frames per block.
    pub const DEFAULT_MAX_CONTINUATIONS: usize = 16;

    /// An assembler with the given limits. No memory is allocated until a
    /// multi-frame block arrives.
    pub const fn new(max_block_size: usize, max_continuations: usize) -> Self {
        HeaderBlockAssembler {
            buf: Vec::new(),
            open: None,
            max_block_size,
            max_continuations,
        }
    }

    /// The maximum field block size.
    pub fn max_block_size(&self) -> usize {
        self.max_block_size
    }

    /// The maximum number of CONTINUATION frames per block.
    pub fn max_continuations(&self) -> usize {
        self.max_continuations
    }

    /// True while a block is open (waiting for CONTINUATION).
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// The stream of the open block, if any.
    pub fn open_stream_id(&self) -> Option<StreamId> {
        self.open.map(|o| o.stream_id)
    }

    /// Forget any open block (keeps the buffer's capacity).
    pub fn reset(&mut self) {
        self.open = None;
        self.buf.clear();
    }

    /// Feed the next decoded frame.
    ///
    /// Errors (connection scope): while a block is open, any frame other
    /// than CONTINUATION on the same stream → PROTOCOL_ERROR; CONTINUATION
    /// with no open block → PROTOCOL_ERROR; limits → ENHANCE_YOUR_CALM (see
    /// the type docs). After an error the assembler is reset.
    pub fn push<'a>(&'a mut self, frame: &Frame<'a>) -> Result<Assembled<'a>, H2Error> {
        match self.step(frame) {
            Ok(Step::Other) => Ok(Assembled::Other),
            Ok(Step::Pending) => Ok(Assembled::Pending),
            Ok(Step::Borrowed(b)) => Ok(Assembled::Complete(b)),
            Ok(Step::Buffered { stream_id, kind }) => Ok(Assembled::Complete(HeaderBlock {
                stream_id,
                kind,
                block: &self.buf,
            })),
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    /// The state transition; never borrows `self` in its result so that the
    /// caller can reset on error.
    fn step<'f>(&mut self, frame: &Frame<'f>) -> Result<Step<'f>, H2Error> {
        let Some(open) = self.open.as_mut() else {
            let (stream_id, kind, fragment, end_headers) = match frame {
                Frame::Headers(h) => (
                    h.stream_id,
                    BlockKind::Headers {
                        end_stream: h.end_stream,
                        priority: h.priority,
                    },
                    h.fragment,
                    h.end_headers,
                ),
                Frame::PushPromise(p) => (
                    p.stream_id,
                    BlockKind::PushPromise {
                        promised_stream_id: p.promised_stream_id,
                    },
                    p.fragment,
                    p.end_headers,
                ),
                // RFC 9113 §6.10: "A receiver MUST treat the receipt of a
                // CONTINUATION frame [not preceded by a HEADERS, PUSH_PROMISE
                // or CONTINUATION frame without the END_HEADERS flag] as a
                // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
                Frame::Continuation(_) => {
                    return Err(H2Error::connection(
                        ErrorCode::PROTOCOL_ERROR,
                        "RFC 9113 §6.10: CONTINUATION without an open header block",
                    ))
                }
                _ => return Ok(Step::Other),
            };
            if fragment.len() > self.max_block_size {
                return Err(too_large());
            }
            if end_headers {
                // Fast path: the whole block is in this frame; no copy.
                return Ok(Step::Borrowed(HeaderBlock {
                    stream_id,
                    kind,
                    block: fragment,
                }));
            }
            self.buf.clear();
            self.buf.extend_from_slice(fragment);
            self.open = Some(Open {
                stream_id,
                kind,
                continuations: 0,
            });
            return Ok(Step::Pending);
        };

        // RFC 9113 §6.2: "A HEADERS frame without the END_HEADERS flag set
        // MUST be followed by a CONTINUATION frame for the same stream. A
        // receiver MUST treat the receipt of any other type of frame or a
        // frame on a different stream as a connection error (Section 5.4.1)
        // of type PROTOCOL_ERROR." (Same in §6.6 and §6.10; §5.5: extension
        // frames inside a field block are not permitted either.)
        let cont = match frame {
            Frame::Continuation(c) if c.stream_id == open.stream_id => c,
            Frame::Continuation(_) => {
                return Err(H2Error::connection(
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §6.10: CONTINUATION on a different stream",
                ))
            }
            _ => {
                return Err(H2Error::connection(
                    ErrorCode::PROTOCOL_ERROR,
                    "RFC 9113 §6.10: other frame inside an open header block",
                ))
            }
        };
        open.continuations += 1;
        if open.continuations > self.max_continuations {
            return Err(H2Error::connection(
                ErrorCode::ENHANCE_YOUR_CALM,
                RULE_TOO_MANY_CONTINUATIONS,
            ));
        }
        let total = self
            .buf
            .len()
            .checked_add(cont.fragment.len())
            .filter(|&n| n <= self.max_block_size)
            .ok_or_else(too_large)?;
        if self.buf.capacity() < total {
            // Grow to what is needed, capped by the limit, instead of
            // letting the Vec double past it.
            let want = total
                .max(self.buf.capacity().saturating_mul(2))
                .min(self.max_block_size);
            self.buf.reserve_exact(want - self.buf.len());
        }
        self.buf.extend_from_slice(cont.fragment);
        if !cont.end_headers {
            return Ok(Step::Pending);
        }
        let done = *open;
        self.open = None;
        Ok(Step::Buffered {
            stream_id: done.stream_id,
            kind: done.kind,
        })
    }
}

impl Default for HeaderBlockAssembler {
    fn default() -> Self {
        HeaderBlockAssembler::new(
            HeaderBlockAssembler::DEFAULT_MAX_BLOCK_SIZE,
            HeaderBlockAssembler::DEFAULT_MAX_CONTINUATIONS,
        )
    }
}

fn too_large() -> H2Error {
    H2Error::connection(ErrorCode::ENHANCE_YOUR_CALM, RULE_BLOCK_TOO_LARGE)
}
