//! Sending response bodies of the HTTP/2 server: round-robin (`--priorities off`) or in
//! RFC 9218 order ([`crate::sched::Scheduler`]), one DATA frame at a time, bounded by the
//! flow-control windows and the output queue. A child module of `http2` (it works on the
//! connection's private state).

use h2lab_wire::frame::{ErrorCode, StreamId};
use h2lab_wire::priority::ExtPriority;

use super::H2;
use crate::body::Body;
use crate::log::warn;
use crate::out::{Out, TOTAL_HIGH_WATER};

/// Most bytes queued in user space before the RFC 9218 scheduler stops producing (four
/// default-size frames) while the socket cannot take everything at once (a slow link).
/// Larger amounts are written with fewer system calls but are out of the scheduler's reach
/// once queued. The budget follows the socket: twice what it took since the previous turn,
/// at least this and at most [`TOTAL_HIGH_WATER`]; on a fast path such as loopback what the
/// socket drains at once costs no priority, and 64 KiB writes would cost a poll round each.
pub(super) const PRIORITY_OUT_LIMIT: usize = 64 * 1024;

/// What [`H2::send_frame`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// No window: nothing sent.
    Blocked,
    /// A frame was queued; the stream has more.
    Sent,
    /// The last frame was queued; the stream left `sending`.
    Finished,
    /// The stream was dropped (gone, reset, or a body error); it left `sending`.
    Dropped,
}

impl H2 {
    /// Sends body data while the windows and the output high-water mark allow: in RFC 9218
    /// order ([`Scheduler`]) or round-robin, one frame per stream per pass.
    pub(super) fn pump(&mut self, out: &mut Out) {
        if self.prioritize {
            self.pump_prioritized(out);
            return;
        }
        loop {
            let mut progressed = false;
            let mut k = 0;
            while k < self.app.sending.len() {
                if out.is_full() {
                    return;
                }
                match self.send_frame(k, out) {
                    Step::Blocked => k += 1,
                    Step::Sent => {
                        progressed = true;
                        k += 1;
                    }
                    Step::Finished => progressed = true,
                    Step::Dropped => {}
                }
            }
            if !progressed {
                return;
            }
        }
    }

    /// RFC 9218 order: one frame at a time to the stream the scheduler picks among those
    /// that can send. Stops producing once the budget (from [`PRIORITY_OUT_LIMIT`]) waits in
    /// the queue:
    /// what is queued can no longer be reordered, so a response that becomes urgent later
    /// waits behind at most that much (plus the socket's unsent bytes, bounded by
    /// TCP_NOTSENT_LOWAT).
    fn pump_prioritized(&mut self, out: &mut Out) {
        let written = out.written();
        if written != self.seen_written {
            // Keep about twice what the socket took since the last turn: a fast socket gets
            // large writes, a slow one (TCP_NOTSENT_LOWAT) a queue the scheduler still owns.
            let took = usize::try_from(written - self.seen_written).unwrap_or(usize::MAX);
            self.seen_written = written;
            self.budget = took
                .saturating_mul(2)
                .clamp(PRIORITY_OUT_LIMIT, TOTAL_HIGH_WATER);
        }
        while !out.is_full() && out.len() < self.budget {
            let conn = &self.conn;
            let app = &self.app;
            let candidates = app.sending.iter().filter_map(|&id| {
                let slot = *app.by_id.get(&id)?;
                let s = app.slots.get(slot)?;
                let remaining = s.cursor.as_ref().map_or(0, |c| c.remaining());
                let can = remaining == 0 || conn.send_capacity(StreamId::new(id)) > 0;
                can.then_some((id, s.prio))
            });
            let Some(id) = self.sched.pick(candidates) else {
                return;
            };
            let Some(k) = self.app.sending.iter().position(|&s| s == id) else {
                return;
            };
            let prio = self
                .app
                .slot(StreamId::new(id))
                .map_or(ExtPriority::DEFAULT, |s| s.prio);
            // A non-incremental pick stays the pick until it finishes or blocks: within one
            // pump the candidates only leave (windows open and requests arrive with input),
            // so its frames go out back to back without asking the scheduler again (one pass
            // over every sending stream per DATA frame was the cost of priorities on large
            // responses). Incremental streams take turns frame by frame.
            let mut first = true;
            loop {
                match self.send_frame(k, out) {
                    Step::Blocked if first => return,
                    Step::Blocked => break,
                    step => {
                        self.sched.served(id, prio);
                        if step != Step::Sent
                            || prio.incremental
                            || out.is_full()
                            || out.len() >= self.budget
                        {
                            break;
                        }
                    }
                }
                first = false;
            }
        }
    }

    /// Sends one DATA frame of `sending[k]`.
    fn send_frame(&mut self, k: usize, out: &mut Out) -> Step {
        let frame = self.conn.peer_settings().max_frame_size as usize;
        let id = StreamId::new(self.app.sending[k]);
        let cap = self.conn.send_capacity(id);
        let Some(&slot) = self.app.by_id.get(&id.get()) else {
            self.app.sending.remove(k);
            return Step::Dropped;
        };
        let s = &mut self.app.slots[slot];
        let Some(cursor) = s.cursor.as_mut() else {
            self.app.sending.remove(k);
            return Step::Dropped;
        };
        let remaining = cursor.remaining();
        if cap == 0 && remaining > 0 {
            return Step::Blocked;
        }
        let want = (remaining.min(cap as u64) as usize).min(frame);
        let sent = if let Some(chunk) = cursor.static_chunk(want) {
            // Zero copy: the frame header goes into the queue, the payload is
            // spliced in right behind it from static memory.
            let fin = chunk.len() as u64 == remaining;
            match self
                .conn
                .send_data_header(id, chunk.len(), fin, out.bytes())
            {
                Ok(n) => {
                    out.splice(chunk.get(..n).unwrap_or_default());
                    cursor.advance(n);
                    Ok(fin && n == chunk.len())
                }
                Err(e) => Err(e),
            }
        } else if let Body::File(..) = cursor.body {
            self.scratch.clear();
            if let Err(e) = cursor.copy_into(&s.dynamic, &mut self.scratch, want) {
                warn!("reading a file body: {e}");
                self.conn.reset(id, ErrorCode::INTERNAL_ERROR, out.bytes());
                self.app.close(id);
                return Step::Dropped;
            }
            let fin = cursor.remaining() == 0;
            // The capacity was checked: all of it is queued.
            self.conn
                .send_data(id, &self.scratch, fin, out.bytes())
                .map(|_| fin)
        } else {
            let chunk = cursor.chunk(&s.dynamic, want);
            let fin = chunk.len() as u64 == remaining;
            match self.conn.send_data(id, chunk, fin, out.bytes()) {
                Ok(n) => {
                    cursor.advance(n);
                    Ok(fin && n == chunk.len())
                }
                Err(e) => Err(e),
            }
        };
        match sent {
            Ok(true) => {
                self.app.close(id); // removes from `sending` at index k
                Step::Finished
            }
            Ok(false) => Step::Sent,
            Err(_) => {
                self.app.close(id);
                Step::Dropped
            }
        }
    }
}
