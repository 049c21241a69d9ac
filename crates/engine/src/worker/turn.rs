//! One I/O turn of a client on the shared connection driver: read everything,
//! submit into free slots, queue the client for the end-of-turn write; and that
//! write, which stamps the requests it carries.

use std::time::Instant;

use super::client::{fill, Slot};
use super::events::Ev;
use super::{wall_us, Worker};
use crate::conn::{ConnEnd, ReadTurn, WriteHooks};
use crate::session::Session;

/// Outcome of one I/O turn on a connection.
pub(super) enum Turn {
    Continue,
    /// The client has nothing left to do.
    ClientDone,
    /// The gate switched the client off and nothing is in flight: close, keep the client.
    Park,
    /// The connection ended.
    End(ConnEnd),
    /// `--reconnect-every`: the connection carried its requests; replace it.
    Reconnect,
}

impl Worker<'_> {
    /// Read everything available, submit new requests, write once; then deal
    /// with the connection ending.
    pub(super) fn service(&mut self, idx: usize, read_closed: bool) {
        match self.io_turn(idx, read_closed) {
            Turn::Continue => {
                if self.has_output(idx) {
                    self.mark_dirty(idx);
                }
            }
            Turn::ClientDone => self.client_done(idx, true),
            Turn::Park => self.client_done(idx, false),
            Turn::End(end) => self.conn_ended(idx, end),
            Turn::Reconnect => {
                let client = &mut self.clients[idx];
                if let Some(conn) = client.conn.as_mut() {
                    conn.goodbye(&mut client.core.out, client.core.out_pos);
                }
                self.conn_ended(idx, ConnEnd::ServerClosed);
            }
        }
    }

    /// The client has nothing in flight and nothing left to do (`finished`), or the gate
    /// switched it off: say goodbye and close.
    pub(super) fn client_done(&mut self, idx: usize, finished: bool) {
        let client = &mut self.clients[idx];
        if let Some(conn) = client.conn.as_mut() {
            // Graceful goodbye (HTTP/2 GOAWAY), best effort.
            conn.goodbye(&mut client.core.out, client.core.out_pos);
        }
        self.close_conn(idx);
        let core = &mut self.clients[idx].core;
        core.out.clear();
        core.out_pos = 0;
        if finished {
            core.finished = true;
            core.end = Some(Instant::now());
        }
    }

    fn io_turn(&mut self, idx: usize, read_closed: bool) -> Turn {
        let measuring = self.measuring;
        let Worker {
            clients,
            stats,
            bufs,
            log,
            s,
            holds,
            read_wait,
            ..
        } = self;
        let pacer = &mut s.pacer;
        let client = &mut clients[idx];
        let Some(conn) = client.conn.as_mut() else {
            return Turn::Continue;
        };
        if conn.session.is_none() {
            return Turn::Continue;
        }
        let core = &mut client.core;

        // 1. Read everything available (one read syscall per burst).
        let mut last_read = None;
        let turn = conn.read(bufs, read_closed, |session, input| {
            let now = Instant::now();
            last_read = Some(now);
            if measuring {
                stats.run.traffic.bytes_total += input.len() as u64;
            }
            core.read_since_completion += input.len() as u64;
            let mut out = std::mem::take(&mut core.out);
            let mut ev = Ev {
                core: &mut *core,
                st: &mut *stats,
                read_wait: &mut *read_wait,
                now,
                measuring,
                log: log.as_mut(),
            };
            let r = session.on_read(input, &mut out, &mut ev);
            core.out = out;
            r
        });
        if let Some(t) = last_read {
            conn.last_activity = t;
            read_wait.read();
        }
        let mut end = match turn {
            ReadTurn::Drained => None,
            ReadTurn::Ended(e) => Some(e),
            ReadTurn::Eof => {
                let mut ev = Ev {
                    core: &mut *core,
                    st: &mut *stats,
                    read_wait: &mut *read_wait,
                    now: Instant::now(),
                    measuring,
                    log: log.as_mut(),
                };
                Some(conn.eof(&mut ev))
            }
        };

        // Early data: once the handshake is done, accepted or sent again.
        if end.is_none() && core.early_phase {
            end = super::early::settle(conn, core, stats, &s.dialer, measuring);
        }

        // 2. Submit new requests into free slots, unless they are held back
        //    for the connection's other streams (request coalescing).
        let held = end.is_none()
            && holds.as_mut().is_some_and(|h| {
                core.could_fill()
                    && h.hold(idx, core.req_inflight, &mut core.held_since, Instant::now())
            });
        if end.is_none() && !held {
            core.held_since = None;
            if let Some(session) = conn.session.as_mut() {
                fill(
                    core,
                    session,
                    stats,
                    &s.dialer.prep,
                    s.active_timeout,
                    measuring,
                    pacer,
                );
            }
        }

        if let Some(end) = end {
            return Turn::End(end);
        }

        // 3. Done with this client?
        if !core.unbounded && core.req_left == 0 && core.req_inflight == 0 {
            return Turn::ClientDone;
        }
        if core.parked && core.req_inflight == 0 {
            return Turn::Park;
        }
        if core.conn_used_up() && core.req_inflight == 0 && core.wants_requests() {
            return Turn::Reconnect;
        }
        Turn::Continue
    }

    /// Whether client `idx` has something for the end-of-turn write: bytes, output the
    /// session holds back (request bodies), TLS records, or a close to carry out.
    fn has_output(&self, idx: usize) -> bool {
        let Some(c) = self.clients.get(idx) else {
            return false;
        };
        let Some(conn) = c.conn.as_ref() else {
            return false;
        };
        c.core.out_pos < c.core.out.len() || conn.wants_write()
    }

    /// Queues client `idx` for the end-of-turn write.
    pub(super) fn mark_dirty(&mut self, idx: usize) {
        if let Some(c) = self.clients.get_mut(idx) {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push(idx);
            }
        }
    }

    /// Writes every connection that produced output this turn, once.
    pub(super) fn flush_dirty(&mut self) {
        let mut list = std::mem::take(&mut self.dirty);
        for &idx in &list {
            if let Some(c) = self.clients.get_mut(idx) {
                c.dirty = false;
            }
            self.flush(idx);
        }
        list.clear();
        if self.dirty.is_empty() {
            self.dirty = list; // keep the capacity
        }
    }

    /// One write of the pending output (the protocol's held-back output
    /// first); then close if the protocol is done with the connection.
    fn flush(&mut self, idx: usize) {
        let log_enabled = self.log.is_some();
        let client = &mut self.clients[idx];
        let Some(conn) = client.conn.as_mut() else {
            return;
        };
        let core = &mut client.core;
        let mut stamp = Stamp {
            slots: &mut core.slots,
            unstamped: &mut core.unstamped,
            log_enabled,
            before: None,
            wrote_at: None,
            sent: 0,
        };
        let end = conn.flush(&mut core.out, &mut core.out_pos, &mut stamp);
        if let Some(t) = stamp.wrote_at {
            conn.last_activity = t;
        }
        self.stats.run.bytes_sent += stamp.sent;
        if let Some(end) = end {
            self.conn_ended(idx, end);
        }
    }
}

/// Stamps the requests a write carries with the time just before it.
///
/// Requests are timed from just before the write that carries them (like
/// h2load, which stamps when a request is handed to the send path): on
/// loopback the server may answer before the write call returns.
struct Stamp<'a> {
    slots: &'a mut [Slot],
    unstamped: &'a mut Vec<u32>,
    log_enabled: bool,
    before: Option<Instant>,
    /// When the last successful write happened.
    wrote_at: Option<Instant>,
    sent: u64,
}

impl WriteHooks for Stamp<'_> {
    #[inline]
    fn before_write(&mut self) {
        self.before = (!self.unstamped.is_empty()).then(Instant::now);
    }

    #[inline]
    fn written(&mut self, n: usize) {
        let now = self.before.unwrap_or_else(Instant::now);
        self.wrote_at = Some(now);
        if !self.unstamped.is_empty() {
            let wall = if self.log_enabled { wall_us() } else { 0 };
            for &sl in self.unstamped.iter() {
                if let Some(slot) = self.slots.get_mut(sl as usize) {
                    slot.start = now;
                    slot.wall_us = wall;
                }
            }
            self.unstamped.clear();
        }
        self.sent += n as u64;
    }
}
