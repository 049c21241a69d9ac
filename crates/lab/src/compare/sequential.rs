//! The sequential part of a compare run: after every condition has had its first rounds,
//! the rest of the time budget goes where more rounds change outcomes.
//!
//! **Which conditions get rounds: the undecided decisions nearest to deciding.** Every
//! undecided decision says roughly how many more rounds would turn it into a win, a slight
//! difference or parity ([`crate::stats::ci::rounds_to_decide`]); a condition's need is
//! the least of its undecided decisions' (A/A controls left out). In each pass every
//! condition with a need gets one more round, nearest first, as long as the round fits in
//! the remaining budget and the need fits in what the budget could still pay for (a
//! decision hundreds of rounds away would take the budget and decide nothing). Only when
//! no undecided condition can be served does the rest go to the conditions whose
//! throughput or server-cost intervals are wider than the target width, widest first.
//!
//! Choosing by outcome looks at the intervals after every round, and a CI that leaves 1.0
//! out by chance at some look then stops getting rounds: the rate of false "slight"
//! outcomes grows with the number of looks. The A/A controls are the check: they are never
//! chosen for (a control's condition gets rounds only for its other decisions, so where
//! its interval lies never decides whether it is measured again), and the report counts
//! their outcomes (a win there, or more than about 5% slight, says the intervals claim
//! more than the machine gives).

use std::time::{Duration, Instant};

use super::decision::{self, Bands, DecisionRow, Metric};
use super::matrix::{MatrixPlan, PlannedCondition};
use super::measure::Measurer;
use super::run::CellResult;
use crate::stats::ci::{Outcome, MIN_ROUNDS};

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
            let row = row_of(rows, pc)?;
            widest(row).filter(|&w| w > target).map(|w| (i, w))
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(i, _)| i).collect()
}

fn row_of<'a>(rows: &'a [DecisionRow], pc: &PlannedCondition) -> Option<&'a DecisionRow> {
    rows.iter()
        .find(|r| r.condition == pc.cond && r.section == pc.section)
}

/// The rounds `row`'s nearest undecided decision roughly needs (A/A controls left out);
/// `None` when none is undecided.
pub fn need(row: &DecisionRow) -> Option<usize> {
    row.all()
        .filter(|d| !d.control && d.outcome == Outcome::Undecided)
        .filter_map(|d| d.more_rounds)
        .min()
}

/// The conditions (indices into `plan.conditions`) with an undecided decision, with their
/// [`need`], nearest first (ties in plan order).
pub fn undecided(plan: &MatrixPlan, rows: &[DecisionRow]) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = plan
        .conditions
        .iter()
        .enumerate()
        .filter_map(|(i, pc)| need(row_of(rows, pc)?).map(|n| (i, n)))
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    v
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

/// Adds rounds (see the module docs) until no undecided condition can be served and every
/// condition's throughput and server-cost CIs are at most `target` wide, or the next round
/// would end after `deadline`; refreshes `rows`. Returns how many rounds were added.
pub fn refine(
    m: &mut Measurer<'_>,
    plan: &MatrixPlan,
    cells: &mut [CellResult],
    rows: &mut Vec<DecisionRow>,
    bands: &Bands,
    target: f64,
    deadline: Instant,
) -> u32 {
    let mut added = 0;
    // How much longer rounds really take than planned (a loaded machine delays every run's
    // set-up): the last round's ratio, so that the budget is not overrun.
    let mut slowdown = 1.0f64;
    loop {
        let mut ran = false;
        // First the undecided conditions nearest to deciding, then, if none could be
        // served, the widest intervals.
        for phase in 0..2 {
            let todo: Vec<(usize, Option<usize>)> = if phase == 0 {
                undecided(plan, rows)
                    .into_iter()
                    .map(|(i, n)| (i, Some(n)))
                    .collect()
            } else {
                pending(plan, rows, target)
                    .into_iter()
                    .map(|i| (i, None))
                    .collect()
            };
            for (ci, need) in todo {
                let pc = &plan.conditions[ci];
                let cost = round_cost(pc, cells, m).mul_f64(slowdown);
                let left = deadline.saturating_duration_since(Instant::now());
                if m.stopped() || cost > left {
                    continue;
                }
                // Rounds the budget could still pay for at this condition alone.
                let affordable = (left.as_secs_f64() / cost.as_secs_f64().max(1e-3)) as usize;
                if need.is_some_and(|n| n > affordable) {
                    continue;
                }
                let mut idxs = cell_idxs(pc);
                super::order::pair_order(&mut idxs, |i| cells.get(i).map(|c| &c.key));
                let round = idxs.iter().map(|&i| cells[i].rounds()).max().unwrap_or(0);
                let t0 = Instant::now();
                m.round(cells, &idxs, round);
                slowdown = (t0.elapsed().as_secs_f64()
                    / round_cost(pc, cells, m).as_secs_f64().max(1e-3))
                .clamp(1.0, 10.0);
                m.refresh(cells, &idxs);
                added += 1;
                ran = true;
            }
            if ran {
                break;
            }
        }
        if !ran {
            return added;
        }
        *rows = decision::decide_all(plan, cells, bands);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::decision::{decision_of, Arm, Comparison, Decision, H2_VS_H1};
    use crate::compare::matrix::Section;
    use crate::proto::LabProtocol;
    use crate::stats::ci::Estimate;

    fn dec(metric: Metric, lo: f64, hi: f64, n: usize, control: bool) -> Decision {
        let arm = |proto| Arm { proto, arm: 0 };
        let b = if control {
            Arm {
                proto: LabProtocol::H2c,
                arm: 1,
            }
        } else {
            arm(LabProtocol::H1)
        };
        let r = Estimate {
            median: (lo + hi) / 2.0,
            lo,
            hi,
            n,
        };
        decision_of(metric, arm(LabProtocol::H2c), b, Some(r), 0.03)
    }

    fn row(cond: crate::compare::matrix::Condition, decisions: Vec<Decision>) -> DecisionRow {
        DecisionRow {
            section: Section::Base,
            condition: cond,
            label: String::new(),
            verdicts: Vec::new(),
            comparisons: vec![Comparison {
                family: H2_VS_H1,
                a: decisions[0].a,
                b: decisions[0].b,
                control: decisions[0].control,
                decisions,
            }],
        }
    }

    #[test]
    fn rounds_go_to_the_undecided_nearest_to_deciding() {
        let plan = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny)
            .axes
            .plan();
        let c0 = plan.conditions[0].cond.clone();
        let c1 = plan.conditions[1].cond.clone();
        let rows = vec![
            // Far: a wide interval around 1.
            row(
                c0.clone(),
                vec![dec(Metric::Throughput, 0.80, 1.20, 9, false)],
            ),
            // Near: just across 1.0.
            row(
                c1.clone(),
                vec![dec(Metric::Throughput, 0.995, 1.06, 9, false)],
            ),
        ];
        let u = undecided(&plan, &rows);
        assert_eq!(u.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 0]);
        assert!(u[0].1 < u[1].1, "{u:?}");
        // Decided conditions (a slight one, a win) and A/A controls get none.
        let decided = vec![
            row(
                c0.clone(),
                vec![dec(Metric::Throughput, 1.01, 1.06, 9, false)],
            ),
            row(
                c1.clone(),
                vec![dec(Metric::Throughput, 0.80, 1.20, 9, true)],
            ),
        ];
        assert!(undecided(&plan, &decided).is_empty());
        // Too few rounds: the rounds missing up to the minimum.
        let few = vec![row(c0, vec![dec(Metric::ServerCost, 0.9, 1.1, 4, false)])];
        assert_eq!(undecided(&plan, &few), vec![(0, MIN_ROUNDS - 4)]);
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
        assert!((widest(&r).unwrap() - 0.08 / 0.99).abs() < 1e-9);
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
