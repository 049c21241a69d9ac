//! What the server sends on an [`H3Session`]: reading its streams (responses, and its
//! control and QPACK streams), and acting on GOAWAY and stream resets.

use super::*;

impl H3Session {
    /// Reads what stream `id` has (a response stream, or one of the server's
    /// unidirectional streams) and acts on it: responses, SETTINGS, GOAWAY, resets.
    pub(super) fn read(&mut self, conn: &mut Connection, id: StreamId, ev: &mut dyn SessionEvents) {
        let bidi = id.dir() == Dir::Bi;
        let mut rs = conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        let mut fin = false;
        let mut reset = None;
        let mut err: Option<ErrorCode> = None;
        let mut news = ControlNews::default();
        // Each chunk is fed when the next read says what follows it, so that the last one
        // goes with the stream's end in one call (a response is usually one chunk and the
        // FIN: one pass through the stream's parser instead of two).
        let mut held: Option<bytes::Bytes> = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) if err.is_none() => {
                    if let Some(prev) = held.replace(chunk.bytes) {
                        err = self.feed(id, bidi, &prev, false, ev, &mut news);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(c)) => {
                    reset = Some(c.into_inner());
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        if err.is_none() && (fin || held.is_some()) {
            let last = held.take().unwrap_or_default();
            err = self.feed(id, bidi, &last, fin, ev, &mut news);
        }
        if let Some(s) = news.settings {
            self.template.set_peer_settings(
                usize::try_from(s.qpack_max_table_capacity).unwrap_or(usize::MAX),
                usize::try_from(s.qpack_blocked_streams).unwrap_or(usize::MAX),
            );
        }
        if let Some(g) = news.goaway {
            self.on_goaway(conn, g, ev);
        }
        if let (Some(c), true) = (reset, bidi) {
            self.on_reset(id, c, ev);
        }
        if err.is_none() && !bidi {
            // Inserts may have arrived: decode the sections that waited for them.
            err = self.resume_unblocked(ev);
        }
        if let Some(c) = err {
            self.close(conn, c);
        }
    }

    /// Feeds bytes of stream `id` to its reader: a response stream's parser, or a
    /// unidirectional stream's (control, QPACK).
    fn feed(
        &mut self,
        id: StreamId,
        bidi: bool,
        bytes: &[u8],
        fin: bool,
        ev: &mut dyn SessionEvents,
        news: &mut ControlNews,
    ) -> Option<ErrorCode> {
        if bidi {
            self.feed_request(id, bytes, fin, ev)
        } else {
            self.peer
                .feed(id, bytes, fin, &mut self.qdec, &mut self.template, news)
                .err()
        }
    }

    /// GOAWAY(`g`): requests on streams at or above `g` were not processed.
    fn on_goaway(&mut self, conn: &mut Connection, g: u64, ev: &mut dyn SessionEvents) {
        if self.goaway.is_none() {
            // The code is the connection's, known only at the close: 0 here.
            ev.goaway(u32::try_from(g).unwrap_or(u32::MAX), 0);
        }
        self.goaway = Some(g);
        let above: Vec<StreamId> = self
            .reqs
            .keys()
            .copied()
            .filter(|id| u64::from(*id) >= g)
            .collect();
        for id in above {
            let _ = conn
                .recv_stream(id)
                .stop(code(ErrorCode::H3_REQUEST_CANCELLED));
            if let Some(r) = self.forget(id) {
                ev.refused(r);
            }
        }
    }

    /// The server reset request stream `id` with `c`.
    fn on_reset(&mut self, id: StreamId, c: u64, ev: &mut dyn SessionEvents) {
        let Some(slot) = self.forget(id) else {
            return;
        };
        let not_processed = c == ErrorCode::H3_REQUEST_REJECTED.0
            || self.goaway.is_some_and(|g| u64::from(id) >= g);
        if not_processed {
            ev.refused(slot);
        } else {
            ev.reset(slot, u32::try_from(c).unwrap_or(u32::MAX));
        }
    }

    /// Drops request `id` (its buffers are kept for the next request); its slot.
    pub(super) fn forget(&mut self, id: StreamId) -> Option<u32> {
        let r = self.reqs.remove(&id)?;
        if !r.done {
            // Reading abandoned before the end (reset, GOAWAY): RFC 9204 §4.4.2 Stream
            // Cancellation (drops a held section; nothing is sent with no table).
            self.qdec.cancel_stream(u64::from(id));
        }
        if r.body_sent.is_some() {
            // The response ended before the body was all sent: stop sending it.
            self.bodies_pending = self.bodies_pending.saturating_sub(1);
            self.abandon.push(id);
        }
        let slot = r.slot;
        if self.pool.len() < self.max_streams {
            self.pool.push(r);
        }
        Some(slot)
    }
}
