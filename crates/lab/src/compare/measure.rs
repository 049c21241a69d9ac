//! Measuring cells in rounds.
//!
//! A *round* runs every arm of a condition once, back to back, the starting arm rotated
//! and the direction reversed from round to round ([`order::round_order`]), so that
//! whatever the machine does drifts over all arms alike; the decisions then pair the arms'
//! runs by round ([`crate::stats::ci::paired_ratio`]). Each run is a window of the arm's
//! standing connections ([`super::arms`]: client threads and connections opened at the
//! arm's first run and kept between its runs; the first window warms up for the full
//! warm-up, later ones for [`resume_warm_up`], enough to fill the pipeline again) — or, with
//! `fresh_connections`, a whole timing-based engine run (connect, warm-up, measured period,
//! close) — and also records:
//! - the CPU time of the built-in server's threads and of the client's worker threads over
//!   the measured period ([`RunObserver`]: per-thread CPU clocks), per completed request;
//! - what the rest of the machine did over the round ([`rounds::round`]); with `strict`, a
//!   round in which the machine was busy is measured again (at most
//!   [`RunPolicy::strict_retries`](crate::kernel::RunPolicy::strict_retries) times).
//!
//! The round, its order, the retry of an empty run, the CPU clocks and every timing number
//! ([`RunPolicy`](crate::kernel::RunPolicy)) are the lab's kernel ([`crate::kernel`]), which `page` and `upstream`
//! use too; [`Measurer`] applies them to compare's cells and their standing arms. Which
//! rounds run when is [`super::schedule`]'s.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_engine::{new_duration_histogram, StopFlag};
use hdrhistogram::Histogram;

use super::arms::Arms;
use super::run::{bench_config, sample, CellResult, RunSample};
use super::timing::{cell_timing, drain_cap, resume_warm_up, settle_after, whole_cycles, Timing};
use super::wall::WallTally;
use crate::env::LabEnv;
use crate::kernel::clocks::RunObserver;
use crate::kernel::{order, rounds};
use crate::proto::LabProtocol;

pub use crate::os::thread_cpu_ns;

/// One run's results before its round is accepted.
struct RunOut {
    sample: RunSample,
    /// Requests started in the measured period.
    started: u64,
    hist: Histogram<u64>,
    timeline: Vec<(f64, f64)>,
}

/// Measures rounds of cells in a lab environment (see the module docs).
pub struct Measurer<'a> {
    env: &'a mut LabEnv,
    timing: Timing,
    strict: bool,
    stop: StopFlag,
    /// Standing connections per cell (unused with `fresh`).
    arms: Arms,
    /// A whole engine run (connect, warm up, measure, close) per run, as before standing
    /// connections.
    fresh: bool,
    /// The cells of the round being measured (their arms stay open).
    current: Vec<usize>,
    /// Where the time went.
    wall: WallTally,
    /// Leave runs measured in a slow spell out of the statistics ([`super::spell`]).
    spells: bool,
    /// The protocol of the run measured last, whatever its condition ([`settle_after`]).
    last: Option<LabProtocol>,
}

impl<'a> Measurer<'a> {
    /// A measurer of runs timed by `timing` in `env`; `strict` re-measures busy rounds.
    pub fn new(env: &'a mut LabEnv, timing: &Timing, strict: bool, stop: &StopFlag) -> Self {
        Measurer {
            env,
            timing: timing.clone(),
            strict,
            stop: stop.clone(),
            arms: Arms::default(),
            fresh: false,
            current: Vec::new(),
            wall: WallTally::default(),
            spells: true,
            last: None,
        }
    }

    /// Whether runs measured in a slow spell are left out of the statistics (the default;
    /// `--keep-slow-spells` keeps them).
    pub fn slow_spells(mut self, leave_out: bool) -> Self {
        self.spells = leave_out;
        self
    }

    /// Recomputes the statistics of the cells at `idxs` (one condition, measured in the same
    /// rounds) after rounds were added: marks the runs measured in a slow spell first.
    pub fn refresh(&self, cells: &mut [CellResult], idxs: &[usize]) {
        if self.spells {
            super::spell::mark(cells, idxs);
        }
        for &i in idxs {
            if let Some(c) = cells.get_mut(i) {
                c.refresh();
            }
        }
    }

    /// Measures every run on fresh connections (a whole engine run each) instead of the
    /// arms' standing connections.
    pub fn fresh_connections(mut self, fresh: bool) -> Self {
        self.fresh = fresh;
        self
    }

    /// Where the time went so far.
    pub fn wall(&mut self) -> &mut WallTally {
        &mut self.wall
    }

    /// Closes every standing connection (before the report is written).
    pub fn close_arms(&mut self) {
        let t0 = Instant::now();
        self.arms.close_all();
        self.wall.open_close_secs += t0.elapsed().as_secs_f64();
    }

    /// The run timing.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Whether every run is measured on fresh connections ([`Self::fresh_connections`]).
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// Whether the run was asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.is_stopped()
    }

    /// One run of `cell` as round `round`; errors are recorded in the cell. A run that
    /// completed nothing and failed nothing (its connections were still being set up when the
    /// measured period ended: a starved machine, or a debug build's slow TLS) is run once
    /// more ([`rounds::retry_empty`]: [`RunPolicy::empty_retry_warm_up`](crate::kernel::RunPolicy::empty_retry_warm_up) times the warm-up,
    /// at least an arm's first warm-up, and a period of at least
    /// [`RunPolicy::empty_retry_period`](crate::kernel::RunPolicy::empty_retry_period)). If that one started requests and completed none,
    /// its arm is reopened for the next run; if it started none, its connections are still
    /// being set up and the arm stays open, so that they finish (reopening it started 50 TLS
    /// handshakes over every time: at a load of 17 on 2 cores a debug build's `--quick`
    /// measured no run of four TLS cells in six rounds).
    fn run_once(&mut self, cell: &mut CellResult, idx: usize, round: u32) -> Option<RunOut> {
        let (policy, stop) = (self.timing.policy, self.stop.clone());
        let empty = |o: &RunOut| rounds::completed_nothing(o.sample.completed, o.sample.failed);
        let a = rounds::retry_empty(&policy, &stop, empty, |factor| {
            self.run_timed(cell, idx, round, factor).ok_or(())
        })
        .ok()?;
        let Some(again) = a.retry else {
            return Some(a.first);
        };
        self.wall.retries += 1;
        if wedged(again.sample.completed, again.sample.failed, again.started) {
            // Its connections may be gone for good: the next run opens the arm anew.
            self.arms.close(idx);
        }
        Some(again)
    }

    fn run_timed(
        &mut self,
        cell: &mut CellResult,
        idx: usize,
        round: u32,
        warm_up_factor: u32,
    ) -> Option<RunOut> {
        let mut timing = self.timing.clone();
        timing.warm_up *= warm_up_factor;
        let key = cell.key.clone();
        let origin = match self.env.origin(key.proto, key.cond.link) {
            Ok(o) => o,
            Err(e) => {
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        let mut cfg = match bench_config(&key, &origin, &timing) {
            Ok(c) => c,
            Err(e) => {
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        let tids = self.env.server_tids_for(key.cond.link);
        let obs = Arc::new(RunObserver::new(tids, cfg.threads));
        let (first_warm_up, planned) = cell_timing(&key, &timing);
        let loopback = key.cond.link.shape().0.is_zero();
        let rate = cell.median_rps();
        // On loopback a later window holds whole cycles of the closed loop (`cycle_floor`).
        let floor = rate
            .filter(|_| loopback)
            .and_then(|rps| timing.policy.cycle_floor(key.cond.concurrency, rps));
        let mut d = match (rate, floor) {
            (_, Some((_, measured))) => planned.max(measured),
            (Some(rps), None) if !loopback => whole_cycles(planned, key.cond.concurrency, rps),
            _ => planned,
        };
        if warm_up_factor > 1 {
            d = d.max(timing.policy.empty_retry_period);
        }
        cfg.duration = Some(d);
        let mut w = first_warm_up;
        // Packet mode: the client's threads (and the arm's, started now) on the client side.
        let side = match self.env.client_side(key.cond.link) {
            Ok(s) => s,
            Err(e) => {
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        let counted = self.env.path_counters(&[key.proto], key.cond.link);
        let call = Instant::now();
        // An arm a standing run cannot measure is measured on fresh connections.
        let r = if self.fresh || !h2lab_engine::StandingRun::supports(&cfg) {
            h2lab_engine::run(&cfg, &*obs, &self.stop)
        } else {
            match self.arms.get(
                idx,
                &cfg,
                (
                    cell.connections,
                    super::arms::footprint(&key, cell.connections),
                ),
                &self.current,
                &self.stop,
            ) {
                Ok((arm, took)) => {
                    if arm.windows() > 0 {
                        let refill = floor.map_or(Duration::ZERO, |(cycle, _)| cycle);
                        let p = &timing.policy;
                        w = (resume_warm_up(p, &key).max(refill)
                            + settle_after(p, self.last, &key))
                            * warm_up_factor;
                        if warm_up_factor > 1 {
                            // The retry of a window that completed nothing warms up at least
                            // as long as an arm's first run: a cycle longer than the short
                            // refill (a debug build's TLS on 100 KB: 22 ms) then completes,
                            // and its rate sizes the next windows (`cycle_floor`).
                            w = w.max(self.timing.warm_up);
                        }
                    } else {
                        self.wall.opened += 1;
                        arm.drain_before_reply(drain_cap(&timing.policy, &key));
                    }
                    self.wall.open_close_secs += took.as_secs_f64();
                    arm.measure(w, d, obs.clone())
                }
                Err(e) => Err(e),
            }
        };
        drop(side);
        super::paths::count(self.env, &key, counted, cell);
        self.last = Some(key.proto);
        let edges = obs.edges();
        self.wall.add_run(call, Instant::now(), edges, w + d);
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                self.arms.close(idx);
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        if r.requests.failed > 0 {
            if let Some(m) = r.errors.messages.first() {
                cell.error
                    .get_or_insert(format!("{} failed requests ({m})", r.requests.failed));
            }
        }
        let mut s = sample(&r, round);
        let n = r.requests.completed as f64;
        if n > 0.0 {
            s.server_cpu_us = obs.server_ns().map(|ns| ns as f64 / 1e3 / n);
            s.client_cpu_us = obs.client_ns().map(|ns| ns as f64 / 1e3 / n);
            s.starved = obs.starved();
        }
        Some(RunOut {
            started: r.requests.started,
            sample: s,
            hist: r.request_time,
            timeline: obs.rates(w, d),
        })
    }

    /// Round `round` of the cells at `idxs` (indices into `cells`): each once, back to
    /// back, in the order of [`order::round_order`]. With `strict`, a round in which the
    /// machine was busy is measured again, at most [`RunPolicy::strict_retries`](crate::kernel::RunPolicy::strict_retries) times
    /// ([`rounds::round`]).
    pub fn round(&mut self, cells: &mut [CellResult], idxs: &[usize], round: u32) {
        let n = idxs.len();
        if n == 0 {
            return;
        }
        let t0 = Instant::now();
        let runs_before = self.wall.runs_secs() + self.wall.open_close_secs;
        self.current = idxs.to_vec();
        self.measure_round(cells, idxs, round);
        let inside = self.wall.runs_secs() + self.wall.open_close_secs - runs_before;
        self.wall.between_secs += (t0.elapsed().as_secs_f64() - inside).max(0.0);
    }

    fn measure_round(&mut self, cells: &mut [CellResult], idxs: &[usize], round: u32) {
        let order = order::round_order(idxs, round, |i| {
            cells
                .get(i)
                .is_some_and(|c| c.key.proto == LabProtocol::H1Close)
        });
        let (policy, stop) = (self.timing.policy, self.stop.clone());
        let Ok(r) = rounds::round(&order, self.strict, &policy, &stop, |idx| {
            let Some(cell) = cells.get_mut(idx) else {
                return Ok::<_, Infallible>(None);
            };
            if cell.error.is_some() && cell.runs.is_empty() {
                // The first run failed outright: do not insist.
                return Ok(None);
            }
            Ok(self.run_once(cell, idx, round))
        });
        for &i in idxs {
            if let Some(c) = cells.get_mut(i) {
                c.remeasured += r.remeasured;
            }
        }
        for (idx, mut o) in r.outs {
            let Some(c) = cells.get_mut(idx) else {
                continue;
            };
            o.sample.load = r.load;
            o.sample.busy = r.busy;
            let h = c.hist.get_or_insert_with(new_duration_histogram);
            let _ = h.add(&o.hist);
            c.runs.push(o.sample);
            c.timelines.push(o.timeline);
        }
    }
}

/// Whether a retried run that completed nothing shows its arm's connections wedged (open,
/// requests sent, no answer, no failure: reopen it) rather than still being set up (no
/// request started: keep it open so that the set-up finishes; see `Measurer::run_once`).
fn wedged(completed: u64, failed: u64, started: u64) -> bool {
    completed == 0 && failed == 0 && started > 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_arm_still_setting_up_is_not_reopened() {
        // Connections still handshaking when the period ended: no request started.
        assert!(!super::wedged(0, 0, 0));
        // Requests sent and never answered: the connections may be gone for good.
        assert!(super::wedged(0, 0, 10));
        assert!(!super::wedged(3, 0, 10));
        assert!(!super::wedged(0, 2, 10));
    }
}
