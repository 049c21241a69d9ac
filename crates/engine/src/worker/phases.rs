//! What the one worker loop is doing when: the phases of a bench run (until every
//! request is done; or a warm-up, then a measured period, then over) or of a standing
//! worker (paused between windows, or measuring window N: a warm-up and a measured
//! period, as its commands say — see `windows`).
//!
//! The schedule's data ([`Schedule`], [`Step`]) is the worker's (`worker/mod.rs`), so that
//! this module and `windows` (a standing worker's step) each depend on it and not on each
//! other. The loop ([`Worker::run_phases`](super::Worker)) asks the schedule, once per turn,
//! to advance to the phase the clock is in ([`Worker::advance`]), for the next deadline
//! it has to wake for ([`Schedule::deadline`]), and whether it is paused.

use std::time::Instant;

use super::{Schedule, Step, Worker};
use crate::TimedRunPhase as RunPhase;

impl Schedule {
    /// The next phase change the loop has to wake for (`measuring`: the worker is past
    /// the warm-up).
    #[inline]
    pub(super) fn deadline(&self, measuring: bool) -> Option<Instant> {
        match self {
            Schedule::Count => None,
            Schedule::Timed { warm_end, main_end } => {
                Some(if measuring { *main_end } else { *warm_end })
            }
            Schedule::Standing(s) => s.deadline(measuring),
        }
    }

    /// Between windows: no request is sent, the loop waits for a command (or a
    /// connection's own event: ACKs, QUIC timers, a server closing).
    #[inline]
    pub(super) fn paused(&self) -> bool {
        matches!(self, Schedule::Standing(s) if s.paused())
    }

    /// Whether the loop ends once every client is finished (a standing worker waits for
    /// its commands whatever its clients' state).
    #[inline]
    pub(super) fn ends_with_clients(&self) -> bool {
        !matches!(self, Schedule::Standing(_))
    }
}

impl Worker<'_> {
    /// Moves to the phase the clock (`now`) is in; `next_timer` is the next `-T`/`-N`
    /// scan (`None` while paused).
    #[inline]
    pub(super) fn advance(
        &mut self,
        sched: &mut Schedule,
        now: Instant,
        next_timer: &mut Option<Instant>,
    ) -> Step {
        match sched {
            Schedule::Count => Step::Go,
            Schedule::Timed { warm_end, main_end } => {
                if !self.measuring && now >= *warm_end {
                    self.end_warm_up(now);
                }
                if now >= *main_end {
                    self.phase(RunPhase::MainOver);
                    self.stop_all();
                    self.phase(RunPhase::Stopped);
                    return Step::Stop;
                }
                Step::Go
            }
            Schedule::Standing(s) => self.advance_standing(s, now, next_timer),
        }
    }
}
