//! Request coalescing: new requests for a connection leave together.
//!
//! In the closed model a client submits a new request as soon as one of its
//! streams completes. Against a server that answers a batch of streams as a
//! train of small segments (nginx writes HEADERS and DATA of every stream as
//! separate segments), a fast client wakes for every segment and sends one
//! request per write, so each request costs a write, a TCP segment, a server
//! wake-up and a read of its own — h2load behaves the same way (about 1.15
//! requests per write against nginx at `-m10`).
//!
//! With coalescing, a client whose streams complete while others of the same
//! connection are still in flight *holds* the new requests until every stream
//! of the connection has completed or the hold limit
//! ([`crate::DEFAULT_COALESCE_HOLD`] for a bare `--coalesce`) has passed since the first one was held, then submits them all in one write. The limit keeps a
//! slow stream from holding the fast ones back (no convoy longer than the
//! limit). A connection with nothing in flight is never held, so `-m1` runs
//! are unchanged, and paced runs (open model, `--rps`, timing scripts) never
//! hold: they send when the schedule says.
//!
//! Requests are timed from the write that carries them, so holding does not
//! add to the measured request time; what changes is how many streams are in
//! flight between the batches, which is why it is opt-in (`--coalesce`): by
//! default the client keeps h2load's one-request-per-completion behaviour.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The held clients of one worker, oldest first (holds all last the same time,
/// so the queue is ordered by deadline).
#[derive(Debug)]
pub(crate) struct Holds {
    max: Duration,
    queue: VecDeque<(usize, Instant)>,
}

impl Holds {
    /// Coalescing with `max` as the longest hold.
    pub(crate) fn new(max: Duration, clients: usize) -> Holds {
        Holds {
            max,
            queue: VecDeque::with_capacity(clients),
        }
    }

    /// Whether client `idx`, with `inflight` streams still open and free
    /// slots it could fill, should wait; starts its hold if it should.
    /// `held_since` is the client's hold state (cleared by the caller when it
    /// submits).
    pub(crate) fn hold(
        &mut self,
        idx: usize,
        inflight: u32,
        held_since: &mut Option<Instant>,
        now: Instant,
    ) -> bool {
        if inflight == 0 {
            return false;
        }
        match *held_since {
            Some(t) => now.saturating_duration_since(t) < self.max,
            None => {
                *held_since = Some(now);
                self.queue.push_back((idx, now));
                true
            }
        }
    }

    /// The earliest time a hold runs out, if any client may be held.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|&(_, t)| t + self.max)
    }

    /// Pops the next hold that has run out at `now`: `(client, held since)`.
    /// The caller checks that the client's hold still has that start (a hold
    /// released early leaves a stale entry behind).
    pub(crate) fn pop_expired(&mut self, now: Instant) -> Option<(usize, Instant)> {
        let &(idx, t) = self.queue.front()?;
        if now.saturating_duration_since(t) >= self.max {
            self.queue.pop_front();
            Some((idx, t))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_are_never_held() {
        let mut h = Holds::new(Duration::from_millis(1), 4);
        let mut since = None;
        assert!(!h.hold(0, 0, &mut since, Instant::now()));
        assert!(since.is_none());
        assert!(h.next_deadline().is_none());
    }

    #[test]
    fn a_hold_lasts_until_its_limit() {
        let max = Duration::from_millis(1);
        let mut h = Holds::new(max, 4);
        let t0 = Instant::now();
        let mut since = None;
        assert!(h.hold(3, 5, &mut since, t0));
        assert_eq!(since, Some(t0));
        assert_eq!(h.next_deadline(), Some(t0 + max));
        // Still within the limit: keep holding, no second queue entry.
        assert!(h.hold(3, 4, &mut since, t0 + max / 2));
        assert!(h.pop_expired(t0 + max / 2).is_none());
        // At the limit: submit.
        assert!(!h.hold(3, 4, &mut since, t0 + max));
        assert_eq!(h.pop_expired(t0 + max), Some((3, t0)));
        assert!(h.next_deadline().is_none());
    }

    #[test]
    fn holds_expire_in_order() {
        let max = Duration::from_millis(1);
        let mut h = Holds::new(max, 4);
        let t0 = Instant::now();
        let (mut a, mut b) = (None, None);
        assert!(h.hold(1, 2, &mut a, t0));
        assert!(h.hold(2, 2, &mut b, t0 + max / 4));
        assert_eq!(h.pop_expired(t0 + max), Some((1, t0)));
        assert!(h.pop_expired(t0 + max).is_none());
        assert_eq!(h.next_deadline(), Some(t0 + max / 4 + max));
        assert_eq!(h.pop_expired(t0 + 2 * max), Some((2, t0 + max / 4)));
    }
}
