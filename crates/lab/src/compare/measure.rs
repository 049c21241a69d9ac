//! Measuring cells in rounds.
//!
//! A *round* runs every arm of a condition once, back to back, the starting arm rotated
//! from round to round, so that whatever the machine does drifts over all arms alike; the
//! decisions then pair the arms' runs by round ([`crate::stats::ci::paired_ratio`]).
//! Each run is a timing-based engine run (a warm-up, then the measured period) and also
//! records:
//! - the CPU time of the built-in server's threads and of the client's worker threads over
//!   the measured period (per-thread CPU clocks, read when each worker enters and leaves
//!   the measured period), per completed request;
//! - what the rest of the machine did ([`crate::host::LoadProbe`]); with `strict`, a round
//!   in which any run was busy is measured again (at most [`STRICT_RETRIES`] times).
//!
//! [`Measurer`] is the reusable part: any experiment that has [`CellResult`]s (a key each)
//! and an environment can measure rounds of them.

use std::sync::Mutex;
use std::time::Duration;

use h2lab_engine::{
    new_duration_histogram, AppProtocol, IntervalRow, Observer, StopFlag, TimedRunPhase, TlsInfo,
};
use hdrhistogram::Histogram;

use super::matrix::MatrixPlan;
use super::run::{
    bench_config, cell_timing, rounds_for, sample, CellResult, Progress, RunSample, Timing,
};
use crate::env::LabEnv;
use crate::host::{self, LoadProbe};

/// How often `--strict` measures a busy round again before keeping it (flagged).
pub const STRICT_RETRIES: u32 = 2;

/// Warm-up multiplier of the one retry of a run that completed nothing.
pub const EMPTY_RETRY_WARM_UP: u32 = 4;

/// Records the engine's progress as a time series and the CPU clocks at the edges of the
/// measured period.
struct CellObserver {
    timeline: Mutex<Vec<(f64, u64)>>,
    server_tids: Vec<u32>,
    /// Server threads' CPU (ns) when worker 0 entered and left the measured period.
    server: Mutex<(Option<u64>, Option<u64>)>,
    /// Each client worker's own CPU (ns) at the same edges.
    client: Mutex<Vec<(Option<u64>, Option<u64>)>>,
}

impl CellObserver {
    fn new(server_tids: Vec<u32>, threads: u32) -> CellObserver {
        CellObserver {
            timeline: Mutex::new(Vec::new()),
            server_tids,
            server: Mutex::new((None, None)),
            client: Mutex::new(vec![(None, None); threads as usize]),
        }
    }

    fn server_ns(&self) -> Option<u64> {
        if self.server_tids.is_empty() {
            return None;
        }
        match *self.server.lock().ok()? {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        }
    }

    fn client_ns(&self) -> Option<u64> {
        let v = self.client.lock().ok()?;
        v.iter()
            .map(|c| match c {
                (Some(a), Some(b)) => Some(b.saturating_sub(*a)),
                _ => None,
            })
            .sum()
    }

    /// Rates between samples taken during the measured period (the final progress call,
    /// moments after the previous one, and the samples after the end are left out).
    fn rates(&self, warm_up: Duration, duration: Duration) -> Vec<(f64, f64)> {
        let v = self.timeline.lock().map(|v| v.clone()).unwrap_or_default();
        let (w, d) = (warm_up.as_secs_f64(), duration.as_secs_f64());
        let inside: Vec<(f64, u64)> = v
            .into_iter()
            .filter(|(t, _)| *t >= w && *t <= w + d + 0.02)
            .collect();
        inside
            .windows(2)
            .filter_map(|p| {
                let (t0, d0) = p[0];
                let (t1, d1) = p[1];
                let dt = t1 - t0;
                (dt > 0.05 && d1 >= d0).then(|| (t1 - w, (d1 - d0) as f64 / dt))
            })
            .collect()
    }
}

impl Observer for CellObserver {
    fn progress(&self, done: u64, _total: u64, elapsed: Duration, _errors: u64) {
        if let Ok(mut v) = self.timeline.lock() {
            v.push((elapsed.as_secs_f64(), done));
        }
    }
    fn tls_info(&self, _info: &TlsInfo) {}
    fn protocol(&self, _p: AppProtocol) {}
    // The cells run without a time series and h2load's phase lines are not shown.
    fn interval(&self, _row: &IntervalRow) {}
    fn phase(&self, thread: u32, phase: TimedRunPhase) {
        let edge = match phase {
            TimedRunPhase::MainStarted => 0,
            TimedRunPhase::MainOver => 1,
            _ => return,
        };
        // Called from the worker's own thread: its clock is the calling thread's.
        let own = host::current_thread_cpu_ns();
        if let Ok(mut v) = self.client.lock() {
            if let Some(c) = v.get_mut(thread as usize) {
                if edge == 0 {
                    c.0 = own;
                } else {
                    c.1 = own;
                }
            }
        }
        if thread == 0 && !self.server_tids.is_empty() {
            let ns = Some(host::threads_cpu_ns(&self.server_tids));
            if let Ok(mut s) = self.server.lock() {
                if edge == 0 {
                    s.0 = ns;
                } else {
                    s.1 = ns;
                }
            }
        }
    }
}

/// One run's results before its round is accepted.
struct RunOut {
    idx: usize,
    sample: RunSample,
    hist: Histogram<u64>,
    timeline: Vec<(f64, f64)>,
}

/// Measures rounds of cells in a lab environment (see the module docs).
pub struct Measurer<'a> {
    env: &'a mut LabEnv,
    timing: Timing,
    strict: bool,
    stop: StopFlag,
    server_tids: Vec<u32>,
}

impl<'a> Measurer<'a> {
    /// A measurer of runs timed by `timing` in `env`; `strict` re-measures busy rounds.
    pub fn new(env: &'a mut LabEnv, timing: &Timing, strict: bool, stop: &StopFlag) -> Self {
        let server_tids = env.server_tids();
        Measurer {
            env,
            timing: timing.clone(),
            strict,
            stop: stop.clone(),
            server_tids,
        }
    }

    /// The run timing.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Whether the run was asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.is_stopped()
    }

    /// One run of `cell` as round `round`; errors are recorded in the cell. A run that
    /// completed nothing and failed nothing (its connections were still being set up when the
    /// measured period ended: a starved machine, or a debug build's slow TLS) is run once
    /// more with [`EMPTY_RETRY_WARM_UP`] times the warm-up.
    fn run_once(&mut self, cell: &mut CellResult, idx: usize, round: u32) -> Option<RunOut> {
        let out = self.run_timed(cell, idx, round, 1)?;
        if out.sample.completed == 0 && out.sample.failed == 0 && !self.stop.is_stopped() {
            return self.run_timed(cell, idx, round, EMPTY_RETRY_WARM_UP);
        }
        Some(out)
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
        let cfg = match bench_config(&key, &origin, &timing) {
            Ok(c) => c,
            Err(e) => {
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        let obs = CellObserver::new(self.server_tids.clone(), cfg.threads);
        let probe = LoadProbe::start();
        let r = match h2lab_engine::run(&cfg, &obs, &self.stop) {
            Ok(r) => r,
            Err(e) => {
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        let load = probe.finish();
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
        }
        s.busy = load.is_some_and(|l| l.busy());
        s.load = load;
        let (w, d) = cell_timing(&key, &timing);
        Some(RunOut {
            idx,
            sample: s,
            hist: r.request_time,
            timeline: obs.rates(w, d),
        })
    }

    /// Round `round` of the cells at `idxs` (indices into `cells`): each once, back to
    /// back, starting with the `round`-th (rotated). With `strict`, a round in which the
    /// machine was busy is measured again, at most [`STRICT_RETRIES`] times.
    pub fn round(&mut self, cells: &mut [CellResult], idxs: &[usize], round: u32) {
        let n = idxs.len();
        if n == 0 {
            return;
        }
        let mut attempt = 0;
        loop {
            let mut outs = Vec::with_capacity(n);
            for k in 0..n {
                if self.stop.is_stopped() {
                    break;
                }
                let idx = idxs[(k + round as usize) % n];
                let Some(cell) = cells.get_mut(idx) else {
                    continue;
                };
                if cell.error.is_some() && cell.runs.is_empty() {
                    // The first run failed outright: do not insist.
                    continue;
                }
                if let Some(o) = self.run_once(cell, idx, round) {
                    outs.push(o);
                }
            }
            let busy = outs.iter().any(|o| o.sample.busy);
            if busy && self.strict && attempt < STRICT_RETRIES && !self.stop.is_stopped() {
                attempt += 1;
                for &i in idxs {
                    if let Some(c) = cells.get_mut(i) {
                        c.remeasured += 1;
                    }
                }
                continue;
            }
            for o in outs {
                let Some(c) = cells.get_mut(o.idx) else {
                    continue;
                };
                let h = c.hist.get_or_insert_with(new_duration_histogram);
                let _ = h.add(&o.hist);
                c.runs.push(o.sample);
                c.timelines.push(o.timeline);
            }
            return;
        }
    }
}

/// Measures every cell of `plan`, condition by condition, `timing.runs` rounds each (fewer
/// on stretched links: [`rounds_for`]), and
/// returns the results in `plan.cells` order (a cell shared by several conditions is
/// measured with the first). `on_cell` is called after each cell; a stop leaves the rest
/// unmeasured (with an error).
pub fn run_plan(
    m: &mut Measurer<'_>,
    plan: &MatrixPlan,
    on_cell: &mut dyn FnMut(Progress<'_>),
) -> Vec<CellResult> {
    let t = m.timing().clone();
    let mut cells: Vec<CellResult> = plan
        .cells
        .iter()
        .map(|k| CellResult::new(k.clone(), &t))
        .collect();
    let mut measured = vec![false; cells.len()];
    let mut done = 0usize;
    for cond in &plan.conditions {
        let mut idxs: Vec<usize> = Vec::new();
        for &(_, i) in &cond.cells {
            if !measured[i] && !idxs.contains(&i) {
                idxs.push(i);
            }
        }
        if idxs.is_empty() {
            continue;
        }
        let rounds = idxs
            .iter()
            .map(|&i| rounds_for(&plan.cells[i], &t))
            .min()
            .unwrap_or(1);
        for r in 0..rounds {
            if m.stopped() {
                break;
            }
            m.round(&mut cells, &idxs, r);
        }
        for &i in &idxs {
            measured[i] = true;
            let c = &mut cells[i];
            c.refresh();
            if c.runs.is_empty() && c.error.is_none() && m.stopped() {
                c.error = Some("not measured (interrupted)".into());
            }
            done += 1;
            on_cell(Progress {
                done,
                total: plan.cells.len(),
                cell: c,
            });
        }
    }
    for (c, m) in cells.iter_mut().zip(measured) {
        if !m {
            c.error = Some("not measured (interrupted)".into());
        }
    }
    cells
}
