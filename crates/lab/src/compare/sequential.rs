//! The sequential part of a compare run: after every condition has had its first rounds,
//! the rest of the time budget goes to the conditions whose decisions are still imprecise.
//!
//! **Stopping rule: a fixed-width confidence interval** (Chow–Robbins). A condition gets
//! more rounds while the widest 95% CI of its throughput and server-cost decisions is wider
//! (relative to its ratio) than the target width, and stops as soon as they are all narrower
//! or the budget is spent. The rule looks only at the *widths* of the intervals, never at
//! where they lie against the equivalence band: the width of an order-statistic interval
//! does not move when every ratio is scaled by the same factor (on a log scale a shift), so
//! whether a condition stops does not depend on whether its ratio is 1.00 or 1.10, and
//! stopping cannot steer an interval away from the truth. A rule that stopped when a
//! decision became a win or parity ("measure until decided") would: looked at after every
//! round, a CI that lies outside the band by chance at some look ends the measuring there,
//! and the false-win rate grows with the number of looks (alpha spending could pay for that
//! with wider intervals at every look; a width rule needs no correction).
//!
//! Which conditions get the rounds is also decided from widths only: in each pass every
//! condition above the target gets one more round, widest first, as long as the round fits
//! in the remaining budget. p99 decisions ride along (their intervals are wide by nature and
//! would otherwise take the whole budget).

use std::time::{Duration, Instant};

use super::decision::{self, DecisionRow, Metric};
use super::matrix::{MatrixPlan, PlannedCondition};
use super::measure::Measurer;
use super::run::CellResult;
use crate::stats::ci::MIN_ROUNDS;

/// The widest relative CI width of `row`'s throughput and server-cost decisions (A/A
/// controls left out); infinite when such a decision has fewer than [`MIN_ROUNDS`] paired
/// rounds; `None` when the row has no such decision with a ratio.
pub fn widest(row: &DecisionRow) -> Option<f64> {
    row.all()
        .filter(|d| !d.control && matches!(d.metric, Metric::Throughput | Metric::ServerCost))
        .filter_map(|d| d.ratio)
        .map(|r| {
            if r.n < MIN_ROUNDS {
                f64::INFINITY
            } else {
                r.relative_width()
            }
        })
        .map(|w| if w.is_nan() { f64::INFINITY } else { w })
        .reduce(f64::max)
}

/// The conditions (indices into `plan.conditions`) that need more rounds to reach
/// `target` relative width, widest first (ties in plan order).
pub fn pending(plan: &MatrixPlan, rows: &[DecisionRow], target: f64) -> Vec<usize> {
    let mut v: Vec<(usize, f64)> = plan
        .conditions
        .iter()
        .enumerate()
        .filter_map(|(i, pc)| {
            let row = rows
                .iter()
                .find(|r| r.condition == pc.cond && r.section == pc.section)?;
            widest(row).filter(|&w| w > target).map(|w| (i, w))
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(i, _)| i).collect()
}

/// The cells of `pc`, each once.
fn cell_idxs(pc: &PlannedCondition) -> Vec<usize> {
    let mut idxs: Vec<usize> = Vec::new();
    for &(_, i) in &pc.cells {
        if !idxs.contains(&i) {
            idxs.push(i);
        }
    }
    idxs
}

/// Expected wall time of one round of `pc` ([`super::plan::run_cost`] of each cell's later
/// runs: whole runs for the arms that cannot stand).
pub fn round_cost(pc: &PlannedCondition, cells: &[CellResult], m: &Measurer<'_>) -> Duration {
    cell_idxs(pc)
        .iter()
        .filter_map(|&i| cells.get(i))
        .map(|c| super::plan::run_cost(&c.key, m.timing(), false, m.is_fresh()))
        .sum()
}

/// Adds rounds (see the module docs) until every condition's throughput and server-cost
/// CIs are at most `target` wide, or the next round would end after `deadline`; refreshes
/// `rows`. Returns how many rounds were added.
pub fn refine(
    m: &mut Measurer<'_>,
    plan: &MatrixPlan,
    cells: &mut [CellResult],
    rows: &mut Vec<DecisionRow>,
    equivalence: f64,
    target: f64,
    deadline: Instant,
) -> u32 {
    let mut added = 0;
    // How much longer rounds really take than planned (a loaded machine delays every run's
    // set-up): the last round's ratio, so that the budget is not overrun.
    let mut slowdown = 1.0f64;
    loop {
        let todo = pending(plan, rows, target);
        let mut ran = false;
        for ci in todo {
            let pc = &plan.conditions[ci];
            let cost = round_cost(pc, cells, m);
            if m.stopped() || Instant::now() + cost.mul_f64(slowdown) > deadline {
                continue;
            }
            let mut idxs = cell_idxs(pc);
            super::order::pair_order(&mut idxs, |i| cells.get(i).map(|c| &c.key));
            let round = idxs.iter().map(|&i| cells[i].rounds()).max().unwrap_or(0);
            let t0 = Instant::now();
            m.round(cells, &idxs, round);
            slowdown = (t0.elapsed().as_secs_f64() / cost.as_secs_f64().max(1e-3)).clamp(1.0, 10.0);
            m.refresh(cells, &idxs);
            added += 1;
            ran = true;
        }
        if !ran {
            return added;
        }
        *rows = decision::decide_all(plan, cells, equivalence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::decision::{Arm, Decision, PairDecisions};
    use crate::compare::matrix::Section;
    use crate::proto::LabProtocol;
    use crate::stats::ci::{Estimate, Outcome};

    fn dec(metric: Metric, lo: f64, hi: f64, n: usize, control: bool) -> Decision {
        let arm = |proto| Arm { proto, arm: 0 };
        Decision {
            metric,
            a: arm(LabProtocol::H2c),
            b: arm(LabProtocol::H1),
            ratio: Some(Estimate {
                median: 1.0,
                lo,
                hi,
                n,
            }),
            outcome: Outcome::Undecided,
            winner: None,
            control,
        }
    }

    fn row(cond: crate::compare::matrix::Condition, decisions: Vec<Decision>) -> DecisionRow {
        DecisionRow {
            section: Section::Base,
            condition: cond,
            label: String::new(),
            verdicts: Vec::new(),
            h2_vs_h1: vec![PairDecisions {
                h2: LabProtocol::H2c,
                h1: LabProtocol::H1,
                decisions,
            }],
            h3_vs_h2: Vec::new(),
            controls: Vec::new(),
        }
    }

    #[test]
    fn the_widest_throughput_or_cost_interval_counts() {
        let plan = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny)
            .axes
            .plan();
        let cond = plan.conditions[0].cond.clone();
        let r = row(
            cond.clone(),
            vec![
                dec(Metric::Throughput, 0.95, 1.03, 8, false),
                // p99 intervals ride along, whatever their width.
                dec(Metric::P99, 0.5, 2.0, 8, false),
                dec(Metric::ServerCost, 0.99, 1.01, 8, false),
            ],
        );
        assert!((widest(&r).unwrap() - 0.08).abs() < 1e-9);
        // Too few rounds: infinitely wide.
        let few = row(
            cond.clone(),
            vec![dec(Metric::Throughput, 1.0, 1.0, MIN_ROUNDS - 1, false)],
        );
        assert_eq!(widest(&few), Some(f64::INFINITY));
        // Controls are left out.
        let ctl = row(cond, vec![dec(Metric::Throughput, 0.5, 2.0, 8, true)]);
        assert_eq!(widest(&ctl), None);
    }

    #[test]
    fn pending_conditions_come_widest_first_and_ignore_where_the_ratio_lies() {
        let plan = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny)
            .axes
            .plan();
        assert!(plan.conditions.len() >= 2);
        let c0 = plan.conditions[0].cond.clone();
        let c1 = plan.conditions[1].cond.clone();
        let rows = vec![
            row(
                c0.clone(),
                vec![dec(Metric::Throughput, 0.97, 1.01, 9, false)],
            ),
            row(
                c1.clone(),
                vec![dec(Metric::Throughput, 0.90, 1.10, 9, false)],
            ),
        ];
        assert_eq!(pending(&plan, &rows, 0.03), vec![1, 0]);
        assert_eq!(pending(&plan, &rows, 0.05), vec![1]);
        assert!(pending(&plan, &rows, 0.5).is_empty());
        // The same widths far from 1 (a clear win) need the same rounds: the rule sees only
        // widths, so stopping cannot favour an outcome.
        let shifted = |lo: f64, hi: f64| {
            let mut d = dec(Metric::Throughput, lo * 1.5, hi * 1.5, 9, false);
            d.ratio.as_mut().unwrap().median = 1.5;
            d
        };
        let far = vec![
            row(c0, vec![shifted(0.97, 1.01)]),
            row(c1, vec![shifted(0.90, 1.10)]),
        ];
        assert_eq!(pending(&plan, &far, 0.03), vec![1, 0]);
    }

    #[test]
    fn stopping_on_width_keeps_a_a_controls_from_winning() {
        use crate::stats::ci::{classify, median_ci, Rng, DEFAULT_EQUIVALENCE};
        // Synthetic A/A conditions: per-round ratios 1 ± up to 2.5% (uniform), rounds added one
        // at a time from 5 until the CI is at most 3% wide or 20 rounds were measured, as
        // `refine` does. Stopping on width never stops *because* a CI left the band, so no
        // control ends as a win.
        let mut noise = Rng::new(2024);
        let mut wins = 0;
        let mut stopped_early = 0;
        for sim in 0..40u64 {
            let mut ratios: Vec<f64> = Vec::new();
            let est = loop {
                ratios.push(1.0 + (noise.below(501) as f64 - 250.0) / 10_000.0);
                if ratios.len() < MIN_ROUNDS {
                    continue;
                }
                let e = median_ci(&ratios, &mut Rng::new(sim)).unwrap();
                if e.relative_width() <= 0.03 || ratios.len() >= 20 {
                    if ratios.len() < 20 {
                        stopped_early += 1;
                    }
                    break e;
                }
            };
            if classify(&est, DEFAULT_EQUIVALENCE) == Outcome::Win {
                wins += 1;
            }
        }
        assert_eq!(wins, 0);
        assert!(stopped_early > 0, "the width target is reachable");
    }
}
