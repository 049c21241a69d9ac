//! [`RunPolicy`]: every number that decides how long a lab run warms up, measures, waits and
//! retries, in one value. The cost model ([`crate::compare::plan`]) and the measurers of
//! `compare`, `page` and `upstream` read the same value, so that what is planned is what is
//! run. Each field says where its number was measured.

use std::time::Duration;

/// Every timing number of the lab's measurer and its cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunPolicy {
    /// The measured period of a run in compare's default and `--quick` matrices (stretched on
    /// slow links). Short: the 2-core VM's speed moves over hundreds of milliseconds, so two
    /// arms' windows close together in time share more of it, and the budget turns the time
    /// saved into rounds. `bench/lab-repro.sh` on the same quiet machine, alternated
    /// (docs/methods.md, "Why it works this way"): the median CI width of the req/s and
    /// server-cost decisions fell from 31% and 28% with 100 ms windows to 5% and 4% with
    /// 15 ms ones.
    pub window: Duration,
    /// The shortest measured window `--duration` accepts. Windows of 10 ms completed no
    /// request in 36–49 runs of a compare run on the 2-core VM (a window starts from a drained
    /// pipeline: with every request sent at once, the first completions come a whole cycle of
    /// the closed loop later, and the window's fixed costs take a few milliseconds), while
    /// 15 ms completed requests in every window of the release build (later windows are
    /// further stretched to whole cycles of the arm's loop, [`Self::cycle_floor`]).
    pub min_window: Duration,
    /// Link round trips (of the whole concurrency) a run on a slow link lasts at least, and
    /// closed-loop cycles a later window on loopback measures at least ([`Self::cycle_floor`]).
    pub link_rounds: u32,
    /// Most a run's warm-up or measured period is stretched on a slow link.
    pub max_run: Duration,
    /// Round trips of warm-up that cover a connection's set-up on an emulated link (TCP, TLS,
    /// first request).
    pub setup_rtts: u32,
    /// Least warm-up of a run on an arm's standing connections after its first, on an
    /// emulated link: time for the client to fill its pipeline again after idling while the
    /// other arms ran.
    pub resume_warm_up: Duration,
    /// The same on loopback, where the arm measured before has already drained (its window
    /// waited for its requests in flight, [`Self::drain_cap`]) and the pipeline refills within
    /// a few request times (well under a millisecond at the lab's concurrencies). How the
    /// window length trades against the number of rounds on the 2-core VM was measured
    /// (docs/methods.md, "Why it works this way"): the machine's noise moves over hundreds of
    /// milliseconds, so the closer two arms' windows are, the more of it their ratio cancels,
    /// and the 20 ms refill was 45% of a 25 ms window's cost.
    pub loopback_resume_warm_up: Duration,
    /// Longest a window on loopback waits, after its measured period, for its requests in
    /// flight to complete before it returns (and the next arm's window starts): they take
    /// well under a millisecond unless the machine stalls, and a stall this long is one the
    /// next window should not begin inside anyway.
    pub drain_cap: Duration,
    /// Extra warm-up of a window on loopback that follows an HTTP/1.0 window (of any
    /// condition): HTTP/1.0 opens and closes a connection per request, and the sockets it
    /// leaves are torn down after its window has drained. 25 ms halved the p99 penalty of the
    /// following arm in the repro pairs; with HTTP/1.0 last in every round
    /// ([`super::order::round_order`]) the rest is spread over every arm.
    pub settle_after_close: Duration,
    /// Rounds of a condition whose runs a slow link stretches to more than 1.5× the set
    /// duration: such runs are long, link-bound and steady, and more of them would blow the
    /// time budget; six is the fewest that can decide ([`crate::stats::ci::MIN_ROUNDS`]).
    pub stretched_rounds: u32,
    /// Per-run cost beyond the warm-up and the measured period on standing connections (the
    /// command to the worker, the window's statistics, load probes): `wall` in results.json
    /// of compare runs on the 2-core VM.
    pub window_overhead: Duration,
    /// Per-run cost of a whole engine run beyond its warm-up and measured period: the call
    /// into the engine to its first worker starting (thread start, TLS configuration), and
    /// the end of the measured period to its return (closing the connections, joining the
    /// threads, merging). A few ms for TCP on a loaded 2-core VM (`wall` in results.json);
    /// for HTTP/3 (a CONNECTION_CLOSE per connection) set-up plus teardown came to at most
    /// about 22 ms per run at c=50 and 40 ms at c=200 (`wall` of `h2,h3` runs on `100k`,
    /// nice 19, load 6–7).
    pub whole_run_overhead: Duration,
    /// Cost of opening an arm's standing connections beyond its first warm-up (the call
    /// itself: threads start, connects and handshakes happen in the background of the
    /// warm-up).
    pub open_overhead: Duration,
    /// How often `--strict` measures a busy round again before keeping it (flagged).
    pub strict_retries: u32,
    /// Warm-up multiplier of the one retry of a run that completed nothing.
    pub empty_retry_warm_up: u32,
    /// Least measured period of that retry: a run that completed nothing says only that the
    /// arm's closed loop needs longer than its window (a slow server, a debug build's TLS);
    /// the retry measures at least as long as the lab's earlier 100 ms windows, so that it
    /// completes something and its rate sizes the next windows ([`Self::cycle_floor`]).
    pub empty_retry_period: Duration,
    /// Planned time measured before the scheduler compares the wall time spent with the plan
    /// (`slowdown`): below it, a few runs' start-up costs would dominate the ratio.
    pub slowdown_after: Duration,
    /// Most the scheduler assumes the machine runs slower than planned (a factor).
    pub max_slowdown: u32,
    /// A stalled connection fails after this long without progress, so that it cannot hang a
    /// matrix.
    pub inactivity_timeout: Duration,
}

impl RunPolicy {
    /// The lab's policy, as measured on the 2-core VM (see each field).
    pub const LAB: RunPolicy = RunPolicy {
        window: Duration::from_millis(15),
        min_window: Duration::from_millis(15),
        link_rounds: 3,
        max_run: Duration::from_secs(10),
        setup_rtts: 4,
        resume_warm_up: Duration::from_millis(20),
        loopback_resume_warm_up: Duration::from_millis(5),
        drain_cap: Duration::from_millis(200),
        settle_after_close: Duration::from_millis(20),
        stretched_rounds: 6,
        window_overhead: Duration::from_millis(8),
        whole_run_overhead: Duration::from_millis(30),
        open_overhead: Duration::from_millis(30),
        strict_retries: 2,
        empty_retry_warm_up: 4,
        empty_retry_period: Duration::from_millis(100),
        slowdown_after: Duration::from_millis(500),
        max_slowdown: 10,
        inactivity_timeout: Duration::from_secs(10),
    };

    /// The least warm-up and measured period of a later window on loopback, for an arm
    /// running at `rps` req/s with `concurrency` requests in flight: the window starts from
    /// an empty pipeline (the one before drained, [`Self::drain_cap`]) with every request sent
    /// at once, so the first completions come a whole cycle of the closed loop
    /// (`concurrency / rps`) later, and a period shorter than that measures nothing —
    /// HTTP/2 over TLS on 100 KB in a debug build ran a 22 ms cycle against a 5 ms refill and
    /// a 15 ms period, and 14 of its 15 windows completed no request. One cycle of warm-up
    /// and [`Self::link_rounds`] cycles measured (at most [`Self::max_run`] each); `None`
    /// without a rate. At the release build's rates on this VM a cycle is 0.3–3 ms, well
    /// inside the 5 ms refill and 15 ms period.
    pub fn cycle_floor(&self, concurrency: u32, rps: f64) -> Option<(Duration, Duration)> {
        if !(rps.is_finite() && rps > 0.0) {
            return None;
        }
        let cycle = Duration::from_secs_f64(f64::from(concurrency.max(1)) / rps).min(self.max_run);
        Some((cycle, (cycle * self.link_rounds).min(self.max_run)))
    }

    /// How much slower than planned the rounds so far went (at least 1, at most
    /// [`Self::max_slowdown`]): `spent` wall time over `planned`, once `planned` exceeds
    /// [`Self::slowdown_after`].
    pub fn slowdown(&self, spent: Duration, planned: Duration) -> f64 {
        if planned > self.slowdown_after {
            (spent.as_secs_f64() / planned.as_secs_f64()).clamp(1.0, f64::from(self.max_slowdown))
        } else {
            1.0
        }
    }
}

impl Default for RunPolicy {
    fn default() -> Self {
        RunPolicy::LAB
    }
}
