//! The worker's timed duties besides I/O: letting paced requests go when they are due,
//! switching clients on and off (`-r`, closed-model stages), and rolling the time series.
//!
//! The event loop calls three things: [`Worker::start_clients`] once,
//! [`Worker::pace_deadline`] before each poll (it also arms the precise timer), and
//! [`Worker::pace`] after each poll; [`Worker::finish_pacing`] when the run ends. Closed-model
//! runs without a gate or time series skip all of it (`timed_work` is false).

use std::time::Instant;

use super::{fill, RunPhase, Worker};
use crate::pacing::Pacer;
use crate::session::Session;

impl Worker<'_> {
    /// Connects the clients the gate lets run at the start (all of them by default).
    pub(super) fn start_clients(&mut self, now: Instant) {
        let n = self.clients.len();
        let total = u32::try_from(n).unwrap_or(u32::MAX);
        let mut started = 0u32;
        for idx in 0..n {
            let active = self.s.gate.active(idx as u32, std::time::Duration::ZERO);
            let core = &mut self.clients[idx].core;
            core.active = active;
            core.parked = !active;
            if active {
                self.connect(idx, now, 0);
                started = started.saturating_add(1);
                self.phase(RunPhase::ClientStarted { started, total });
            }
        }
        let nclients = u32::try_from(n).unwrap_or(u32::MAX);
        self.next_gate = self
            .s
            .gate
            .next_check(std::time::Duration::ZERO, nclients)
            .map(|d| self.s.start + d);
    }

    /// The earliest pacing, gate or time-series deadline; arms the precise timer for the
    /// next paced request.
    pub(super) fn pace_deadline(&mut self, now: Instant) -> Option<Instant> {
        if !self.timed_work {
            return None;
        }
        let due = match &self.s.pacer {
            Pacer::Open(p) => p.next_due(),
            Pacer::PerClient(_) => self.next_client_due,
            Pacer::Closed => None,
        };
        if let Some(d) = due {
            self.timer.arm(d, now);
        }
        let series = self.stats.series.as_ref().map(|r| r.end());
        [due, self.next_gate, series].into_iter().flatten().min()
    }

    /// Everything that is due at `now`.
    pub(super) fn pace(&mut self, now: Instant) {
        self.timer.expire(now);
        if self.next_gate.is_some_and(|g| now >= g) {
            self.apply_gate(now);
        }
        let measuring = self.measuring;
        let mut dispatch = false;
        let mut exhausted = false;
        if let Pacer::Open(p) = &mut self.s.pacer {
            let counts = self
                .stats
                .run
                .pacing
                .get_or_insert_with(crate::result::PacingCounts::default);
            dispatch = p.admit(now, counts, measuring) && p.has_waiting();
            exhausted = p.exhausted();
        }
        if dispatch {
            self.dispatch_open();
        }
        if self.deferred > 0 && matches!(&self.s.pacer, Pacer::Open(p) if p.has_waiting()) {
            // Requests wait: clients whose connection the server ended while none did
            // reconnect now (they take requests once connected).
            for idx in 0..self.clients.len() {
                self.reconnect_deferred(idx, now);
            }
        }
        if exhausted && self.s.timing.is_none() {
            self.retire_when_idle(now);
        }
        if matches!(self.s.pacer, Pacer::PerClient(_))
            && self.next_client_due.is_some_and(|d| now >= d)
        {
            self.scan_clients(now);
        }
        self.stats.roll_series(now);
    }

    /// The run is over: queued requests were not sent; the last time-series interval.
    pub(super) fn finish_pacing(&mut self, now: Instant) {
        if let Pacer::Open(p) = &mut self.s.pacer {
            let counts = self
                .stats
                .run
                .pacing
                .get_or_insert_with(crate::result::PacingCounts::default);
            p.finish(now, counts, self.measuring);
        }
        let end = match self.s.timing {
            Some((w, d)) => now.min(self.s.start + w + d),
            None => now,
        };
        self.stats.finish_series(end);
    }

    /// Whether client `idx` could take a request right now.
    fn has_capacity(&self, idx: usize) -> bool {
        let Some(c) = self.clients.get(idx) else {
            return false;
        };
        c.core.could_fill()
            && c.conn
                .as_ref()
                .and_then(|conn| conn.session.as_ref())
                .is_some_and(|s| s.can_submit())
    }

    /// Submits what client `idx` can take now; returns how many went.
    pub(super) fn fill_client(&mut self, idx: usize) -> u32 {
        let measuring = self.measuring;
        let Worker {
            clients, stats, s, ..
        } = self;
        let Some(client) = clients.get_mut(idx) else {
            return 0;
        };
        let Some(session) = client.conn.as_mut().and_then(|c| c.session.as_mut()) else {
            return 0;
        };
        let n = fill(
            &mut client.core,
            session,
            stats,
            &s.dialer.prep,
            s.active_timeout,
            measuring,
            &mut s.pacer,
        );
        if n > 0 {
            self.mark_dirty(idx);
        }
        n
    }

    /// Hands queued requests to connections with a free slot, each to its own lane's
    /// connection when that one is free.
    fn dispatch_open(&mut self) {
        let n = self.clients.len();
        if n == 0 {
            return;
        }
        loop {
            let Pacer::Open(p) = &self.s.pacer else {
                return;
            };
            let Some(lane) = p.front_lane() else {
                return;
            };
            let lane = lane.min(n - 1);
            let Some(idx) = (0..n)
                .map(|k| (lane + k) % n)
                .find(|&i| self.has_capacity(i))
            else {
                return;
            };
            if self.fill_client(idx) == 0 {
                return;
            }
        }
    }

    /// A count-limited open-model run whose schedule is over: once nothing is in flight,
    /// every client is done.
    fn retire_when_idle(&mut self, now: Instant) {
        if self
            .clients
            .iter()
            .any(|c| c.core.req_inflight > 0 || !c.core.retry.is_empty())
        {
            return;
        }
        for idx in 0..self.clients.len() {
            if self.clients[idx].core.finished {
                continue;
            }
            if self.clients[idx].conn.is_some() {
                self.client_done(idx, true);
            } else {
                let core = &mut self.clients[idx].core;
                core.finished = true;
                core.end = Some(now);
            }
        }
    }

    /// Per-client schedules: update what is due and submit where a slot is free.
    fn scan_clients(&mut self, now: Instant) {
        let mut next: Option<Instant> = None;
        for idx in 0..self.clients.len() {
            let backlog = {
                let Pacer::PerClient(sched) = &self.s.pacer else {
                    return;
                };
                let core = &mut self.clients[idx].core;
                if let Some(d) = core.pace.update(sched, now) {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
                core.pace.due > core.pace.sent
            };
            if backlog && !self.reconnect_deferred(idx, now) && self.has_capacity(idx) {
                self.fill_client(idx);
            }
        }
        self.next_client_due = next;
    }

    /// Switches clients on and off as the gate says.
    fn apply_gate(&mut self, now: Instant) {
        let t = now.saturating_duration_since(self.s.start);
        let n = self.clients.len();
        for idx in 0..n {
            let want = self.s.gate.active(idx as u32, t);
            let c = &mut self.clients[idx];
            if c.core.finished || want == c.core.active {
                continue;
            }
            c.core.active = want;
            c.core.parked = !want;
            if want {
                if c.conn.is_none() {
                    self.connect(idx, now, 0);
                }
            } else if c.core.req_inflight == 0
                && c.conn.as_ref().is_some_and(|conn| conn.session.is_some())
            {
                self.client_done(idx, false);
            }
        }
        let nclients = u32::try_from(n).unwrap_or(u32::MAX);
        self.next_gate = self
            .s
            .gate
            .next_check(t, nclients)
            .map(|d| self.s.start + d);
    }
}
