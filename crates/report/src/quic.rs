//! The QUIC figures of HTTP/3 runs (`RunResult::quic`) as h2load 1.69+ reports them.
//!
//! From nghttp2's `src/h2load.cc` (tags v1.69.0 and v1.70.0): the `UDP datagram: N sent, M
//! received` line after `traffic:` (printed by every h2load with HTTP/3, 1.52 too), and six
//! rows under the 1.69/1.70 latency table:
//!
//! ```text
//! min RTT     :  (durations, one sample per client)
//! smoothed RTT:
//! packets sent:  (integers, one sample per client)
//! packets recv:
//! packets lost:
//! GRO packets :  (integers, one sample per receive call: datagrams it returned)
//! ```
//!
//! h2load's `compute_time_stat` for these: median the middle sample (for an even count the
//! mean of the two middle ones, in integer arithmetic for the integer rows), p95/p99 the
//! sorted sample at ⌊0.95·n⌋/⌊0.99·n⌋, the population standard deviation (h2load divides by
//! n unless its client reservoir overflowed). Integer rows print min, max, median, p95 and
//! p99 as integers and mean and sd as doubles (1.70: two decimals; 1.69: the C++ stream
//! default). The 1.52 layout has no such rows; h2lab adds one summary line under its table.

use std::fmt::Write as _;

use h2lab_engine::QuicStats;

use crate::layout::{plot_samples, row_with, stream_default, OutputFormat, Stat};
use crate::units::{dtos, format_duration_ns};

/// Statistics of values given in ascending order as `(value, count)` runs; `int`: the median
/// of an even count is rounded down like h2load's integer division.
fn stat_of_runs(runs: &[(f64, u64)], int: bool) -> Stat {
    let n: u64 = runs.iter().map(|r| r.1).sum();
    if n == 0 {
        return Stat::default();
    }
    let nf = n as f64;
    let mean = runs.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / nf;
    let var = runs
        .iter()
        .map(|(v, c)| (v - mean) * (v - mean) * *c as f64)
        .sum::<f64>()
        / nf;
    let sd = var.sqrt();
    let within: u64 = runs
        .iter()
        .filter(|(v, _)| mean - sd <= *v && *v <= mean + sd)
        .map(|r| r.1)
        .sum();
    // The sample at sorted index `i`.
    let at = |i: u64| {
        let mut seen = 0;
        for (v, c) in runs {
            seen += c;
            if i < seen {
                return *v;
            }
        }
        runs.last().map_or(0.0, |r| r.0)
    };
    let median = if n % 2 == 1 {
        at(n / 2)
    } else {
        let m = (at(n / 2 - 1) + at(n / 2)) / 2.0;
        if int {
            m.floor()
        } else {
            m
        }
    };
    Stat {
        min: runs.first().map_or(0.0, |r| r.0),
        max: runs.last().map_or(0.0, |r| r.0),
        median,
        p95: at((nf * 0.95) as u64),
        p99: at((nf * 0.99) as u64),
        mean,
        sd,
        within_sd: within as f64 * 100.0 / nf,
    }
}

/// Sorted samples as runs of equal values.
fn runs_of(mut v: Vec<f64>) -> Vec<(f64, u64)> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let mut runs: Vec<(f64, u64)> = Vec::new();
    for x in v {
        match runs.last_mut() {
            Some(r) if r.0 == x => r.1 += 1,
            _ => runs.push((x, 1)),
        }
    }
    runs
}

/// A per-client duration row (seconds) as h2load computes it.
pub fn time_stat(seconds: &[f64]) -> Stat {
    stat_of_runs(&runs_of(seconds.to_vec()), false)
}

/// A per-client integer row (packets) as h2load computes it.
pub fn int_stat(values: &[u64]) -> Stat {
    stat_of_runs(&runs_of(values.iter().map(|v| *v as f64).collect()), true)
}

/// The GRO row from the counts (`counts[k]` receive calls returned `k` datagrams).
pub fn gro_stat(counts: &[u64]) -> Stat {
    let runs: Vec<(f64, u64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(k, c)| (k as f64, *c))
        .collect();
    stat_of_runs(&runs, true)
}

/// The GRO samples, sorted, as h2load's `samples` array (at most `max` of them: a larger
/// set is thinned evenly, keeping its shape).
pub fn gro_samples(counts: &[u64], max: u64) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    let mut out = Vec::new();
    if total == 0 {
        return out;
    }
    let keep = total.min(max);
    // Sample i of the kept ones is sorted sample ⌊i·total/keep⌋ of the full set.
    let mut k = 0usize;
    let mut seen = counts.first().copied().unwrap_or(0);
    for i in 0..keep {
        let idx =
            u64::try_from(u128::from(i) * u128::from(total) / u128::from(keep)).unwrap_or(u64::MAX);
        while idx >= seen && k + 1 < counts.len() {
            k += 1;
            seen += counts.get(k).copied().unwrap_or(0);
        }
        out.push(k as f64);
    }
    out
}

/// `UDP datagram: N sent, M received` (every h2load with HTTP/3 prints it after `traffic:`).
pub fn datagram_line(q: &QuicStats) -> String {
    format!(
        "UDP datagram: {} sent, {} received\n",
        q.datagrams_sent, q.datagrams_recv
    )
}

/// The six QUIC rows under the 1.69/1.70 latency table, each with h2load's histogram under
/// it when `histogram` is set (bounds as doubles: durations for the RTT rows, plain numbers
/// for the others).
pub fn rows(q: &QuicStats, format: OutputFormat, histogram: bool) -> String {
    let mut s = String::new();
    let dur = |v: f64| format_duration_ns(v * 1e9);
    let int = |v: f64| format!("{}", v as u64);
    let quirk = format == OutputFormat::H2load169;
    let real: &dyn Fn(f64) -> String = if quirk { &stream_default } else { &dtos };
    for (title, v) in [("min RTT", &q.min_rtt), ("smoothed RTT", &q.smoothed_rtt)] {
        row_with(&mut s, format, title, &time_stat(v), &dur, &dur);
        if histogram {
            plot_samples(&mut s, &sorted(v.clone()), &dur, false);
        }
    }
    let gro = gro_samples(&q.gro_counts, MAX_SAMPLES);
    for (title, st, samples) in [
        (
            "packets sent",
            int_stat(&q.packets_sent),
            as_f64(&q.packets_sent),
        ),
        (
            "packets recv",
            int_stat(&q.packets_recv),
            as_f64(&q.packets_recv),
        ),
        (
            "packets lost",
            int_stat(&q.packets_lost),
            as_f64(&q.packets_lost),
        ),
        ("GRO packets", gro_stat(&q.gro_counts), gro),
    ] {
        row_with(&mut s, format, title, &st, &int, real);
        if histogram {
            plot_samples(&mut s, &samples, real, quirk);
        }
    }
    s
}

/// h2load keeps at most this many samples of a statistic.
pub const MAX_SAMPLES: u64 = 1_000_000;

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// Integer samples as sorted doubles (h2load's `samples` arrays are sorted).
pub fn as_f64(v: &[u64]) -> Vec<f64> {
    sorted(v.iter().map(|x| *x as f64).collect())
}

/// h2lab's one-line QUIC summary under the 1.52 table (h2load 1.52 has no QUIC rows).
pub fn summary_line(q: &QuicStats) -> String {
    let mut s = String::new();
    let sum = |v: &[u64]| v.iter().sum::<u64>();
    let _ = writeln!(
        s,
        "QUIC: min RTT {} (median of clients), smoothed RTT {}, packets {} sent, {} received, \
         {} lost; {} datagrams per receive call (mean)",
        format_duration_ns(time_stat(&q.min_rtt).median * 1e9),
        format_duration_ns(time_stat(&q.smoothed_rtt).median * 1e9),
        sum(&q.packets_sent),
        sum(&q.packets_recv),
        sum(&q.packets_lost),
        dtos(gro_stat(&q.gro_counts).mean),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_rows_like_h2load() {
        // Even count: integer mean of the two middle samples; population sd.
        let st = int_stat(&[4, 1, 3, 2]);
        assert_eq!((st.min, st.max, st.median, st.p95), (1.0, 4.0, 2.0, 4.0));
        assert_eq!(st.mean, 2.5);
        assert!((st.sd - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(st.within_sd, 50.0);
        assert_eq!(int_stat(&[]), Stat::default());
        let t = time_stat(&[0.002, 0.001]);
        assert_eq!(t.median, 0.0015);
    }

    #[test]
    fn gro_from_counts_equals_gro_from_samples() {
        let counts = [0, 5, 0, 2, 1];
        let samples = [1, 1, 1, 1, 1, 3, 3, 4];
        assert_eq!(gro_stat(&counts), int_stat(&samples));
        assert_eq!(
            gro_samples(&counts, 100),
            samples.iter().map(|v| *v as f64).collect::<Vec<_>>()
        );
        let thin = gro_samples(&counts, 4);
        assert_eq!(thin, vec![1.0, 1.0, 1.0, 3.0]);
        assert!(gro_samples(&[], 10).is_empty());
    }
}
