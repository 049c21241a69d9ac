//! The render experiment's verdicts: the best arm by median against the runner-up (or two
//! named arms), decided on the per-round ratios of their times — the arms alternate load by
//! load, so load `i` of every arm is round `i` — with the median, its 95% CI
//! ([`ci::paired_ratio`]) and the four outcomes (win, slight, parity, undecided) against the
//! equivalence band ([`ci::classify`]), in compare's words ([`time_words`]).

use serde::Serialize;

use super::{Arm, ArmResult};
use crate::stats::ci::{self, Estimate, Outcome};
use crate::stats::{decide, Better, MedianSpread};

/// A verdict between the arms for one metric on one link.
#[derive(Debug, Clone, Serialize)]
pub struct RenderVerdict {
    /// `render` or `page`.
    pub metric: &'static str,
    /// Win, slight, parity or undecided.
    pub outcome: Outcome,
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
        outcome,
        best,
        runner_up,
        margin: ratio.map_or(v.margin, |r| r.median - 1.0),
        ratio,
    })
}

impl RenderVerdict {
    /// The verdict in compare's words: `h2 prio on -48% (-50…-45%)` (a win: the faster arm
    /// and its time over the other's), `slight: h2 push -2.1% (…)`, `parity h2 push/h2 prio
    /// on -0.4% (…)`, `undecided h2 push/h2 prio on (-4.0…+3.0%) ≈7 more`.
    pub fn words(&self, equivalence: f64) -> String {
        let more = self
            .ratio
            .and_then(|r| ci::rounds_to_decide(&r, equivalence));
        let best_over_other = self.ratio.map(|r| inverse(&r));
        time_words(
            self.outcome,
            (self.best.label(), self.runner_up.label()),
            best_over_other.as_ref(),
            more,
        )
    }
}

/// `b / a` from `a / b`.
pub(crate) fn inverse(r: &Estimate) -> Estimate {
    Estimate {
        median: 1.0 / r.median,
        lo: 1.0 / r.hi,
        hi: 1.0 / r.lo,
        n: r.n,
    }
}

/// A verdict on two arms' times (lower is better) in the words of compare's decision table
/// ([`crate::compare::verdicts::verdict_words`]): a win names the faster arm and its time
/// over the other's (`h2 prio on -48% (-50…-45%)`), a slight difference the same after
/// `slight:`, parity the ratio `a / b` (`parity a/b -0.4% (-1.0…+0.3%)`), undecided its CI
/// and roughly how many more rounds (`more`) would tell (`undecided a/b (-4.0…+3.0%) ≈7
/// more`). `a_over_b`: the per-round ratio of `a`'s time over `b`'s (`None`: no paired
/// rounds).
pub(crate) fn time_words(
    outcome: Outcome,
    (a, b): (&str, &str),
    a_over_b: Option<&Estimate>,
    more: Option<usize>,
) -> String {
    let Some(r) = a_over_b else {
        return "undecided (no paired rounds)".into();
    };
    let a_faster = Some(r.median <= 1.0);
    crate::compare::verdicts::verdict_words(outcome, (a, b), r, a_faster, more, true)
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
            (Outcome::Win, Arm::H2PrioOn, Arm::H2PrioOff)
        );
        let r = v.ratio.unwrap();
        assert!((r.median - 2.0).abs() < 1e-9 && r.n == 8, "{r:?}");
        assert!((v.margin - 1.0).abs() < 1e-9);
        // In compare's words: the faster arm and its time over the other's (half: -50%).
        assert_eq!(v.words(0.03), "h2 prio on -50% (-50…-50%)");
        // The same arm twice (within 1% each round): parity, not a win for either.
        let same: Vec<Option<f64>> = off
            .iter()
            .enumerate()
            .map(|(i, t)| t.map(|t| t * if i % 2 == 0 { 1.01 } else { 0.99 }))
            .collect();
        let arms = [arm(Arm::H2PrioOff, &off), arm(Arm::H2PrioOn, &same)];
        assert_eq!(
            verdict("page", &arms, &pick, 0.03).unwrap().outcome,
            Outcome::Parity
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
            Outcome::Undecided
        );
        // Five rounds never decide, and a failed load leaves its round out of the pairs.
        let arms = [arm(Arm::H2PrioOff, &off[..5]), arm(Arm::H2PrioOn, &on[..5])];
        let v = verdict("render", &arms, &pick, 0.03).unwrap();
        assert_eq!((v.outcome, v.best), (Outcome::Undecided, Arm::H2PrioOn));
        // Fewer than the rounds a verdict needs: undecided, with the rounds missing.
        let w = v.words(0.03);
        assert!(
            w.starts_with("undecided h2 prio on/h2 prio off (-50…-50%) ≈"),
            "{w}"
        );
        let mut gap = on.clone();
        gap[1] = None;
        let arms = [arm(Arm::H2PrioOff, &off), arm(Arm::H2PrioOn, &gap)];
        let v = verdict("render", &arms, &pick, 0.03).unwrap();
        assert_eq!((v.outcome, v.ratio.unwrap().n), (Outcome::Win, 7));
    }

    /// Each of the four outcomes in compare's words, from the ratio of `a`'s time over `b`'s.
    #[test]
    fn the_four_outcomes_read_as_compares_decision_table() {
        let e = |median, lo, hi| Estimate {
            median,
            lo,
            hi,
            n: 9,
        };
        let w = |r: Estimate| {
            let o = ci::classify(&r, 0.03);
            let more = ci::rounds_to_decide(&r, 0.03);
            (o, time_words(o, ("h2", "h1"), Some(&r), more))
        };
        assert_eq!(
            w(e(0.58, 0.53, 0.64)),
            (Outcome::Win, "h2 -42% (-47…-36%)".into())
        );
        // b faster: named, with its time over a's.
        assert_eq!(w(e(1.5, 1.4, 1.6)).1, "h1 -33% (-38…-29%)");
        assert_eq!(
            w(e(0.971, 0.947, 0.994)),
            (Outcome::Slight, "slight: h2 -2.9% (-5.3…-0.6%)".into())
        );
        assert_eq!(
            w(e(0.996, 0.99, 1.019)),
            (Outcome::Parity, "parity h2/h1 -0.4% (-1.0…+1.9%)".into())
        );
        let (o, t) = w(e(1.0, 0.96, 1.04));
        assert_eq!(o, Outcome::Undecided);
        assert_eq!(t, "undecided h2/h1 (-4.0…+4.0%) ≈7 more");
        assert_eq!(
            time_words(Outcome::Undecided, ("h2", "h1"), None, None),
            "undecided (no paired rounds)"
        );
    }
}
