//! The lab's statistics applied to one cell of the upstream experiment, as `h2lab compare`
//! does them: each arm's median with its 95% bootstrap CI ([`ci::median_ci`]), and each arm
//! against the baseline (the first arm, HTTP/1.1 keep-alive) as the median of the per-run
//! ratios — the arms of a run are measured back to back, so the machine's drift cancels in
//! the ratio — with its CI ([`ci::paired_ratio`]), classified win / parity / undecided
//! against the ±3% equivalence band ([`ci::classify`]).

use serde::Serialize;

use super::{present, Cell};
use crate::stats::ci::{self, Estimate, Outcome, DEFAULT_EQUIVALENCE};
use crate::stats::Better;

/// One metric of an arm against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    /// Per-run ratio `arm / baseline`: median and 95% bootstrap CI.
    pub ratio: Option<Estimate>,
    /// Win, slight, parity or undecided.
    pub outcome: Outcome,
    /// On a win: the arm is the better one (`false`: the baseline is).
    pub arm_better: Option<bool>,
}

impl Ratio {
    fn of(a: &[Option<f64>], b: &[Option<f64>], better: Better, what: &str) -> Ratio {
        let mut rng = ci::Rng::new(ci::seed_for(what));
        let ratio = ci::paired_ratio(a, b, &mut rng);
        let outcome = ratio.map_or(Outcome::Undecided, |r| {
            ci::classify(&r, DEFAULT_EQUIVALENCE)
        });
        let arm_better = match (outcome, ratio) {
            (Outcome::Win, Some(r)) => Some(match better {
                Better::Higher => r.median > 1.0,
                Better::Lower => r.median < 1.0,
            }),
            _ => None,
        };
        Ratio {
            ratio,
            outcome,
            arm_better,
        }
    }

    /// The advantage of the arm (positive: the arm is better): `ratio - 1` for throughput,
    /// `1 / ratio - 1` for latency.
    pub fn advantage(&self, better: Better) -> Option<f64> {
        let r = self.ratio?.median;
        if !(r.is_finite() && r > 0.0) {
            return None;
        }
        Some(match better {
            Better::Higher => r - 1.0,
            Better::Lower => 1.0 / r - 1.0,
        })
    }

    /// `better`, `worse`, `parity` or `undecided`, from the arm's side.
    pub fn word(&self) -> &'static str {
        match (self.outcome, self.arm_better) {
            (Outcome::Win, Some(true)) => "better",
            (Outcome::Win, _) => "worse",
            (o, _) => o.name(),
        }
    }
}

/// An arm against the baseline at one cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Versus {
    /// Requests per second (higher is better).
    pub throughput: Ratio,
    /// p99 latency (lower is better).
    pub p99: Ratio,
}

/// What a run adds to its arm's per-run series: its req/s and p99 (ms), or nothing when it
/// completed no request. Such a run says nothing about the arm's speed (the client never got
/// going): entered as 0 req/s it made a ratio of 0 against the baseline, so it is left out
/// of the medians and the ratios instead, and the report marks it.
pub fn run_values(completed: u64, rps: f64, p99_ms: Option<f64>) -> (Option<f64>, Option<f64>) {
    if completed == 0 {
        return (None, None);
    }
    (
        Some(rps).filter(|r| r.is_finite() && *r > 0.0),
        p99_ms.filter(|p| p.is_finite()),
    )
}

/// Fills the CIs and the comparisons against the first arm of `cell`.
pub fn decide_cell(cell: &mut Cell) {
    let what = format!("upstream {} c={}", cell.payload.name, cell.concurrency);
    for a in cell.arms.iter_mut() {
        let mut rng = ci::Rng::new(ci::seed_for(&format!("{what} {}", a.arm.name())));
        a.rps_ci = ci::median_ci(&present(&a.rps_runs), &mut rng);
        a.p99_ci = ci::median_ci(&present(&a.p99_runs), &mut rng);
    }
    let Some((base, rest)) = cell.arms.split_first_mut() else {
        return;
    };
    if base.skipped.is_some() {
        return;
    }
    for a in rest.iter_mut().filter(|a| a.skipped.is_none()) {
        let name = format!("{what} {} vs {}", a.arm.name(), base.arm.name());
        a.versus = Some(Versus {
            throughput: Ratio::of(
                &a.rps_runs,
                &base.rps_runs,
                Better::Higher,
                &format!("{name} rps"),
            ),
            p99: Ratio::of(
                &a.p99_runs,
                &base.p99_runs,
                Better::Lower,
                &format!("{name} p99"),
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use h2lab_proxy::UpstreamProtocol;

    use super::super::measure::{ArmRuns, RunValues};
    use super::super::Cell;
    use super::*;

    fn out(completed: u64, rps: f64, p99: f64) -> RunValues {
        let (rps, p99_ms) = run_values(completed, rps, Some(p99));
        RunValues {
            rps,
            p99_ms,
            completed,
            failed: 0,
            retried: completed == 0,
            busy: false,
            informational: 0,
            client_cpu_us: None,
        }
    }

    #[test]
    fn a_run_that_completed_nothing_is_left_out_of_the_ratios() {
        // A run that completed nothing has no req/s (not 0) and no p99.
        assert_eq!(run_values(0, 0.0, None), (None, None));
        assert_eq!(run_values(0, 0.0, Some(3.0)), (None, None));
        assert_eq!(run_values(10, 500.0, Some(3.0)), (Some(500.0), Some(3.0)));
        // Seven paired runs: the baseline at 1000 req/s, the arm at 1100 except in run 2, which
        // completed nothing even when run again. Entered as 0 req/s it made a ratio of 0.0 in
        // that run; left out, the other six decide: +10%, a win for the arm.
        let mut base = ArmRuns::new(7);
        let mut arm = ArmRuns::new(7);
        for run in 0..7 {
            base.record(run, &out(1000, 1000.0, 10.0));
            if run == 2 {
                arm.record(run, &out(0, 0.0, 0.0));
            } else {
                arm.record(run, &out(1100, 1100.0, 9.0));
            }
        }
        let mut cell = Cell {
            payload: "info".parse().unwrap(),
            concurrency: 200,
            arms: vec![
                base.into_result(UpstreamProtocol::H1, None),
                arm.into_result(UpstreamProtocol::H2cMux, None),
            ],
        };
        decide_cell(&mut cell);
        let a = &cell.arms[1];
        assert_eq!((a.empty_runs, a.retried_runs), (1, 1));
        assert_eq!(a.rps_runs[2], None);
        assert_eq!(a.rps.unwrap().n, 6);
        assert_eq!(a.rps.unwrap().min, 1100.0);
        let v = a.versus.unwrap();
        let r = v.throughput.ratio.unwrap();
        assert_eq!(r.n, 6);
        assert!(
            (r.lo - 1.1).abs() < 1e-9 && (r.hi - 1.1).abs() < 1e-9,
            "{r:?}"
        );
        assert_eq!(v.throughput.word(), "better");
        assert_eq!(v.p99.ratio.unwrap().n, 6);
        assert_eq!(cell.arms[0].empty_runs, 0);
    }
}
