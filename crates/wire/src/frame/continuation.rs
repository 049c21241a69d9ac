//! CONTINUATION frames (RFC 9113 §6.10) and the shared encoder that splits a
//! field block into HEADERS/PUSH_PROMISE + CONTINUATION frames.

use super::error::{ErrorCode, H2Error};
use super::head::{flags, write_header, FrameHeader, FrameKind, StreamId};
use super::FRAME_HEADER_LEN;

/// A CONTINUATION frame (type 0x09); `fragment` borrows from the input.
///
/// Ordering rules (a CONTINUATION must follow a HEADERS / PUSH_PROMISE /
/// CONTINUATION without END_HEADERS on the same stream) are enforced by
/// [`HeaderBlockAssembler`](super::HeaderBlockAssembler), not here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Continuation<'a> {
    /// The stream; never 0.
    pub stream_id: StreamId,
    /// Field block fragment.
    pub fragment: &'a [u8],
    /// END_HEADERS flag.
    pub end_headers: bool,
}

impl<'a> Continuation<'a> {
    /// Decode and validate a CONTINUATION payload.
    ///
    /// Errors: stream 0 → connection PROTOCOL_ERROR.
    pub fn decode(header: FrameHeader, payload: &'a [u8]) -> Result<Self, H2Error> {
        // RFC 9113 §6.10: "If a CONTINUATION frame is received with a Stream
        // Identifier field of 0x00, the recipient MUST respond with a
        // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
        if header.stream_id.is_zero() {
            return Err(H2Error::connection(
                ErrorCode::PROTOCOL_ERROR,
                "RFC 9113 §6.10: CONTINUATION on stream 0",
            ));
        }
        Ok(Continuation {
            stream_id: header.stream_id,
            fragment: payload,
            end_headers: header.has_flag(flags::END_HEADERS),
        })
    }

    /// Append the complete frame.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let f = if self.end_headers {
            flags::END_HEADERS
        } else {
            0
        };
        dst.reserve(FRAME_HEADER_LEN + self.fragment.len());
        write_header(
            dst,
            FrameKind::Continuation,
            f,
            self.stream_id,
            self.fragment.len(),
        );
        dst.extend_from_slice(self.fragment);
    }
}

/// Write `block` as one `kind` frame (payload = `prefix` + first fragment)
/// followed by as many CONTINUATION frames as needed so that no payload
/// exceeds `max_frame_size`. END_HEADERS goes on the last frame;
/// `first_flags` (e.g. END_STREAM) only on the first.
pub(crate) fn encode_block_frames(
    dst: &mut Vec<u8>,
    kind: FrameKind,
    first_flags: u8,
    stream_id: StreamId,
    prefix: &[u8],
    block: &[u8],
    max_frame_size: u32,
) {
    // A frame must carry at least one octet of the block, or the loop below
    // would never make progress; real peers advertise >= 16384 anyway.
    let max = usize::try_from(max_frame_size)
        .unwrap_or(usize::MAX)
        .min(super::MAX_MAX_FRAME_SIZE as usize)
        .max(prefix.len() + 1);
    let first_len = block.len().min(max - prefix.len());
    let (first, mut rest) = block.split_at(first_len);
    let n_cont = rest.len().div_ceil(max);
    dst.reserve(FRAME_HEADER_LEN * (1 + n_cont) + prefix.len() + block.len());

    let mut f = first_flags;
    if rest.is_empty() {
        f |= flags::END_HEADERS;
    }
    write_header(dst, kind, f, stream_id, prefix.len() + first.len());
    dst.extend_from_slice(prefix);
    dst.extend_from_slice(first);
    while !rest.is_empty() {
        let n = rest.len().min(max);
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        let f = if rest.is_empty() {
            flags::END_HEADERS
        } else {
            0
        };
        write_header(dst, FrameKind::Continuation, f, stream_id, chunk.len());
        dst.extend_from_slice(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Payload lengths and flags of the frames in `buf`.
    fn shape(buf: &[u8]) -> Vec<(FrameKind, u32, u8)> {
        let mut out = Vec::new();
        let mut rest = buf;
        while let Some(h) = FrameHeader::parse(rest) {
            out.push((h.kind, h.length, h.flags));
            rest = &rest[FRAME_HEADER_LEN + h.length as usize..];
        }
        out
    }

    #[test]
    fn degenerate_max_frame_sizes_still_progress() {
        let mut buf = Vec::new();
        encode_block_frames(
            &mut buf,
            FrameKind::Headers,
            0,
            StreamId::new(1),
            &[],
            b"abc",
            0,
        );
        assert_eq!(
            shape(&buf),
            [
                (FrameKind::Headers, 1, 0),
                (FrameKind::Continuation, 1, 0),
                (FrameKind::Continuation, 1, flags::END_HEADERS)
            ]
        );
        buf.clear();
        // Prefix of 4 with a max of 2: each frame still carries one octet.
        encode_block_frames(
            &mut buf,
            FrameKind::PushPromise,
            0,
            StreamId::new(1),
            &[0, 0, 0, 2],
            b"ab",
            2,
        );
        assert_eq!(
            shape(&buf),
            [
                (FrameKind::PushPromise, 5, 0),
                (FrameKind::Continuation, 1, flags::END_HEADERS)
            ]
        );
        buf.clear();
        encode_block_frames(
            &mut buf,
            FrameKind::Headers,
            flags::END_STREAM,
            StreamId::new(1),
            &[],
            b"",
            u32::MAX,
        );
        assert_eq!(
            shape(&buf),
            [(
                FrameKind::Headers,
                0,
                flags::END_STREAM | flags::END_HEADERS
            )]
        );
    }
}
