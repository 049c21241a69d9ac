//! An arm's runs at one cell ([`ArmRuns`]) and what one run measured ([`RunValues`]). The
//! runs themselves are the lab kernel's ([`crate::kernel::rounds::whole_run`], in rounds of
//! [`crate::kernel::rounds::round`]): a run that completes nothing is run once more with a
//! longer warm-up, and the machine's load is judged over the round. Each run's client
//! workers read their own CPU clocks over the measured period ([`crate::kernel::clocks`]);
//! with an unshaped proxy → backends hop (`--rtt 0`), rounds in which every arm cost at
//! least 1.3× its usual CPU per request are slow spells ([`crate::kernel::spell`]), left out
//! of the medians and ratios ([`leave_out_spells`]).

use h2lab_engine::RunResult;
use h2lab_proxy::UpstreamProtocol;

use super::{present, verdict, ArmResult, UpstreamReport};
use crate::kernel::rounds::Attempts;
use crate::kernel::spell;
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
    /// The client workers' CPU time per completed request (µs) over the measured period of
    /// the run that counts (their own clocks); `None` when unknown or nothing completed.
    pub client_cpu_us: Option<f64>,
}

impl RunValues {
    /// The values of a whole run (and its retry), measured in a round that was `busy`;
    /// `client_ns`: the client workers' CPU time (ns) over the measured period of the run
    /// that counts.
    pub fn of(a: &Attempts<RunResult>, busy: bool, client_ns: Option<u64>) -> RunValues {
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
            client_cpu_us: client_ns
                .filter(|_| r.requests.completed > 0)
                .map(|ns| ns as f64 / 1e3 / r.requests.completed as f64),
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
    cpu: Vec<Option<f64>>,
    spells: usize,
}

impl ArmRuns {
    /// No run yet of `runs`.
    pub fn new(runs: usize) -> ArmRuns {
        ArmRuns {
            rps: vec![None; runs],
            p99: vec![None; runs],
            cpu: vec![None; runs],
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
        if let Some(v) = self.cpu.get_mut(run) {
            *v = o.client_cpu_us;
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
            client_cpu_us: MedianSpread::of(&present(&self.cpu)),
            client_cpu_runs: self.cpu,
            spell_runs: self.spells,
        }
    }
}

/// With `judged` (an unshaped proxy → backends hop), finds the rounds in which every
/// measured arm cost at least [`spell::SPELL_FACTOR`] times its usual client CPU per request
/// ([`spell::spell_rounds`]) and leaves them out of every arm's medians and ratios (their
/// requests per second and p99 become `None`, as a run that completed nothing); each arm
/// counts its runs left out. Returns the rounds.
pub fn leave_out_spells(arms: &mut [ArmRuns], judged: bool) -> Vec<usize> {
    if !judged {
        return Vec::new();
    }
    let costs: Vec<Vec<Option<f64>>> = arms
        .iter()
        .filter(|a| a.cpu.iter().any(Option::is_some))
        .map(|a| a.cpu.clone())
        .collect();
    let rounds = spell::spell_rounds(&costs);
    for a in arms.iter_mut() {
        for &r in &rounds {
            let had = a.rps.get(r).is_some_and(Option::is_some);
            a.spells += usize::from(had);
            for v in [&mut a.rps, &mut a.p99] {
                if let Some(x) = v.get_mut(r) {
                    *x = None;
                }
            }
        }
    }
    rounds
}

/// `!` when some run was busy, `*` when some run completed nothing even when run again,
/// `~` when some run fell in a slow spell.
pub fn marks(a: &ArmResult) -> String {
    let mut m = String::new();
    if a.busy_runs > 0 {
        m.push_str(" !");
    }
    if a.spell_runs > 0 {
        m.push_str(" ~");
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

/// One line per cell with rounds in a slow spell (left out of the medians and ratios).
pub fn spell_runs(r: &UpstreamReport) -> Vec<String> {
    r.cells
        .iter()
        .filter_map(|c| {
            let n = c.arms.iter().map(|a| a.spell_runs).max()?;
            (n > 0).then(|| {
                format!(
                    "~ {} c={}: {n} round(s) in a slow spell (every arm at least {}× its usual \
                     client CPU per request): left out of the medians and ratios",
                    c.payload.label(),
                    c.concurrency,
                    spell::SPELL_FACTOR
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rps: f64, cpu: f64) -> RunValues {
        RunValues {
            rps: Some(rps),
            p99_ms: Some(1.0),
            completed: 100,
            failed: 0,
            retried: false,
            busy: false,
            informational: 0,
            client_cpu_us: Some(cpu),
        }
    }

    /// A round in which both arms' client CPU per request doubled is left out of both arms'
    /// statistics and counted; without judging (a shaped hop) nothing is left out.
    #[test]
    fn a_spell_round_leaves_every_arms_statistics() {
        let cpu = [
            [10.0, 10.2, 21.0, 9.9, 10.1, 10.0],
            [12.0, 12.1, 25.0, 12.2, 11.9, 30.0],
        ];
        let make = || {
            let mut arms = vec![ArmRuns::new(6), ArmRuns::new(6)];
            for (a, costs) in arms.iter_mut().zip(cpu) {
                for (i, c) in costs.into_iter().enumerate() {
                    a.record(i, &run(1000.0 + i as f64, c));
                }
            }
            arms
        };
        let mut arms = make();
        assert!(leave_out_spells(&mut arms, false).is_empty());
        assert!(arms
            .iter()
            .all(|a| a.spells == 0 && a.rps.iter().all(Option::is_some)));
        let mut arms = make();
        // Round 5: only the second arm slowed (one arm's slow window): kept.
        assert_eq!(leave_out_spells(&mut arms, true), vec![2]);
        for a in arms {
            assert_eq!((a.rps[2], a.p99[2], a.spells), (None, None, 1));
            let r = a.into_result(UpstreamProtocol::H1, None);
            assert_eq!(r.rps_runs.iter().filter(|v| v.is_some()).count(), 5);
            assert_eq!(r.client_cpu_runs.len(), 6);
            assert!(r.client_cpu_us.is_some());
            assert_eq!(marks(&r), " ~");
        }
    }

    /// The client workers' CPU per completed request, in µs.
    #[test]
    fn client_cpu_is_per_completed_request() {
        let mut r = RunResult::empty();
        r.requests.completed = 2000;
        let a = Attempts {
            first: r,
            retry: None,
        };
        let v = RunValues::of(&a, false, Some(30_000_000));
        assert_eq!(v.client_cpu_us, Some(15.0));
        assert_eq!(RunValues::of(&a, false, None).client_cpu_us, None);
    }
}
