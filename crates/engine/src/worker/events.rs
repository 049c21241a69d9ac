//! The worker side of [`SessionEvents`]: every statistic of a run is counted
//! here, from the facts the sessions report.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use super::client::{Core, Slot};
use super::read_wait::ReadWait;
use crate::session::SessionEvents;
use crate::stats::WorkerStats;

/// The worker side of [`SessionEvents`]: all statistics happen here.
pub(super) struct Ev<'a> {
    pub(super) core: &'a mut Core,
    pub(super) st: &'a mut WorkerStats,
    pub(super) read_wait: &'a mut ReadWait,
    pub(super) now: Instant,
    pub(super) measuring: bool,
    pub(super) log: Option<&'a mut BufWriter<File>>,
}

impl Ev<'_> {
    fn ttfb(&mut self) {
        if !self.core.ttfb_done {
            self.core.ttfb_done = true;
            self.st
                .record_ttfb(self.now.saturating_duration_since(self.core.connect_start));
        }
    }

    /// Releases a slot; returns it if it was in use.
    fn release(&mut self, slot: u32) -> Option<Slot> {
        let s = self.core.slots.get_mut(slot as usize)?;
        if !s.in_use {
            return None;
        }
        s.in_use = false;
        let copy = *s;
        self.core.free.push(slot);
        self.core.req_inflight = self.core.req_inflight.saturating_sub(1);
        Some(copy)
    }

    /// A request the server did not process (refused stream, `425 Too Early`): put back.
    fn requeue(&mut self, s: &Slot) {
        self.core.issued_on_conn = self.core.issued_on_conn.saturating_sub(1);
        if s.measured && self.measuring {
            self.st.run.requests.started = self.st.run.requests.started.saturating_sub(1);
        }
        if let Some(i) = s.intended {
            if self.core.retry.len() < self.core.retry.capacity() {
                self.core.retry.push(i);
            }
        }
        if !self.core.unbounded {
            self.core.req_left += 1;
            self.core.active_deadline = None;
        }
    }

    fn log_line(&mut self, s: &Slot, status: Option<u16>) {
        if let Some(l) = self.log.as_mut() {
            let d = self.now.saturating_duration_since(s.start).as_micros();
            let _ = match status {
                Some(code) => writeln!(l, "{}\t{}\t{}", s.wall_us, code, d),
                None => writeln!(l, "{}\t-1\t{}", s.wall_us, d),
            };
        }
    }
}

impl SessionEvents for Ev<'_> {
    fn status(&mut self, slot: u32, status: u16) {
        let Some(s) = self.core.slots.get_mut(slot as usize) else {
            return;
        };
        if !s.in_use || s.status != 0 {
            return;
        }
        let count = s.measured && self.measuring;
        if status == 425 && s.early {
            // RFC 8470 §5.2: sent again after the handshake; not a response (see `complete`).
            s.status = status;
            return;
        }
        if status < 200 {
            if count {
                self.st.run.status.s1xx += 1;
                let code = usize::from(status).checked_sub(100);
                if let Some(n) = code.and_then(|c| self.st.informational.get_mut(c)) {
                    *n += 1;
                }
            }
            return;
        }
        s.status = status;
        if count {
            self.st.run.status.count(status);
        }
    }

    fn header_bytes(&mut self, wire: usize, decoded: usize) {
        if self.measuring {
            self.st.run.traffic.bytes_head += wire as u64;
            self.st.run.traffic.bytes_head_decomp += decoded as u64;
        }
    }

    fn body(&mut self, _slot: u32, len: usize) {
        self.ttfb();
        if self.measuring {
            self.st.run.traffic.bytes_body += len as u64;
        }
    }

    fn complete(&mut self, slot: u32) {
        // Counts after an interval's end belong to the next one.
        self.st.roll_series(self.now);
        self.ttfb();
        let Some(s) = self.release(slot) else { return };
        if s.early && s.status == 425 {
            self.st.run.resume.too_early += 1;
            self.requeue(&s);
            return;
        }
        self.core.completed_on_conn += 1;
        let read = std::mem::take(&mut self.core.read_since_completion);
        let took = self.now.saturating_duration_since(s.start);
        self.read_wait.observe(took);
        if !(s.measured && self.measuring) {
            return;
        }
        self.core.req_success += 1;
        self.st.run.requests.completed += 1;
        self.st.run.response_bytes += read;
        if (200..400).contains(&s.status) {
            self.st.run.requests.succeeded += 1;
        } else {
            self.st.run.requests.failed += 1;
        }
        self.st.run.requests.done += 1;
        let corrected = s.intended.map(|i| self.now.saturating_duration_since(i));
        self.st.record_latency(took, corrected);
        let status = s.status;
        self.log_line(&s, Some(status));
    }

    fn reset(&mut self, slot: u32, code: u32) {
        self.st.roll_series(self.now);
        let Some(s) = self.release(slot) else { return };
        if !(s.measured && self.measuring) {
            return;
        }
        *self.st.run.errors.stream_resets.entry(code).or_default() += 1;
        self.st.run.requests.failed += 1;
        self.st.run.requests.errored += 1;
        self.st.run.requests.done += 1;
        self.log_line(&s, None);
    }

    fn refused(&mut self, slot: u32) {
        let Some(s) = self.release(slot) else { return };
        self.requeue(&s);
    }

    fn goaway(&mut self, _last_stream_id: u32, code: u32) {
        self.st.run.goaways += 1;
        if code != 0 {
            *self.st.run.errors.goaway_errors.entry(code).or_default() += 1;
        }
    }

    fn push_refused(&mut self) {
        self.st.run.errors.push_refused += 1;
    }

    fn push_promise(&mut self, _stream: u32, _path: &[u8]) {
        if self.measuring {
            self.st.run.pushed_streams += 1;
        }
    }

    fn push_body(&mut self, _stream: u32, len: usize) {
        if self.measuring {
            self.st.run.pushed_bytes += len as u64;
        }
    }

    fn push_frame(&mut self, len: usize) {
        // h2load's `traffic: total` is the requested responses' bytes (h2load refuses push):
        // the frames of a push, read with them, move to their own counter.
        if self.measuring {
            let len = len as u64;
            self.st.run.pushed_frame_bytes += len;
            let t = &mut self.st.run.traffic.bytes_total;
            *t = t.saturating_sub(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::client::Client;
    use super::*;

    fn submitted(client: &mut Client, slot: u32, start: Instant) {
        let s = &mut client.core.slots[slot as usize];
        s.in_use = true;
        s.measured = true;
        s.start = start;
        client.core.free.retain(|&f| f != slot);
        client.core.req_inflight += 1;
    }

    #[test]
    fn complete_counts_the_status_the_time_and_frees_the_slot() {
        let t0 = Instant::now();
        let mut client = Client::new(10, 2, false, t0);
        let mut st = WorkerStats::new(10);
        let mut rw = ReadWait::new(Duration::ZERO);
        submitted(&mut client, 0, t0);
        submitted(&mut client, 1, t0);
        let mut ev = Ev {
            core: &mut client.core,
            st: &mut st,
            read_wait: &mut rw,
            now: t0 + Duration::from_millis(3),
            measuring: true,
            log: None,
        };
        ev.status(0, 100); // interim: counted as 1xx, not the final status
        ev.status(0, 103);
        ev.status(0, 404);
        assert_eq!(ev.st.informational[0], 1);
        assert_eq!(ev.st.informational[3], 1);
        ev.header_bytes(10, 20);
        ev.body(0, 7);
        ev.core.read_since_completion = 50;
        ev.complete(0);
        ev.complete(0); // twice: ignored
        ev.status(1, 200);
        ev.reset(1, 8);
        assert_eq!(st.run.status.s1xx, 2);
        assert_eq!(st.run.status.s4xx, 1);
        assert_eq!(
            (
                st.run.requests.done,
                st.run.requests.completed,
                st.run.requests.succeeded
            ),
            (2, 1, 0)
        );
        assert_eq!(
            (st.run.requests.failed, st.run.requests.errored),
            (2, 1),
            "404 failed; reset failed and errored"
        );
        assert_eq!(st.run.errors.stream_resets.get(&8), Some(&1));
        assert_eq!(st.run.traffic.bytes_body, 7);
        assert_eq!(
            (st.run.traffic.bytes_head, st.run.traffic.bytes_head_decomp),
            (10, 20)
        );
        assert_eq!(st.run.request_time.len(), 1);
        assert_eq!(client.core.req_inflight, 0);
        assert_eq!(client.core.free.len(), 2);
        assert_eq!(client.core.completed_on_conn, 1);
        // The connection's bytes since its last completion went to the completed response.
        assert_eq!(st.run.response_bytes, 50);
        assert_eq!(client.core.read_since_completion, 0);
    }

    #[test]
    fn refused_requests_are_put_back() {
        let t0 = Instant::now();
        let mut client = Client::new(1, 1, false, t0);
        client.core.req_left = 0;
        client.core.active_deadline = Some(t0);
        let mut st = WorkerStats::new(1);
        st.run.requests.started = 1;
        let mut rw = ReadWait::new(Duration::ZERO);
        submitted(&mut client, 0, t0);
        client.core.slots[0].intended = Some(t0);
        let mut ev = Ev {
            core: &mut client.core,
            st: &mut st,
            read_wait: &mut rw,
            now: t0,
            measuring: true,
            log: None,
        };
        ev.refused(0);
        assert_eq!(
            st.run.requests.started, 0,
            "counted once, when it is sent again"
        );
        assert_eq!(st.run.requests.done, 0);
        assert_eq!(client.core.req_left, 1);
        assert_eq!(client.core.active_deadline, None);
        assert_eq!(client.core.retry, vec![t0], "its due time is kept");
    }
}
