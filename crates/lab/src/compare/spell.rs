//! Slow spells: rounds in which the machine itself ran slower for every arm of a condition.
//!
//! On the 2-core VM this lab is developed on, the whole machine sometimes runs a workload
//! two to three times slower for seconds at a time, without any sign in `/proc` (no steal,
//! no other process, no load): `h2lab bench` against `h2lab serve` on 100 KB responses ran at
//! 16–18 k req/s in such spells against 39–44 k otherwise, with the same TCP segments and page
//! allocations per request, while the kernel's copy into socket buffers took three times
//! as long per request (perf). Every arm measured in a spell costs about twice its
//! usual CPU per request, but not by the same factor (HTTP/1.1 2.7×, h2c 2.0× on 100 KB), so a
//! spell does not cancel in the per-round ratio: one `--quick` run measured its 100 KB
//! condition in a spell and called h2c the winner on throughput by 11%, the next run outside
//! one called HTTP/1.1 the winner by 18%, both with narrow intervals.
//!
//! A round of a condition is a *slow spell* when **every** arm measured in it cost at least
//! [`SPELL_FACTOR`] times its own lower quartile over the condition's rounds (server CPU per
//! request; client CPU per request against an external server). The rule looks only at how
//! all arms moved together, never at which arm is ahead, so it cannot favour one: an A/A
//! control's two arms are left out in the same rounds. One arm's slow window (a preemption,
//! a short stall: 10–30% on one arm) is not a spell. A spell that covers most of a condition's
//! rounds cannot be told from the machine's normal speed (the quartile is then itself slow);
//! the interleaved first rounds ([`super::schedule::run_plan`]) spread each condition's rounds
//! over the whole run so that a spell of a few seconds touches a few rounds of every
//! condition instead of all rounds of one. Only unshaped (loopback) conditions are checked:
//! on an emulated link the server is mostly idle and its CPU per request is wake-ups, which
//! vary by more than the factor from round to round.
//!
//! The spell's runs stay in results.json (`slow_spell: true`) and count in the tables, but
//! are left out of the statistics, as runs that completed nothing are; `--keep-slow-spells`
//! keeps them in.

use super::run::{CellResult, RunSample};
use crate::kernel::spell::spell_rounds;
pub use crate::kernel::spell::SPELL_FACTOR;
use crate::link::LinkProfile;

/// The cost a spell is judged on: server CPU per request, or client CPU per request when
/// the server is not the built-in one.
fn cost(r: &RunSample) -> Option<f64> {
    r.server_cpu_us
        .or(r.client_cpu_us)
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// Marks the runs of the cells at `idxs` (one condition, measured in the same rounds) that
/// were measured in a slow spell ([`spell_rounds`]), clearing earlier marks first (the
/// reference moves as rounds are added). Returns how many rounds are spells.
pub fn mark(cells: &mut [CellResult], idxs: &[usize]) -> usize {
    for &i in idxs {
        if let Some(c) = cells.get_mut(i) {
            for r in &mut c.runs {
                r.slow_spell = false;
            }
        }
    }
    let group: Vec<&CellResult> = idxs.iter().filter_map(|&i| cells.get(i)).collect();
    if group
        .iter()
        .any(|c| c.key.cond.link != LinkProfile::Loopback)
    {
        return 0;
    }
    let rounds = group.iter().map(|c| c.rounds()).max().unwrap_or(0) as usize;
    let costs: Vec<Vec<Option<f64>>> = group
        .iter()
        .map(|c| {
            (0..rounds)
                .map(|round| {
                    c.runs
                        .iter()
                        .find(|r| r.round as usize == round && r.completed > 0)
                        .and_then(cost)
                })
                .collect()
        })
        .collect();
    let spells = spell_rounds(&costs);
    for &i in idxs {
        if let Some(c) = cells.get_mut(i) {
            for r in &mut c.runs {
                r.slow_spell = spells.contains(&(r.round as usize));
            }
        }
    }
    spells.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{CompareConfig, Preset};

    fn sample(round: u32, cpu: f64) -> RunSample {
        RunSample::synthetic(round, 1000.0, 1.0, cpu)
    }

    /// The two arms (h1, h2c) of the tiny matrix's first condition over `link`, with one
    /// run per round at the given server costs.
    fn cells_with(costs: &[&[f64]; 2], link: LinkProfile) -> Vec<CellResult> {
        let mut cfg = CompareConfig::preset(Preset::Tiny);
        cfg.axes.links = vec![link];
        let plan = cfg.axes.plan();
        let idxs: Vec<usize> = plan.conditions[0].cells.iter().map(|&(_, i)| i).collect();
        assert_eq!(idxs.len(), 2);
        idxs.iter()
            .zip(costs)
            .map(|(&i, cs)| {
                let mut c = CellResult::new(plan.cells[i].clone(), &cfg.timing);
                for (round, &v) in cs.iter().enumerate() {
                    c.runs.push(sample(round as u32, v));
                }
                c
            })
            .collect()
    }

    #[test]
    fn a_round_in_which_every_arm_ran_slower_is_a_spell_and_one_slow_arm_is_not() {
        // Round 3: both arms twice as costly (a spell). Round 5: only the first (one arm's
        // slow window). Round 7: the second arm 25% up with the first (below the factor).
        let a = [10.0, 10.2, 9.9, 20.0, 10.1, 19.0, 10.0, 12.5, 10.1];
        let b = [12.0, 12.1, 11.9, 26.0, 12.2, 12.0, 12.1, 15.0, 11.8];
        let mut cells = cells_with(&[&a, &b], LinkProfile::Loopback);
        assert_eq!(mark(&mut cells, &[0, 1]), 1);
        for c in &cells {
            let spells: Vec<u32> = c
                .runs
                .iter()
                .filter(|r| r.slow_spell)
                .map(|r| r.round)
                .collect();
            assert_eq!(spells, vec![3]);
        }
        // Marks are recomputed: with the spell's round gone the rest is clean.
        for c in &mut cells {
            c.runs.retain(|r| r.round != 3);
        }
        assert_eq!(mark(&mut cells, &[0, 1]), 0);
        assert!(cells.iter().all(|c| c.runs.iter().all(|r| !r.slow_spell)));
    }

    #[test]
    fn spells_leave_the_statistics_symmetrically_and_an_a_a_pair_stays_even() {
        // Two identical arms; rounds 2 and 6 in a spell where the first arm slowed 2.7× and
        // the second 2.0× (as HTTP/1.1 and h2c did on 100 KB): the spell rounds' ratios lie
        // far from the rest and leave the statistics of both arms.
        let a = [10.0, 10.1, 27.0, 9.9, 10.0, 10.2, 27.5, 10.1, 9.8];
        let b = [10.1, 10.0, 20.0, 10.0, 9.9, 10.1, 20.5, 10.0, 10.1];
        let mut cells = cells_with(&[&a, &b], LinkProfile::Loopback);
        assert_eq!(mark(&mut cells, &[0, 1]), 2);
        for c in &mut cells {
            c.refresh();
            assert_eq!(c.spell_runs, 2);
            let med = c.server_cpu_us.unwrap().median;
            assert!((9.9..=10.1).contains(&med), "{med}");
        }
        let va = cells[0].by_round(9, |r| r.server_cpu_us);
        assert_eq!(va.iter().filter(|v| v.is_none()).count(), 2);
    }

    #[test]
    fn shaped_links_and_short_conditions_are_not_judged() {
        let a = [10.0, 10.0, 30.0, 10.0, 10.0, 10.0];
        let b = [10.0, 10.0, 30.0, 10.0, 10.0, 10.0];
        let mut cells = cells_with(&[&a, &b], LinkProfile::Wan);
        assert_eq!(mark(&mut cells, &[0, 1]), 0);
        let mut cells = cells_with(&[&a[..3], &b[..3]], LinkProfile::Loopback);
        assert_eq!(mark(&mut cells, &[0, 1]), 0);
    }
}
