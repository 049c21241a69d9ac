//! The latency table layouts of the h2load releases (`--output-format`) and h2load's text
//! histogram (`--histogram`).
//!
//! - h2load 1.52–1.68 (the default, [`OutputFormat::H2load152`]): `min max mean sd +/- sd`
//!   with rows `time for request:` …; h2lab appends its p50/p90/p99/p99.9 columns. Drawn by
//!   [`crate::text::latency_table`].
//! - h2load 1.69 ([`OutputFormat::H2load169`]) and 1.70 ([`OutputFormat::H2load170`]):
//!   `min max median p95 p99 mean sd +/- sd` with rows `request`, `connect`, `TTFB`, `req/s`,
//!   nothing appended. The two differ in their column gaps (1.69 printed median, p95 and p99
//!   one space apart) and in how the req/s row prints its numbers (1.69: C++ stream default,
//!   six significant digits; 1.70: two decimals).
//!
//! The formats are those of nghttp2's `src/h2load.cc` at tags v1.52.0, v1.69.0 and v1.70.0;
//! `crates/report/tests/data/h2load-*.fmt` keep them and `tests/layout.rs` checks the lines.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::model::RunResult;
use crate::units::{dtos, format_duration_ns};

/// Which h2load release's latency table to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// h2load 1.52–1.68 with h2lab's percentile columns appended (the default).
    #[default]
    H2load152,
    /// h2load 1.69.
    H2load169,
    /// h2load 1.70 and later.
    H2load170,
}

impl OutputFormat {
    /// The `--output-format` names, in the order of the variants.
    pub const NAMES: [&'static str; 3] = ["h2load-1.52", "h2load-1.69", "h2load-1.70"];

    /// Parses an `--output-format` name.
    pub fn parse(s: &str) -> Result<OutputFormat, String> {
        match s {
            "h2load-1.52" => Ok(OutputFormat::H2load152),
            "h2load-1.69" => Ok(OutputFormat::H2load169),
            "h2load-1.70" => Ok(OutputFormat::H2load170),
            _ => Err(format!(
                "unknown output format {s:?}; supported: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The note under the 1.69/1.70 tables of paced runs.
pub const CORRECTED_NOTE: &str = "latency: \"request\" is measured from each request's intended \
     start (corrected for coordinated omission); --json also has the times from the send";

/// h2load 1.69's table header.
pub const HEADER_169: &str =
    "                 min         max         median     p95        p99        mean         sd        +/- sd";
/// h2load 1.70's table header.
pub const HEADER_170: &str =
    "                 min         max         median      p95         p99         mean        sd         +/- sd";

/// The columns of one row of the 1.69/1.70 tables (also the keys of one statistic in
/// h2load's `--output-file` JSON and in the `quic` object of `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Median (h2load: the middle sample, or the mean of the two middle ones).
    pub median: f64,
    /// 95th percentile (h2load: sample at index ⌊0.95·n⌋ of the sorted samples).
    pub p95: f64,
    /// 99th percentile (h2load: sample at index ⌊0.99·n⌋).
    pub p99: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub sd: f64,
    /// Percentage of values within mean ± sd.
    pub within_sd: f64,
}

impl Stat {
    /// From a latency histogram (nanoseconds; values are bucket middles, 3 significant figures).
    pub fn from_histogram(h: &Histogram<u64>) -> Stat {
        let s = crate::stats::DistributionSummary::from_histogram(h);
        if s.count == 0 {
            return Stat::default();
        }
        let q = |q: f64| h.median_equivalent(h.value_at_quantile(q)) as f64;
        Stat {
            min: s.min,
            max: s.max,
            median: q(0.5),
            p95: q(0.95),
            p99: q(0.99),
            mean: s.mean,
            sd: s.sd,
            within_sd: s.within_sd,
        }
    }

    /// From raw samples, exactly as h2load computes it.
    pub fn from_samples(samples: &[f64]) -> Stat {
        let s = crate::stats::DistributionSummary::from_samples(samples);
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return Stat::default();
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let at = |q: f64| sorted[((n as f64 * q) as usize).min(n - 1)];
        Stat {
            min: s.min,
            max: s.max,
            median,
            p95: at(0.95),
            p99: at(0.99),
            mean: s.mean,
            sd: s.sd,
            within_sd: s.within_sd,
        }
    }
}

/// A C++ stream's default formatting of a double (`%g` with 6 significant digits), as h2load
/// 1.69 prints the req/s row.
pub fn stream_default(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            format!("{v}")
        };
    }
    let exp = v.abs().log10().floor() as i32;
    // Rounding can carry into the next power of ten (999999.5 -> 1e+06).
    let exp = if format!("{:.5e}", v.abs()).ends_with(&format!("e{}", exp + 1)) {
        exp + 1
    } else {
        exp
    };
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exp) {
        let m = format!("{v:.5e}");
        let (mant, e) = m.split_once('e').unwrap_or((&m, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant.to_string()), e.abs())
    } else {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        trim(format!("{v:.decimals$}"))
    }
}

/// Draws the latency table of `format` (1.69 or 1.70; the 1.52 table is
/// [`crate::text::latency_table`]), with the histogram under each row when `histogram` is set.
/// An HTTP/3 run's QUIC rows follow it ([`crate::text::summary_as`] adds them: the QUIC
/// module draws its rows with this one's helpers, so this one does not call it).
pub fn latency_table(r: &RunResult, format: OutputFormat, histogram: bool) -> String {
    let mut s = String::with_capacity(512);
    s.push_str(if format == OutputFormat::H2load169 {
        HEADER_169
    } else {
        HEADER_170
    });
    s.push('\n');
    let dur = |v: f64| format_duration_ns(v);
    // Paced runs: from each request's intended start, as h2lab's default table shows it.
    let request = if crate::model::is_paced(r) {
        &r.request_time_corrected
    } else {
        &r.request_time
    };
    let rows: [(&str, &Histogram<u64>); 3] = [
        ("request", request),
        ("connect", &r.connect_time),
        ("TTFB", &r.ttfb),
    ];
    for (title, h) in rows {
        row(&mut s, format, title, &Stat::from_histogram(h), &dur);
        if histogram {
            histogram_of(h, &mut s, &dur, false);
        }
    }
    let rps = Stat::from_samples(&r.client_rps);
    if format == OutputFormat::H2load169 {
        row(&mut s, format, "req/s", &rps, &stream_default);
    } else {
        row(&mut s, format, "req/s", &rps, &dtos);
    }
    if histogram {
        let quirk = format == OutputFormat::H2load169;
        let fmt: &dyn Fn(f64) -> String = if quirk { &stream_default } else { &dtos };
        plot_samples(&mut s, &r.client_rps, fmt, quirk);
    }
    s
}

/// One row: the title left-aligned in 12 columns, `: `, seven values right-aligned in 10
/// columns, the within-sd share right-aligned in 9 columns and `%`.
fn row(s: &mut String, format: OutputFormat, title: &str, st: &Stat, f: &dyn Fn(f64) -> String) {
    row_with(s, format, title, st, f, f);
}

/// `row` with `f` for min, max, median, p95 and p99 and `g` for mean and sd (h2load prints
/// the integer rows of QUIC so: integers, then doubles).
pub fn row_with(
    s: &mut String,
    format: OutputFormat,
    title: &str,
    st: &Stat,
    f: &dyn Fn(f64) -> String,
    g: &dyn Fn(f64) -> String,
) {
    let v = [
        f(st.min),
        f(st.max),
        f(st.median),
        f(st.p95),
        f(st.p99),
        g(st.mean),
        g(st.sd),
    ];
    // Gaps after min, max, median, p95, p99, mean.
    let gaps: [&str; 6] = if format == OutputFormat::H2load169 {
        ["  ", "  ", " ", " ", " ", "  "]
    } else {
        ["  "; 6]
    };
    let _ = write!(s, "{title:12}: ");
    for (i, value) in v.iter().enumerate() {
        let _ = write!(s, "{value:>10}{}", gaps.get(i).copied().unwrap_or(""));
    }
    let _ = writeln!(s, "{:>9}%", dtos(st.within_sd));
}

const BUCKETS: usize = 10;
const MAX_BAR: usize = 40;

/// Counts of `values` (each with a weight) in ten equal buckets from `min` to `max`.
fn bucket_counts(values: impl Iterator<Item = (f64, u64)>, min: f64, max: f64) -> [u64; BUCKETS] {
    let width = (max - min) / BUCKETS as f64;
    let mut counts = [0u64; BUCKETS];
    for (v, n) in values {
        let idx = (((v - min) / width) as usize).min(BUCKETS - 1);
        counts[idx] += n;
    }
    counts
}

/// h2load's histogram lines: ten buckets between the smallest and the largest value, each
/// `LOWER-UPPER [bar of up to 40 '/'](share/cumulative share%)`; nothing when all values
/// are equal or there are none. `quirk_169`: h2load 1.69 switched its stream to two fixed
/// decimals while drawing the first line, so the bounds of the other lines of a req/s
/// histogram print with two decimals.
fn plot(
    s: &mut String,
    counts: &[u64; BUCKETS],
    min: f64,
    max: f64,
    f: &dyn Fn(f64) -> String,
    quirk_169: bool,
) {
    let total: u64 = counts.iter().sum();
    let max_count = counts.iter().copied().max().unwrap_or(0);
    if total == 0 || max_count == 0 {
        return;
    }
    let width = (max - min) / BUCKETS as f64;
    let mut cum = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        let lower = min + i as f64 * width;
        let upper = min + (i + 1) as f64 * width;
        cum += c;
        let len = if c > 0 {
            usize::try_from(c.saturating_mul(MAX_BAR as u64) / max_count)
                .unwrap_or(MAX_BAR)
                .max(1)
        } else {
            0
        };
        let (lo, up) = if quirk_169 && i > 0 {
            (format!("{lower:.2}"), format!("{upper:.2}"))
        } else {
            (f(lower), f(upper))
        };
        let _ = writeln!(
            s,
            "{lo:>10}-{up:>10} [{:/<len$}{:pad$}]({:6.2}/{:6.2}%)",
            "",
            "",
            c as f64 * 100.0 / total as f64,
            cum as f64 * 100.0 / total as f64,
            pad = MAX_BAR - len,
        );
    }
}

/// The histogram of a latency histogram (values are bucket middles).
pub fn histogram_of(h: &Histogram<u64>, s: &mut String, f: &dyn Fn(f64) -> String, quirk: bool) {
    if h.is_empty() {
        return;
    }
    let mid = |v: u64| h.median_equivalent(v) as f64;
    let (min, max) = (mid(h.min()), mid(h.max()));
    if min >= max {
        return;
    }
    let counts = bucket_counts(
        h.iter_recorded()
            .map(|v| (mid(v.value_iterated_to()), v.count_at_value())),
        min,
        max,
    );
    plot(s, &counts, min, max, f, quirk);
}

/// The histogram of raw samples.
pub fn plot_samples(s: &mut String, samples: &[f64], f: &dyn Fn(f64) -> String, quirk: bool) {
    let finite = || samples.iter().copied().filter(|v| v.is_finite());
    let (Some(min), Some(max)) = (finite().reduce(f64::min), finite().reduce(f64::max)) else {
        return;
    };
    if min >= max {
        return;
    }
    let counts = bucket_counts(finite().map(|v| (v, 1)), min, max);
    plot(s, &counts, min, max, f, quirk);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_default_is_six_significant_digits() {
        assert_eq!(stream_default(33510.3125), "33510.3");
        assert_eq!(stream_default(100.0), "100");
        assert_eq!(stream_default(0.0), "0");
        assert_eq!(stream_default(1234567.0), "1.23457e+06");
        assert_eq!(stream_default(999999.7), "1e+06");
        assert_eq!(stream_default(0.5), "0.5");
        assert_eq!(stream_default(0.0000123), "1.23e-05");
        assert_eq!(stream_default(12.0 / 7.0), "1.71429");
    }

    #[test]
    fn samples_stat_like_h2load() {
        let st = Stat::from_samples(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(st.median, 2.5);
        assert_eq!(st.p95, 4.0); // index floor(3.8) = 3
        let st = Stat::from_samples(&(1..=100).map(f64::from).collect::<Vec<_>>());
        assert_eq!((st.median, st.p95, st.p99), (50.5, 96.0, 100.0));
        assert_eq!(Stat::from_samples(&[]), Stat::default());
    }

    #[test]
    fn histogram_lines_like_h2load() {
        let samples: Vec<f64> = (0..=100).map(f64::from).collect();
        let mut s = String::new();
        plot_samples(&mut s, &samples, &dtos, false);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 10);
        // 0..=9 in the first bucket (10 of 101), 100 counted in the last one (11).
        assert_eq!(
            lines[0],
            "      0.00-     10.00 [////////////////////////////////////    ](  9.90/  9.90%)"
        );
        assert_eq!(
            lines[9],
            "     90.00-    100.00 [////////////////////////////////////////]( 10.89/100.00%)"
        );
        // All values equal: no histogram.
        let mut s = String::new();
        plot_samples(&mut s, &[3.0, 3.0], &dtos, false);
        assert!(s.is_empty());
    }
}
