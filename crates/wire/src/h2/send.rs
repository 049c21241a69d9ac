//! The send API of [`Connection`]: requests, response heads and trailers, DATA (copied or
//! header-only for zero-copy bodies), RST_STREAM, GOAWAY and PING, and the framing of
//! header blocks into HEADERS/PUSH_PROMISE + CONTINUATION.

use crate::frame::{
    encode_data_header, flags, ErrorCode, FrameHeader, FrameKind, GoAway, Ping, RstStream, Scope,
    StreamId, FRAME_HEADER_LEN,
};

use super::conn::{Connection, HeaderEncoder, Role, State};
use super::error::SendError;
use super::store::{flag, Closed};

impl<E: HeaderEncoder> Connection<E> {
    /// Open a stream and send its request header section (client role).
    ///
    /// `block` appends an HPACK-encoded field block to the `Vec`, using the
    /// connection's encoder (whose table size follows the peer's
    /// SETTINGS_HEADER_TABLE_SIZE), e.g. from a pre-encoded request template.
    /// The block is framed into HEADERS + CONTINUATION according to the
    /// peer's SETTINGS_MAX_FRAME_SIZE, in place in `out`.
    ///
    /// Errors: [`SendError::WouldBlock`] when the peer's
    /// SETTINGS_MAX_CONCURRENT_STREAMS is reached, [`SendError::GoingAway`]
    /// after a GOAWAY; nothing is written then.
    pub fn send_request(
        &mut self,
        block: impl FnOnce(&mut E, &mut Vec<u8>),
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<StreamId, SendError> {
        let st = &mut self.st;
        if st.role != Role::Client {
            return Err(SendError::WrongRole);
        }
        st.check_open()?;
        if st.goaway_recv.is_some() || st.goaway_sent.is_some() {
            return Err(SendError::GoingAway);
        }
        if !st.can_open_stream() {
            return Err(SendError::WouldBlock);
        }
        // RFC 9113 §5.1.1: "Stream identifiers cannot be reused."
        if st.next_local_id > StreamId::MAX.get() {
            return Err(SendError::StreamIdsExhausted);
        }
        st.start(out);
        let id = StreamId::new(st.next_local_id);
        st.next_local_id += 2;
        write_block(st, &mut self.enc, id, end_stream, block, out);
        let mut flags = flag::LOCAL;
        if end_stream {
            flags |= flag::SEND_CLOSED;
        }
        let stream = st.new_stream(id, flags);
        st.streams.insert(stream);
        Ok(id)
    }

    /// Send a header section on an open stream: a response (server role; call
    /// it again for the final response after 1xx ones) or trailers (with
    /// `end_stream`). `block` appends the HPACK-encoded field block, as in
    /// [`send_request`](Connection::send_request).
    pub fn send_headers(
        &mut self,
        stream: StreamId,
        block: impl FnOnce(&mut E, &mut Vec<u8>),
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        let st = &mut self.st;
        st.check_open()?;
        match st.streams.get(stream) {
            Some(s) if !s.has(flag::SEND_CLOSED) => {}
            _ => return Err(SendError::StreamClosed(stream)),
        }
        write_block(st, &mut self.enc, stream, end_stream, block, out);
        if end_stream {
            st.send_end(stream);
        }
        Ok(())
    }

    /// [`send_headers`](Connection::send_headers) with the fields encoded by
    /// the connection's HPACK encoder (default indexing policy).
    pub fn send_header_fields(
        &mut self,
        stream: StreamId,
        fields: &[(&[u8], &[u8])],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), SendError> {
        self.send_headers(
            stream,
            |enc, buf| enc.encoder().encode(fields.iter().copied(), buf),
            end_stream,
            out,
        )
    }

    /// Queue body bytes on `stream`, as much as the stream and connection
    /// send windows allow, split into DATA frames of at most the peer's
    /// SETTINGS_MAX_FRAME_SIZE. Returns how many bytes of `data` were
    /// queued; END_STREAM is only sent when all of `data` fit (an empty
    /// `data` with `end_stream` always fits). Send the rest after
    /// [`Events::window_opened`](super::Events::window_opened).
    pub fn send_data(
        &mut self,
        stream: StreamId,
        data: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<usize, SendError> {
        let st = &mut self.st;
        st.check_open()?;
        let max = st.peer.max_frame_size as usize;
        let conn_avail = st.conn_send.available() as usize;
        let s = match st.streams.get_mut(stream) {
            Some(s) if !s.has(flag::SEND_CLOSED) => s,
            _ => return Err(SendError::StreamClosed(stream)),
        };
        // RFC 9113 §6.9.1: "The sender MUST NOT send a flow-controlled frame
        // with a length that exceeds the space available in either of the
        // flow-control windows advertised by the receiver."
        let n = data.len().min(conn_avail).min(s.send.available() as usize);
        let fin = end_stream && n == data.len();
        if n == 0 && !fin {
            return Ok(0);
        }
        let body = data.get(..n).unwrap_or_default();
        out.reserve(n + FRAME_HEADER_LEN * (n / max.max(1) + 1));
        if body.is_empty() {
            encode_data_header(stream, 0, fin, out);
        }
        let mut rest = body;
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rest.len().min(max));
            rest = tail;
            let len = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
            encode_data_header(stream, len, fin && rest.is_empty(), out);
            out.extend_from_slice(chunk);
        }
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        // Both windows were checked above, so these cannot fail.
        let _ = s.send.consume(n32, Scope::Stream(stream));
        let _ = st.conn_send.consume(n32, Scope::Connection);
        if fin {
            st.send_end(stream);
        }
        Ok(n)
    }

    /// Zero-copy DATA: queue the 9-byte header of **one** DATA frame on
    /// `stream` for up to `len` body bytes, consuming the stream and
    /// connection send windows, and return the frame's length `n` (at most
    /// `len`, the windows and the peer's SETTINGS_MAX_FRAME_SIZE). The caller
    /// must then put exactly the first `n` body bytes on the wire right after
    /// the header (e.g. `writev` of `[out, body[..n]]`), before anything
    /// else this connection writes to `out`.
    ///
    /// END_STREAM is set when `end_stream` and `n == len` (an empty frame
    /// with END_STREAM when `len == 0`). Returns `Ok(0)` and writes nothing
    /// when a window is closed and `len > 0`: call again after
    /// [`Events::window_opened`](super::Events::window_opened).
    ///
    /// Errors: [`SendError::StreamClosed`] if `stream` is not open for
    /// sending, [`SendError::ConnectionClosed`] after a connection error.
    pub fn send_data_header(
        &mut self,
        stream: StreamId,
        len: usize,
        end_stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<usize, SendError> {
        let st = &mut self.st;
        st.check_open()?;
        let max = st.peer.max_frame_size as usize;
        let conn_avail = st.conn_send.available() as usize;
        let s = match st.streams.get_mut(stream) {
            Some(s) if !s.has(flag::SEND_CLOSED) => s,
            _ => return Err(SendError::StreamClosed(stream)),
        };
        // RFC 9113 §6.9.1: "The sender MUST NOT send a flow-controlled frame
        // with a length that exceeds the space available in either of the
        // flow-control windows advertised by the receiver." RFC 9113 §4.2:
        // "An endpoint MUST send an error code of FRAME_SIZE_ERROR if a frame
        // exceeds the size defined in SETTINGS_MAX_FRAME_SIZE".
        let n = len
            .min(conn_avail)
            .min(s.send.available() as usize)
            .min(max);
        let fin = end_stream && n == len;
        if n == 0 && !fin {
            return Ok(0);
        }
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        encode_data_header(stream, n32, fin, out);
        // Both windows were checked above, so these cannot fail.
        let _ = s.send.consume(n32, Scope::Stream(stream));
        let _ = st.conn_send.consume(n32, Scope::Connection);
        if fin {
            st.send_end(stream);
        }
        Ok(n)
    }

    /// Reset `stream` with `code` (RST_STREAM, RFC 9113 §6.4), e.g. to cancel
    /// a request. Returns false if the stream was not open (nothing sent).
    /// Frames the peer still sends on it are ignored (RFC 9113 §5.1).
    pub fn reset(&mut self, stream: StreamId, code: ErrorCode, out: &mut Vec<u8>) -> bool {
        let st = &mut self.st;
        if st.error.is_some() || st.streams.remove(stream).is_none() {
            return false;
        }
        RstStream::new(stream, code).encode(out);
        st.closed.push(stream, Closed::ByUs);
        true
    }

    /// Send GOAWAY (RFC 9113 §6.8) with the highest peer stream id we
    /// processed. No new stream may be opened afterwards by either side;
    /// open streams continue. With `NO_ERROR` this is a graceful shutdown:
    /// close the transport once [`is_finished`](Connection::is_finished).
    pub fn goaway(&mut self, code: ErrorCode, debug: &[u8], out: &mut Vec<u8>) {
        let st = &mut self.st;
        if st.error.is_some() {
            return;
        }
        st.start(out);
        let last = StreamId::new(st.last_peer_id);
        // RFC 9113 §6.8: "Endpoints MUST NOT increase the value they send in
        // the last stream identifier".
        let last = st.goaway_sent.map_or(last, |prev| prev.min(last));
        st.goaway_sent = Some(last);
        GoAway {
            last_stream_id: last,
            error_code: code,
            debug_data: debug,
        }
        .encode(out);
    }

    /// Send a PING (RFC 9113 §6.7); its ACK is reported by
    /// [`Events::ping_ack`](super::Events::ping_ack).
    pub fn ping(&mut self, payload: [u8; 8], out: &mut Vec<u8>) {
        if self.st.error.is_none() {
            self.st.start(out);
            Ping::new(payload).encode(out);
        }
    }
}

/// Append a HEADERS frame (plus CONTINUATION frames if the block exceeds
/// the peer's SETTINGS_MAX_FRAME_SIZE) whose block is written by `f`
/// directly into `out`, then framed in place.
pub(crate) fn write_block<E>(
    st: &State,
    enc: &mut E,
    id: StreamId,
    end_stream: bool,
    f: impl FnOnce(&mut E, &mut Vec<u8>),
    out: &mut Vec<u8>,
) {
    write_block_as(st, enc, id, None, end_stream, f, out);
}

/// [`write_block`] as HEADERS, or as PUSH_PROMISE when `promised` is set:
/// the promised stream id (RFC 9113 §6.6) is the first 4 octets of the
/// first frame's payload, the field block follows (and continues in
/// CONTINUATION frames).
pub(crate) fn write_block_as<E>(
    st: &State,
    enc: &mut E,
    id: StreamId,
    promised: Option<StreamId>,
    end_stream: bool,
    f: impl FnOnce(&mut E, &mut Vec<u8>),
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.resize(start + FRAME_HEADER_LEN, 0);
    let first = match promised {
        Some(p) => {
            out.extend_from_slice(&p.get().to_be_bytes());
            FrameKind::PushPromise
        }
        None => FrameKind::Headers,
    };
    f(enc, out);
    let body = start + FRAME_HEADER_LEN;
    let len = out.len() - body;
    let max = (st.peer.max_frame_size as usize).max(1);
    let es = if end_stream { flags::END_STREAM } else { 0 };
    let put = |out: &mut Vec<u8>, at: usize, h: FrameHeader| {
        if let Some(dst) = out.get_mut(at..at + FRAME_HEADER_LEN) {
            dst.copy_from_slice(&h.to_bytes());
        }
    };
    let len32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    if len <= max {
        let h = FrameHeader::new(first, es | flags::END_HEADERS, id, len32(len));
        put(out, start, h);
        return;
    }
    // RFC 9113 §4.3: "Field blocks MUST be transmitted as a contiguous
    // sequence of frames": HEADERS without END_HEADERS, then CONTINUATION
    // frames, the last one with END_HEADERS.
    let n_cont = (len - max).div_ceil(max);
    out.resize(out.len() + FRAME_HEADER_LEN * n_cont, 0);
    // Move chunks back to front so no source is overwritten before it is
    // copied.
    for i in (1..=n_cont).rev() {
        let src = body + i * max;
        let chunk = (len - i * max).min(max);
        let dst = start + i * (FRAME_HEADER_LEN + max) + FRAME_HEADER_LEN;
        out.copy_within(src..src + chunk, dst);
        let f = if i == n_cont { flags::END_HEADERS } else { 0 };
        let h = FrameHeader::new(FrameKind::Continuation, f, id, len32(chunk));
        put(out, dst - FRAME_HEADER_LEN, h);
    }
    put(out, start, FrameHeader::new(first, es, id, len32(max)));
}
