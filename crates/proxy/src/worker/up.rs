//! The worker's upstream side: driving upstream connections (connect, write, read with
//! back-pressure, protocol processing), returning them to the pool, waking clients that wait
//! for an h2c-mux stream slot, and failing their exchanges when a connection ends.

use super::{Worker, HIGH, UP_MAX_IN, UP_READ_CHUNK};
use crate::config::UpstreamProtocol;
use crate::upstream::UpKind;
use h2lab_wire::h2::StreamId;

impl Worker {
    pub(super) fn drive_up(&mut self, j: usize) {
        let Some(u) = self.ups.at(j) else { return };
        if !u.connected {
            match u.sock.check_connected() {
                Ok(true) => u.connected = true,
                Ok(false) => return,
                Err(_) => return self.fail_up(j, true),
            }
        }
        let was_high = u.out.len() > HIGH;
        if u.sock.flush(&mut u.out).is_err() {
            return self.fail_up(j, false);
        }
        if u.closing && u.out.is_empty() {
            return self.fail_up(j, false);
        }
        if was_high && u.out.len() <= HIGH {
            // Request bodies waiting for room can go on.
            let fronts = &mut self.fronts;
            let touched = &mut self.touched;
            u.for_each_front(|i, g| {
                if fronts.get(i, g).is_some_and(|f| !f.req_done) {
                    touched.push(i);
                }
            });
        }
        // HTTP/1.x: a client with too much queued stops its upstream connection. h2c: every
        // stream has its own window, returned as its client drains (`return_window`), so the
        // connection is always read and a slow client stalls only its own stream.
        let mut paused = false;
        if let UpKind::H1 { .. } = u.kind {
            let fronts = &mut self.fronts;
            u.for_each_front(|i, g| {
                if fronts.get(i, g).is_some_and(|f| f.out.len() > HIGH) {
                    paused = true;
                }
            });
        }
        let mut eof = false;
        if u.want_read && !paused {
            self.spare.lend(&mut u.inbuf);
            match u.sock.fill(&mut u.inbuf, UP_MAX_IN, UP_READ_CHUNK, u.hup) {
                Ok(fl) => {
                    eof = fl.eof;
                    if fl.blocked {
                        u.want_read = false;
                    }
                }
                Err(_) => eof = true,
            }
        }
        let mut alive = true;
        if !u.inbuf.is_empty() || eof {
            let cfg = &self.shared.config;
            alive = u.process(
                eof,
                cfg.protocol == UpstreamProtocol::H1,
                &mut self.fronts,
                &mut self.lines,
                &mut self.stats,
                &mut self.touched,
                self.now,
                cfg.upstream_timeout,
            );
        }
        if !alive {
            u.closing = true;
            let _ = u.sock.flush(&mut u.out);
            self.queue_touched();
            return self.fail_up(j, false);
        }
        if let UpKind::H2 { conn, streams } = &mut u.kind {
            for &(id, i, g) in streams.iter() {
                if let Some(f) = self.fronts.get(i, g) {
                    if f.unreleased > 0 && f.out.len() <= HIGH {
                        let n = std::mem::take(&mut f.unreleased);
                        conn.release_stream_window(StreamId::new(id), n, u.out.tail());
                    }
                }
            }
        }
        if u.sock.flush(&mut u.out).is_err() {
            self.queue_touched();
            return self.fail_up(j, false);
        }
        // Nothing unread: the storage goes back for the next connection to read into.
        self.spare.take_back(&mut u.inbuf);
        let again = u.want_read && !paused && u.inbuf.len() < UP_MAX_IN;
        self.queue_touched();
        self.after_stream_end(j);
        if again {
            self.queue_up(j);
        }
    }

    /// h2c: returns to the upstream the window of the response bytes client `i` no longer
    /// holds queued (at most [`HIGH`] left), so that its stream may send more.
    pub(super) fn return_window(&mut self, i: usize) {
        let Some(f) = self.fronts.at(i) else { return };
        if f.unreleased == 0 || f.out.len() > HIGH {
            return;
        }
        let n = std::mem::take(&mut f.unreleased);
        let Some(l) = f.link else { return };
        let Some(u) = self.ups.get(l.up, l.gen) else {
            return;
        };
        if let UpKind::H2 { conn, .. } = &mut u.kind {
            let before = u.out.len();
            conn.release_stream_window(StreamId::new(l.stream), n, u.out.tail());
            if u.out.len() > before {
                self.queue_up(l.up);
            }
        }
    }

    /// After an exchange ended on connection `j`: back to the pool, or wake a waiting client.
    pub(super) fn after_stream_end(&mut self, j: usize) {
        let Some(u) = self.ups.at(j) else { return };
        if self.shared.config.protocol == UpstreamProtocol::H2cMux {
            let free = match &u.kind {
                // A retired connection takes no stream, but its clients may open a new one.
                UpKind::H2 { .. } if u.retired => usize::MAX,
                UpKind::H2 { conn, streams } => {
                    if conn.can_open_stream() {
                        (self.shared.config.streams as usize).saturating_sub(streams.len())
                    } else {
                        0
                    }
                }
                UpKind::H1 { .. } => 0,
            };
            let closing = match &u.kind {
                UpKind::H2 { conn, streams } => {
                    streams.is_empty() && (conn.goaway_received().is_some() || u.retired)
                }
                UpKind::H1 { .. } => false,
            };
            if closing {
                // Drained after a GOAWAY (or retired): close; new requests open a new one.
                self.fail_up(j, false);
                self.wake_waiting(usize::MAX);
                return;
            }
            self.wake_waiting(free);
            return;
        }
        if u.in_flight() == 0 && u.used > 0 && !u.idle && u.connected {
            self.release(j);
        }
    }

    pub(super) fn wake_waiting(&mut self, mut n: usize) {
        while n > 0 {
            let Some((i, g)) = self.waiting.pop_front() else {
                return;
            };
            // A client that stopped waiting (its wait timed out) takes no slot.
            if let Some(f) = self.fronts.get(i, g).filter(|f| f.waiting) {
                f.waiting = false;
                self.queue_front(i);
                n -= 1;
            }
        }
    }

    /// Returns an idle connection to its pool (or closes it: HTTP/1.0, pool full).
    pub(super) fn release(&mut self, j: usize) {
        let cfg = &self.shared.config;
        let gen = self.ups.gen(j);
        let Some(u) = self.ups.at(j) else { return };
        let reusable = match &u.kind {
            UpKind::H1 { .. } => cfg.protocol == UpstreamProtocol::H1,
            UpKind::H2 { conn, .. } => conn.can_open_stream() && !u.retired,
        };
        let t = u.target;
        let ups = &mut self.ups;
        let list = &mut self.idle[t];
        if list.len() >= cfg.pool {
            // Entries of connections closed since are dropped only when they would keep
            // this one out (the checkout skips them anyway): no scan per request.
            list.retain(|&(k, g)| ups.get(k, g).is_some());
        }
        if reusable && list.len() < cfg.pool {
            list.push((j, gen));
            if let Some(u) = self.ups.at(j) {
                u.idle = true;
            }
        } else {
            self.fail_up(j, false);
        }
    }

    /// Closes upstream connection `j`; its exchanges get 502.
    pub(super) fn fail_up(&mut self, j: usize, refused: bool) {
        let Some(mut u) = self.ups.remove(j) else {
            return;
        };
        self.spare.take_back(&mut u.inbuf);
        u.fail_all(
            &mut self.fronts,
            502,
            refused,
            &mut self.stats,
            &mut self.touched,
        );
        self.queue_touched();
        if self.shared.config.protocol == UpstreamProtocol::H2cMux {
            self.wake_waiting(usize::MAX);
        }
    }
}
