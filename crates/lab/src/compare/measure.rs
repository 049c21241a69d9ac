//! Measuring cells in rounds.
//!
//! A *round* runs every arm of a condition once, back to back, the starting arm rotated
//! and the direction reversed from round to round ([`round_position`]), so that whatever the machine does drifts over all arms alike; the
//! decisions then pair the arms' runs by round ([`crate::stats::ci::paired_ratio`]).
//! Each run is a window of the arm's standing connections ([`super::arms`]: client
//! threads and connections opened at the arm's first run and kept between its runs; the
//! first window warms up for the full warm-up, later ones for [`resume_warm_up`], enough
//! to fill the pipeline again) — or, with `fresh_connections`, a whole timing-based engine
//! run (connect, warm-up, measured period, close) as before — and also records:
//! - the CPU time of the built-in server's threads and of the client's worker threads over
//!   the measured period (per-thread CPU clocks, read when each worker enters and leaves
//!   the measured period), per completed request;
//! - what the rest of the machine did ([`crate::host::LoadProbe`]); with `strict`, a round
//!   in which the machine was busy is measured again (at most [`STRICT_RETRIES`] times).
//!
//! [`Measurer`] is the reusable part: any experiment that has [`CellResult`]s (a key each)
//! and an environment can measure rounds of them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use h2lab_engine::{
    new_duration_histogram, AppProtocol, IntervalRow, Observer, StopFlag, TimedRunPhase, TlsInfo,
};
use hdrhistogram::Histogram;

use super::arms::Arms;
use super::matrix::MatrixPlan;
use super::order::pair_order;
use super::run::{
    bench_config, cell_timing, cycle_floor, drain_cap, resume_warm_up, rounds_for, sample,
    settle_after, whole_cycles, CellResult, Progress, RunSample, Timing,
};
use super::wall::{RunEdges, WallTally};
use crate::env::LabEnv;
use crate::host::LoadProbe;
use crate::proto::LabProtocol;

/// How often `--strict` measures a busy round again before keeping it (flagged).
pub const STRICT_RETRIES: u32 = 2;

/// Warm-up multiplier of the one retry of a run that completed nothing.
pub const EMPTY_RETRY_WARM_UP: u32 = 4;

/// Least measured period of that retry: a run that completed nothing says only that the
/// arm's closed loop needs longer than its window (a slow server, a debug build's TLS); the
/// retry measures at least as long as the lab's earlier 100 ms windows, so that it completes
/// something and its rate sizes the next windows ([`cycle_floor`]).
pub const EMPTY_RETRY_PERIOD: Duration = Duration::from_millis(100);

/// Records the engine's progress as a time series and the CPU clocks at the edges of the
/// measured period.
struct CellObserver {
    timeline: Mutex<Vec<(f64, u64)>>,
    server_tids: Vec<u32>,
    /// Server threads' CPU (ns) when worker 0 entered and left the measured period.
    server: Mutex<(Option<u64>, Option<u64>)>,
    /// Each client worker's own CPU (ns) at the same edges.
    client: Mutex<Vec<(Option<u64>, Option<u64>)>>,
    /// When worker 0 began the run, the measured period, and ended it.
    edges: Mutex<RunEdges>,
}

impl CellObserver {
    fn new(server_tids: Vec<u32>, threads: u32) -> CellObserver {
        CellObserver {
            timeline: Mutex::new(Vec::new()),
            server_tids,
            server: Mutex::new((None, None)),
            client: Mutex::new(vec![(None, None); threads as usize]),
            edges: Mutex::new(RunEdges::default()),
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
        if thread == 0 {
            if let Ok(mut e) = self.edges.lock() {
                let now = Some(Instant::now());
                match phase {
                    TimedRunPhase::WarmUpStarted => e.warm_up = now,
                    TimedRunPhase::MainStarted => e.main = now,
                    TimedRunPhase::MainOver => e.over = now,
                    _ => {}
                }
            }
        }
        let edge = match phase {
            TimedRunPhase::MainStarted => 0,
            TimedRunPhase::MainOver => 1,
            _ => return,
        };
        // Called from the worker's own thread: its clock is the calling thread's.
        let own = thread_cpu_ns(None);
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
            let ns = Some(
                self.server_tids
                    .iter()
                    .filter_map(|&t| thread_cpu_ns(Some(t)))
                    .sum(),
            );
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

pub use crate::os::thread_cpu_ns;

/// One run's results before its round is accepted.
struct RunOut {
    idx: usize,
    sample: RunSample,
    /// Requests started in the measured period.
    started: u64,
    hist: Histogram<u64>,
    timeline: Vec<(f64, f64)>,
}

/// Where the `k`-th run of round `round` of `n` arms comes from (an index into the arms):
/// round `2m` runs the arms forwards starting at arm `m` (rotated), round `2m + 1` runs the
/// same order backwards. Rotation alone gives every arm the same predecessor in most rounds
/// (an A/A control's second arm always ran right after its first), so whatever a run leaves
/// behind for the next (warm caches, a busy server thread, TCP state) favoured the same arm
/// every round — a bias pairing cannot remove; with each order followed by its reverse,
/// every arm precedes each neighbour exactly as often as it follows it.
pub fn round_position(k: usize, round: u32, n: usize) -> usize {
    let n = n.max(1);
    let m = (round / 2) as usize % n;
    if round % 2 == 0 {
        (m + k) % n
    } else {
        (m + n - 1 - k % n) % n
    }
}

/// The order of round `round` of the cells `idxs` (in [`super::order::pair_order`]): the
/// cells for which `last` holds — HTTP/1.0, which opens and closes a connection per request —
/// at the end of the round, the others in the order of [`round_position`] among themselves.
/// The run right after an HTTP/1.0 window is slower (most likely the teardown of the few
/// hundred connections HTTP/1.0 opened and closed): in the kept runs of a quiet machine's repro pairs the arm
/// following HTTP/1.0 had a p99 4–25% above its A/A twin's. Rotated with the others,
/// HTTP/1.0 was always followed by one of its two neighbours in the order (`h2c#2` in
/// backward rounds, `h1-tls` in forward ones), which biased their decisions, and an A/A
/// control "won" on p99 (+8.4%, +3.1…+12.5%). Last in every round, it is followed by the next round's first arm, which
/// the rotation changes every round, and the next run waits longer ([`settle_after`]).
pub fn round_order(idxs: &[usize], round: u32, last: impl Fn(usize) -> bool) -> Vec<usize> {
    let (tail, rotated): (Vec<usize>, Vec<usize>) = idxs.iter().partition(|&&i| last(i));
    let m = rotated.len();
    (0..m)
        .map(|k| rotated[round_position(k, round, m)])
        .chain(tail)
        .collect()
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
    /// more with [`EMPTY_RETRY_WARM_UP`] times the warm-up (at least an arm's first warm-up) and a
    /// period of at least [`EMPTY_RETRY_PERIOD`]. If that one started requests and
    /// completed none, its arm is reopened for the next run; if it started none, its
    /// connections are still being set up and the arm stays open, so that they finish
    /// (reopening it started 50 TLS handshakes over every time: at a load of 17 on 2 cores
    /// a debug build's `--quick` measured no run of four TLS cells in six rounds).
    fn run_once(&mut self, cell: &mut CellResult, idx: usize, round: u32) -> Option<RunOut> {
        let out = self.run_timed(cell, idx, round, 1)?;
        if out.sample.completed == 0 && out.sample.failed == 0 && !self.stop.is_stopped() {
            self.wall.retries += 1;
            let again = self.run_timed(cell, idx, round, EMPTY_RETRY_WARM_UP);
            if again
                .as_ref()
                .is_some_and(|o| wedged(o.sample.completed, o.sample.failed, o.started))
            {
                // Its connections may be gone for good: the next run opens the arm anew.
                self.arms.close(idx);
            }
            return again;
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
        let mut cfg = match bench_config(&key, &origin, &timing) {
            Ok(c) => c,
            Err(e) => {
                cell.error.get_or_insert(e.to_string());
                return None;
            }
        };
        let tids = self.env.server_tids_for(key.cond.link);
        let obs = Arc::new(CellObserver::new(tids, cfg.threads));
        let (first_warm_up, planned) = cell_timing(&key, &timing);
        let loopback = key.cond.link.shape().0.is_zero();
        let rate = cell.median_rps();
        // On loopback a later window holds whole cycles of the closed loop (`cycle_floor`).
        let floor = rate
            .filter(|_| loopback)
            .and_then(|rps| cycle_floor(key.cond.concurrency, rps));
        let mut d = match (rate, floor) {
            (_, Some((_, measured))) => planned.max(measured),
            (Some(rps), None) if !loopback => whole_cycles(planned, key.cond.concurrency, rps),
            _ => planned,
        };
        if warm_up_factor > 1 {
            d = d.max(EMPTY_RETRY_PERIOD);
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
                        w = (resume_warm_up(&key).max(refill) + settle_after(self.last, &key))
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
                        arm.drain_before_reply(drain_cap(&key));
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
        let edges = obs.edges.lock().map(|e| *e).unwrap_or_default();
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
        }
        Some(RunOut {
            idx,
            started: r.requests.started,
            sample: s,
            hist: r.request_time,
            timeline: obs.rates(w, d),
        })
    }

    /// Round `round` of the cells at `idxs` (indices into `cells`): each once, back to
    /// back, in the order of [`round_position`]. With `strict`, a round in which the
    /// machine was busy is measured again, at most [`STRICT_RETRIES`] times.
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
        let n = idxs.len();
        let order = round_order(idxs, round, |i| {
            cells
                .get(i)
                .is_some_and(|c| c.key.proto == LabProtocol::H1Close)
        });
        let mut attempt = 0;
        loop {
            let mut outs = Vec::with_capacity(n);
            // What the rest of the machine does is judged over the whole round: /proc/stat
            // counts in clock ticks of 10 ms, so a 15 ms window on 2 CPUs is 3 ticks, and
            // one tick of another process made a third of such windows look busy.
            let probe = LoadProbe::start();
            for &idx in &order {
                if self.stop.is_stopped() {
                    break;
                }
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
            let load = probe.finish();
            let busy = load.is_some_and(|l| l.busy());
            for o in &mut outs {
                o.sample.load = load;
                o.sample.busy = busy;
            }
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

/// Expected wall time of `rounds` first rounds of the cells at `idxs`
/// ([`super::plan::first_rounds_cost`]: on standing connections each arm's first run with the
/// full warm-up, the later ones with the resume warm-up; whole runs the full warm-up each).
fn first_rounds_cost(
    plan: &MatrixPlan,
    idxs: &[usize],
    rounds: u32,
    t: &Timing,
    fresh: bool,
) -> Duration {
    idxs.iter()
        .filter_map(|&i| plan.cells.get(i))
        .map(|k| super::plan::first_rounds_cost(k, t, rounds, fresh))
        .sum()
}

/// How many first rounds a condition gets so that the first rounds of it and of every
/// condition after it fit in the time left: `planned` when they do; otherwise its share
/// of the time left, `left / need` of `planned`, but never fewer than
/// [`crate::stats::ci::MIN_ROUNDS`] (the fewest that can decide) nor more than `planned`.
pub fn fitted_rounds(planned: u32, need: Duration, left: Duration) -> u32 {
    let floor = crate::stats::ci::MIN_ROUNDS as u32;
    if need <= left || planned <= floor {
        return planned;
    }
    let share = left.as_secs_f64() / need.as_secs_f64().max(1e-9);
    ((f64::from(planned) * share).floor() as u32).clamp(floor, planned)
}

/// The cells of each condition of `plan` measured with it (a cell shared by several
/// conditions is measured with the first).
fn condition_cells(plan: &MatrixPlan) -> Vec<Vec<usize>> {
    let mut seen = vec![false; plan.cells.len()];
    plan.conditions
        .iter()
        .map(|cond| {
            let mut idxs: Vec<usize> = Vec::new();
            for &(_, i) in &cond.cells {
                if !seen[i] && !idxs.contains(&i) {
                    idxs.push(i);
                }
            }
            for &i in &idxs {
                seen[i] = true;
            }
            pair_order(&mut idxs, |i| plan.cells.get(i));
            idxs
        })
        .collect()
}

/// The blocks of conditions whose first rounds [`run_plan`] interleaves: consecutive
/// conditions (indices into `groups`, [`condition_cells`] of `plan`) whose arms can all stand
/// at once (the concurrency of their cells within [`super::arms::connection_cap`]); a
/// condition alone when it needs more, and every condition alone on fresh connections.
fn blocks(plan: &MatrixPlan, groups: &[Vec<usize>], fresh: bool) -> Vec<Vec<usize>> {
    let cap = u64::from(super::arms::connection_cap());
    let mut out: Vec<Vec<usize>> = Vec::new();
    let (mut open, mut held) = (0u64, 0u64);
    for (g, idxs) in groups.iter().enumerate() {
        if idxs.is_empty() {
            continue;
        }
        let keys = || idxs.iter().filter_map(|&i| plan.cells.get(i));
        let conns: u64 = keys().map(|k| u64::from(k.cond.concurrency)).sum();
        let bytes: u64 = keys()
            .map(|k| super::arms::footprint(k, k.cond.concurrency))
            .sum();
        match out.last_mut() {
            Some(b) if !fresh && open + conns <= cap && held + bytes <= super::arms::MEMORY_CAP => {
                b.push(g);
                open += conns;
                held += bytes;
            }
            _ => {
                out.push(vec![g]);
                open = conns;
                held = bytes;
            }
        }
    }
    out
}

/// How much slower than planned the rounds so far went (at least 1, at most 10): the wall
/// time since `started` over the planned cost of the rounds measured since.
fn slowdown(started: Instant, spent_planned: Duration) -> f64 {
    if spent_planned > Duration::from_millis(500) {
        (started.elapsed().as_secs_f64() / spent_planned.as_secs_f64()).clamp(1.0, 10.0)
    } else {
        1.0
    }
}

/// Whether [`run_plan`] interleaves the first rounds of some conditions (`blocks`).
pub fn interleaves(plan: &MatrixPlan, fresh: bool) -> bool {
    blocks(plan, &condition_cells(plan), fresh)
        .iter()
        .any(|b| b.len() > 1)
}

/// Measures every cell of `plan`, `timing.runs` rounds per condition (fewer on stretched
/// links: [`rounds_for`]; fewer when the first rounds would not end by `deadline`:
/// [`fitted_rounds`]), and returns the results in `plan.cells` order (a cell shared by
/// several conditions is measured with the first). `on_cell` is called after each cell; a
/// stop leaves the rest unmeasured (with an error).
///
/// The first rounds are *interleaved* within blocks of conditions whose arms can all stand
/// at once (`blocks`; the whole `--quick` matrix is one block): round 0 of every condition
/// of the block, then round 1 of every condition, and so on. Each condition's rounds are
/// then spread over the block's whole time, so that a slow spell of the machine lasting
/// seconds touches a few rounds of every condition rather than every round of one
/// ([`super::spell`]: the spell is then told from the condition's other rounds and left
/// out). Before each block, its conditions are fitted to the time left with the blocks
/// after it ([`fitted_rounds`], planned with how much slower than planned the rounds so
/// far went); within a block, a pass after the sixth that would leave the later blocks no
/// time for their six rounds is not started.
pub fn run_plan(
    m: &mut Measurer<'_>,
    plan: &MatrixPlan,
    deadline: Option<Instant>,
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
    let groups = condition_cells(plan);
    let planned: Vec<u32> = groups
        .iter()
        .map(|idxs| {
            idxs.iter()
                .map(|&i| rounds_for(&plan.cells[i], &t))
                .min()
                .unwrap_or(1)
        })
        .collect();
    let fresh = m.fresh;
    let cost = |g: usize, rounds: u32| first_rounds_cost(plan, &groups[g], rounds, &t, fresh);
    let blocks = blocks(plan, &groups, m.fresh);
    let floor = crate::stats::ci::MIN_ROUNDS as u32;
    let started = Instant::now();
    let mut spent_planned = Duration::ZERO;
    for (b, block) in blocks.iter().enumerate() {
        let later = &blocks[b + 1..];
        let rounds: Vec<u32> = match deadline {
            Some(d) => {
                let need: Duration = blocks[b..]
                    .iter()
                    .flatten()
                    .map(|&g| cost(g, planned[g]))
                    .sum::<Duration>()
                    .mul_f64(slowdown(started, spent_planned));
                let left = d.saturating_duration_since(Instant::now());
                block
                    .iter()
                    .map(|&g| fitted_rounds(planned[g], need, left))
                    .collect()
            }
            None => block.iter().map(|&g| planned[g]).collect(),
        };
        let later_floor: Duration = later
            .iter()
            .flatten()
            .map(|&g| cost(g, floor.min(planned[g])))
            .sum();
        for r in 0..rounds.iter().copied().max().unwrap_or(0) {
            let pass: Vec<usize> = block
                .iter()
                .zip(&rounds)
                .filter(|(_, &n)| n > r)
                .map(|(&g, _)| g)
                .collect();
            let pass_cost: Duration = pass
                .iter()
                .map(|&g| cost(g, r + 1).saturating_sub(cost(g, r)))
                .sum();
            if let (Some(d), true) = (deadline, r >= floor) {
                if Instant::now()
                    + (pass_cost + later_floor).mul_f64(slowdown(started, spent_planned))
                    > d
                {
                    break;
                }
            }
            if m.stopped() {
                break;
            }
            for &g in &pass {
                if m.stopped() {
                    break;
                }
                m.round(&mut cells, &groups[g], r);
            }
            spent_planned += pass_cost;
        }
        for &g in block {
            let idxs = &groups[g];
            m.refresh(&mut cells, idxs);
            for &i in idxs {
                measured[i] = true;
                let c = &mut cells[i];
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
    }
    for (c, m) in cells.iter_mut().zip(measured) {
        if !m {
            c.error = Some("not measured (interrupted)".into());
        }
    }
    cells
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

    use super::{
        blocks, condition_cells, fitted_rounds, interleaves, round_order, round_position,
        thread_cpu_ns,
    };
    use std::time::Duration;

    #[test]
    fn quick_interleaves_as_one_block_and_the_default_in_blocks_that_fit() {
        use crate::compare::{CompareConfig, Preset};
        // The limit the lab raises itself to (compare::run), so that the cap is 2,000.
        super::super::arms::raise_open_files_limit(9_000);
        let cap = u64::from(super::super::arms::connection_cap());
        for preset in [Preset::Quick, Preset::Default] {
            let plan = CompareConfig::preset(preset).axes.plan();
            let groups = condition_cells(&plan);
            let conditions: Vec<usize> = (0..groups.len())
                .filter(|&g| !groups[g].is_empty())
                .collect();
            let b = blocks(&plan, &groups, false);
            // Every condition once, in plan order.
            assert_eq!(b.concat(), conditions, "{preset:?}");
            for block in &b {
                let conns: u64 = block
                    .iter()
                    .flat_map(|&g| &groups[g])
                    .map(|&i| u64::from(plan.cells[i].cond.concurrency))
                    .sum();
                assert!(block.len() == 1 || conns <= cap, "{preset:?}: {conns}");
            }
            if cap >= 2_000 {
                match preset {
                    Preset::Quick => assert_eq!(b.len(), 1, "{b:?}"),
                    _ => assert!(b.len() > 1 && b.iter().any(|x| x.len() > 1), "{b:?}"),
                }
                assert!(interleaves(&plan, false));
            }
            // Fresh connections: one condition at a time, as before.
            let fresh = blocks(&plan, &groups, true);
            assert!(fresh.iter().all(|x| x.len() == 1));
            assert!(!interleaves(&plan, true));
        }
    }

    #[test]
    fn first_rounds_shrink_to_fit_the_time_left_but_not_below_six() {
        let s = Duration::from_secs;
        assert_eq!(fitted_rounds(9, s(40), s(50)), 9, "fits");
        assert_eq!(fitted_rounds(9, s(60), s(40)), 6, "two thirds of 9");
        assert_eq!(fitted_rounds(12, s(60), s(45)), 9);
        assert_eq!(fitted_rounds(9, s(60), s(1)), 6, "never below six");
        assert_eq!(fitted_rounds(9, s(60), s(0)), 6);
        assert_eq!(
            fitted_rounds(4, s(60), s(1)),
            4,
            "fewer planned: as planned"
        );
    }

    #[test]
    fn thread_clocks_read_this_and_other_threads() {
        let me = crate::host::current_tid().unwrap();
        let a = thread_cpu_ns(Some(me)).expect("own clock by tid");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = thread_cpu_ns(None).expect("own clock");
        assert!(b > a, "{a} {b}");
        // Another thread's clock, read from here.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(crate::host::current_tid().unwrap()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        assert!(thread_cpu_ns(Some(tid)).is_some());
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn rounds_rotate_and_alternate_direction() {
        let order = |round| {
            (0..4)
                .map(|k| round_position(k, round, 4))
                .collect::<Vec<_>>()
        };
        assert_eq!(order(0), vec![0, 1, 2, 3]);
        assert_eq!(order(1), vec![3, 2, 1, 0]);
        assert_eq!(order(2), vec![1, 2, 3, 0]);
        assert_eq!(order(3), vec![0, 3, 2, 1]);
        // Every round is a permutation.
        for round in 0..9 {
            let mut o = order(round);
            o.sort_unstable();
            assert_eq!(o, vec![0, 1, 2, 3]);
        }
        // In every pair of rounds, each arm runs right after each other as often as before it.
        for (a, b) in [(0, 1), (1, 2), (0, 3), (2, 0)] {
            let (mut ab, mut ba) = (0, 0);
            for round in 0..6 {
                for w in order(round).windows(2) {
                    ab += usize::from(w == [a, b]);
                    ba += usize::from(w == [b, a]);
                }
            }
            assert_eq!(ab, ba, "{a} {b}");
        }
        assert_eq!(round_position(0, 5, 1), 0);
    }

    #[test]
    fn http10_runs_last_in_every_round_and_every_other_arm_follows_it_in_turn() {
        // Cells 0..5 in pair order; cell 4 is HTTP/1.0.
        let idxs = [10, 11, 12, 13, 14];
        let close = |i: usize| i == 14;
        let mut first = std::collections::HashMap::new();
        for round in 0..8 {
            let o = round_order(&idxs, round, close);
            assert_eq!(o.len(), 5);
            assert_eq!(o[4], 14, "round {round}: {o:?}");
            // The others as round_position orders four arms.
            let rest: Vec<usize> = (0..4).map(|k| 10 + round_position(k, round, 4)).collect();
            assert_eq!(&o[..4], &rest[..]);
            *first.entry(o[0]).or_insert(0) += 1;
        }
        // The next round's first arm (the one after HTTP/1.0) is each arm equally often.
        assert_eq!(first.len(), 4, "{first:?}");
        assert!(first.values().all(|&c| c == 2), "{first:?}");
        // Without HTTP/1.0 the order is round_position's.
        let o = round_order(&idxs[..4], 3, close);
        assert_eq!(
            o,
            (0..4)
                .map(|k| 10 + round_position(k, 3, 4))
                .collect::<Vec<_>>()
        );
    }
}
