//! Per-worker pacing state: which requests may be submitted now, and when each was meant to
//! start.
//!
//! - Closed model (h2load's default): a request is submitted whenever a slot is free; its
//!   latency is measured from the send.
//! - Open model (`--arrival-rate`): the worker walks its [`ArrivalSchedule`]; due requests go
//!   into a bounded FIFO (only their due times are stored, in a ring allocated once) and are
//!   taken by connections with a free slot. A request that finds a slot in the turn it becomes
//!   due is *on time*; one that waited for a slot is *late*; one that finds the queue full is
//!   *dropped*; still queued when the run ends, *unsent* — the last two were not sent on time.
//! - Per-client schedules (`--rps`, `--timing-script-file`): each client owns its schedule
//!   (relative to its first connection) and a count of requests due; completions free slots
//!   for the backlog as in h2load.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::result::PacingCounts;
use crate::schedule::{ArrivalSchedule, ClientSchedule};

/// One queued request: its due time (ns from the run start) and preferred connection.
#[derive(Debug, Clone, Copy)]
struct Queued {
    due_ns: u64,
    lane: u32,
}

/// The open model's per-worker state.
#[derive(Debug)]
pub(crate) struct OpenPacer {
    sched: ArrivalSchedule,
    queue: VecDeque<Queued>,
    limit: usize,
    origin: Instant,
    /// End of a timed run (ns from `origin`): nothing due at or after it is admitted.
    end_ns: Option<u64>,
    /// Requests ever pushed / popped: entries pushed before the current turn are late.
    pushed: u64,
    popped: u64,
    turn_mark: u64,
}

impl OpenPacer {
    /// A pacer over `sched` (due times relative to `origin`, the start of the run) with room
    /// for `limit` waiting requests; `end` is the end of a timed run (from `origin`).
    pub(crate) fn new(
        sched: ArrivalSchedule,
        limit: usize,
        origin: Instant,
        end: Option<Duration>,
    ) -> OpenPacer {
        let limit = limit.max(1);
        OpenPacer {
            sched,
            queue: VecDeque::with_capacity(limit),
            limit,
            origin,
            end_ns: end.map(|e| u64::try_from(e.as_nanos()).unwrap_or(u64::MAX)),
            pushed: 0,
            popped: 0,
            turn_mark: 0,
        }
    }

    fn ns_since_origin(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// When the next arrival is due, `None` when the schedule is over.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.sched
            .peek()
            .map(|ns| self.origin + Duration::from_nanos(ns))
    }

    /// Starts a turn at `now`: queues every arrival due by then (dropping those that do not
    /// fit). Returns whether the queue was empty before (only then can a connection have a
    /// free slot: every freed slot takes from the queue at once).
    pub(crate) fn admit(
        &mut self,
        now: Instant,
        counts: &mut PacingCounts,
        measuring: bool,
    ) -> bool {
        let was_empty = self.queue.is_empty();
        self.turn_mark = self.pushed;
        let mut now_ns = self.ns_since_origin(now);
        if let Some(e) = self.end_ns {
            now_ns = now_ns.min(e.saturating_sub(1));
        }
        while let Some((due_ns, lane)) = self.sched.pop_due(now_ns) {
            if measuring {
                counts.scheduled += 1;
            }
            if self.queue.len() >= self.limit {
                if measuring {
                    counts.dropped += 1;
                }
                continue;
            }
            self.queue.push_back(Queued {
                due_ns,
                lane: u32::try_from(lane).unwrap_or(u32::MAX),
            });
            self.pushed += 1;
        }
        was_empty
    }

    /// The preferred connection of the oldest waiting request.
    pub(crate) fn front_lane(&self) -> Option<usize> {
        self.queue.front().map(|q| q.lane as usize)
    }

    /// Whether requests are waiting.
    pub(crate) fn has_waiting(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Takes the oldest waiting request: its intended start.
    pub(crate) fn pop(&mut self, counts: &mut PacingCounts, measuring: bool) -> Option<Instant> {
        let q = self.queue.pop_front()?;
        if measuring {
            if self.popped < self.turn_mark {
                counts.late += 1;
            } else {
                counts.on_time += 1;
            }
        }
        self.popped += 1;
        Some(self.origin + Duration::from_nanos(q.due_ns))
    }

    /// Puts back a request taken by [`OpenPacer::pop`] that could not be submitted.
    pub(crate) fn unpop(&mut self, intended: Instant, counts: &mut PacingCounts, measuring: bool) {
        self.popped = self.popped.saturating_sub(1);
        if measuring {
            if self.popped < self.turn_mark {
                counts.late = counts.late.saturating_sub(1);
            } else {
                counts.on_time = counts.on_time.saturating_sub(1);
            }
        }
        self.queue.push_front(Queued {
            due_ns: self.ns_since_origin(intended),
            lane: 0,
        });
    }

    /// The schedule is over and nothing waits (count-limited runs).
    pub(crate) fn exhausted(&self) -> bool {
        self.sched.peek().is_none() && self.queue.is_empty()
    }

    /// The run is over at `now`: what became due and still waits was not sent.
    pub(crate) fn finish(&mut self, now: Instant, counts: &mut PacingCounts, measuring: bool) {
        self.admit(now, counts, measuring);
        if measuring {
            counts.unsent += self.queue.len() as u64;
        }
        self.queue.clear();
    }

    /// The queue bound.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Entries the queue has room for (allocated once; never grows past the bound).
    #[cfg(test)]
    pub(crate) fn queue_capacity(&self) -> usize {
        self.queue.capacity()
    }
}

/// A client's progress through its own schedule (`--rps`, timing script).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientPace {
    /// Start of the client's schedule (its first connection), `None` before it.
    pub origin: Option<Instant>,
    /// Requests taken so far (the next one is number `sent`).
    pub sent: u64,
    /// Requests due so far.
    pub due: u64,
}

impl ClientPace {
    /// Updates `due` for `now`; returns when the next request will be due.
    pub(crate) fn update(&mut self, sched: &ClientSchedule, now: Instant) -> Option<Instant> {
        let origin = self.origin?;
        let at =
            u64::try_from(now.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX);
        self.due = sched.due_count(self.due.max(self.sent), at);
        sched
            .due_ns(self.due)
            .map(|ns| origin + Duration::from_nanos(ns))
    }

    /// The next request if it is due: its intended start.
    pub(crate) fn peek(&self, sched: &ClientSchedule) -> Option<Instant> {
        if self.sent >= self.due {
            return None;
        }
        let origin = self.origin?;
        sched
            .due_ns(self.sent)
            .map(|ns| origin + Duration::from_nanos(ns))
    }
}

/// How one worker paces its requests.
#[derive(Debug)]
pub(crate) enum Pacer {
    /// h2load's closed model.
    Closed,
    /// `--arrival-rate`.
    Open(Box<OpenPacer>),
    /// `--rps` / `--timing-script-file`.
    PerClient(ClientSchedule),
}

impl Pacer {
    /// Whether latency is also measured from intended starts.
    pub(crate) fn is_paced(&self) -> bool {
        !matches!(self, Pacer::Closed)
    }

    /// Lets one request go if the pacing allows it now: `Some(intended start)` (`Some(None)`
    /// in the closed model), `None` to wait.
    #[inline]
    pub(crate) fn take(
        &mut self,
        pace: &mut ClientPace,
        counts: &mut Option<PacingCounts>,
        measuring: bool,
    ) -> Option<Option<Instant>> {
        match self {
            Pacer::Closed => Some(None),
            Pacer::Open(p) => p
                .pop(counts.get_or_insert_with(PacingCounts::default), measuring)
                .map(Some),
            Pacer::PerClient(sched) => {
                let i = pace.peek(sched)?;
                pace.sent += 1;
                Some(Some(i))
            }
        }
    }

    /// Undoes [`Pacer::take`] for a request that could not be submitted.
    pub(crate) fn untake(
        &mut self,
        pace: &mut ClientPace,
        counts: &mut Option<PacingCounts>,
        measuring: bool,
        intended: Option<Instant>,
    ) {
        match (self, intended) {
            (Pacer::Open(p), Some(i)) => p.unpop(
                i,
                counts.get_or_insert_with(PacingCounts::default),
                measuring,
            ),
            (Pacer::PerClient(_), Some(_)) => pace.sent = pace.sent.saturating_sub(1),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Lanes, Profile};

    fn pacer(limit: usize, origin: Instant) -> OpenPacer {
        let lanes = Lanes {
            total: 2,
            threads: 1,
            worker: 0,
            count: 2,
        };
        OpenPacer::new(
            ArrivalSchedule::new(Profile::constant(1000.0), lanes, Some(10)),
            limit,
            origin,
            None,
        )
    }

    #[test]
    fn late_dropped_and_unsent() {
        let t0 = Instant::now();
        let mut p = pacer(3, t0);
        let cap = p.queue_capacity();
        let mut c = PacingCounts::default();
        assert_eq!(p.next_due(), Some(t0 + Duration::from_micros(500)));
        // 2.6 ms: arrivals at 0.5, 1.5, 2.5 ms are due.
        assert!(p.admit(t0 + Duration::from_micros(2600), &mut c, true));
        assert_eq!(c.scheduled, 3);
        assert_eq!(p.front_lane(), Some(0));
        assert_eq!(p.pop(&mut c, true), Some(t0 + Duration::from_micros(500)));
        assert_eq!(c.on_time, 1);
        // Next turn: 2 waiting from before, 2 new (3.5, 4.5 ms); room for one more.
        assert!(!p.admit(t0 + Duration::from_micros(4600), &mut c, true));
        assert_eq!((c.scheduled, c.dropped), (5, 1));
        let i = p.pop(&mut c, true).unwrap();
        assert_eq!(c.late, 1);
        p.unpop(i, &mut c, true);
        assert_eq!(c.late, 0);
        assert_eq!(p.pop(&mut c, true), Some(i));
        assert_eq!(p.pop(&mut c, true), Some(t0 + Duration::from_micros(2500)));
        assert_eq!(p.pop(&mut c, true), Some(t0 + Duration::from_micros(3500)));
        assert_eq!(
            (c.on_time, c.late),
            (2, 2),
            "the 3.5 ms one came in this turn"
        );
        assert!(p.admit(t0 + Duration::from_millis(7), &mut c, true));
        p.finish(t0 + Duration::from_millis(20), &mut c, true);
        assert_eq!(c.scheduled, 10);
        assert_eq!(c.unsent, 3);
        assert!(p.exhausted());
        assert!(p.queue_capacity() >= p.limit());
        assert_eq!(p.queue_capacity(), cap, "allocated once, never grown");
    }

    #[test]
    fn client_pace() {
        let t0 = Instant::now();
        let s = ClientSchedule::Rate(10.0);
        let mut cp = ClientPace {
            origin: Some(t0),
            ..Default::default()
        };
        let next = cp.update(&s, t0 + Duration::from_millis(250));
        assert_eq!(cp.due, 3);
        assert_eq!(next, Some(t0 + Duration::from_millis(300)));
        assert_eq!(cp.peek(&s), Some(t0));
        cp.sent = 3;
        assert_eq!(cp.peek(&s), None);
    }
}
