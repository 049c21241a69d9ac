//! Server push (RFC 9113 §8.4): sending PUSH_PROMISE in the server role.
//! Receiving it (client role) is in `recv/headers.rs`.

use crate::frame::StreamId;

use super::conn::{Connection, HeaderEncoder, Role};
use super::error::SendError;
use super::send::write_block_as;
use super::store::flag;

impl<E: HeaderEncoder> Connection<E> {
    /// Whether the peer lets us push now (server role): it did not send
    /// SETTINGS_ENABLE_PUSH = 0, no GOAWAY, no error, and one more pushed
    /// stream stays within its SETTINGS_MAX_CONCURRENT_STREAMS.
    pub fn can_push(&self) -> bool {
        let st = &self.st;
        st.role == Role::Server
            && st.peer.enable_push
            && !st.awaiting_settings
            && st.error.is_none()
            && st.goaway_recv.is_none()
            && st.goaway_sent.is_none()
            && st.next_local_id <= StreamId::MAX.get()
            && st.can_open_stream()
    }

    /// Promise a response (server role): send PUSH_PROMISE on the client's
    /// stream `parent` with the promised request's header section (written
    /// by `block`, as in [`send_request`](Connection::send_request)) and
    /// return the promised stream, now "reserved (local)". Answer it with
    /// [`send_headers`](Connection::send_headers) and
    /// [`send_data`](Connection::send_data) like any response; the client
    /// cancels it with RST_STREAM ([`Events::reset`](super::Events::reset)).
    ///
    /// The promised stream counts against the client's
    /// SETTINGS_MAX_CONCURRENT_STREAMS from the promise on (RFC 9113 §5.1.2
    /// only counts it once its HEADERS are sent; counting earlier is the
    /// conservative reading, and we send them right after).
    ///
    /// Errors, nothing written: [`SendError::WrongRole`] for a client;
    /// [`SendError::PushDisabled`] when the client sent
    /// SETTINGS_ENABLE_PUSH = 0 (or its SETTINGS have not arrived);
    /// [`SendError::WouldBlock`] at the client's concurrency limit;
    /// [`SendError::GoingAway`] after a GOAWAY; [`SendError::StreamClosed`]
    /// when `parent` is not a client stream we can still answer.
    pub fn send_push_promise(
        &mut self,
        parent: StreamId,
        block: impl FnOnce(&mut E, &mut Vec<u8>),
        out: &mut Vec<u8>,
    ) -> Result<StreamId, SendError> {
        let st = &mut self.st;
        if st.role != Role::Server {
            // RFC 9113 §8.4: "A client cannot push."
            return Err(SendError::WrongRole);
        }
        st.check_open()?;
        // RFC 9113 §6.5.2 SETTINGS_ENABLE_PUSH: "An endpoint MUST NOT send a
        // PUSH_PROMISE frame if it receives this parameter set to a value of
        // 0". Before the client's SETTINGS arrive we do not know: no push.
        if !st.peer.enable_push || st.awaiting_settings {
            return Err(SendError::PushDisabled);
        }
        if st.goaway_recv.is_some() || st.goaway_sent.is_some() {
            return Err(SendError::GoingAway);
        }
        // RFC 9113 §6.6: "PUSH_PROMISE frames MUST only be sent on a
        // peer-initiated stream that is in either the "open" or "half-closed
        // (remote)" state."
        match st.streams.get(parent) {
            Some(s) if !s.has(flag::LOCAL) && !s.has(flag::SEND_CLOSED) => {}
            _ => return Err(SendError::StreamClosed(parent)),
        }
        // RFC 9113 §5.1.2: "Endpoints MUST NOT exceed the limit set by their
        // peer."
        if !st.can_open_stream() {
            return Err(SendError::WouldBlock);
        }
        // RFC 9113 §5.1.1: "Streams initiated by the server MUST use
        // even-numbered stream identifiers", increasing, never reused.
        if st.next_local_id > StreamId::MAX.get() {
            return Err(SendError::StreamIdsExhausted);
        }
        let id = StreamId::new(st.next_local_id);
        st.next_local_id += 2;
        write_block_as(st, &mut self.enc, parent, Some(id), false, block, out);
        // RFC 9113 §5.1: "Sending a PUSH_PROMISE frame causes the stream to
        // become "reserved (local)"" — the client sends nothing on it but
        // RST_STREAM, PRIORITY and WINDOW_UPDATE, so receiving is closed.
        let stream = st.new_stream(id, flag::LOCAL | flag::RECV_CLOSED);
        st.streams.insert(stream);
        Ok(id)
    }

    /// [`send_push_promise`](Connection::send_push_promise) with the fields
    /// encoded by the connection's HPACK encoder.
    pub fn send_push_promise_fields(
        &mut self,
        parent: StreamId,
        fields: &[(&[u8], &[u8])],
        out: &mut Vec<u8>,
    ) -> Result<StreamId, SendError> {
        self.send_push_promise(
            parent,
            |enc, buf| enc.encoder().encode(fields.iter().copied(), buf),
            out,
        )
    }
}
