//! The decision table: per condition, which protocol wins on throughput and on p99 latency,
//! by how much, and whether the lead is larger than the run-to-run spread.

use serde::Serialize;

use super::matrix::{Condition, Plan, Section};
use super::run::CellResult;
use crate::fmt;
use crate::proto::Proto;
use crate::stats::{beats, decide, plus_scale, Better, Summary, Verdict};

/// HTTP/2 against HTTP/1.1 at one condition (the question the seed articles ask).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairDelta {
    /// The HTTP/2 variant (h2c when measured: same transport as HTTP/1.1).
    pub h2: Proto,
    /// The HTTP/1.1 variant.
    pub h1: Proto,
    /// `h2/h1 - 1` of the median throughputs.
    pub rps_change: f64,
    /// The throughput difference is larger than the spread.
    pub rps_significant: bool,
    /// `h2/h1 - 1` of the median p99 latencies (negative: HTTP/2 is faster).
    pub p99_change: f64,
    /// The p99 difference is larger than the spread.
    pub p99_significant: bool,
}

/// One row of the decision table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRow {
    /// Which axis the condition varies.
    pub section: Section,
    /// The condition.
    pub condition: Condition,
    /// A short row label (`/ping`, `100k c=200`, `json over wan`).
    pub label: String,
    /// Throughput verdict.
    pub throughput: Option<Verdict<Proto>>,
    /// p99 latency verdict.
    pub p99: Option<Verdict<Proto>>,
    /// HTTP/2 vs HTTP/1.1.
    pub h2_vs_h1: Option<PairDelta>,
}

/// A row label for `cond` in `section`.
pub fn row_label(cond: &Condition, section: Section) -> String {
    let p = cond.payload.label();
    match section {
        Section::Base => p,
        Section::Concurrency => format!("{p} c={}", cond.concurrency),
        Section::Headers => format!("{p} + {} headers", cond.headers),
        Section::Streams => format!("{p} {} streams/conn", cond.streams),
        Section::Link => format!("{p} over {}", cond.link),
        Section::Grid => cond.describe(),
    }
}

/// Builds the decision rows of every condition with at least two measured protocols.
pub fn decide_all(plan: &Plan, cells: &[CellResult]) -> Vec<DecisionRow> {
    let mut rows = Vec::new();
    for pc in &plan.conditions {
        let get = |f: fn(&CellResult) -> Option<Summary>| -> Vec<(Proto, Summary)> {
            pc.cells
                .iter()
                .filter_map(|&(p, i)| cells.get(i).and_then(f).map(|s| (p, s)))
                .collect()
        };
        let rps = get(|c| c.rps);
        let p99 = get(|c| c.p99_ms);
        if rps.len() < 2 && p99.len() < 2 {
            continue;
        }
        let find = |v: &[(Proto, Summary)], p: Proto| v.iter().find(|x| x.0 == p).map(|x| x.1);
        let h2 = [Proto::H2c, Proto::H2]
            .into_iter()
            .find(|&p| find(&rps, p).is_some());
        let h1 = [Proto::H1, Proto::H1Tls]
            .into_iter()
            .find(|&p| find(&rps, p).is_some());
        let h2_vs_h1 = match (h2, h1) {
            (Some(h2), Some(h1)) => match (find(&rps, h2), find(&rps, h1)) {
                (Some(a), Some(b)) => {
                    let (pa, pb) = (find(&p99, h2), find(&p99, h1));
                    Some(PairDelta {
                        h2,
                        h1,
                        rps_change: change(a.median, b.median),
                        rps_significant: beats(&a, &b),
                        p99_change: match (pa, pb) {
                            (Some(x), Some(y)) => change(x.median, y.median),
                            _ => f64::NAN,
                        },
                        p99_significant: match (pa, pb) {
                            (Some(x), Some(y)) => beats(&x, &y),
                            _ => false,
                        },
                    })
                }
                _ => None,
            },
            _ => None,
        };
        rows.push(DecisionRow {
            section: pc.section,
            condition: pc.cond.clone(),
            label: row_label(&pc.cond, pc.section),
            throughput: decide(&rps, Better::Higher),
            p99: decide(&p99, Better::Lower),
            h2_vs_h1,
        });
    }
    rows
}

fn change(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b - 1.0
    } else {
        f64::NAN
    }
}

/// `http/1.1 ++ (+18% vs h2c)` / `≈ parity (h2c +2%, within spread)`.
pub fn throughput_text(v: &Verdict<Proto>) -> String {
    if v.significant {
        format!(
            "{} {} ({} vs {})",
            v.winner.short(),
            plus_scale(v.margin),
            fmt::pct(v.margin),
            v.runner_up.short()
        )
    } else {
        format!(
            "≈ parity ({} {} vs {}, within spread)",
            v.winner.short(),
            fmt::pct(v.margin),
            v.runner_up.short()
        )
    }
}

/// `h2c +++ (-47% vs http/1.1)` / `h2 ++++ (4.3× lower than http/1.1)`.
pub fn latency_text(v: &Verdict<Proto>) -> String {
    let how = if v.margin >= 1.0 {
        format!(
            "{} lower than {}",
            fmt::ratio(1.0 + v.margin),
            v.runner_up.short()
        )
    } else {
        format!(
            "{} vs {}",
            fmt::pct(-v.margin / (1.0 + v.margin)),
            v.runner_up.short()
        )
    };
    if v.significant {
        format!("{} {} ({how})", v.winner.short(), plus_scale(v.margin))
    } else {
        format!("≈ parity ({} {how}, within spread)", v.winner.short())
    }
}

/// `-15% req/s, +9% p99` with `~` marking differences within the spread.
pub fn pair_text(d: &PairDelta) -> String {
    let mark = |sig: bool| if sig { "" } else { "~" };
    format!(
        "{}{} req/s, {}{} p99",
        mark(d.rps_significant),
        fmt::pct(d.rps_change),
        mark(d.p99_significant),
        fmt::pct(d.p99_change)
    )
}

/// The decision table as text, one block per section.
pub fn render(rows: &[DecisionRow], plan: &Plan, runs: u32) -> String {
    let mut out = String::new();
    let b = &plan.base;
    out.push_str(&format!(
        "Decision table (median of {runs} runs; a win needs a difference larger than the \
         min-max spread of both; + <10%, ++ <30%, +++ <100%, ++++ 2x or more)\n\
         base: c={} concurrent requests, {} stream(s)/connection, request headers: {}, \
         link: {}\n",
        b.concurrency, b.streams, b.headers, b.link
    ));
    let mut sections: Vec<Section> = rows.iter().map(|r| r.section).collect();
    sections.dedup();
    for s in sections {
        let mut t: Vec<Vec<String>> = vec![vec![
            "condition".into(),
            "throughput winner".into(),
            "p99 latency winner".into(),
            "HTTP/2 vs HTTP/1.1".into(),
        ]];
        for r in rows.iter().filter(|r| r.section == s) {
            t.push(vec![
                r.label.clone(),
                r.throughput
                    .as_ref()
                    .map_or_else(|| "-".into(), throughput_text),
                r.p99.as_ref().map_or_else(|| "-".into(), latency_text),
                r.h2_vs_h1.as_ref().map_or_else(
                    || "-".into(),
                    |d| format!("{} vs {}: {}", d.h2.short(), d.h1.short(), pair_text(d)),
                ),
            ]);
        }
        out.push_str(&format!("\n{}\n", capitalize(s.title())));
        out.push_str(&fmt::table(&t));
    }
    out.push_str(PAIR_NOTE);
    out.push('\n');
    out
}

/// What the `HTTP/2 vs HTTP/1.1` column means.
pub const PAIR_NOTE: &str = "HTTP/2 vs HTTP/1.1: change of the HTTP/2 median against the \
     HTTP/1.1 median (h2c against cleartext HTTP/1.1 when both ran); ~ marks a difference \
     within the run-to-run spread.";

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        let v = Verdict {
            winner: Proto::H1,
            runner_up: Proto::H2c,
            margin: 0.18,
            significant: true,
        };
        assert_eq!(throughput_text(&v), "http/1.1 ++ (+18% vs h2c)");
        let v = Verdict {
            winner: Proto::H2,
            runner_up: Proto::H1,
            margin: 3.3,
            significant: true,
        };
        assert_eq!(latency_text(&v), "h2 ++++ (4.30× lower than http/1.1)");
        let v = Verdict {
            winner: Proto::H2c,
            runner_up: Proto::H1,
            margin: 0.02,
            significant: false,
        };
        assert_eq!(
            latency_text(&v),
            "≈ parity (h2c -2.0% vs http/1.1, within spread)"
        );
    }
}
