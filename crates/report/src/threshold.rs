//! `--threshold`: pass/fail criteria on a run, for CI gates (any failure → exit status 99).
//!
//! Syntax: `METRIC OP VALUE`, with `OP` one of `<`, `<=`, `>`, `>=`:
//!
//! | metric                                   | value                         | meaning |
//! |------------------------------------------|-------------------------------|---------|
//! | `p99`, `p99.9`, `p50`, `median`, `mean`, `min`, `max` | duration: `50ms`, `250us`, `1s` (ms when no unit) | request latency; paced runs: from the intended start (corrected) |
//! | `uncorrected.p99` (also `send.`)         | duration                      | request latency from the send |
//! | `ttfb.p99`, `connect.mean`, …            | duration                      | time to first byte, connect time |
//! | `request.p99` (also `req.`)              | duration                      | same as `p99` |
//! | `errors`                                 | `0.1%` (rate) or `10` (count) | failed requests (not 2xx/3xx, or no response) over all requests |
//! | `rps`                                    | number                        | completed requests per second (the `finished in` line) |
//! | `not_sent` (also `dropped`)              | `1%` or count                 | open model: requests not sent on time, over those scheduled |
//!
//! A latency threshold on a distribution with no samples fails (there is nothing to vouch for).

use std::fmt;

use h2lab_engine::syntax::{parse_nanos_f64, BareNumber};
use hdrhistogram::Histogram;

use crate::model::{is_paced, RunResult};
use crate::stats::requests_per_second;
use crate::units::format_duration_ns;

/// Exit status of `h2lab bench` when a threshold fails.
pub const EXIT_THRESHOLD_FAILED: u8 = 99;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
        }
    }
}

/// Which latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dist {
    /// Corrected for paced runs, from the send otherwise.
    Request,
    Uncorrected,
    Ttfb,
    Connect,
}

/// Which statistic of a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stat {
    Min,
    Max,
    Mean,
    Quantile(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    Latency(Dist, Stat),
    ErrorRate,
    Errors,
    Rps,
    NotSentRate,
    NotSent,
}

/// One parsed `--threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    expr: String,
    metric: Metric,
    op: Op,
    /// Nanoseconds for latencies, a fraction for rates, a plain number otherwise.
    limit: f64,
}

/// A threshold's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The threshold as given.
    pub expression: String,
    /// Whether it held.
    pub passed: bool,
    /// The measured value (ns for latencies, a fraction for rates), `None` when there was
    /// nothing to measure.
    pub value: Option<f64>,
    /// The measured value for humans (`p99 = 1.23ms`, `errors = 0.52%`, or why it failed).
    pub display: String,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// `(fraction, true)` for `0.1%`, `(count, false)` for `10`.
fn parse_rate_or_count(v: &str) -> Option<(f64, bool)> {
    let v = v.trim();
    let (num, pct) = match v.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (v, false),
    };
    let n: f64 = num.parse().ok()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    Some(if pct { (n / 100.0, true) } else { (n, false) })
}

fn parse_stat(s: &str) -> Option<Stat> {
    Some(match s {
        "min" => Stat::Min,
        "max" => Stat::Max,
        "mean" | "avg" => Stat::Mean,
        "median" | "med" => Stat::Quantile(0.5),
        _ => {
            let p: f64 = s.strip_prefix('p')?.parse().ok()?;
            if !(p > 0.0 && p <= 100.0) {
                return None;
            }
            Stat::Quantile(p / 100.0)
        }
    })
}

impl Threshold {
    /// Parses `p99<50ms`, `errors<0.1%`, `rps>10000`, ... (see the module docs).
    pub fn parse(s: &str) -> Result<Threshold, String> {
        let bad = |why: &str| format!("invalid threshold {s:?}: {why}");
        let pos = s
            .find(['<', '>'])
            .ok_or_else(|| bad("expected METRIC<VALUE or METRIC>VALUE, e.g. p99<50ms"))?;
        let (lhs, rest) = s.split_at(pos);
        let (op, rhs) = match rest.as_bytes() {
            [b'<', b'=', ..] => (Op::Le, &rest[2..]),
            [b'>', b'=', ..] => (Op::Ge, &rest[2..]),
            [b'<', ..] => (Op::Lt, &rest[1..]),
            _ => (Op::Gt, &rest[1..]),
        };
        let name = lhs.trim().to_ascii_lowercase();
        let rhs = rhs.trim();
        if rhs.is_empty() {
            return Err(bad("missing value"));
        }
        let (metric, limit) = match name.as_str() {
            "errors" | "error_rate" | "failed" => {
                let (v, pct) = parse_rate_or_count(rhs)
                    .ok_or_else(|| bad("expected a percentage like 0.1% or a count"))?;
                (
                    if pct {
                        Metric::ErrorRate
                    } else {
                        Metric::Errors
                    },
                    v,
                )
            }
            "not_sent" | "dropped" => {
                let (v, pct) = parse_rate_or_count(rhs)
                    .ok_or_else(|| bad("expected a percentage like 1% or a count"))?;
                (
                    if pct {
                        Metric::NotSentRate
                    } else {
                        Metric::NotSent
                    },
                    v,
                )
            }
            "rps" | "req/s" => {
                let v: f64 = rhs
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| bad("expected a number of requests per second"))?;
                (Metric::Rps, v)
            }
            _ => {
                let (dist, stat) = match name.split_once('.') {
                    Some((d, st)) if parse_stat(st).is_some() => {
                        let dist = match d {
                            "request" | "req" => Dist::Request,
                            "uncorrected" | "send" => Dist::Uncorrected,
                            "ttfb" => Dist::Ttfb,
                            "connect" => Dist::Connect,
                            _ => {
                                return Err(bad(
                                    "unknown metric (request., uncorrected., ttfb., connect.)",
                                ))
                            }
                        };
                        (dist, st)
                    }
                    _ => (Dist::Request, name.as_str()),
                };
                let stat = parse_stat(stat).ok_or_else(|| {
                    bad("unknown metric (p99, p99.9, median, mean, min, max, errors, rps, not_sent)")
                })?;
                let ns = parse_nanos_f64(rhs, BareNumber::Millis)
                    .map_err(|_| bad("expected a duration like 50ms, 250us or 1s"))?;
                (Metric::Latency(dist, stat), ns)
            }
        };
        Ok(Threshold {
            expr: s.trim().to_string(),
            metric,
            op,
            limit,
        })
    }

    /// Checks the threshold against a run.
    pub fn evaluate(&self, r: &RunResult) -> Outcome {
        let name = self
            .expr
            .split(['<', '>'])
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let (value, display) = match self.metric {
            Metric::Latency(dist, stat) => {
                let h = match dist {
                    Dist::Request if is_paced(r) => &r.request_time_corrected,
                    Dist::Request | Dist::Uncorrected => &r.request_time,
                    Dist::Ttfb => &r.ttfb,
                    Dist::Connect => &r.connect_time,
                };
                match stat_of(h, stat) {
                    Some(v) => (Some(v), format!("{name} = {}", format_duration_ns(v))),
                    None => (None, format!("{name}: no samples")),
                }
            }
            Metric::ErrorRate | Metric::Errors => {
                let q = &r.requests;
                if self.metric == Metric::Errors {
                    let v = q.failed as f64;
                    (Some(v), format!("{name} = {}", q.failed))
                } else if q.total == 0 {
                    (None, format!("{name}: no requests"))
                } else {
                    let v = q.failed as f64 / q.total as f64;
                    (Some(v), format!("{name} = {:.3}%", v * 100.0))
                }
            }
            Metric::Rps => {
                let v = requests_per_second(r);
                (Some(v), format!("{name} = {v:.2}"))
            }
            Metric::NotSent | Metric::NotSentRate => match &r.pacing {
                None => (None, format!("{name}: not an open-model run")),
                Some(p) if self.metric == Metric::NotSent => (
                    Some(p.not_sent() as f64),
                    format!("{name} = {}", p.not_sent()),
                ),
                Some(p) if p.scheduled == 0 => (None, format!("{name}: nothing scheduled")),
                Some(p) => {
                    let v = p.not_sent() as f64 / p.scheduled as f64;
                    (Some(v), format!("{name} = {:.3}%", v * 100.0))
                }
            },
        };
        Outcome {
            expression: self.expr.clone(),
            passed: value.is_some_and(|v| self.op.holds(v, self.limit)),
            value,
            display,
        }
    }
}

fn stat_of(h: &Histogram<u64>, stat: Stat) -> Option<f64> {
    if h.is_empty() {
        return None;
    }
    let mid = |v: u64| h.median_equivalent(v) as f64;
    Some(match stat {
        Stat::Min => mid(h.min()),
        Stat::Max => mid(h.max()),
        Stat::Mean => h.mean(),
        Stat::Quantile(q) => mid(h.value_at_quantile(q)),
    })
}

/// Evaluates every threshold.
pub fn evaluate(thresholds: &[Threshold], r: &RunResult) -> Vec<Outcome> {
    thresholds.iter().map(|t| t.evaluate(r)).collect()
}

/// The report's threshold lines (empty without thresholds).
pub fn lines(outcomes: &[Outcome]) -> String {
    if outcomes.is_empty() {
        return String::new();
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let mut s = format!(
        "thresholds: {} passed, {failed} failed\n",
        outcomes.len() - failed
    );
    for o in outcomes {
        let verdict = if o.passed { "passed" } else { "FAILED" };
        s.push_str(&format!("  {verdict}  {}  ({})\n", o.expression, o.display));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{empty_result, PacingCounts, RequestCounts};
    use std::time::Duration;

    fn run() -> RunResult {
        let mut r = RunResult {
            elapsed: Duration::from_secs(2),
            requests: RequestCounts {
                total: 1000,
                done: 1000,
                succeeded: 995,
                failed: 5,
                completed: 1000,
                ..Default::default()
            },
            ..empty_result()
        };
        for v in 1..=100u64 {
            r.request_time.record(v * 1_000_000).unwrap();
        }
        r.connect_time.record(300_000).unwrap();
        r
    }

    fn check(expr: &str, r: &RunResult) -> bool {
        Threshold::parse(expr).unwrap().evaluate(r).passed
    }

    #[test]
    fn latency_thresholds() {
        let r = run();
        assert!(check("p99<100ms", &r));
        assert!(!check("p99<98.9ms", &r));
        assert!(check("p99 <= 99ms", &r));
        assert!(check("median>=49.9ms", &r));
        assert!(check("mean<51", &r), "ms when no unit");
        assert!(check("max<=0.1s", &r));
        assert!(check("p99.9<100100us", &r));
        assert!(check("connect.p50<1ms", &r));
        assert!(!check("ttfb.p50<1s", &r), "no samples fails");
        let o = Threshold::parse("ttfb.p50<1s").unwrap().evaluate(&r);
        assert_eq!(o.value, None);
        assert!(o.display.contains("no samples"));
        // Paced runs: `p99` is the corrected distribution, `uncorrected.p99` the other one.
        let mut paced = run();
        paced.request_time_corrected.record(900_000_000).unwrap();
        assert!(!check("p99<500ms", &paced));
        assert!(check("uncorrected.p99<500ms", &paced));
        assert!(check("send.max<=100ms", &paced));
    }

    #[test]
    fn rate_and_throughput_thresholds() {
        let r = run();
        assert!(check("errors<1%", &r));
        assert!(!check("errors<0.1%", &r));
        assert!(check("errors<=5", &r));
        assert!(!check("errors<5", &r));
        assert!(check("rps>499", &r));
        assert!(!check("rps>500", &r));
        let o = Threshold::parse("errors<0.1%").unwrap().evaluate(&r);
        assert_eq!(o.display, "errors = 0.500%");
        assert!(!check("not_sent<1%", &r), "not an open-model run");
        let mut open = run();
        open.pacing = Some(PacingCounts {
            scheduled: 1000,
            dropped: 3,
            unsent: 2,
            ..Default::default()
        });
        assert!(check("not_sent<1%", &open));
        assert!(!check("dropped<5", &open));
    }

    #[test]
    fn parse_errors_are_one_line() {
        for bad in [
            "p99",
            "p99<",
            "p101<1ms",
            "foo<1ms",
            "p99<1xs",
            "errors<x%",
            "rps>-1",
            "x.p99<1ms",
        ] {
            let e = Threshold::parse(bad).unwrap_err();
            assert!(e.starts_with("invalid threshold"), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn report_lines() {
        let r = run();
        let ts: Vec<Threshold> = ["p99<100ms", "errors<0.1%"]
            .iter()
            .map(|s| Threshold::parse(s).unwrap())
            .collect();
        let text = lines(&evaluate(&ts, &r));
        assert_eq!(
            text,
            "thresholds: 1 passed, 1 failed\n  passed  p99<100ms  (p99 = 98.99ms)\n  FAILED  errors<0.1%  (errors = 0.500%)\n"
        );
        assert_eq!(lines(&[]), "");
    }
}
