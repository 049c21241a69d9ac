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
    /// Win, parity or undecided.
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
