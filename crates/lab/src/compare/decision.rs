//! The decision table: per condition, which arm wins on throughput, on p99 latency and on
//! server cost (CPU per request), and how sure that is.
//!
//! Every decision compares two arms measured in the same rounds: the per-round ratio of
//! the metric (A over B), its median and 95% bootstrap CI ([`crate::stats::ci`]), and one
//! of three outcomes against the equivalence band: **win** (the CI lies outside the band:
//! the better arm is named), **parity** (inside the band), **undecided** (the CI overlaps
//! the band's edge: more rounds needed).
//!
//! - Per condition: the best arm by median against the runner-up, for each metric.
//! - HTTP/2 vs HTTP/1.1, like for like: `h2` against `h1-tls` (both TLS) and `h2c` against
//!   `h1` (both cleartext), whichever pairs were measured.
//! - HTTP/3 vs HTTP/2, like for like: `h3` against `h2` (both encrypted; QUIC over UDP
//!   against TLS over TCP), when both were measured.
//! - A/A controls: a protocol listed twice is measured as two arms; their decision is
//!   reported as a control and never names a winner.

use serde::Serialize;

use super::matrix::{arm_label, Condition, MatrixPlan, Section};
use super::run::{CellResult, RunSample};
use crate::fmt;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome};
use crate::stats::{plus_scale, Better};

/// What a decision compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Completed requests per second (higher is better).
    Throughput,
    /// 99th percentile request time (lower is better).
    P99,
    /// Built-in server CPU time per request (lower is better).
    ServerCost,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 3] = [Metric::Throughput, Metric::P99, Metric::ServerCost];

    /// Short unit name for tables (`req/s`, `p99`, `server CPU/req`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "req/s",
            Metric::P99 => "p99",
            Metric::ServerCost => "server CPU/req",
        }
    }

    /// Which direction is better.
    pub fn better(self) -> Better {
        match self {
            Metric::Throughput => Better::Higher,
            Metric::P99 | Metric::ServerCost => Better::Lower,
        }
    }

    /// The metric's value in one run.
    pub fn value(self, r: &RunSample) -> Option<f64> {
        match self {
            Metric::Throughput => Some(r.rps),
            Metric::P99 => Some(r.p99_ms),
            Metric::ServerCost => r.server_cpu_us,
        }
        .filter(|v| v.is_finite())
    }

    /// The cell's median of the metric.
    pub fn median(self, c: &CellResult) -> Option<f64> {
        match self {
            Metric::Throughput => c.rps.map(|s| s.median),
            Metric::P99 => c.p99_ms.map(|s| s.median),
            Metric::ServerCost => c.server_cpu_us.map(|s| s.median),
        }
    }
}

/// One arm of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Arm {
    /// The protocol.
    pub proto: LabProtocol,
    /// Which listing of it (0; 1 for the second arm of an A/A control).
    pub arm: u32,
}

impl Arm {
    /// `h2c`, `h2c#2`.
    pub fn label(self) -> String {
        arm_label(self.proto, self.arm)
    }
}

/// One decision between two arms on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The metric.
    pub metric: Metric,
    /// The arm in the numerator (the better median, or HTTP/2 in a pair).
    pub a: Arm,
    /// The arm in the denominator.
    pub b: Arm,
    /// Per-round ratio `a / b`: median and 95% bootstrap CI (`None` without paired rounds).
    pub ratio: Option<Estimate>,
    /// Win, parity or undecided.
    pub outcome: Outcome,
    /// The better arm when the outcome is a win; never set for an A/A control.
    pub winner: Option<Arm>,
    /// An A/A control: both arms are the same protocol.
    pub control: bool,
}

/// Decides `a` against `b` on `metric` from their runs, paired by round.
pub fn decide_pair(
    metric: Metric,
    a: (Arm, &CellResult),
    b: (Arm, &CellResult),
    equivalence: f64,
    what: &str,
) -> Decision {
    let rounds = a.1.rounds().max(b.1.rounds());
    let va = a.1.by_round(rounds, |r| metric.value(r));
    let vb = b.1.by_round(rounds, |r| metric.value(r));
    let mut rng = ci::Rng::new(ci::seed_for(&format!(
        "{what} {metric:?} {} {}",
        a.0.label(),
        b.0.label()
    )));
    let ratio = ci::paired_ratio(&va, &vb, &mut rng);
    let outcome = ratio.map_or(Outcome::Undecided, |r| ci::classify(&r, equivalence));
    let control = a.0.proto == b.0.proto;
    let winner = match (outcome, ratio, control) {
        (Outcome::Win, Some(r), false) => {
            let a_better = match metric.better() {
                Better::Higher => r.median > 1.0,
                Better::Lower => r.median < 1.0,
            };
            Some(if a_better { a.0 } else { b.0 })
        }
        _ => None,
    };
    Decision {
        metric,
        a: a.0,
        b: b.0,
        ratio,
        outcome,
        winner,
        control,
    }
}

/// HTTP/2 against HTTP/1.1 over the same transport at one condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairDecisions {
    /// `h2` or `h2c`.
    pub h2: LabProtocol,
    /// `h1-tls` or `h1`.
    pub h1: LabProtocol,
    /// One decision per metric (`a` is HTTP/2), in [`Metric::ALL`] order (metrics with no
    /// data are left out).
    pub decisions: Vec<Decision>,
}

/// The like-for-like pairs: HTTP/2 over TLS against HTTP/1.1 over TLS, h2c against
/// cleartext HTTP/1.1.
pub const PAIRS: [(LabProtocol, LabProtocol); 2] = [
    (LabProtocol::H2, LabProtocol::H1Tls),
    (LabProtocol::H2c, LabProtocol::H1),
];

/// HTTP/3 against HTTP/2 over TLS at one condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct H3Decisions {
    /// `h3`.
    pub h3: LabProtocol,
    /// `h2` (HTTP/2 over TLS: the like-for-like baseline, both encrypted).
    pub h2: LabProtocol,
    /// One decision per metric (`a` is HTTP/3), in [`Metric::ALL`] order (metrics with no
    /// data are left out).
    pub decisions: Vec<Decision>,
}

/// The like-for-like HTTP/3 pair: HTTP/3 against HTTP/2 over TLS.
pub const H3_PAIRS: [(LabProtocol, LabProtocol); 1] = [(LabProtocol::H3, LabProtocol::H2)];

/// One row of the decision table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRow {
    /// Which axis the condition varies.
    pub section: Section,
    /// The condition.
    pub condition: Condition,
    /// A short row label (`/ping`, `100k c=200`, `json over wan`).
    pub label: String,
    /// Best against runner-up, per metric ([`Metric::ALL`] order; metrics with fewer than
    /// two measured arms are left out).
    pub verdicts: Vec<Decision>,
    /// HTTP/2 vs HTTP/1.1, per like-for-like pair measured.
    pub h2_vs_h1: Vec<PairDecisions>,
    /// HTTP/3 vs HTTP/2 over TLS, when both were measured.
    pub h3_vs_h2: Vec<H3Decisions>,
    /// A/A controls (second arm against first), per metric.
    pub controls: Vec<Decision>,
}

impl DecisionRow {
    /// The verdict on `metric`, if any.
    pub fn verdict(&self, metric: Metric) -> Option<&Decision> {
        self.verdicts.iter().find(|d| d.metric == metric)
    }

    /// Every decision of the row (verdicts, pairs, controls).
    pub fn all(&self) -> impl Iterator<Item = &Decision> {
        self.verdicts
            .iter()
            .chain(self.h2_vs_h1.iter().flat_map(|p| p.decisions.iter()))
            .chain(self.h3_vs_h2.iter().flat_map(|p| p.decisions.iter()))
            .chain(self.controls.iter())
    }
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

/// Builds the decision rows of every condition with at least two measured arms.
pub fn decide_all(plan: &MatrixPlan, cells: &[CellResult], equivalence: f64) -> Vec<DecisionRow> {
    let mut rows = Vec::new();
    for pc in &plan.conditions {
        let arms: Vec<(Arm, &CellResult)> = pc
            .cells
            .iter()
            .filter_map(|&(p, i)| {
                let c = cells.get(i)?;
                (!c.runs.is_empty()).then_some((
                    Arm {
                        proto: p,
                        arm: c.key.arm,
                    },
                    c,
                ))
            })
            .collect();
        if arms.len() < 2 {
            continue;
        }
        let label = row_label(&pc.cond, pc.section);
        // Second arms are controls; they join the ranking only when nothing else is there.
        let firsts: Vec<(Arm, &CellResult)> =
            arms.iter().copied().filter(|(a, _)| a.arm == 0).collect();
        let ranked = if firsts.len() >= 2 {
            firsts.clone()
        } else {
            arms.clone()
        };
        let mut verdicts = Vec::new();
        for m in Metric::ALL {
            let mut v: Vec<(Arm, &CellResult, f64)> = ranked
                .iter()
                .filter_map(|&(a, c)| m.median(c).map(|x| (a, c, x)))
                .collect();
            if v.len() < 2 {
                continue;
            }
            v.sort_by(|x, y| match m.better() {
                Better::Higher => y.2.total_cmp(&x.2),
                Better::Lower => x.2.total_cmp(&y.2),
            });
            verdicts.push(decide_pair(
                m,
                (v[0].0, v[0].1),
                (v[1].0, v[1].1),
                equivalence,
                &label,
            ));
        }
        let find = |p: LabProtocol| firsts.iter().find(|(a, _)| a.proto == p).copied();
        let mut h2_vs_h1 = Vec::new();
        for (h2, h1) in PAIRS {
            if let (Some(a), Some(b)) = (find(h2), find(h1)) {
                let decisions = Metric::ALL
                    .into_iter()
                    .filter(|m| m.median(a.1).is_some() && m.median(b.1).is_some())
                    .map(|m| decide_pair(m, a, b, equivalence, &label))
                    .collect();
                h2_vs_h1.push(PairDecisions { h2, h1, decisions });
            }
        }
        let mut h3_vs_h2 = Vec::new();
        for (h3, h2) in H3_PAIRS {
            if let (Some(a), Some(b)) = (find(h3), find(h2)) {
                let decisions = Metric::ALL
                    .into_iter()
                    .filter(|m| m.median(a.1).is_some() && m.median(b.1).is_some())
                    .map(|m| decide_pair(m, a, b, equivalence, &label))
                    .collect();
                h3_vs_h2.push(H3Decisions { h3, h2, decisions });
            }
        }
        let mut controls = Vec::new();
        for &(a, c) in arms.iter().filter(|(a, _)| a.arm > 0) {
            if let Some(first) = find(a.proto) {
                for m in Metric::ALL {
                    if m.median(c).is_some() && m.median(first.1).is_some() {
                        controls.push(decide_pair(m, (a, c), first, equivalence, &label));
                    }
                }
            }
        }
        rows.push(DecisionRow {
            section: pc.section,
            condition: pc.cond.clone(),
            label,
            verdicts,
            h2_vs_h1,
            h3_vs_h2,
            controls,
        });
    }
    rows
}

/// `+18% (+12…+25%)`: the change `ratio - 1` with its CI.
pub fn ratio_text(r: &Estimate) -> String {
    format!(
        "{} ({}…{})",
        fmt::pct(r.median - 1.0),
        fmt::pct(r.lo - 1.0),
        fmt::pct(r.hi - 1.0)
    )
}

/// A verdict: `h2c ++ +18% (+12…+25%) vs http/1.1`, `≈ parity: h2c +1.2% (−1.5…+2.8%) vs
/// http/1.1`, `? undecided: …`; an A/A control never names a winner
/// (`A/A h2c#2 vs h2c: parity +0.4% (…)`).
pub fn verdict_text(d: &Decision) -> String {
    let Some(r) = &d.ratio else {
        return "? undecided (no paired rounds)".into();
    };
    let body = format!("{} {} vs {}", d.a.label(), ratio_text(r), d.b.label());
    if d.control {
        return format!("A/A {}: {body}", d.outcome.name());
    }
    match (d.outcome, d.winner) {
        (Outcome::Win, Some(w)) => {
            let margin = match d.metric.better() {
                Better::Higher => r.median - 1.0,
                Better::Lower => 1.0 / r.median - 1.0,
            }
            .abs();
            format!("{} {} ({body})", w.label(), plus_scale(margin))
        }
        (Outcome::Parity, _) => format!("≈ parity ({body})"),
        _ => format!("? undecided ({body})"),
    }
}

/// `+5.1% (+2.0…+8.3%) win` — a pair decision as a change of HTTP/2 against HTTP/1.1.
pub fn pair_text(d: &Decision) -> String {
    match &d.ratio {
        None => "-".into(),
        Some(r) => {
            let mark = match (d.outcome, d.winner) {
                (Outcome::Win, Some(w)) => format!("{} better", w.label()),
                (o, _) => o.name().to_owned(),
            };
            format!("{} {mark}", ratio_text(r))
        }
    }
}

/// The decision table as text, one block per section, then the HTTP/2-vs-HTTP/1.1 table
/// and the A/A controls; `rounds` is the most rounds any condition was measured in.
pub fn render(rows: &[DecisionRow], plan: &MatrixPlan, rounds: u32, equivalence: f64) -> String {
    let mut out = String::new();
    let b = &plan.base;
    out.push_str(&format!(
        "Decision table (up to {rounds} paired rounds; ratio of the better arm over the runner-up, \
         median of the per-round ratios with its 95% CI (bootstrap; the rounds' range below 9 \
         rounds); win: the CI lies outside ±{band}, parity: inside, undecided: across the edge; + <10%, ++ <30%, +++ <100%, \
         ++++ 2x or more)\n\
         base: c={} concurrent requests, {} stream(s)/connection, request headers: {}, \
         link: {}\n",
        b.concurrency,
        b.streams,
        b.headers,
        b.link,
        band = fmt::pct(equivalence).trim_start_matches('+'),
    ));
    let mut sections: Vec<Section> = rows.iter().map(|r| r.section).collect();
    sections.dedup();
    for s in sections {
        let mut t: Vec<Vec<String>> = vec![vec![
            "condition".into(),
            "throughput".into(),
            "p99 latency".into(),
            "server cost (CPU/req)".into(),
        ]];
        for r in rows.iter().filter(|r| r.section == s) {
            let mut row = vec![r.label.clone()];
            for m in Metric::ALL {
                row.push(r.verdict(m).map_or_else(|| "-".into(), verdict_text));
            }
            t.push(row);
        }
        out.push_str(&format!("\n{}\n", capitalize(s.title())));
        out.push_str(&fmt::table(&t));
    }
    out.push_str(&pair_table(
        rows,
        |r| {
            r.h2_vs_h1
                .iter()
                .map(|p| (p.h2, p.h1, &p.decisions[..]))
                .collect()
        },
        "HTTP/2 vs HTTP/1.1, like for like (HTTP/2 over HTTP/1.1: change and 95% CI)",
    ));
    out.push_str(&render_h3(rows));
    let controls: Vec<(&DecisionRow, &Decision)> = rows
        .iter()
        .flat_map(|r| r.controls.iter().map(move |d| (r, d)))
        .collect();
    if !controls.is_empty() {
        out.push_str("\nA/A controls (the same protocol measured as two arms: never a winner; a \"win\" here means the machine is noisier than the intervals say)\n");
        let mut t: Vec<Vec<String>> =
            vec![vec!["condition".into(), "metric".into(), "control".into()]];
        for (r, d) in controls {
            t.push(vec![
                r.label.clone(),
                d.metric.name().into(),
                verdict_text(d),
            ]);
        }
        out.push_str(&fmt::table(&t));
    }
    out
}

/// The HTTP/3-vs-HTTP/2 table (empty when no condition measured both).
pub fn render_h3(rows: &[DecisionRow]) -> String {
    pair_table(
        rows,
        |r| {
            r.h3_vs_h2
                .iter()
                .map(|p| (p.h3, p.h2, &p.decisions[..]))
                .collect()
        },
        "HTTP/3 vs HTTP/2, like for like (HTTP/3 over HTTP/2 with TLS: change and 95% CI)",
    )
}

/// One like-for-like table: a row per condition and pair (`new / old`), the paired change
/// and its CI per metric, under `title` (empty when no condition has a pair).
fn pair_table<'a>(
    rows: &'a [DecisionRow],
    pairs: impl Fn(&'a DecisionRow) -> Vec<(LabProtocol, LabProtocol, &'a [Decision])>,
    title: &str,
) -> String {
    let mut t: Vec<Vec<String>> = vec![vec![
        "condition".into(),
        "pair".into(),
        "req/s".into(),
        "p99".into(),
        "server CPU/req".into(),
    ]];
    for r in rows {
        for (new, old, decisions) in pairs(r) {
            let mut row = vec![
                r.label.clone(),
                format!("{} / {}", new.short(), old.short()),
            ];
            for m in Metric::ALL {
                row.push(
                    decisions
                        .iter()
                        .find(|d| d.metric == m)
                        .map_or_else(|| "-".into(), pair_text),
                );
            }
            t.push(row);
        }
    }
    if t.len() == 1 {
        return String::new();
    }
    format!("\n{title}\n{}", fmt::table(&t))
}

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

    fn d(
        a: LabProtocol,
        b: LabProtocol,
        metric: Metric,
        lo: f64,
        hi: f64,
        outcome: Outcome,
    ) -> Decision {
        let (a, b) = (
            Arm { proto: a, arm: 0 },
            Arm {
                proto: b,
                arm: u32::from(a == b),
            },
        );
        Decision {
            metric,
            a,
            b,
            ratio: Some(Estimate {
                median: (lo + hi) / 2.0,
                lo,
                hi,
                n: 8,
            }),
            outcome,
            winner: (outcome == Outcome::Win && a.proto != b.proto).then_some(a),
            control: a.proto == b.proto,
        }
    }

    #[test]
    fn texts() {
        let v = d(
            LabProtocol::H1,
            LabProtocol::H2c,
            Metric::Throughput,
            1.12,
            1.24,
            Outcome::Win,
        );
        assert_eq!(
            verdict_text(&v),
            "http/1.1 ++ (http/1.1 +18% (+12%…+24%) vs h2c)"
        );
        let v = d(
            LabProtocol::H2,
            LabProtocol::H1,
            Metric::P99,
            0.2,
            0.3,
            Outcome::Win,
        );
        assert_eq!(
            verdict_text(&v),
            "h2 ++++ (h2 -75% (-80%…-70%) vs http/1.1)"
        );
        let v = d(
            LabProtocol::H2c,
            LabProtocol::H1,
            Metric::P99,
            0.99,
            1.01,
            Outcome::Parity,
        );
        assert_eq!(
            verdict_text(&v),
            "≈ parity (h2c +0.0% (-1.0%…+1.0%) vs http/1.1)"
        );
        let v = d(
            LabProtocol::H2c,
            LabProtocol::H1,
            Metric::Throughput,
            0.8,
            1.2,
            Outcome::Undecided,
        );
        assert!(verdict_text(&v).starts_with("? undecided"));
        assert_eq!(pair_text(&v), "+0.0% (-20%…+20%) undecided");
    }

    #[test]
    fn an_a_a_control_never_names_a_winner() {
        let v = d(
            LabProtocol::H2c,
            LabProtocol::H2c,
            Metric::Throughput,
            1.05,
            1.10,
            Outcome::Win,
        );
        assert!(v.control && v.winner.is_none());
        let t = verdict_text(&v);
        assert!(t.starts_with("A/A win: h2c +7.5%"), "{t}");
        assert!(!t.contains("++"), "{t}");
    }

    /// A run of round `round` with `rps` req/s, `p99` ms and `cpu` µs of server CPU/req.
    fn run(round: u32, rps: f64, p99: f64, cpu: f64) -> RunSample {
        RunSample::synthetic(round, rps, p99, cpu)
    }

    #[test]
    fn h3_is_decided_against_h2_paired_by_round() {
        // Synthetic: 8 rounds drifting together (a busy machine); HTTP/3 does 80% of
        // HTTP/2's req/s and costs 2x its server CPU in every round, with the same p99.
        let mut cfg = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny);
        cfg.axes.protocols = vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3];
        cfg.axes.payloads = vec!["1k".parse().unwrap()];
        cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
        let plan = cfg.axes.plan();
        let mut cells: Vec<CellResult> = plan
            .cells
            .iter()
            .map(|k| CellResult::new(k.clone(), &cfg.timing))
            .collect();
        for c in &mut cells {
            for r in 0..8u32 {
                let drift = 1.0 + 0.1 * f64::from(r % 4);
                let (rps, cpu) = match c.key.proto {
                    LabProtocol::H3 => (8000.0 * drift, 20.0 * drift),
                    LabProtocol::H2 => (10000.0 * drift, 10.0 * drift),
                    _ => (9000.0 * drift, 12.0 * drift),
                };
                c.runs.push(run(r, rps, 5.0 * drift, cpu));
            }
            c.refresh();
        }
        let rows = decide_all(&plan, &cells, 0.03);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.h2_vs_h1.len(), 1, "h2 / h1-tls");
        assert_eq!(row.h3_vs_h2.len(), 1);
        let p = &row.h3_vs_h2[0];
        assert_eq!((p.h3, p.h2), (LabProtocol::H3, LabProtocol::H2));
        let by = |m: Metric| p.decisions.iter().find(|d| d.metric == m).unwrap();
        let t = by(Metric::Throughput);
        assert_eq!((t.a.proto, t.b.proto), (LabProtocol::H3, LabProtocol::H2));
        assert!((t.ratio.unwrap().median - 0.8).abs() < 1e-9);
        assert_eq!(t.outcome, Outcome::Win);
        assert_eq!(t.winner.map(|w| w.proto), Some(LabProtocol::H2));
        let c = by(Metric::ServerCost);
        assert!((c.ratio.unwrap().median - 2.0).abs() < 1e-9);
        assert_eq!(c.winner.map(|w| w.proto), Some(LabProtocol::H2));
        let l = by(Metric::P99);
        assert_eq!((l.outcome, l.winner), (Outcome::Parity, None));
        // Every decision of the row, the h3 ones included, is seen by the budget's rule.
        assert_eq!(row.all().count(), 3 + 3 + 3);
        let text = render(&rows, &plan, 8, 0.03);
        assert!(text.contains("HTTP/3 vs HTTP/2, like for like"), "{text}");
        assert!(text.contains("-20% (-20%…-20%) h2 better"), "{text}");
    }
}
