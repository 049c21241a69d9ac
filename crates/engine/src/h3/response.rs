//! Response streams of [`H3Session`]: their bytes through the wire crate's
//! [`RequestStream`](h2lab_wire::h3::request::RequestStream), and the sections that wait
//! for QPACK inserts (RFC 9204 §2.1.2), resumed when the server's encoder stream delivers
//! them.

use h2lab_quic::quinn_proto::StreamId;
use h2lab_wire::h3::ErrorCode;

use super::{H3Session, Sink};
use crate::session::SessionEvents;

impl H3Session {
    /// Feeds response bytes of request stream `id` (`fin`: the stream ended after them);
    /// a section waiting for inserts holds the stream's later bytes. A connection error's
    /// code on failure.
    pub(super) fn feed_request(
        &mut self,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
        ev: &mut dyn SessionEvents,
    ) -> Option<ErrorCode> {
        let r = self.reqs.get_mut(&id)?;
        if r.blocked {
            // The response section waits for inserts: so do the bytes after it.
            r.inbuf.extend_from_slice(bytes);
            r.fin |= fin;
            return None;
        }
        let mut sink = Sink {
            slot: r.slot,
            ev: &mut *ev,
            encoded: 0,
            decoded: 0,
            done: &mut r.done,
            hinting: false,
        };
        let res = if r.inbuf.is_empty() {
            r.recv.recv(bytes, fin, &mut self.qdec, &mut sink).map(|p| {
                r.inbuf
                    .extend_from_slice(bytes.get(p.consumed..).unwrap_or_default());
                p.blocked
            })
        } else {
            r.inbuf.extend_from_slice(bytes);
            let input = std::mem::take(&mut r.inbuf);
            let res = r.recv.recv(&input, fin, &mut self.qdec, &mut sink);
            let used = res.as_ref().map_or(0, |p| p.consumed);
            r.inbuf = input;
            r.inbuf.drain(..used);
            res.map(|p| p.blocked)
        };
        let held = sink.encoded;
        match res {
            Ok(blocked) => {
                if blocked {
                    self.sections_blocked += 1;
                    r.blocked = true;
                    r.fin |= fin;
                    r.held_encoded = held;
                    return None;
                }
                if r.done {
                    let slot = r.slot;
                    self.forget(id);
                    ev.complete(slot);
                }
                None
            }
            Err(e) => Some(e.code()),
        }
    }

    /// Decodes the response sections the encoder stream's inserts released (oldest
    /// first), then the bytes their streams received meanwhile.
    pub(super) fn resume_unblocked(&mut self, ev: &mut dyn SessionEvents) -> Option<ErrorCode> {
        while let Some(sid) = self.qdec.next_unblocked() {
            let Some(id) = self.reqs.keys().copied().find(|k| u64::from(*k) == sid) else {
                // Not a request of ours any more: drop its section.
                self.qdec.cancel_stream(sid);
                continue;
            };
            let r = self.reqs.get_mut(&id)?;
            let mut sink = Sink {
                slot: r.slot,
                ev: &mut *ev,
                encoded: r.held_encoded,
                decoded: 0,
                done: &mut r.done,
                hinting: false,
            };
            match r.recv.resume(&mut self.qdec, &mut sink) {
                Ok(true) => {}
                // `next_unblocked` named it: it cannot still wait.
                Ok(false) => return Some(ErrorCode::QPACK_DECOMPRESSION_FAILED),
                Err(e) => return Some(e.code()),
            }
            r.blocked = false;
            r.held_encoded = 0;
            let fin = std::mem::take(&mut r.fin);
            let input = std::mem::take(&mut r.inbuf);
            if let Some(e) = self.feed_request(id, &input, fin, ev) {
                return Some(e);
            }
            if let Some(r) = self.reqs.get_mut(&id) {
                if r.inbuf.is_empty() {
                    // Keep the buffer for the stream's next bytes.
                    let mut input = input;
                    input.clear();
                    r.inbuf = input;
                }
            }
        }
        None
    }
}
