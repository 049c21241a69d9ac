//! Summary statistics of a run: the columns of h2load's latency table (min, max, mean, sd,
//! "+/- sd") plus the percentiles h2lab appends (p50, p90, p99, p99.9).
//!
//! h2load computes them over raw samples (population standard deviation, share of samples within
//! mean ± sd). h2lab keeps HdrHistograms instead, so the same quantities are computed from the
//! histogram buckets (3 significant figures: within 0.1% of the exact values).

use hdrhistogram::Histogram;

use crate::model::RunResult;

/// Requests per second over the measurement period, as h2load's `finished in` line computes it:
/// requests completed with a response (any status) per second.
pub fn requests_per_second(r: &RunResult) -> f64 {
    let secs = r.elapsed.as_secs_f64();
    if secs > 0.0 {
        r.requests.completed as f64 / secs
    } else {
        0.0
    }
}

/// Bytes read per second over the measurement period, truncated to an integer like h2load.
pub fn bytes_per_second(r: &RunResult) -> u64 {
    let secs = r.elapsed.as_secs_f64();
    if secs > 0.0 {
        (r.traffic.bytes_total as f64 / secs) as u64
    } else {
        0
    }
}

/// The percentiles h2lab appends to each row, as quantiles.
pub const QUANTILES: [f64; 4] = [0.50, 0.90, 0.99, 0.999];

/// Column labels of [`QUANTILES`].
pub const QUANTILE_LABELS: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// Summary of one distribution. Units are those of the samples (nanoseconds for latencies,
/// requests per second for the per-client rates).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DistributionSummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (`n - 1`; h2load 1.52 always divides by `n - 1` when `n > 1`).
    pub sd: f64,
    /// Percentage of samples within `mean ± sd`, 0 when there are no samples.
    pub within_sd: f64,
    /// Values at [`QUANTILES`].
    pub percentiles: [f64; 4],
}

impl DistributionSummary {
    /// Summarises a latency histogram.
    pub fn from_histogram(h: &Histogram<u64>) -> DistributionSummary {
        let count = h.len();
        if count == 0 {
            return DistributionSummary::default();
        }
        let mean = h.mean();
        let mut dev2 = 0.0f64;
        for v in h.iter_recorded() {
            let d = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
            dev2 += d * d * v.count_at_value() as f64;
        }
        let sd = sample_sd(dev2, count);
        let (lower, upper) = (mean - sd, mean + sd);
        let mut within = 0u64;
        for v in h.iter_recorded() {
            let value = h.median_equivalent(v.value_iterated_to()) as f64;
            if lower <= value && value <= upper {
                within = within.saturating_add(v.count_at_value());
            }
        }
        // Each value is reported as the middle of its bucket (error at most half a bucket, 0.05% at
        // 3 significant figures), as hdrhistogram's mean and sd already do. The bucket's lower
        // bound would print a whole 100us sample as "99us" once truncated like h2load does.
        let mid = |v: u64| h.median_equivalent(v) as f64;
        let mut percentiles = [0.0; 4];
        for (p, q) in percentiles.iter_mut().zip(QUANTILES) {
            *p = mid(h.value_at_quantile(q));
        }
        DistributionSummary {
            count,
            min: mid(h.min()),
            max: mid(h.max()),
            mean,
            sd,
            within_sd: within as f64 * 100.0 / count as f64,
            percentiles,
        }
    }

    /// Summarises raw samples exactly (used for the per-client req/s values). Non-finite samples
    /// are ignored.
    pub fn from_samples(samples: &[f64]) -> DistributionSummary {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return DistributionSummary::default();
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let mean = sorted.iter().sum::<f64>() / n;
        let dev2 = sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>();
        let sd = sample_sd(dev2, sorted.len() as u64);
        let (lower, upper) = (mean - sd, mean + sd);
        let within = sorted
            .iter()
            .filter(|v| lower <= **v && **v <= upper)
            .count();
        let mut percentiles = [0.0; 4];
        for (p, q) in percentiles.iter_mut().zip(QUANTILES) {
            *p = nearest_rank(&sorted, q);
        }
        DistributionSummary {
            count: sorted.len() as u64,
            min: sorted.first().copied().unwrap_or(0.0),
            max: sorted.last().copied().unwrap_or(0.0),
            mean,
            sd,
            within_sd: within as f64 * 100.0 / n,
            percentiles,
        }
    }
}

/// Standard deviation from the sum of squared deviations of `n` samples: the sample standard
/// deviation (divided by `n - 1`), as h2load 1.52 prints it, or 0 for a single sample.
fn sample_sd(dev2: f64, n: u64) -> f64 {
    if n > 1 {
        (dev2 / (n - 1) as f64).sqrt()
    } else {
        0.0
    }
}

/// The `q` quantile (0..=1) of `sorted` by the nearest-rank method: the smallest sample such
/// that at least `q` of the samples are less than or equal to it. `sorted` must be sorted
/// ascending; 0 when it is empty.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let rank = (q * n as f64).ceil() as usize; // 1-based; saturating conversion
    let idx = rank.clamp(1, n.max(1)) - 1;
    sorted.get(idx).copied().unwrap_or(0.0)
}

/// The `q` quantile (0..=1) of `values` by the nearest-rank method ([`nearest_rank`]);
/// non-finite values are ignored, NaN when nothing is left.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    nearest_rank(&v, q.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::new_histogram;

    #[test]
    fn empty_is_all_zero() {
        assert_eq!(
            DistributionSummary::from_histogram(&new_histogram()),
            DistributionSummary::default()
        );
        assert_eq!(
            DistributionSummary::from_samples(&[]),
            DistributionSummary::default()
        );
    }

    #[test]
    fn samples_match_h2load_definitions() {
        let s = DistributionSummary::from_samples(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.count, 4);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.mean, 2.5);
        // Sample sd: sqrt(5 / 3).
        assert!((s.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        // 2 and 3 lie within 2.5 ± 1.29.
        assert_eq!(s.within_sd, 50.0);
        assert_eq!(s.percentiles, [2.0, 4.0, 4.0, 4.0]);
        // All equal: sd 0, everything within.
        let z = DistributionSummary::from_samples(&[0.0, 0.0]);
        assert_eq!(z.within_sd, 100.0);
    }

    #[test]
    fn histogram_summary() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = DistributionSummary::from_histogram(&h);
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1000.0);
        assert!((s.max - 1_000_000.0).abs() <= 500.0);
        assert!((s.mean - 500_500.0).abs() < 500.0);
        assert!((s.percentiles[0] - 500_000.0).abs() <= 500.0);
        assert!((s.percentiles[1] - 900_000.0).abs() <= 900.0);
        assert!((s.percentiles[3] - 999_000.0).abs() <= 1000.0);
        // The anchor capture's example: 2 connect samples 99us and 249us give sd 106us.
        let mut two = new_histogram();
        two.record(99_000).unwrap();
        two.record(249_000).unwrap();
        let t = DistributionSummary::from_histogram(&two);
        assert!((t.sd - 106_066.0).abs() < 100.0, "{}", t.sd);
        assert_eq!(crate::units::format_duration_ns(t.sd), "106us");
        assert_eq!(t.within_sd, 100.0);
        // A single sample: sd 0.
        assert_eq!(DistributionSummary::from_samples(&[5.0]).sd, 0.0);
        // Uniform distribution: about 57.7% within one sd.
        assert!((s.within_sd - 57.7).abs() < 0.5, "{}", s.within_sd);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.9), 90.0);
        assert_eq!(quantile(&v, 0.999), 100.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        // Out-of-range q clamps; non-finite values are ignored; nothing left is NaN.
        assert_eq!(quantile(&v, -1.0), 1.0);
        assert_eq!(quantile(&v, 2.0), 100.0);
        assert_eq!(quantile(&[f64::NAN, 3.0, 1.0, 2.0], 0.5), 2.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert!(quantile(&[f64::INFINITY], 0.5).is_nan());
        assert_eq!(nearest_rank(&[], 0.5), 0.0);
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 0.34), 2.0);
    }
}
