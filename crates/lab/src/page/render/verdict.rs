//! The render experiment's verdicts: the best arm by median against the runner-up (or two
//! named arms), decided on the per-round ratios of their times — the arms alternate load by
//! load, so load `i` of every arm is round `i` — with the median, its 95% CI
//! ([`ci::paired_ratio`]) and win / parity / undecided against the equivalence band
//! ([`ci::classify`]).

use serde::Serialize;

use super::{Arm, ArmResult};
use crate::stats::ci::{self, Estimate};
use crate::stats::{decide, Better, MedianSpread};

/// A verdict between the arms for one metric on one link.
#[derive(Debug, Clone, Serialize)]
pub struct RenderVerdict {
    /// `render` or `page`.
    pub metric: &'static str,
    /// `win`, `parity` or `undecided`.
    pub outcome: &'static str,
    /// The faster arm (by the per-round ratios; by the medians when no round paired them).
    pub best: Arm,
    /// The other arm (the runner-up by median among the arms compared).
    pub runner_up: Arm,
    /// How much better, as a fraction (1.0 = 2×): the median per-round ratio minus 1 (the
    /// ratio of the medians when no round paired the two).
    pub margin: f64,
    /// Per-round ratio of times, runner-up / best: median, 95% CI and paired rounds.
    pub ratio: Option<Estimate>,
}

/// `a`'s times of `metric` by round (`None`: no complete load that round).
fn by_round(a: &ArmResult, metric: &str, rounds: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; rounds];
    for (l, &r) in a.loads.iter().zip(&a.load_rounds) {
        if let Some(slot) = v.get_mut(r as usize) {
            *slot = Some(if metric == "render" { l.0 } else { l.1 });
        }
    }
    v
}

/// The best of the arms in `pick` by the median of `metric` against the runner-up, decided
/// on their per-round ratios against `1 ± equivalence`.
pub(super) fn verdict(
    metric: &'static str,
    arms: &[ArmResult],
    pick: &[Arm],
    equivalence: f64,
) -> Option<RenderVerdict> {
    let cands: Vec<(Arm, MedianSpread)> = arms
        .iter()
        .filter(|a| pick.contains(&a.arm))
        .filter_map(|a| {
            let s = if metric == "render" {
                a.render_ms
            } else {
                a.page_ms
            };
            s.map(|s| (a.arm, s))
        })
        .collect();
    let v = decide(&cands, Better::Lower)?;
    let find = |arm: Arm| arms.iter().find(|a| a.arm == arm);
    let (best, other) = (find(v.winner)?, find(v.runner_up)?);
    let rounds = [best, other]
        .iter()
        .flat_map(|a| a.load_rounds.iter().map(|&r| r as usize + 1))
        .max()
        .unwrap_or(0);
    let (b, o) = (
        by_round(best, metric, rounds),
        by_round(other, metric, rounds),
    );
    let seed = ci::seed_for(&format!("render {metric} {:?} {:?}", best.arm, other.arm));
    let (ratio, swapped, outcome) = ci::faster_of(&b, &o, seed, equivalence);
    let (best, runner_up) = if swapped {
        (v.runner_up, v.winner)
    } else {
        (v.winner, v.runner_up)
    };
    Some(RenderVerdict {
        metric,
        outcome: outcome.name(),
        best,
        runner_up,
        margin: ratio.map_or(v.margin, |r| r.median - 1.0),
        ratio,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arm whose load of round `i` took `times[i]` ms to render (page: twice that).
    fn arm(arm: Arm, times: &[Option<f64>]) -> ArmResult {
        let (loads, load_rounds): (Vec<(f64, f64)>, Vec<u32>) = times
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| ((t, 2.0 * t), i as u32)))
            .unzip();
        let r: Vec<f64> = loads.iter().map(|x| x.0).collect();
        let p: Vec<f64> = loads.iter().map(|x| x.1).collect();
        ArmResult {
            arm,
            render_ms: MedianSpread::of(&r),
            page_ms: MedianSpread::of(&p),
            loads,
            load_rounds,
            pushed_bytes: 0,
            pushed_wasted_bytes: 0,
            error: None,
            path: None,
        }
    }

    #[test]
    fn verdicts_pair_the_arms_by_round() {
        // Priorities on render in half the time of off in every round, while both drift by
        // ±20% together (the unpaired ranges overlap): a win for "on".
        let drift = [1.0, 1.2, 0.8, 1.1, 0.9, 1.15, 0.85, 1.05];
        let off: Vec<Option<f64>> = drift.iter().map(|d| Some(400.0 * d)).collect();
        let on: Vec<Option<f64>> = off.iter().map(|t| t.map(|t| t / 2.0)).collect();
        let arms = [arm(Arm::H2PrioOff, &off), arm(Arm::H2PrioOn, &on)];
        let pick = [Arm::H2PrioOff, Arm::H2PrioOn];
        let v = verdict("render", &arms, &pick, 0.03).unwrap();
        assert_eq!(
            (v.outcome, v.best, v.runner_up),
            ("win", Arm::H2PrioOn, Arm::H2PrioOff)
        );
        let r = v.ratio.unwrap();
        assert!((r.median - 2.0).abs() < 1e-9 && r.n == 8, "{r:?}");
        assert!((v.margin - 1.0).abs() < 1e-9);
        // The same arm twice (within 1% each round): parity, not a win for either.
        let same: Vec<Option<f64>> = off
            .iter()
            .enumerate()
            .map(|(i, t)| t.map(|t| t * if i % 2 == 0 { 1.01 } else { 0.99 }))
            .collect();
        let arms = [arm(Arm::H2PrioOff, &off), arm(Arm::H2PrioOn, &same)];
        assert_eq!(
            verdict("page", &arms, &pick, 0.03).unwrap().outcome,
            "parity"
        );
        // Swinging 6% either way from round to round: undecided.
        let swing: Vec<Option<f64>> = off
            .iter()
            .enumerate()
            .map(|(i, t)| t.map(|t| t * if i % 2 == 0 { 1.06 } else { 0.94 }))
            .collect();
        let arms = [arm(Arm::H2PrioOff, &off), arm(Arm::H2PrioOn, &swing)];
        assert_eq!(
            verdict("render", &arms, &pick, 0.03).unwrap().outcome,
            "undecided"
        );
        // Five rounds never decide, and a failed load leaves its round out of the pairs.
        let arms = [arm(Arm::H2PrioOff, &off[..5]), arm(Arm::H2PrioOn, &on[..5])];
        let v = verdict("render", &arms, &pick, 0.03).unwrap();
        assert_eq!((v.outcome, v.best), ("undecided", Arm::H2PrioOn));
        let mut gap = on.clone();
        gap[1] = None;
        let arms = [arm(Arm::H2PrioOff, &off), arm(Arm::H2PrioOn, &gap)];
        let v = verdict("render", &arms, &pick, 0.03).unwrap();
        assert_eq!((v.outcome, v.ratio.unwrap().n), ("win", 7));
    }
}
