//! The fetcher's connection pool on the shared connection driver
//! ([`crate::conn`]): opening connections while requests wait (up to the
//! per-host limit), handing queued requests to connections that can take them,
//! one write per connection per turn, and requeueing what a lost connection
//! carried.

use std::sync::atomic::Ordering;
use std::time::Instant;

use mio::Token;

use super::events::{BatchState, Ev};
use super::{ConnRecord, Fetcher, MAX_ATTEMPTS, MAX_FAILED_CONNECTIONS};
use crate::conn::{AnySession, ConnEnd, Connection, Establish, ReadTurn, WriteHooks};
use crate::session::Session;

/// One connection of the pool.
pub(super) struct PoolConn {
    pub id: u32,
    pub link: Connection,
    pub out: Vec<u8>,
    pub out_pos: usize,
    /// Slot → job index.
    pub slots: Vec<Option<usize>>,
    pub free: Vec<u32>,
    pub completed: u64,
}

/// Counts written bytes.
struct Written<'a>(&'a mut u64);

impl WriteHooks for Written<'_> {
    fn before_write(&mut self) {}
    fn written(&mut self, n: usize) {
        *self.0 += n as u64;
    }
}

impl Fetcher {
    /// Closes every connection gracefully (HTTP/2 GOAWAY, TLS close_notify).
    pub fn close(&mut self) {
        for idx in 0..self.conns.len() {
            if let Some(c) = self.conns[idx].as_mut() {
                let mut out = std::mem::take(&mut c.out);
                c.link.goodbye(&mut out, c.out_pos);
            }
            self.drop_conn(idx);
        }
    }

    /// Hands queued requests to open connections; opens connections while requests
    /// wait for capacity and the pool has room.
    pub(super) fn schedule(&mut self, st: &mut BatchState) {
        for idx in 0..self.conns.len() {
            self.fill(idx, st);
        }
        if st.queue.is_empty() {
            return;
        }
        let per_conn = self.cfg.max_streams.max(1) as usize;
        let connecting = self
            .conns
            .iter()
            .flatten()
            .filter(|c| !c.link.is_open())
            .count();
        let live = self.open_connections();
        let mut capacity = connecting * per_conn;
        let mut live_now = live;
        while st.queue.len() > capacity && live_now < self.cfg.max_connections.max(1) as usize {
            if self.failed_conns >= MAX_FAILED_CONNECTIONS {
                break;
            }
            self.connect(st);
            capacity += per_conn;
            live_now += 1;
        }
    }

    /// Opens a new connection (a new id), starting at the first address. A QUIC connection
    /// that can send 0-RTT starts its session at once, so that its requests go out right
    /// behind the Initial.
    fn connect(&mut self, st: &mut BatchState) {
        let id = self.conns.len();
        let now = self.now();
        self.log.push(ConnRecord {
            id: u32::try_from(id).unwrap_or(u32::MAX),
            opened: now,
            ready: None,
            resumed: false,
            early_data: None,
            closed: None,
            protocol: None,
            completed: 0,
        });
        self.conns.push(None);
        if self.dial(id, 0) {
            if let Some(g) = &self.cfg.open_gauge {
                g.fetch_add(1, Ordering::Relaxed);
            }
            let early_now = self.conns[id]
                .as_ref()
                .is_some_and(|c| c.link.quic_early_ready());
            if early_now {
                self.drive(id, false, st);
            }
        }
    }

    /// Connects pool entry `idx`, trying addresses from `from` on. Returns whether
    /// a connection attempt is under way.
    fn dial(&mut self, idx: usize, from: usize) -> bool {
        let r = self
            .dialer
            .connect(self.poll.registry(), Token(idx), from, Instant::now());
        match r {
            Ok(link) => {
                let m = self.cfg.max_streams.max(1);
                if let Some(e) = self.conns.get_mut(idx) {
                    *e = Some(PoolConn {
                        id: u32::try_from(idx).unwrap_or(u32::MAX),
                        link,
                        out: Vec::with_capacity(4096),
                        out_pos: 0,
                        slots: vec![None; m as usize],
                        free: (0..m).rev().collect(),
                        completed: 0,
                    });
                }
                true
            }
            Err(end) => {
                self.conn_failed(idx, end);
                false
            }
        }
    }

    /// A connection ended before completing anything.
    fn conn_failed(&mut self, id: usize, end: ConnEnd) {
        self.failed_conns += 1;
        if self.first_error.is_none() {
            self.first_error = Some(end);
        }
        if let Some(r) = self.log.get_mut(id) {
            r.closed.get_or_insert(self.epoch.elapsed());
        }
    }

    /// Readiness for connection `idx`: connect/handshake progress, or a read turn.
    pub(super) fn drive(&mut self, idx: usize, read_closed: bool, st: &mut BatchState) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        if conn.link.is_open() {
            self.service(idx, read_closed, st);
            return;
        }
        match conn.link.establish() {
            Ok(Establish::Waiting | Establish::Progressed) => {}
            Ok(Establish::Ready) => self.on_open(idx, st),
            Err(ConnEnd::Connect { addr_idx, .. }) if addr_idx + 1 < self.dialer.addresses() => {
                // Like the bench client (and h2load): try the next address.
                if let Some(c) = self.conns.get_mut(idx).and_then(Option::take) {
                    c.link.discard(self.poll.registry());
                }
                if !self.dial(idx, addr_idx + 1) {
                    self.close_gauge();
                }
            }
            Err(end) => self.end_conn(idx, st, Some(end)),
        }
    }

    /// TCP/TLS is ready: pick the protocol, start the session.
    fn on_open(&mut self, idx: usize, st: &mut BatchState) {
        let now = self.now();
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let proto = match self.dialer.negotiate(&conn.link) {
            Ok((p, _fallback)) => p,
            Err(e) => {
                self.end_conn(idx, st, Some(ConnEnd::Negotiation(e)));
                return;
            }
        };
        self.dialer
            .start_session(&mut conn.link, proto, &mut conn.out);
        let resumed = conn.link.transport.resumed();
        let early = conn.link.offered_early();
        if let Some(r) = self.log.get_mut(idx) {
            r.ready = Some(now);
            r.resumed = resumed;
            r.protocol = Some(proto);
            // Until the handshake says otherwise (`settle_early`).
            r.early_data = early.then_some(false);
        }
        if early {
            // The requests go out now, in the first flight: read first, and the server's
            // answer (already there from a fast server) would complete the handshake before
            // they are written, so that they would leave in 1-RTT packets instead.
            self.fill(idx, st);
            self.flush(idx, st);
        }
        // Data may already be buffered behind the handshake.
        self.service(idx, true, st);
    }

    /// Reads everything available, then submits what the connection can take.
    fn service(&mut self, idx: usize, read_closed: bool, st: &mut BatchState) {
        let epoch = self.epoch;
        let Fetcher {
            conns,
            bufs,
            traffic,
            pushes,
            ..
        } = self;
        let Some(conn) = conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let PoolConn {
            link,
            out,
            slots,
            free,
            completed,
            id,
            ..
        } = conn;
        let turn = link.read(bufs, read_closed, |session, input| {
            traffic.bytes_read += input.len() as u64;
            let mut ev = Ev {
                conn: *id,
                slots: &mut *slots,
                free: &mut *free,
                st: &mut *st,
                traffic: &mut *traffic,
                completed: &mut *completed,
                now: epoch.elapsed(),
                pushes: &mut *pushes,
            };
            session.on_read(input, out, &mut ev)
        });
        let end = match turn {
            ReadTurn::Drained => None,
            ReadTurn::Ended(e) => Some(e),
            ReadTurn::Eof => {
                let mut ev = Ev {
                    conn: *id,
                    slots,
                    free,
                    st,
                    traffic,
                    completed,
                    now: epoch.elapsed(),
                    pushes,
                };
                Some(link.eof(&mut ev))
            }
        };
        if let Some(end) = end {
            self.end_conn(idx, st, Some(end));
            return;
        }
        if let Err(end) = self.settle_early(idx, st) {
            self.end_conn(idx, st, Some(end));
            return;
        }
        self.fill(idx, st);
    }

    /// Submits queued requests to connection `idx` while it accepts them.
    fn fill(&mut self, idx: usize, st: &mut BatchState) {
        let now = self.now();
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let Some(session) = conn.link.session.as_mut() else {
            return;
        };
        while !st.queue.is_empty() && session.can_submit() && !session.goaway_received() {
            let Some(slot) = conn.free.pop() else { break };
            let Some(&job) = st.queue.front() else { break };
            let Some(j) = st.jobs.get_mut(job) else { break };
            let before = conn.out.len();
            if session.submit(slot, j.rec.path, &mut conn.out).is_err() {
                conn.free.push(slot);
                break;
            }
            st.queue.pop_front();
            let bytes = match &*session {
                // HTTP/3 writes the HEADERS frame to the request's QUIC stream.
                AnySession::H3(h3) => h3.session.last_request_bytes(),
                _ => conn.out.len() - before,
            } as u64;
            self.traffic.request_header_bytes += bytes;
            j.rec.request_bytes = bytes;
            j.rec.conn = conn.id;
            j.rec.sent = now;
            j.rec.attempts += 1;
            j.got_status = false;
            j.body.clear();
            j.rec.body_bytes = 0;
            if let Some(s) = conn.slots.get_mut(slot as usize) {
                *s = Some(job);
            }
        }
    }

    /// Writes every connection's pending output; closes connections the protocol is
    /// done with.
    pub(super) fn flush_all(&mut self, st: &mut BatchState) {
        for idx in 0..self.conns.len() {
            self.flush(idx, st);
        }
    }

    /// Writes connection `idx`'s pending output; closes it if the protocol is done with it.
    fn flush(&mut self, idx: usize, st: &mut BatchState) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let mut written = Written(&mut self.traffic.bytes_written);
        match conn
            .link
            .flush(&mut conn.out, &mut conn.out_pos, &mut written)
        {
            None => {}
            Some(ConnEnd::ServerClosed) => self.end_conn(idx, st, None),
            Some(e) => self.end_conn(idx, st, Some(e)),
        }
    }

    /// Connection `idx` is gone: requeue what was in flight (or give it up after
    /// too many attempts) and record why (`None`: closed cleanly).
    fn end_conn(&mut self, idx: usize, st: &mut BatchState, error: Option<ConnEnd>) {
        let now = self.now();
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::take) else {
            return;
        };
        let progress = conn.completed > 0;
        let mut lost: Vec<usize> = conn.slots.into_iter().flatten().collect();
        for p in self.pushes.entries.iter_mut().filter(|p| p.conn == conn.id) {
            if p.ended.is_none() {
                p.ended = Some(now);
                if let Some(job) = p.claimed.take() {
                    lost.push(job);
                }
            }
        }
        lost.sort_unstable();
        for job in lost.into_iter().rev() {
            let Some(j) = st.jobs.get_mut(job) else {
                continue;
            };
            if j.rec.attempts >= MAX_ATTEMPTS {
                j.finished = true;
                j.rec.status = 0;
                j.rec.done = now;
                st.remaining = st.remaining.saturating_sub(1);
            } else {
                st.queue.push_front(job);
            }
        }
        conn.link.close(self.poll.registry());
        self.close_gauge();
        if let Some(r) = self.log.get_mut(idx) {
            r.closed = Some(now);
            r.completed = conn.completed;
        }
        if progress {
            self.failed_conns = 0;
        } else {
            // Closed cleanly before answering anything counts as a failure too,
            // so a server that closes every connection cannot loop forever.
            self.conn_failed(idx, error.unwrap_or(ConnEnd::ServerClosed));
        }
    }

    fn close_gauge(&self) {
        if let Some(g) = &self.cfg.open_gauge {
            g.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn drop_conn(&mut self, idx: usize) {
        if let Some(conn) = self.conns.get_mut(idx).and_then(Option::take) {
            let completed = conn.completed;
            conn.link.close(self.poll.registry());
            self.close_gauge();
            let now = self.epoch.elapsed();
            if let Some(r) = self.log.get_mut(idx) {
                r.closed = Some(now);
                r.completed = completed;
            }
        }
    }
}
