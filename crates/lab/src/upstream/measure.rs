//! An arm's runs at one cell ([`ArmRuns`]) and what one run measured ([`RunValues`]). The
//! runs themselves are the lab kernel's ([`crate::kernel::rounds::whole_run`], in rounds of
//! [`crate::kernel::rounds::round`]): a run that completes nothing is run once more with a
//! longer warm-up, and the machine's load is judged over the round.

use h2lab_engine::RunResult;
use h2lab_proxy::UpstreamProtocol;

use super::{present, verdict, ArmResult, UpstreamReport};
use crate::kernel::rounds::Attempts;
use crate::stats::MedianSpread;

/// What one run of an arm measured.
#[derive(Debug, Clone, PartialEq)]
pub struct RunValues {
    /// Requests per second; `None` when the run completed nothing ([`verdict::run_values`]).
    pub rps: Option<f64>,
    /// p99 latency (ms); `None` when the run completed nothing.
    pub p99_ms: Option<f64>,
    /// Responses completed in the measured period.
    pub completed: u64,
    /// Requests that failed (both attempts).
    pub failed: u64,
    /// The first attempt completed nothing and the run was measured again.
    pub retried: bool,
    /// The machine was busy during the run's round ([`crate::host::MachineLoad::busy`]).
    pub busy: bool,
    /// Interim (1xx) responses the client received through the proxy, e.g. `103 Early
    /// Hints` forwarded from the backends (both attempts).
    pub informational: u64,
}

impl RunValues {
    /// The values of a whole run (and its retry), measured in a round that was `busy`.
    pub fn of(a: &Attempts<RunResult>, busy: bool) -> RunValues {
        let both = || std::iter::once(&a.first).chain(a.retry.as_ref());
        let r = a.last();
        let h = &r.request_time;
        let p99 = (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1e6);
        let (rps, p99_ms) = verdict::run_values(r.requests.completed, r.req_per_sec(), p99);
        RunValues {
            rps,
            p99_ms,
            completed: r.requests.completed,
            failed: both().map(|r| r.requests.failed).sum(),
            retried: a.retry.is_some(),
            busy,
            informational: both()
                .map(|r| r.informational.iter().map(|x| x.1).sum::<u64>())
                .sum(),
        }
    }
}

/// An arm's runs at one cell, by run index.
#[derive(Debug, Clone, Default)]
pub struct ArmRuns {
    rps: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
    failed: u64,
    retried: usize,
    empty: usize,
    busy: usize,
    informational: u64,
}

impl ArmRuns {
    /// No run yet of `runs`.
    pub fn new(runs: usize) -> ArmRuns {
        ArmRuns {
            rps: vec![None; runs],
            p99: vec![None; runs],
            ..ArmRuns::default()
        }
    }

    /// Keeps run `run`'s result.
    pub fn record(&mut self, run: usize, o: &RunValues) {
        if let Some(v) = self.rps.get_mut(run) {
            *v = o.rps;
        }
        if let Some(v) = self.p99.get_mut(run) {
            *v = o.p99_ms;
        }
        self.failed += o.failed;
        self.retried += usize::from(o.retried);
        self.empty += usize::from(o.completed == 0);
        self.busy += usize::from(o.busy);
        self.informational += o.informational;
    }

    /// The arm's result at the cell (CIs and ratios are filled by [`verdict::decide_cell`]).
    pub fn into_result(self, arm: UpstreamProtocol, skipped: Option<String>) -> ArmResult {
        ArmResult {
            arm,
            rps: MedianSpread::of(&present(&self.rps)),
            p99_ms: MedianSpread::of(&present(&self.p99)),
            failed: self.failed,
            skipped,
            rps_ci: None,
            p99_ci: None,
            rps_runs: self.rps,
            p99_runs: self.p99,
            versus: None,
            retried_runs: self.retried,
            empty_runs: self.empty,
            busy_runs: self.busy,
            informational: self.informational,
            path: None,
        }
    }
}

/// `!` when some run was busy, `*` when some run completed nothing even when run again.
pub fn marks(a: &ArmResult) -> String {
    let mut m = String::new();
    if a.busy_runs > 0 {
        m.push_str(" !");
    }
    if a.empty_runs > 0 {
        m.push_str(" *");
    }
    m
}

/// One line per arm and cell with runs that completed nothing even when run again (left out
/// of the medians and the ratios).
pub fn empty_runs(r: &UpstreamReport) -> Vec<String> {
    let mut v = Vec::new();
    for c in &r.cells {
        for a in c.arms.iter().filter(|a| a.empty_runs > 0) {
            v.push(format!(
                "{} c={} {}: {} of {} runs completed nothing (left out)",
                c.payload.label(),
                c.concurrency,
                a.arm.name(),
                a.empty_runs,
                a.rps_runs.len()
            ));
        }
    }
    v
}

/// One line per cell where interim responses (`103 Early Hints`) reached the client through
/// the proxy, with each arm's count (all runs): which proxies pass them on.
pub fn informational(r: &UpstreamReport) -> Vec<String> {
    let any = r.config.early_hints
        || r.cells
            .iter()
            .any(|c| c.arms.iter().any(|a| a.informational > 0));
    if !any {
        return Vec::new();
    }
    r.cells
        .iter()
        .filter(|c| c.payload.name == "page" || c.arms.iter().any(|a| a.informational > 0))
        .map(|c| {
            let arms: Vec<String> = c
                .arms
                .iter()
                .filter(|a| a.skipped.is_none())
                .map(|a| format!("{} {}", a.arm.name(), a.informational))
                .collect();
            format!(
                "1xx through the proxy, {} c={}: {}",
                c.payload.label(),
                c.concurrency,
                arms.join(", ")
            )
        })
        .collect()
}
