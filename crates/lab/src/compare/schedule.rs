//! When each condition's rounds run: [`run_plan`] measures a plan's first rounds,
//! interleaving the conditions whose arms can all stand at once and fitting the rounds to
//! the budget with the cost model ([`super::plan`]), which reads the same
//! [`RunPolicy`](crate::kernel::RunPolicy) as the measurer ([`super::measure`]).

use std::time::{Duration, Instant};

use super::matrix::MatrixPlan;
use super::measure::Measurer;
use super::order::pair_order;
use super::run::{CellResult, Progress};
use super::timing::{rounds_for, Timing};

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
/// far went, [`RunPolicy::slowdown`](crate::kernel::RunPolicy::slowdown)); within a block, a pass after the sixth that would leave the later blocks no
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
    let fresh = m.is_fresh();
    let cost = |g: usize, rounds: u32| first_rounds_cost(plan, &groups[g], rounds, &t, fresh);
    let blocks = blocks(plan, &groups, fresh);
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
                    .mul_f64(t.policy.slowdown(started.elapsed(), spent_planned));
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
                    + (pass_cost + later_floor)
                        .mul_f64(t.policy.slowdown(started.elapsed(), spent_planned))
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

#[cfg(test)]
mod tests {
    use super::{blocks, condition_cells, fitted_rounds, interleaves};
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
}
