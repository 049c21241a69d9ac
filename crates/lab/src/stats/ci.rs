//! Confidence intervals and the four-outcome decision rule.
//!
//! Each cell: the median of its runs with a 95% percentile-bootstrap confidence interval
//! ([`median_ci`]). Each decision between two arms A and B measured in the same rounds
//! (back to back, order rotated): the per-round ratios `A[r] / B[r]`, their median and its
//! bootstrap CI ([`paired_ratio`]). The machine drifts, but both arms of a round drift
//! together, so the ratio is far steadier than either arm.
//!
//! [`Outcome`]: against an equivalence band `1 ± e` (±3% by default; ±10% for p99) the
//! ratio's CI either lies wholly outside the band (**win**: a difference that matters, its
//! direction and size known), excludes 1.0 while crossing an edge of the band (**slight**:
//! the direction is known, the size is small), lies wholly inside it (**parity**), or
//! contains 1.0 and reaches outside the band (**undecided**: more rounds would tell;
//! [`rounds_to_decide`] says roughly how many).
//!
//! The bootstrap uses a seeded generator ([`Rng`]), so the same runs always give the same
//! intervals.

use serde::Serialize;

use super::median_sorted;

/// Resamples per bootstrap.
pub const RESAMPLES: usize = 2000;
/// Confidence level of every interval.
pub const LEVEL: f64 = 0.95;
/// The default equivalence band: ratios within `1 ± 0.03` are "the same".
pub const DEFAULT_EQUIVALENCE: f64 = 0.03;
/// Fewest paired rounds that can decide (win or parity). Below nine the interval of a
/// median is the sample range, whose coverage is only `1 - 2^(1-n)`: 87.5% with 4 values,
/// 93.75% with 5 (short of the 95% claimed: an A/A control measured in 5 rounds on a loaded
/// machine "won" 2 of 6 times), 96.9% with 6; fewer rounds are always undecided.
pub const MIN_ROUNDS: usize = 6;

/// The deterministic generator of the bootstraps (SplitMix64, shared with the link emulator's
/// loss and jitter draws): the same seed gives the same intervals.
pub use crate::link::shaper::Rng;

/// A median with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The median of the values.
    pub median: f64,
    /// Lower end of the 95% interval.
    pub lo: f64,
    /// Upper end of the 95% interval.
    pub hi: f64,
    /// How many values (runs, or paired rounds).
    pub n: usize,
}

impl Estimate {
    /// `(hi - lo) / median`: the interval's width relative to the estimate.
    pub fn relative_width(&self) -> f64 {
        if self.median.abs() > 0.0 {
            (self.hi - self.lo) / self.median.abs()
        } else {
            f64::NAN
        }
    }
}

/// The order-statistic rank `k` (1-based) whose interval `[x_(k), x_(n+1-k)]` covers the
/// median with probability at least [`LEVEL`] whatever the distribution (binomial sign-test
/// interval): the largest such `k`, or 1 (the range) when even the range falls short, as it
/// does for fewer than 6 values.
pub fn order_rank(n: usize) -> usize {
    if n < 2 {
        return 1;
    }
    if n > 1000 {
        // Normal approximation of the binomial.
        let k = (n as f64 / 2.0 - 1.96 * (n as f64).sqrt() / 2.0).floor();
        return (k as usize).max(1);
    }
    // P(Bin(n, 1/2) <= j), accumulated from j = 0.
    let mut pmf = 0.5f64.powi(n as i32);
    let mut cdf = pmf;
    let mut k = 1;
    for j in 0..n / 2 {
        // Coverage of [x_(j+1), x_(n-j)] is 1 - 2 P(Bin <= j).
        if 1.0 - 2.0 * cdf >= LEVEL {
            k = j + 1;
        } else {
            break;
        }
        pmf *= (n - j) as f64 / (j + 1) as f64;
        cdf += pmf;
    }
    k
}

/// The median of `values` (non-finite ones dropped) with a 95% CI; `None` when nothing is
/// left. The CI is the percentile bootstrap's ([`RESAMPLES`] resamples of `rng`), widened
/// where needed to the distribution-free interval of [`order_rank`]: with few values the
/// percentile bootstrap of a median covers less than it claims (with 6 it is about 85%), and
/// an A/A control would then "win" too often. Below 9 values the CI is therefore the range;
/// from 9 on the bootstrap narrows it. One value gives a zero-width interval ([`classify`]
/// calls fewer than [`MIN_ROUNDS`] undecided anyway).
pub fn median_ci(values: &[f64], rng: &mut Rng) -> Option<Estimate> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let median = median_sorted(&v);
    let n = v.len();
    let mut meds = Vec::with_capacity(RESAMPLES);
    let mut sample = vec![0.0; n];
    for _ in 0..RESAMPLES {
        for s in sample.iter_mut() {
            *s = v[rng.below(n as u64) as usize];
        }
        sample.sort_by(f64::total_cmp);
        meds.push(median_sorted(&sample));
    }
    meds.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    let at = |q: f64| meds[((q * RESAMPLES as f64) as usize).min(RESAMPLES - 1)];
    let k = order_rank(n);
    Some(Estimate {
        median,
        lo: at(tail).min(median).min(v[k - 1]),
        hi: at(1.0 - tail).max(median).max(v[n - k]),
        n,
    })
}

/// The per-round ratios `a[r] / b[r]` of two arms measured in the same rounds (rounds where
/// either value is missing, not finite or `b` is not positive are skipped) and the median
/// ratio with its bootstrap CI.
pub fn paired_ratio(a: &[Option<f64>], b: &[Option<f64>], rng: &mut Rng) -> Option<Estimate> {
    let ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() && *y > 0.0 => Some(x / y),
            _ => None,
        })
        .collect();
    median_ci(&ratios, rng)
}

/// The four outcomes of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The ratio's CI lies wholly outside the equivalence band: one arm is better by more
    /// than the band.
    Win,
    /// The CI excludes 1.0 and crosses an edge of the band: the direction is known, the
    /// size is small (it may be inside the band).
    Slight,
    /// The ratio's CI lies wholly inside the band (whether or not it excludes 1.0): the
    /// same within the band.
    Parity,
    /// The CI contains 1.0 and reaches outside the band (or there are fewer than
    /// [`MIN_ROUNDS`] paired rounds): more rounds are needed.
    Undecided,
}

impl Outcome {
    /// Every outcome, strongest first.
    pub const ALL: [Outcome; 4] = [
        Outcome::Win,
        Outcome::Slight,
        Outcome::Parity,
        Outcome::Undecided,
    ];

    /// `win`, `slight`, `parity`, `undecided`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Win => "win",
            Outcome::Slight => "slight",
            Outcome::Parity => "parity",
            Outcome::Undecided => "undecided",
        }
    }

    /// Whether the outcome names a direction (a win or a slight difference).
    pub fn directional(self) -> bool {
        matches!(self, Outcome::Win | Outcome::Slight)
    }
}

/// Classifies a ratio estimate against the band `[1 - e, 1 + e]` (edges belong to the band):
/// win outside it, parity inside it, slight when the CI crosses an edge but excludes 1.0,
/// undecided when it crosses an edge and contains 1.0.
pub fn classify(ratio: &Estimate, equivalence: f64) -> Outcome {
    let (lo, hi) = (1.0 - equivalence, 1.0 + equivalence);
    if ratio.n < MIN_ROUNDS || !ratio.lo.is_finite() || !ratio.hi.is_finite() {
        Outcome::Undecided
    } else if ratio.lo > hi || ratio.hi < lo {
        Outcome::Win
    } else if ratio.lo >= lo && ratio.hi <= hi {
        Outcome::Parity
    } else if ratio.lo > 1.0 || ratio.hi < 1.0 {
        Outcome::Slight
    } else {
        Outcome::Undecided
    }
}

/// Most extra rounds [`rounds_to_decide`] reports; beyond it, "many".
pub const MAX_ROUNDS_ESTIMATE: usize = 999;

/// Roughly how many more paired rounds would turn an undecided `ratio` into another outcome
/// (`None` when it is not undecided). Fewer than [`MIN_ROUNDS`] rounds: the rounds missing
/// up to it. Otherwise the interval's two half-widths are presumed to shrink as
/// `1/sqrt(n)` around the same median: the rounds `N` at which it either fits inside the
/// band (parity) or leaves 1.0 out (slight), whichever comes first, minus the `n` measured;
/// capped at [`MAX_ROUNDS_ESTIMATE`] (a median exactly at 1.0 on the band's edge never
/// decides). A guide for the reader and for the budget's order, not a promise: the
/// intervals of a median shrink in steps.
pub fn rounds_to_decide(ratio: &Estimate, equivalence: f64) -> Option<usize> {
    if classify(ratio, equivalence) != Outcome::Undecided {
        return None;
    }
    if ratio.n < MIN_ROUNDS || !ratio.lo.is_finite() || !ratio.hi.is_finite() {
        return Some(MIN_ROUNDS.saturating_sub(ratio.n).max(1));
    }
    let m = ratio.median;
    let (below, above) = ((m - ratio.lo).max(1e-12), (ratio.hi - m).max(1e-12));
    let (band_lo, band_hi) = (1.0 - equivalence, 1.0 + equivalence);
    // The largest scale `s` of the half-widths at which each outcome is reached.
    let parity = if m > band_lo && m < band_hi {
        f64::min((m - band_lo) / below, (band_hi - m) / above)
    } else {
        0.0
    };
    let excludes_one = if m > 1.0 {
        (m - 1.0) / below
    } else {
        (1.0 - m) / above
    };
    let s = parity.max(excludes_one);
    if s <= 0.0 {
        return Some(MAX_ROUNDS_ESTIMATE);
    }
    // Half-widths scale as sqrt(n / N): N = n / s².
    let n = ratio.n as f64;
    let needed = (n / (s * s) - n).ceil().max(1.0);
    Some(if needed >= MAX_ROUNDS_ESTIMATE as f64 {
        MAX_ROUNDS_ESTIMATE
    } else {
        needed as usize
    })
}

/// The decision between two arms presumed `fast` and `slow` (their values by round, lower is
/// better): the per-round ratio `slow / fast` with its CI (bootstrap seeded by `seed`),
/// turned round when its median says `slow` was the faster one (then `true`: the ratio is
/// `fast / slow`), classified against `1 ± equivalence`. Shared by `page`'s protocol lines
/// and its render verdicts.
pub fn faster_of(
    fast: &[Option<f64>],
    slow: &[Option<f64>],
    seed: u64,
    equivalence: f64,
) -> (Option<Estimate>, bool, Outcome) {
    let mut ratio = paired_ratio(slow, fast, &mut Rng::new(seed));
    let swapped = ratio.is_some_and(|r| r.median < 1.0);
    if swapped {
        ratio = paired_ratio(fast, slow, &mut Rng::new(seed));
    }
    let outcome = ratio.map_or(Outcome::Undecided, |r| classify(&r, equivalence));
    (ratio, swapped, outcome)
}

/// A seed for the bootstrap of one decision, from its description: the same decision of the
/// same runs always gets the same interval (FNV-1a).
pub fn seed_for(what: &str) -> u64 {
    what.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(lo: f64, hi: f64) -> Estimate {
        Estimate {
            median: (lo + hi) / 2.0,
            lo,
            hi,
            n: 8,
        }
    }

    #[test]
    fn rng_is_deterministic_and_uniform_enough() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut counts = [0u32; 4];
        let mut r = Rng::new(1);
        for _ in 0..40_000 {
            counts[r.below(4) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn order_ranks_cover_95_percent() {
        // Fewer than 9 values: only the range covers 95% (6: 96.9%, 8: 99.2%; [x2, x7] of 8
        // covers 93.0%).
        for n in 1..9 {
            assert_eq!(order_rank(n), 1, "{n}");
        }
        assert_eq!(order_rank(9), 2); // 96.1%
        assert_eq!(order_rank(20), 6); // 95.9%; [x7, x14] would be 88.5%
        assert!(order_rank(5000) > 2000);
    }

    #[test]
    fn bootstrap_ci_of_the_median_is_seeded_and_brackets_it() {
        let v = [10.0, 11.0, 9.5, 10.5, 10.2, 9.8, 10.1, 30.0];
        let a = median_ci(&v, &mut Rng::new(42)).unwrap();
        let b = median_ci(&v, &mut Rng::new(42)).unwrap();
        assert_eq!(a, b, "same seed, same interval");
        assert_eq!(a.n, 8);
        assert!((a.median - 10.15).abs() < 1e-9);
        assert!(a.lo <= a.median && a.median <= a.hi);
        // Eight values: the interval is their range.
        assert_eq!((a.lo, a.hi), (9.5, 30.0));
        // With more rounds the outlier no longer drags the median's interval up to it.
        let many: Vec<f64> = (0..20)
            .map(|i| {
                if i == 7 {
                    30.0
                } else {
                    10.0 + f64::from(i % 5) / 10.0
                }
            })
            .collect();
        let m = median_ci(&many, &mut Rng::new(42)).unwrap();
        assert!(m.hi < 12.0 && m.lo >= 10.0, "{m:?}");
        // Constant values: zero width.
        let c = median_ci(&[5.0; 6], &mut Rng::new(1)).unwrap();
        assert_eq!((c.lo, c.median, c.hi), (5.0, 5.0, 5.0));
        assert!(median_ci(&[f64::NAN], &mut Rng::new(1)).is_none());
    }

    #[test]
    fn the_four_outcomes_at_the_band_edges() {
        let e = DEFAULT_EQUIVALENCE;
        // Win: wholly outside the band, on either side; an edge value belongs to the band.
        assert_eq!(classify(&est(1.05, 1.12), e), Outcome::Win);
        assert_eq!(classify(&est(0.80, 0.95), e), Outcome::Win);
        assert_eq!(classify(&est(1.0301, 1.2), e), Outcome::Win);
        assert_eq!(classify(&est(0.8, 0.9699), e), Outcome::Win);
        assert_eq!(
            classify(&est(1.03, 1.2), e),
            Outcome::Slight,
            "touches the edge"
        );
        assert_eq!(
            classify(&est(0.8, 0.97), e),
            Outcome::Slight,
            "touches the edge"
        );
        // Parity: wholly inside, whether or not it excludes 1.0; the edges included.
        assert_eq!(classify(&est(0.98, 1.02), e), Outcome::Parity);
        assert_eq!(classify(&est(0.97, 1.03), e), Outcome::Parity);
        assert_eq!(classify(&est(1.005, 1.029), e), Outcome::Parity);
        assert_eq!(classify(&est(0.971, 0.995), e), Outcome::Parity);
        // Slight: excludes 1.0, crosses an edge ("cheaper by 0.6–5.3%").
        assert_eq!(classify(&est(1.01, 1.06), e), Outcome::Slight);
        assert_eq!(classify(&est(0.947, 0.994), e), Outcome::Slight);
        assert_eq!(classify(&est(1.0001, 1.0301), e), Outcome::Slight);
        // Undecided: contains 1.0 and reaches outside the band; 1.0 itself counts as
        // contained.
        assert_eq!(classify(&est(0.90, 1.10), e), Outcome::Undecided);
        assert_eq!(classify(&est(0.99, 1.031), e), Outcome::Undecided);
        assert_eq!(classify(&est(1.0, 1.05), e), Outcome::Undecided);
        assert_eq!(classify(&est(0.95, 1.0), e), Outcome::Undecided);
        // A wider band (p99's ±10%) turns a slight one into parity, an undecided one too.
        assert_eq!(classify(&est(0.95, 0.99), 0.10), Outcome::Parity);
        assert_eq!(classify(&est(0.92, 1.08), 0.10), Outcome::Parity);
        assert_eq!(classify(&est(0.85, 1.05), 0.10), Outcome::Undecided);
        // Too few rounds decide nothing, however narrow their range.
        for n in 1..MIN_ROUNDS {
            let few = Estimate {
                median: 2.0,
                lo: 2.0,
                hi: 2.0,
                n,
            };
            assert_eq!(classify(&few, e), Outcome::Undecided);
            assert_eq!(rounds_to_decide(&few, e), Some(MIN_ROUNDS - n));
        }
    }

    #[test]
    fn undecided_says_roughly_how_many_more_rounds() {
        let e = DEFAULT_EQUIVALENCE;
        let at = |median: f64, lo: f64, hi: f64, n: usize| Estimate { median, lo, hi, n };
        // Decided outcomes need no rounds.
        assert_eq!(rounds_to_decide(&est(1.05, 1.12), e), None);
        assert_eq!(rounds_to_decide(&est(1.01, 1.06), e), None);
        // Median 1.02, CI 0.99–1.05 over 9 rounds: leaving 1.0 out needs the lower
        // half-width at 2/3 of today's, N = 9 / (2/3)² = 20.25: 12 more.
        assert_eq!(rounds_to_decide(&at(1.02, 0.99, 1.05, 9), e), Some(12));
        // Median 1.0, CI 0.96–1.04: parity at 3/4 of the width: N = 16, 7 more.
        assert_eq!(rounds_to_decide(&at(1.0, 0.96, 1.04, 9), e), Some(7));
        // Nearer to deciding means fewer rounds.
        let near = rounds_to_decide(&at(1.0, 0.965, 1.035, 9), e).unwrap();
        let far = rounds_to_decide(&at(1.0, 0.8, 1.2, 9), e).unwrap();
        assert!(near < far, "{near} {far}");
        // A median on the band's edge: slight is the way out (1.0 left out).
        assert!(rounds_to_decide(&at(1.03, 0.99, 1.07, 9), e).is_some());
        // Capped.
        assert_eq!(
            rounds_to_decide(&at(1.0001, 0.5, 2.0, 9), e),
            Some(MAX_ROUNDS_ESTIMATE)
        );
    }

    #[test]
    fn pairing_by_round_removes_common_drift() {
        // Both arms drift by ±20% together; B is always 10% faster than A.
        let drift = [1.0, 1.2, 0.8, 1.1, 0.9, 1.15, 0.85, 1.05];
        let a: Vec<Option<f64>> = drift.iter().map(|d| Some(100.0 * d)).collect();
        let b: Vec<Option<f64>> = drift.iter().map(|d| Some(110.0 * d)).collect();
        let r = paired_ratio(&b, &a, &mut Rng::new(3)).unwrap();
        assert!(
            (r.median - 1.1).abs() < 1e-9 && r.relative_width() < 1e-9,
            "{r:?}"
        );
        assert_eq!(classify(&r, DEFAULT_EQUIVALENCE), Outcome::Win);
        // The unpaired medians' intervals overlap: unpaired, this would look undecided.
        let ua = median_ci(
            &a.iter().flatten().copied().collect::<Vec<_>>(),
            &mut Rng::new(3),
        );
        let ub = median_ci(
            &b.iter().flatten().copied().collect::<Vec<_>>(),
            &mut Rng::new(3),
        );
        assert!(ua.unwrap().hi > ub.unwrap().lo);
        // Missing rounds are skipped, not paired with another round.
        let mut b2 = b.clone();
        b2[0] = None;
        assert_eq!(paired_ratio(&b2, &a, &mut Rng::new(3)).unwrap().n, 7);
    }

    #[test]
    fn slow_spells_in_one_window_do_not_make_an_a_a_control_win() {
        // The noise measured on the idle VM: most windows within about 1% of their cell, but
        // about one in six slowed by 8-30% (the CPU slower for a while, hitting one arm's
        // window and not the other's). Per-round ratios of two identical arms are then
        // heavy-tailed on both sides; the median's sign-test interval must still cover 1.0
        // about 95% of the time and never call a win.
        let mut noise = Rng::new(14);
        let mut window = move || {
            let base = 1.0 + (noise.below(2001) as f64 - 1000.0) / 100_000.0;
            if noise.below(6) == 0 {
                base * (1.0 - (8.0 + noise.below(23) as f64) / 100.0)
            } else {
                base
            }
        };
        let (mut covered, mut wins, trials) = (0, 0, 400);
        for t in 0..trials {
            let a: Vec<Option<f64>> = (0..10).map(|_| Some(1000.0 * window())).collect();
            let b: Vec<Option<f64>> = (0..10).map(|_| Some(1000.0 * window())).collect();
            let r = paired_ratio(&a, &b, &mut Rng::new(t)).unwrap();
            covered += usize::from(r.lo <= 1.0 && r.hi >= 1.0);
            wins += usize::from(classify(&r, DEFAULT_EQUIVALENCE) == Outcome::Win);
        }
        assert_eq!(wins, 0);
        assert!(
            covered * 100 >= trials as usize * 94,
            "{covered} of {trials}"
        );
    }

    #[test]
    fn an_a_a_control_without_a_difference_is_never_a_win() {
        // Two arms of the same thing, ±5% noise each: the median ratio's CI never lies
        // wholly outside the ±3% band, so the control is parity or undecided.
        let mut noise = Rng::new(99);
        for seed in 0..50 {
            let mut x = || 1.0 + (noise.below(1000) as f64 - 500.0) / 10_000.0;
            let a: Vec<Option<f64>> = (0..8).map(|_| Some(1000.0 * x())).collect();
            let b: Vec<Option<f64>> = (0..8).map(|_| Some(1000.0 * x())).collect();
            let r = paired_ratio(&a, &b, &mut Rng::new(seed)).unwrap();
            assert_ne!(classify(&r, DEFAULT_EQUIVALENCE), Outcome::Win, "{r:?}");
        }
        assert_ne!(seed_for("a"), seed_for("b"));
    }
}
