//! Connection life of a client: connect (walking the address list), the
//! transport becoming ready, the protocol starting, failures before that,
//! the connection ending (reconnect or give up) and `-N`/`-T` timeouts.
//! The mechanics are the shared driver's ([`crate::conn`]); the accounting
//! (h2load's `try_again_or_fail`, `process_abandoned_streams`) is here.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use mio::Token;

use super::client::Core;
use super::{Worker, MAX_FAILS_WITHOUT_PROGRESS};
use crate::conn::{ConnEnd, Establish};
use crate::error::{ProtocolError, TransportError};
use crate::pacing::Pacer;
use crate::result::RunError;

impl Worker<'_> {
    /// Starts connecting client `idx`, trying addresses from `from_addr` on.
    pub(super) fn connect(&mut self, idx: usize, now: Instant, from_addr: usize) {
        let client = &mut self.clients[idx];
        if client.core.reconnect_to.take().is_some() {
            self.deferred -= 1;
        }
        client.gen = client.gen.wrapping_add(1);
        let token = Token(((client.gen as u64) << 32 | idx as u64) as usize);
        client.core.connect_start = now;
        client.core.ttfb_done = false;
        client.core.completed_on_conn = 0;
        client.core.read_since_completion = 0;
        client.core.issued_on_conn = 0;
        client.core.early_phase = false;
        match self
            .s
            .dialer
            .connect(self.poll.registry(), token, from_addr, now)
        {
            Ok(conn) => {
                let client = &mut self.clients[idx];
                client.core.start.get_or_insert(now);
                let early_now = conn.quic_early_ready();
                client.conn = Some(conn);
                if early_now {
                    // 0-RTT: the requests go right behind the Initial.
                    self.drive(idx, false);
                }
            }
            Err(end) => self.failed_before_open(idx, end),
        }
    }

    /// A connection failed before its session started.
    fn failed_before_open(&mut self, idx: usize, end: ConnEnd) {
        match end {
            ConnEnd::Connect { addr_idx, source } => self.connect_failed(idx, addr_idx, source),
            ConnEnd::Tls(e) => self.tls_failed(idx, e),
            ConnEnd::Negotiation(e) => self.protocol_failed(idx, e),
            other => self.conn_ended(idx, other),
        }
    }

    /// The connect to address `addr_idx` failed: try the next address (like
    /// h2load walking getaddrinfo's list), or give the client up.
    fn connect_failed(&mut self, idx: usize, addr_idx: usize, e: io::Error) {
        let addr = self.s.dialer.describe(addr_idx);
        if let Some(mut conn) = self.clients[idx].conn.take() {
            self.harvest_quic(idx, &mut conn);
            conn.discard(self.poll.registry());
        }
        if addr_idx + 1 < self.s.dialer.addresses() {
            // h2load: "Try next address".
            self.connect(idx, Instant::now(), addr_idx + 1);
            return;
        }
        self.stats.run.errors.connect += 1;
        self.stats.note_error(|| RunError::Connect {
            addr: addr.clone(),
            cause: e.to_string(),
        });
        if self.s.verbose {
            eprintln!("[DEBUG] client could not connect to host {addr}: {e}");
        }
        if self.out.first_connect_error.is_none() {
            self.out.first_connect_error = Some((addr, e));
        }
        self.give_up(idx);
    }

    fn tls_failed(&mut self, idx: usize, e: TransportError) {
        self.stats.run.errors.tls += 1;
        self.stats.note_error(|| RunError::TlsHandshake {
            cause: e.to_string(),
        });
        if self.out.first_tls_error.is_none() {
            self.out.first_tls_error = Some(e);
        }
        self.close_conn(idx);
        self.give_up(idx);
    }

    fn protocol_failed(&mut self, idx: usize, e: ProtocolError) {
        self.stats.run.errors.protocol += 1;
        self.stats.note_error(|| RunError::Protocol {
            cause: e.to_string(),
        });
        if self.out.first_protocol_error.is_none() {
            self.out.first_protocol_error = Some(e);
        }
        self.close_conn(idx);
        self.give_up(idx);
    }

    pub(super) fn close_conn(&mut self, idx: usize) {
        if let Some(mut conn) = self.clients[idx].conn.take() {
            if conn.session.is_some() {
                self.stats.open_conns = self.stats.open_conns.saturating_sub(1);
            }
            self.harvest_quic(idx, &mut conn);
            conn.close(self.poll.registry());
        }
    }

    /// HTTP/3: keeps the QUIC figures of a connection that goes away (its socket's
    /// counters go to the worker's totals, quinn-proto's to the client's last sample).
    pub(super) fn harvest_quic(&mut self, idx: usize, conn: &mut crate::conn::Connection) {
        let Some((sample, counters)) = conn.quic_figures() else {
            return;
        };
        let q = self.stats.run.quic.get_or_insert_with(Default::default);
        counters.add_to(q);
        if let Some(s) = sample {
            self.clients[idx].quic = s;
        }
    }

    /// h2load `process_abandoned_streams`: the client stops; its in-flight and
    /// not yet issued requests count as failed and errored.
    pub(super) fn give_up(&mut self, idx: usize) {
        let c = &mut self.clients[idx].core;
        let measured_inflight = c.slots.iter().filter(|s| s.in_use && s.measured).count() as u64;
        for s in c.slots.iter_mut() {
            s.in_use = false;
        }
        c.free.clear();
        c.free.extend((0..c.slots.len() as u32).rev());
        c.unstamped.clear();
        c.out.clear();
        c.out_pos = 0;
        c.req_inflight = 0;
        if self.measuring {
            let left = if c.unbounded { 0 } else { c.req_left };
            self.stats.run.requests.failed += measured_inflight + left;
            self.stats.run.requests.errored += measured_inflight + left;
        }
        c.req_left = 0;
        if !c.finished {
            c.finished = true;
            c.end = Some(Instant::now());
        }
    }

    pub(super) fn check_timeouts(&mut self, now: Instant) {
        for idx in 0..self.clients.len() {
            let c = &self.clients[idx];
            let Some(conn) = c.conn.as_ref() else {
                continue;
            };
            let inactive = self
                .s
                .inactivity_timeout
                .is_some_and(|t| now.saturating_duration_since(conn.last_activity) >= t);
            let active = c.core.active_deadline.is_some_and(|d| now >= d);
            if inactive || active {
                self.timeout(idx, if active { "-T" } else { "-N" });
            }
        }
    }

    /// h2load `Client::timeout`: in-flight requests count as timed out, then
    /// everything left is abandoned.
    fn timeout(&mut self, idx: usize, which: &str) {
        let inflight = self.clients[idx]
            .core
            .slots
            .iter()
            .filter(|s| s.in_use && s.measured)
            .count() as u64;
        if self.measuring {
            self.stats.run.requests.timeout += inflight;
        }
        self.stats.run.errors.timeout += 1;
        self.stats.note_error(|| {
            if which == "-T" {
                RunError::ActiveTimeout
            } else {
                RunError::InactivityTimeout
            }
        });
        self.close_conn(idx);
        self.give_up(idx);
    }

    /// Handles readiness for client `idx`: connect/handshake progress, then
    /// read everything, submit what can be submitted, write once.
    pub(super) fn drive(&mut self, idx: usize, read_closed: bool) {
        let Some(conn) = self.clients[idx].conn.as_mut() else {
            return;
        };
        if conn.is_open() {
            // The hot path: no clock read here (reads and writes take their own).
            self.service(idx, read_closed);
            return;
        }
        let now = Instant::now();
        match conn.establish() {
            Ok(Establish::Waiting) => {}
            Ok(Establish::Progressed) => conn.last_activity = now,
            Ok(Establish::Ready) => {
                conn.last_activity = now;
                self.on_open(idx, now);
            }
            Err(end) => self.failed_before_open(idx, end),
        }
    }

    /// The transport is ready: pick the protocol, start the session.
    pub(super) fn on_open(&mut self, idx: usize, now: Instant) {
        let Some(conn) = self.clients[idx].conn.as_ref() else {
            return;
        };
        let (proto, fallback) = match self.s.dialer.negotiate(conn) {
            Ok(p) => p,
            Err(e) => {
                self.protocol_failed(idx, e);
                return;
            }
        };
        self.out.connected = true;
        if let Some(req) = self.s.require {
            if req != proto {
                if self.out.fatal.is_none() {
                    self.out.fatal = Some(crate::EngineError::Protocol(
                        ProtocolError::RequiredProtocol {
                            required: req,
                            negotiated: proto,
                            fallback,
                        },
                    ));
                }
                self.s.abort.store(true, Ordering::Relaxed);
                self.close_conn(idx);
                self.give_up(idx);
                return;
            }
        }
        let client = &mut self.clients[idx];
        let Some(conn) = client.conn.as_mut() else {
            return;
        };
        let core = &mut client.core;
        self.stats
            .record_connect(now.saturating_duration_since(core.connect_start));
        if conn.offered_early() {
            // The handshake goes on under the session: counted at its end (`early.rs`).
            self.stats.run.resume.early_offered += 1;
            core.early_phase = true;
        } else {
            super::early::count_handshake(&mut self.stats, &self.s.dialer, conn, proto);
        }
        if self.stats.run.app_protocol.is_none() {
            self.stats.run.app_protocol = Some(proto);
            self.stats.run.protocol_fallback = fallback;
            self.stats.run.tls = conn.transport.tls_info();
        }
        if !self.reported {
            self.reported = true;
            if let Some(obs) = self.s.observer {
                if let Some(info) = conn.transport.tls_info() {
                    obs.tls_info(&info);
                }
                obs.protocol(proto);
            }
        }
        if self.s.verbose {
            eprintln!(
                "[DEBUG] worker {} client {idx}: connected, protocol {proto}",
                self.s.id
            );
        }
        self.s.dialer.start_session(conn, proto, &mut core.out);
        self.stats.open_conns += 1;
        if core.pace.origin.is_none() && matches!(self.s.pacer, Pacer::PerClient(_)) {
            core.pace.origin = Some(now);
            self.next_client_due = Some(now);
        }
        conn.last_activity = now;
        // Data may already be buffered (and no new edge will come for it).
        self.service(idx, true);
    }

    /// The connection is gone: account for what was in flight, then reconnect
    /// if the client has work left (GOAWAY, `Connection: close`, idle close),
    /// or give up after repeated failures without progress.
    pub(super) fn conn_ended(&mut self, idx: usize, end: ConnEnd) {
        let protocol = end.is_protocol();
        if protocol {
            // RFC 9113 §5.4.1: "An endpoint that encounters a connection error
            // SHOULD first send a GOAWAY frame". The session queued it: one
            // best-effort write before closing.
            let client = &mut self.clients[idx];
            if let Some(conn) = client.conn.as_mut() {
                let pending = client.core.out.get(client.core.out_pos..);
                conn.write_best_effort(pending.unwrap_or_default());
            }
        }
        let addr = self.clients[idx].conn.as_ref().map_or(0, |c| c.addr_idx);
        self.close_conn(idx);
        let measuring = self.measuring;
        let c = &mut self.clients[idx].core;
        // h2load try_again_or_fail: "we don't have a facility to re-start request
        // already in in-flight. Make them fail."
        let mut lost = 0u64;
        for s in c.slots.iter_mut() {
            if s.in_use {
                s.in_use = false;
                if s.measured {
                    lost += 1;
                }
            }
        }
        c.free.clear();
        c.free.extend((0..c.slots.len() as u32).rev());
        c.unstamped.clear();
        c.out.clear();
        c.out_pos = 0;
        c.req_inflight = 0;
        if measuring {
            self.stats.run.requests.failed += lost;
            self.stats.run.requests.errored += lost;
        }
        let progress = c.completed_on_conn > 0;
        let error = match &end {
            ConnEnd::ServerClosed => None,
            e if protocol => {
                self.stats.run.errors.protocol += 1;
                Some(RunError::Protocol {
                    cause: e.to_string(),
                })
            }
            e => {
                if lost > 0 {
                    self.stats.run.errors.io += 1;
                }
                Some(RunError::ConnectionLost {
                    cause: e.to_string(),
                })
            }
        };
        if let Some(m) = &error {
            self.stats.note_error(|| m.clone());
            if self.s.verbose {
                eprintln!("[DEBUG] worker {} client {idx}: {m}", self.s.id);
            }
            if self.out.first_protocol_error.is_none() {
                self.out.first_protocol_error = end.into_protocol();
            }
        }
        let c = &mut self.clients[idx].core;
        let work_left = c.unbounded || c.req_left > 0;
        if !work_left {
            c.finished = true;
            c.end = Some(Instant::now());
            return;
        }
        if progress {
            c.fails_without_progress = 0;
        } else {
            c.fails_without_progress += 1;
        }
        // A connection that failed before completing anything is not retried
        // (h2load gives such a client up); one the server closed cleanly
        // (GOAWAY, `Connection: close`) is retried a few times.
        if (error.is_some() && !progress) || c.fails_without_progress >= MAX_FAILS_WITHOUT_PROGRESS
        {
            if error.is_none() {
                self.stats.note_error(|| RunError::ClosedWithoutProgress {
                    times: MAX_FAILS_WITHOUT_PROGRESS,
                });
            }
            self.give_up(idx);
            return;
        }
        // h2load reconnects at once (it only does after `Connection: close`). When no
        // request is due (a paced client between requests, the server's idle close), the
        // reconnect waits for the next one: a connection opened at once would sit idle and
        // be closed again before carrying anything.
        let now = Instant::now();
        let (due, next) = request_due(&self.s.pacer, &mut self.clients[idx].core, now);
        if !due {
            self.clients[idx].core.reconnect_to = Some(addr);
            self.deferred += 1;
            if let Some(n) = next {
                self.next_client_due = Some(self.next_client_due.map_or(n, |d| d.min(n)));
            }
            return;
        }
        self.stats.run.reconnects += 1;
        // h2load: "Keep using current address".
        self.connect(idx, now, addr);
    }

    /// Opens the connection client `idx` deferred until a request was due
    /// (see [`Worker::conn_ended`]); `false` if it was not waiting for one.
    pub(super) fn reconnect_deferred(&mut self, idx: usize, now: Instant) -> bool {
        let Some(client) = self.clients.get(idx) else {
            return false;
        };
        let Some(addr) = client.core.reconnect_to else {
            return false;
        };
        if client.conn.is_some() || client.core.finished || !client.core.wants_requests() {
            return false;
        }
        self.stats.run.reconnects += 1;
        self.connect(idx, now, addr);
        true
    }
}

/// Whether client `core` has a request to send at `now`, and, when it has not and follows
/// its own schedule, when the next one is due. The closed model always has one; the open
/// model when requests wait in the worker's queue; a paced client when its schedule says
/// so (or before its schedule started).
pub(super) fn request_due(pacer: &Pacer, core: &mut Core, now: Instant) -> (bool, Option<Instant>) {
    if !core.retry.is_empty() {
        return (true, None);
    }
    match pacer {
        Pacer::Closed => (true, None),
        Pacer::Open(p) => (p.has_waiting(), None),
        Pacer::PerClient(sched) => {
            if core.pace.origin.is_none() {
                return (true, None);
            }
            let next = core.pace.update(sched, now);
            (core.pace.due > core.pace.sent, next)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::schedule::ClientSchedule;
    use crate::worker::client::Client;

    #[test]
    fn the_closed_model_always_has_a_request_due() {
        let mut c = Client::new(3, 1, false, Instant::now());
        assert_eq!(
            request_due(&Pacer::Closed, &mut c.core, Instant::now()),
            (true, None)
        );
    }

    #[test]
    fn a_scripted_client_reconnects_when_its_next_request_is_due() {
        let origin = Instant::now();
        // A timing script: requests at 0 s, 1 s and 2 s.
        let pacer = Pacer::PerClient(ClientSchedule::Script(Arc::from(
            &[0, 1_000_000_000, 2_000_000_000][..],
        )));
        let mut c = Client::new(3, 1, false, origin);
        // Before the schedule started (the first connection is not up): due.
        assert_eq!(request_due(&pacer, &mut c.core, origin), (true, None));
        c.core.pace.origin = Some(origin);
        c.core.pace.sent = 1; // the first request went at 0 s
                              // The server closed the connection idle at 50 ms: nothing due until 1 s.
        let at_50ms = origin + Duration::from_millis(50);
        assert_eq!(
            request_due(&pacer, &mut c.core, at_50ms),
            (false, Some(origin + Duration::from_secs(1)))
        );
        // At 1 s the second request is due: reconnect now.
        let (due, next) = request_due(&pacer, &mut c.core, origin + Duration::from_secs(1));
        assert!(due);
        assert_eq!(next, Some(origin + Duration::from_secs(2)));
        // A refused request waiting to be retried is due at once.
        c.core.pace.sent = 2;
        c.core.retry.push(origin);
        assert_eq!(
            request_due(&pacer, &mut c.core, origin + Duration::from_millis(1500)),
            (true, None)
        );
    }
}
