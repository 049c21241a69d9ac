//! Medians, spreads and the rule that decides when a difference is a win.

pub mod ci;

use serde::Serialize;

/// The nearest-rank quantile, shared with the run reports.
pub use h2lab_report::stats::quantile;

/// The median and spread of repeated measurements of one quantity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianSpread {
    /// Median of the runs.
    pub median: f64,
    /// Smallest run.
    pub min: f64,
    /// Largest run.
    pub max: f64,
    /// Number of runs.
    pub n: usize,
}

impl MedianSpread {
    /// Summarises `values` (non-finite values are ignored); `None` when nothing is left.
    pub fn of(values: &[f64]) -> Option<MedianSpread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(MedianSpread {
            median: median_sorted(&v),
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
        })
    }

    /// `max - min`: the spread a difference must exceed to count.
    pub fn spread(&self) -> f64 {
        self.max - self.min
    }
}

/// The median of sorted values (mean of the middle two for even counts).
pub fn median_sorted(v: &[f64]) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Whether a larger or a smaller value is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughput.
    Higher,
    /// Latency.
    Lower,
}

/// The outcome of comparing the best candidate with the runner-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict<K> {
    /// The candidate with the best median.
    pub winner: K,
    /// The second best.
    pub runner_up: K,
    /// How much better the winner is, as a fraction: for throughput `winner/runner_up - 1`,
    /// for latency `runner_up/winner - 1` (so 1.0 means 2× better either way).
    pub margin: f64,
    /// The difference of the medians is larger than the spread (max - min) of both
    /// candidates: only then is it called a win.
    pub significant: bool,
}

/// Picks the best of `candidates` by median and decides whether its lead over the runner-up
/// is a win (larger than either candidate's spread). `None` with fewer than two candidates.
pub fn decide<K: Clone>(candidates: &[(K, MedianSpread)], better: Better) -> Option<Verdict<K>> {
    if candidates.len() < 2 {
        return None;
    }
    let mut v: Vec<&(K, MedianSpread)> = candidates.iter().collect();
    v.sort_by(|a, b| match better {
        Better::Higher => b.1.median.total_cmp(&a.1.median),
        Better::Lower => a.1.median.total_cmp(&b.1.median),
    });
    let (w, r) = (v[0], v[1]);
    let margin = match better {
        Better::Higher => ratio_margin(w.1.median, r.1.median),
        Better::Lower => ratio_margin(r.1.median, w.1.median),
    };
    Some(Verdict {
        winner: w.0.clone(),
        runner_up: r.0.clone(),
        margin,
        significant: beats(&w.1, &r.1),
    })
}

/// `a/b - 1`, or 0 when `b` is not positive.
fn ratio_margin(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() {
        a / b - 1.0
    } else {
        0.0
    }
}

/// Whether the medians of `a` and `b` differ by more than the larger of their spreads.
pub fn beats(a: &MedianSpread, b: &MedianSpread) -> bool {
    (a.median - b.median).abs() > a.spread().max(b.spread())
}

/// The seed article's scale for a margin: `+` (< 10%), `++` (< 30%), `+++` (< 100%),
/// `++++` (2× or more).
pub fn plus_scale(margin: f64) -> &'static str {
    if margin >= 1.0 {
        "++++"
    } else if margin >= 0.30 {
        "+++"
    } else if margin >= 0.10 {
        "++"
    } else {
        "+"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> MedianSpread {
        MedianSpread::of(v).unwrap()
    }

    #[test]
    fn summary_and_quantiles() {
        let x = s(&[3.0, 1.0, 2.0, f64::NAN]);
        assert_eq!((x.median, x.min, x.max, x.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(s(&[1.0, 2.0, 3.0, 4.0]).median, 2.5);
        assert!(MedianSpread::of(&[]).is_none());
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.9), 90.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
    }

    #[test]
    fn a_win_needs_a_margin_larger_than_the_spread() {
        let a = ("a", s(&[100.0, 102.0, 101.0]));
        let b = ("b", s(&[90.0, 91.0, 89.0]));
        let v = decide(&[b, a], Better::Higher).unwrap();
        assert_eq!((v.winner, v.runner_up), ("a", "b"));
        assert!(v.significant);
        assert!((v.margin - (101.0 / 90.0 - 1.0)).abs() < 1e-9);
        // Overlapping noise: no win.
        let c = ("c", s(&[80.0, 100.0, 95.0]));
        let v = decide(&[a, c], Better::Higher).unwrap();
        assert_eq!(v.winner, "a");
        assert!(!v.significant);
        // Latency: lower wins, margin relative to the winner.
        let v = decide(&[("x", s(&[2.0])), ("y", s(&[8.0]))], Better::Lower).unwrap();
        assert_eq!(v.winner, "x");
        assert!((v.margin - 3.0).abs() < 1e-9);
        assert!(v.significant);
        assert_eq!(plus_scale(v.margin), "++++");
        assert_eq!(plus_scale(0.05), "+");
        assert!(decide(&[a], Better::Higher).is_none());
    }
}
