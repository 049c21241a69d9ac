//! Requests of [`H3Session`]: each on a new bidirectional stream, its QPACK section (from the
//! pre-encoded template) in one HEADERS frame, then the request body (`-d`) as flow control
//! allows, and the stream finished after its last byte.

use super::*;

impl H3Session {
    /// Sends request `uri_idx` (index into the template's paths) for `slot` on a new stream.
    pub fn submit(
        &mut self,
        conn: &mut Connection,
        slot: u32,
        uri_idx: usize,
    ) -> Result<(), SubmitError> {
        if !self.can_submit() {
            return Err(SubmitError::WouldBlock);
        }
        // None: the server's MAX_STREAMS is reached (credit comes back as streams close).
        let id = conn
            .streams()
            .open(Dir::Bi)
            .ok_or(SubmitError::WouldBlock)?;
        self.section.clear();
        self.template.encode_next(
            u64::from(id),
            uri_idx,
            &mut self.section,
            &mut self.encoder_scratch,
        );
        self.frame.clear();
        write_headers(&self.section, &mut self.frame);
        if let Some(b) = &self.body {
            h2lab_wire::h3::request::write_data_header(b.len() as u64, &mut self.frame);
        }
        if self.frame_shared != self.frame[..] {
            self.frame_shared = Bytes::copy_from_slice(&self.frame);
        }
        let mut head = [self.frame_shared.clone()];
        let mut s = conn.send_stream(id);
        // A new stream has its whole initial window (≥ 1 KiB in practice); a request
        // head that does not fit is an error of ours, not the server's.
        match s.write_chunks(&mut head) {
            Ok(w) if w.bytes == self.frame.len() => {}
            _ => {
                let _ = s.reset(code(ErrorCode::H3_REQUEST_CANCELLED));
                return Err(SubmitError::WouldBlock);
            }
        }
        let body_sent = if self.body.is_some() {
            self.bodies_pending += 1;
            Some(0)
        } else {
            let _ = s.finish();
            None
        };
        let req = match self.pool.pop() {
            Some(mut r) => {
                r.slot = slot;
                r.recv = RequestStream::new(Role::Client, u64::from(id));
                r.inbuf.clear();
                r.done = false;
                r.body_sent = body_sent;
                r.blocked = false;
                r.fin = false;
                r.held_encoded = 0;
                r
            }
            None => Req {
                slot,
                recv: RequestStream::new(Role::Client, u64::from(id)),
                inbuf: Vec::new(),
                done: false,
                body_sent,
                blocked: false,
                fin: false,
                held_encoded: 0,
            },
        };
        self.reqs.insert(id, req);
        self.write_body(conn, id);
        Ok(())
    }

    /// Writes as much of request `id`'s body as flow control allows; finishes the stream
    /// once it is all written.
    pub(super) fn write_body(&mut self, conn: &mut Connection, id: StreamId) {
        // The body first: without `-d` there is nothing to look up.
        let Some(body) = &self.body else {
            return;
        };
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        let Some(mut off) = r.body_sent else {
            return;
        };
        let mut s = conn.send_stream(id);
        while off < body.len() {
            match s.write(body.get(off..).unwrap_or_default()) {
                Ok(n) if n > 0 => off += n,
                // Blocked: a Writable event comes when credit does. Stopped or closed: the
                // response (or its reset) tells what happened.
                _ => break,
            }
        }
        if off >= body.len() {
            let _ = s.finish();
            r.body_sent = None;
            self.bodies_pending = self.bodies_pending.saturating_sub(1);
        } else {
            r.body_sent = Some(off);
        }
    }

    /// Stops the bodies of finished requests and continues those waiting for flow control.
    pub(super) fn write_bodies(&mut self, conn: &mut Connection) {
        for id in self.abandon.drain(..) {
            let _ = conn.send_stream(id).reset(code(ErrorCode::H3_NO_ERROR));
        }
        if self.bodies_pending == 0 {
            return;
        }
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        ids.extend(
            self.reqs
                .iter()
                .filter(|(_, r)| r.body_sent.is_some())
                .map(|(id, _)| *id),
        );
        for id in &ids {
            self.write_body(conn, *id);
        }
        self.scratch_ids = ids;
    }
}
