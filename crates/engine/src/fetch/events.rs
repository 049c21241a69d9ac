//! The fetcher side of [`SessionEvents`]: a batch's jobs, its queue, and what
//! each response event does to them (records, retries, pushed responses).

use std::collections::VecDeque;
use std::time::Duration;

use super::push::PushCache;
use super::{FetchRecord, FetchTraffic, MAX_ATTEMPTS};
use crate::session::SessionEvents;

/// One request of the running batch.
pub(super) struct Job {
    pub(super) rec: FetchRecord,
    pub(super) body: Vec<u8>,
    pub(super) finished: bool,
    /// A final status was seen for the current attempt.
    pub(super) got_status: bool,
}

impl Job {
    /// A job for path `path`, queued at `queued`.
    pub(super) fn new(path: usize, queued: Duration) -> Job {
        Job {
            rec: FetchRecord {
                path,
                conn: 0,
                queued,
                sent: queued,
                first_byte: queued,
                done: queued,
                status: 0,
                body_bytes: 0,
                request_bytes: 0,
                attempts: 0,
            },
            body: Vec::new(),
            finished: false,
            got_status: false,
        }
    }
}

/// The jobs of the running batch.
pub(super) struct BatchState {
    pub(super) jobs: Vec<Job>,
    /// Job indices waiting for a connection, in priority order.
    pub(super) queue: VecDeque<usize>,
    pub(super) remaining: usize,
    pub(super) capture: bool,
}

/// The fetcher side of [`SessionEvents`] for one connection.
pub(super) struct Ev<'a> {
    pub(super) conn: u32,
    pub(super) slots: &'a mut Vec<Option<usize>>,
    pub(super) free: &'a mut Vec<u32>,
    pub(super) st: &'a mut BatchState,
    pub(super) traffic: &'a mut FetchTraffic,
    pub(super) completed: &'a mut u64,
    pub(super) now: Duration,
    pub(super) pushes: &'a mut PushCache,
}

impl Ev<'_> {
    fn job(&mut self, slot: u32) -> Option<&mut Job> {
        let job = (*self.slots.get(slot as usize)?)?;
        self.st.jobs.get_mut(job)
    }

    fn release(&mut self, slot: u32) -> Option<usize> {
        let job = self.slots.get_mut(slot as usize)?.take()?;
        self.free.push(slot);
        Some(job)
    }
}

impl SessionEvents for Ev<'_> {
    fn status(&mut self, slot: u32, status: u16) {
        let now = self.now;
        let conn = self.conn;
        if let Some(j) = self.job(slot) {
            if !j.got_status {
                j.rec.first_byte = now;
                j.rec.conn = conn;
            }
            if status >= 200 && !j.got_status {
                j.got_status = true;
                j.rec.status = status;
            }
        }
    }

    fn header_bytes(&mut self, wire: usize, decoded: usize) {
        self.traffic.response_header_bytes += wire as u64;
        self.traffic.response_header_decoded += decoded as u64;
    }

    fn body(&mut self, slot: u32, len: usize) {
        self.traffic.response_body_bytes += len as u64;
        if let Some(j) = self.job(slot) {
            j.rec.body_bytes += len as u64;
        }
    }

    fn body_data(&mut self, slot: u32, data: &[u8]) {
        if self.st.capture {
            if let Some(j) = self.job(slot) {
                j.body.extend_from_slice(data);
            }
        }
    }

    fn complete(&mut self, slot: u32) {
        let now = self.now;
        let Some(job) = self.release(slot) else {
            return;
        };
        *self.completed += 1;
        if let Some(j) = self.st.jobs.get_mut(job) {
            if !j.finished {
                j.finished = true;
                j.rec.done = now;
                self.st.remaining = self.st.remaining.saturating_sub(1);
            }
        }
    }

    fn reset(&mut self, slot: u32, _code: u32) {
        let now = self.now;
        let Some(job) = self.release(slot) else {
            return;
        };
        if let Some(j) = self.st.jobs.get_mut(job) {
            if j.rec.attempts >= MAX_ATTEMPTS {
                j.finished = true;
                j.rec.status = 0;
                j.rec.done = now;
                self.st.remaining = self.st.remaining.saturating_sub(1);
            } else {
                self.st.queue.push_front(job);
            }
        }
    }

    fn refused(&mut self, slot: u32) {
        if let Some(job) = self.release(slot) {
            if let Some(j) = self.st.jobs.get_mut(job) {
                // Not processed by the server: does not count as an attempt.
                j.rec.attempts = j.rec.attempts.saturating_sub(1);
            }
            self.st.queue.push_front(job);
        }
    }

    fn goaway(&mut self, _last_stream_id: u32, _code: u32) {}

    fn push_refused(&mut self) {}

    fn wants_hints(&self) -> bool {
        true
    }

    fn early_hint(&mut self, _slot: u32, link: &[u8]) {
        let (index, preloads) = self.pushes.split_for_hints();
        preloads.on_hint(link, index, self.st, self.now);
    }

    fn push_promise(&mut self, stream: u32, path: &[u8]) {
        self.pushes.promise(self.conn, stream, path);
    }

    fn push_status(&mut self, stream: u32, status: u16) {
        if let Some(p) = self.pushes.get(self.conn, stream) {
            p.status = status;
        }
    }

    fn push_body(&mut self, stream: u32, len: usize) {
        self.traffic.response_body_bytes += len as u64;
        let Some(p) = self.pushes.get(self.conn, stream) else {
            return;
        };
        p.bytes += len as u64;
        if let Some(j) = p.claimed.and_then(|k| self.st.jobs.get_mut(k)) {
            j.rec.body_bytes += len as u64;
        }
    }

    fn push_end(&mut self, stream: u32, complete: bool) {
        let now = self.now;
        let Some(p) = self.pushes.get(self.conn, stream) else {
            return;
        };
        p.ended = Some(now);
        p.complete = complete;
        let status = p.status;
        let Some(k) = p.claimed.take() else {
            return;
        };
        if !complete {
            // Cancelled: request it after all.
            p.used = false;
            if let Some(j) = self.st.jobs.get_mut(k) {
                j.rec.body_bytes = 0;
            }
            self.st.queue.push_front(k);
            return;
        }
        *self.completed += 1;
        if let Some(j) = self.st.jobs.get_mut(k) {
            if !j.finished {
                j.finished = true;
                j.rec.status = status;
                j.rec.first_byte = now;
                j.rec.done = now;
                self.st.remaining = self.st.remaining.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: usize) -> BatchState {
        BatchState {
            jobs: (0..n).map(|i| Job::new(i, Duration::ZERO)).collect(),
            queue: VecDeque::new(),
            remaining: n,
            capture: true,
        }
    }

    /// Job `job` sent in `slot` (as `pool::fill` does).
    fn sent(st: &mut BatchState, slots: &mut [Option<usize>], slot: u32, job: usize) {
        slots[slot as usize] = Some(job);
        st.jobs[job].rec.attempts += 1;
    }

    #[test]
    fn a_response_completes_its_job_and_frees_the_slot() {
        let mut st = batch(2);
        let (mut slots, mut free) = (vec![None; 2], Vec::new());
        let (mut traffic, mut completed) = (FetchTraffic::default(), 0);
        let mut pushes = PushCache::new(&[]);
        sent(&mut st, &mut slots, 0, 1);
        let mut ev = Ev {
            conn: 3,
            slots: &mut slots,
            free: &mut free,
            st: &mut st,
            traffic: &mut traffic,
            completed: &mut completed,
            now: Duration::from_millis(5),
            pushes: &mut pushes,
        };
        ev.status(0, 103);
        ev.status(0, 200);
        ev.header_bytes(12, 40);
        ev.body(0, 3);
        ev.body_data(0, b"abc");
        ev.complete(0);
        let j = &st.jobs[1];
        assert!(j.finished);
        assert_eq!((j.rec.status, j.rec.body_bytes, j.rec.conn), (200, 3, 3));
        assert_eq!(j.body, b"abc");
        assert_eq!(j.rec.done, Duration::from_millis(5));
        assert_eq!(st.remaining, 1);
        assert_eq!((completed, free.as_slice()), (1, &[0][..]));
        assert_eq!(traffic.response_header_bytes, 12);
        assert_eq!(traffic.response_body_bytes, 3);
    }

    #[test]
    fn resets_retry_until_the_last_attempt_and_refusals_are_free() {
        let mut st = batch(1);
        let (mut slots, mut free) = (vec![None; 1], Vec::new());
        let (mut traffic, mut completed) = (FetchTraffic::default(), 0);
        let mut pushes = PushCache::new(&[]);
        for attempt in 1..=MAX_ATTEMPTS {
            sent(&mut st, &mut slots, 0, 0);
            let mut ev = Ev {
                conn: 0,
                slots: &mut slots,
                free: &mut free,
                st: &mut st,
                traffic: &mut traffic,
                completed: &mut completed,
                now: Duration::ZERO,
                pushes: &mut pushes,
            };
            ev.reset(0, 2);
            if attempt < MAX_ATTEMPTS {
                assert_eq!(st.queue.pop_front(), Some(0), "requeued first");
                assert!(!st.jobs[0].finished);
            } else {
                assert!(st.queue.is_empty());
                assert!(st.jobs[0].finished, "given up with status 0");
                assert_eq!(st.jobs[0].rec.status, 0);
                assert_eq!(st.remaining, 0);
            }
        }
        let mut st = batch(1);
        sent(&mut st, &mut slots, 0, 0);
        let mut ev = Ev {
            conn: 0,
            slots: &mut slots,
            free: &mut free,
            st: &mut st,
            traffic: &mut traffic,
            completed: &mut completed,
            now: Duration::ZERO,
            pushes: &mut pushes,
        };
        ev.refused(0);
        assert_eq!(st.jobs[0].rec.attempts, 0, "not processed: no attempt used");
        assert_eq!(st.queue.front(), Some(&0));
    }
}
