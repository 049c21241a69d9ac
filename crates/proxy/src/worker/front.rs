//! The worker's client side: reading and processing client connections (HTTP/1.1 request
//! heads, HTTP/2 streams), writing their responses, and ending them.

use h2lab_wire::h2::{ErrorCode, StreamId};

use super::{Worker, FRONT_MAX_IN, HIGH};
use crate::front::{FState, Link, Resp};
use crate::upstream::UpKind;

impl Worker {
    pub(super) fn drive_front(&mut self, i: usize) {
        let now = self.now;
        let Some(f) = self.fronts.at(i) else { return };
        let backlogged = f.h2.as_ref().is_some_and(|h| h.backlogged);
        if f.want_read && !f.read_eof && f.inbuf.len() < FRONT_MAX_IN && !backlogged {
            match f.io.fill(&mut f.inbuf, FRONT_MAX_IN, f.hup) {
                Ok(fill) => {
                    if fill.got > 0 {
                        f.last_active = now;
                    }
                    f.read_eof |= fill.eof;
                    if fill.blocked {
                        f.want_read = false;
                    }
                }
                Err(_) => return self.kill_front(i),
            }
        }
        if f.io.handshaking() {
            if f.read_eof || f.io.flush(&mut f.out).is_err() {
                self.kill_front(i);
            }
            return;
        }
        if f.fresh {
            // HTTP/2 by ALPN (TLS) or by the connection preface (cleartext).
            const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
            let h2 = if f.io.is_tls() {
                f.io.alpn() == Some(b"h2")
            } else {
                let d = f.inbuf.data();
                if d.len() < PREFACE.len() && PREFACE.starts_with(d) && !f.read_eof {
                    // Not enough bytes to tell yet.
                    return self.flush_front(i);
                }
                d.starts_with(PREFACE)
            };
            f.fresh = false;
            if h2 {
                let h = crate::front_h2::H2Front::new(&self.shared.config.front, &mut f.out);
                f.h2 = Some(Box::new(h));
                f.state = FState::Exchange;
            }
        }
        if f.h2.is_some() {
            if f.read_eof {
                return self.kill_front(i);
            }
            self.drive_h2(i);
            self.flush_front(i);
            if let Some(f) = self.fronts.at(i) {
                let backlogged = f.h2.as_ref().is_some_and(|h| h.backlogged);
                if f.want_read && !f.read_eof && f.inbuf.len() < FRONT_MAX_IN && !backlogged {
                    self.queue_front(i);
                }
            }
            return;
        }
        self.process_front(i);
        if let Some(f) = self.fronts.at(i) {
            if f.read_eof && f.state == FState::Exchange && !f.resp.done {
                // The client went away: cancel the upstream request.
                return self.kill_front(i);
            }
        }
        self.flush_front(i);
        // Readiness not used up (the input buffer was full) and room again: go on reading.
        if let Some(f) = self.fronts.at(i) {
            if f.want_read
                && !f.read_eof
                && f.inbuf.len() < FRONT_MAX_IN
                && f.state != FState::Closing
            {
                self.queue_front(i);
            }
        }
    }

    pub(super) fn flush_front(&mut self, i: usize) {
        let Some(f) = self.fronts.at(i) else { return };
        if let Some((p, pg)) = f.parent {
            // A stream of an HTTP/2 connection: that connection moves the bytes (and reads
            // again once request bodies drained below the backlog).
            let drained = f.inbuf.len() <= crate::front_h2::BACKLOG;
            let wake = !f.out.is_empty()
                || f.resp.done
                || f.state == FState::Closing
                || (drained
                    && self
                        .fronts
                        .get(p, pg)
                        .and_then(|pf| pf.h2.as_ref())
                        .is_some_and(|h| h.backlogged));
            if wake {
                self.queue_front(p);
            }
            return;
        }
        let was_high = f.out.len() > HIGH;
        let before = f.out.len();
        if f.io.flush(&mut f.out).is_err() {
            return self.kill_front(i);
        }
        f.wrote |= f.out.len() < before;
        let link = f.link;
        if f.state == FState::Closing && f.out.is_empty() && !f.io.wants_write() {
            f.io.shutdown_write();
            return self.kill_front(i);
        }
        if f.state == FState::Head && f.read_eof && f.inbuf.is_empty() && f.out.is_empty() {
            return self.kill_front(i);
        }
        if let Some(l) = link {
            if was_high && f.out.len() <= HIGH {
                // The upstream stopped reading for this client: it may go on.
                self.queue_up(l.up);
            }
        }
        self.return_window(i);
    }

    pub(super) fn kill_front(&mut self, i: usize) {
        let Some(f) = self.fronts.remove(i) else {
            return;
        };
        if let Some(h2) = f.h2 {
            for st in h2.streams {
                if self.fronts.get(st.child.0, st.child.1).is_some() {
                    self.kill_front(st.child.0);
                }
            }
        }
        if let Some(link) = f.link {
            if !f.resp.done {
                self.stats.client_cancels += 1;
            }
            self.cancel(link);
        }
    }

    /// Stops the upstream side of an exchange (client gone, timeout).
    pub(super) fn cancel(&mut self, link: Link) {
        let Some(u) = self.ups.get(link.up, link.gen) else {
            return;
        };
        match &mut u.kind {
            UpKind::H1 { .. } => self.fail_up(link.up, false),
            UpKind::H2 { conn, streams } => {
                conn.reset(StreamId::new(link.stream), ErrorCode::CANCEL, u.out.tail());
                u.cancels += 1;
                u.retired |= u.cancels >= crate::upstream::CANCELS_PER_CONNECTION;
                streams.retain(|s| s.0 != link.stream);
                self.queue_up(link.up);
                self.after_stream_end(link.up);
            }
        }
    }

    pub(super) fn process_front(&mut self, i: usize) {
        loop {
            let Some(f) = self.fronts.at(i) else { return };
            match f.state {
                FState::Closing => return,
                FState::Head => {
                    if f.waiting || f.out.len() > HIGH {
                        return;
                    }
                    if f.inbuf.is_empty() {
                        if f.read_eof {
                            f.state = FState::Closing;
                        }
                        f.head_started = None;
                        return;
                    }
                    if f.head_started.is_none() {
                        f.head_started = Some(self.now);
                    }
                    if !self.start_exchange(i) {
                        return;
                    }
                }
                FState::Exchange => {
                    let progress = self.forward_body(i);
                    let Some(f) = self.fronts.at(i) else { return };
                    if f.resp.done && (f.req_done || f.link.is_none()) {
                        if !f.req_done {
                            // The rest of the request body was not read.
                            f.persist = false;
                        }
                        f.state = if f.persist {
                            FState::Head
                        } else {
                            FState::Closing
                        };
                        f.inbuf.consume(f.held);
                        f.held = 0;
                        f.retried = false;
                        f.body = None;
                        f.pending.clear();
                        f.req_trailers.clear();
                        f.unreleased = 0;
                        f.body_ended = false;
                        f.req_done = false;
                        f.resp = Resp::default();
                        f.is_head = false;
                        f.link = None;
                        f.deadline = None;
                        continue;
                    }
                    if !progress {
                        return;
                    }
                }
            }
        }
    }
}
