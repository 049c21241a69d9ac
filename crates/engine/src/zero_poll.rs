//! Whether a worker's loop turn should look for more input before writing.
//!
//! After processing the events of a poll, a worker can poll once more with a
//! zero timeout before it writes, so that responses that arrived meanwhile
//! are read first and each connection's new requests leave in one write
//! (h2load gets the same effect by writing one loop iteration after
//! reading). That pays off when responses arrive in several pieces — many
//! streams per connection (`-m100`), TLS records split across reads — and is
//! a wasted `epoll_wait` per turn otherwise: with `-m1`..`-m10` it finds
//! nothing in over 95% of turns.
//!
//! [`ZeroPoll`] keeps a moving average of how often the extra poll found
//! something and skips it while that rate is low, re-trying it every
//! [`PROBE_EVERY`] turns so that a change in the traffic is noticed.

/// Weight of one turn in the moving average: 1/16.
const SHIFT: u32 = 4;
/// What a useful zero poll adds to the score (before the decay).
const HIT: u32 = 1 << 10;
/// Steady-state score for a hit rate `p` is `HIT × p`; poll while the rate is
/// at least 1/8 (one saved write costs more than eight empty `epoll_wait`s).
const THRESHOLD: u32 = HIT / 8;
/// A skipped zero poll is still tried every this many turns.
pub(crate) const PROBE_EVERY: u32 = 32;

/// The adaptive decision (one per worker; no shared state).
#[derive(Debug, Clone)]
pub(crate) struct ZeroPoll {
    score: u32,
    turn: u32,
}

impl Default for ZeroPoll {
    fn default() -> Self {
        // Start by polling: the first turns of a run show whether it helps.
        ZeroPoll {
            score: HIT,
            turn: 0,
        }
    }
}

impl ZeroPoll {
    /// Whether to do the zero-timeout poll in this turn.
    pub(crate) fn wanted(&mut self) -> bool {
        self.turn = self.turn.wrapping_add(1);
        self.score >= THRESHOLD || self.turn % PROBE_EVERY == 0
    }

    /// Records what a zero-timeout poll found.
    pub(crate) fn record(&mut self, found_events: bool) {
        self.score -= self.score >> SHIFT;
        if found_events {
            self.score += HIT >> SHIFT;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `turns` turns where a zero poll finds events with `hit(turn)`;
    /// returns how many zero polls were done.
    fn simulate(z: &mut ZeroPoll, turns: u32, hit: impl Fn(u32) -> bool) -> u32 {
        let mut polls = 0;
        for t in 0..turns {
            if z.wanted() {
                polls += 1;
                z.record(hit(t));
            }
        }
        polls
    }

    #[test]
    fn useless_zero_polls_stop_except_for_probes() {
        let mut z = ZeroPoll::default();
        let polls = simulate(&mut z, 10_000, |_| false);
        // A few dozen turns to learn, then one probe per PROBE_EVERY turns.
        assert!(polls < 10_000 / PROBE_EVERY + 60, "{polls}");
    }

    #[test]
    fn useful_zero_polls_continue() {
        let mut z = ZeroPoll::default();
        assert_eq!(simulate(&mut z, 10_000, |_| true), 10_000);
        // A hit rate of one in four is still worth it.
        let mut z = ZeroPoll::default();
        assert_eq!(simulate(&mut z, 10_000, |t| t % 4 == 0), 10_000);
    }

    #[test]
    fn probes_notice_when_polling_becomes_useful_again() {
        let mut z = ZeroPoll::default();
        simulate(&mut z, 1_000, |_| false);
        assert!(!z.wanted() || z.turn % PROBE_EVERY == 0);
        // Every probe now finds events: after a few probes polling resumes.
        let polls = simulate(&mut z, 10 * PROBE_EVERY, |_| true);
        assert!(polls > 5 * PROBE_EVERY, "{polls}");
        assert!(z.wanted());
    }
}
