//! The decision table: per condition, which arm wins on throughput, on p99 latency and on
//! server cost (CPU per request), and how sure that is.
//!
//! Every decision compares two arms measured in the same rounds: the per-round ratio of
//! the metric (A over B), its median and 95% bootstrap CI ([`crate::stats::ci`]), and one
//! of four outcomes against the metric's equivalence band ([`Bands`]): **win** (the CI
//! lies outside the band: the better arm is named), **slight** (the CI leaves 1.0 out but
//! crosses the band's edge: the direction is known, the size small), **parity** (inside
//! the band), **undecided** (the CI contains 1.0 and reaches outside the band: more rounds
//! needed, roughly [`Decision::more_rounds`]).
//!
//! - Per condition: the best arm by median against the runner-up, for each metric.
//! - Like for like: the rows of [`PAIRS`] (HTTP/2 against HTTP/1.1 over the same
//!   transport, HTTP/3 against HTTP/2 over TLS), whichever were measured; adding a pair is
//!   one line there.
//! - A/A controls: a protocol listed twice is measured as two arms; their comparison is
//!   reported as a control and never names a winner.
//!
//! The terminal text of the decisions is in [`super::verdicts`], their HTML in
//! [`crate::html`].

use serde::Serialize;

use super::matrix::{arm_label, Condition, MatrixPlan, Section};
use super::run::{CellResult, RunSample};
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome};
use crate::stats::Better;

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

/// The equivalence band of each metric: ratios within `1 ± band` are "the same".
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bands {
    /// Throughput (req/s) band.
    pub throughput: f64,
    /// p99 latency band: wider, because the tail of a short window spreads 10–20% between
    /// two identical arms (A/A controls of the default run), while the tail effects the lab
    /// looks for are 27–52%.
    pub p99: f64,
    /// Server CPU per request band.
    pub server_cost: f64,
}

impl Default for Bands {
    fn default() -> Self {
        Bands {
            throughput: ci::DEFAULT_EQUIVALENCE,
            p99: DEFAULT_P99_BAND,
            server_cost: ci::DEFAULT_EQUIVALENCE,
        }
    }
}

/// The default p99 band: ±10% (see [`Bands::p99`]).
pub const DEFAULT_P99_BAND: f64 = 0.10;

impl Bands {
    /// The same band for every metric.
    pub fn uniform(band: f64) -> Bands {
        Bands {
            throughput: band,
            p99: band,
            server_cost: band,
        }
    }

    /// The band of `metric`.
    pub fn of(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Throughput => self.throughput,
            Metric::P99 => self.p99,
            Metric::ServerCost => self.server_cost,
        }
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
    /// The equivalence band the outcome was judged against (`1 ± band`).
    pub band: f64,
    /// Win, slight, parity or undecided.
    pub outcome: Outcome,
    /// The better arm when the outcome is a win; never set for an A/A control.
    pub winner: Option<Arm>,
    /// The better arm when the direction is known (a win or a slight difference); never
    /// set for an A/A control.
    pub better: Option<Arm>,
    /// Roughly how many more paired rounds would decide an undecided decision
    /// ([`ci::rounds_to_decide`]).
    pub more_rounds: Option<usize>,
    /// An A/A control: both arms are the same protocol.
    pub control: bool,
}

/// Decides `a` against `b` on `metric` from their runs, paired by round, against `band`.
pub fn decide_pair(
    metric: Metric,
    a: (Arm, &CellResult),
    b: (Arm, &CellResult),
    band: f64,
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
    decision_of(metric, a.0, b.0, ratio, band)
}

/// The decision of `a` against `b` on `metric` from their per-round ratio `a / b`.
pub fn decision_of(metric: Metric, a: Arm, b: Arm, ratio: Option<Estimate>, band: f64) -> Decision {
    let outcome = ratio.map_or(Outcome::Undecided, |r| ci::classify(&r, band));
    let control = a.proto == b.proto;
    let better = match (outcome.directional(), ratio, control) {
        (true, Some(r), false) => {
            let a_better = match metric.better() {
                Better::Higher => r.median > 1.0,
                Better::Lower => r.median < 1.0,
            };
            Some(if a_better { a } else { b })
        }
        _ => None,
    };
    Decision {
        metric,
        a,
        b,
        ratio,
        band,
        outcome,
        winner: better.filter(|_| outcome == Outcome::Win),
        better,
        more_rounds: match ratio {
            Some(r) => ci::rounds_to_decide(&r, band),
            None => Some(ci::MIN_ROUNDS),
        },
        control,
    }
}

pub use crate::kernel::pairs::{families, Pair, CONTROL, H2_VS_H1, H3_VS_H2, PAIRS};

/// One comparison of two arms at one condition: a like-for-like pair or an A/A control.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Its family ([`Pair::family`], or [`CONTROL`]).
    pub family: &'static str,
    /// The numerator arm.
    pub a: Arm,
    /// The denominator arm.
    pub b: Arm,
    /// An A/A control (never a winner).
    pub control: bool,
    /// One decision per metric (`a` over `b`), in [`Metric::ALL`] order (metrics with no
    /// data are left out).
    pub decisions: Vec<Decision>,
}

impl Comparison {
    /// The decision on `metric`, if any.
    pub fn decision(&self, metric: Metric) -> Option<&Decision> {
        self.decisions.iter().find(|d| d.metric == metric)
    }
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
    /// Best against runner-up, per metric ([`Metric::ALL`] order; metrics with fewer than
    /// two measured arms are left out).
    pub verdicts: Vec<Decision>,
    /// The like-for-like pairs measured and the A/A controls, in [`PAIRS`] order, controls
    /// last.
    pub comparisons: Vec<Comparison>,
}

impl DecisionRow {
    /// The verdict on `metric`, if any.
    pub fn verdict(&self, metric: Metric) -> Option<&Decision> {
        self.verdicts.iter().find(|d| d.metric == metric)
    }

    /// The comparisons of `family`.
    pub fn family<'a>(&'a self, family: &'a str) -> impl Iterator<Item = &'a Comparison> + 'a {
        self.comparisons.iter().filter(move |c| c.family == family)
    }

    /// Every decision of the row (verdicts, pairs, controls).
    pub fn all(&self) -> impl Iterator<Item = &Decision> {
        self.verdicts
            .iter()
            .chain(self.comparisons.iter().flat_map(|p| p.decisions.iter()))
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

/// The decisions of `a` against `b` on every metric both have data for.
fn compare_arms(
    a: (Arm, &CellResult),
    b: (Arm, &CellResult),
    bands: &Bands,
    label: &str,
) -> Vec<Decision> {
    Metric::ALL
        .into_iter()
        .filter(|m| m.median(a.1).is_some() && m.median(b.1).is_some())
        .map(|m| decide_pair(m, a, b, bands.of(m), label))
        .collect()
}

/// Builds the decision rows of every condition with at least two measured arms.
pub fn decide_all(plan: &MatrixPlan, cells: &[CellResult], bands: &Bands) -> Vec<DecisionRow> {
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
                bands.of(m),
                &label,
            ));
        }
        let find = |p: LabProtocol| firsts.iter().find(|(a, _)| a.proto == p).copied();
        let mut comparisons = Vec::new();
        for pair in PAIRS {
            if let (Some(a), Some(b)) = (find(pair.a), find(pair.b)) {
                comparisons.push(Comparison {
                    family: pair.family,
                    a: a.0,
                    b: b.0,
                    control: false,
                    decisions: compare_arms(a, b, bands, &label),
                });
            }
        }
        for &(a, c) in arms.iter().filter(|(a, _)| a.arm > 0) {
            if let Some(first) = find(a.proto) {
                comparisons.push(Comparison {
                    family: CONTROL,
                    a,
                    b: first.0,
                    control: true,
                    decisions: compare_arms((a, c), first, bands, &label),
                });
            }
        }
        rows.push(DecisionRow {
            section: pc.section,
            condition: pc.cond.clone(),
            label,
            verdicts,
            comparisons,
        });
    }
    rows
}

/// How many decisions of `rows` end in each outcome ([`Outcome::ALL`] order), controls
/// left out (or only controls, with `controls`).
pub fn outcome_counts(rows: &[DecisionRow], controls: bool) -> [usize; 4] {
    let mut n = [0; 4];
    for d in rows.iter().flat_map(DecisionRow::all) {
        if d.control == controls {
            if let Some(i) = Outcome::ALL.iter().position(|o| *o == d.outcome) {
                n[i] += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(round: u32, rps: f64, p99: f64, cpu: f64) -> RunSample {
        RunSample::synthetic(round, rps, p99, cpu)
    }

    fn est(lo: f64, hi: f64) -> Estimate {
        Estimate {
            median: (lo + hi) / 2.0,
            lo,
            hi,
            n: 9,
        }
    }

    #[test]
    fn an_a_a_control_never_names_a_winner() {
        let a = Arm {
            proto: LabProtocol::H2c,
            arm: 1,
        };
        let b = Arm {
            proto: LabProtocol::H2c,
            arm: 0,
        };
        for (lo, hi) in [(1.05, 1.10), (1.01, 1.06), (0.99, 1.01), (0.9, 1.1)] {
            let d = decision_of(Metric::Throughput, a, b, Some(est(lo, hi)), 0.03);
            assert!(
                d.control && d.winner.is_none() && d.better.is_none(),
                "{d:?}"
            );
        }
    }

    #[test]
    fn each_metric_has_its_band() {
        let bands = Bands::default();
        assert_eq!(bands.of(Metric::Throughput), 0.03);
        assert_eq!(bands.of(Metric::ServerCost), 0.03);
        assert_eq!(bands.of(Metric::P99), 0.10);
        let a = Arm {
            proto: LabProtocol::H2,
            arm: 0,
        };
        let b = Arm {
            proto: LabProtocol::H1Tls,
            arm: 0,
        };
        // The same interval, 0.92–0.98: parity for p99, a win for cost (h2 cheaper).
        let r = Some(est(0.92, 0.98));
        let p99 = decision_of(Metric::P99, a, b, r, bands.p99);
        assert_eq!((p99.outcome, p99.better), (Outcome::Parity, None));
        let cost = decision_of(Metric::ServerCost, a, b, r, bands.server_cost);
        assert_eq!(cost.outcome, Outcome::Slight);
        assert_eq!(cost.better, Some(a));
        assert_eq!(cost.more_rounds, None);
        let thr = decision_of(Metric::Throughput, a, b, Some(est(0.9, 1.05)), 0.03);
        assert_eq!(thr.outcome, Outcome::Undecided);
        assert!(thr.more_rounds.is_some_and(|n| n > 0));
    }

    #[test]
    fn pairs_are_rows_of_one_table() {
        // Synthetic: 8 rounds drifting together (a busy machine); HTTP/3 does 80% of
        // HTTP/2's req/s and costs 2x its server CPU in every round, with the same p99.
        let mut cfg = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny);
        cfg.axes.protocols = vec![
            LabProtocol::H1Tls,
            LabProtocol::H2,
            LabProtocol::H3,
            LabProtocol::H3,
        ];
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
        let rows = decide_all(&plan, &cells, &Bands::default());
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.family(H2_VS_H1).count(), 1, "h2 / h1-tls");
        assert_eq!(row.family(H3_VS_H2).count(), 1);
        assert_eq!(row.family(CONTROL).count(), 1, "h3#2 / h3");
        let p = row.family(H3_VS_H2).next().unwrap();
        assert_eq!((p.a.proto, p.b.proto), (LabProtocol::H3, LabProtocol::H2));
        let t = p.decision(Metric::Throughput).unwrap();
        assert!((t.ratio.unwrap().median - 0.8).abs() < 1e-9);
        assert_eq!(t.outcome, Outcome::Win);
        assert_eq!(t.winner.map(|w| w.proto), Some(LabProtocol::H2));
        let c = p.decision(Metric::ServerCost).unwrap();
        assert!((c.ratio.unwrap().median - 2.0).abs() < 1e-9);
        assert_eq!(c.winner.map(|w| w.proto), Some(LabProtocol::H2));
        let l = p.decision(Metric::P99).unwrap();
        assert_eq!((l.outcome, l.winner), (Outcome::Parity, None));
        let ctl = row.family(CONTROL).next().unwrap();
        assert!(ctl.control && ctl.decisions.iter().all(|d| d.winner.is_none()));
        // Every decision of the row is seen by the budget's rule.
        assert_eq!(row.all().count(), 3 + 3 + 3 + 3);
        let [win, ..] = outcome_counts(&rows, false);
        assert!(win >= 4, "{win}");
        let text = super::super::verdicts::render(&rows, &plan, 8, &Bands::default());
        assert!(text.contains("HTTP/3 vs HTTP/2, like for like"), "{text}");
        assert!(text.contains("h2 +25% (+25…+25%)"), "{text}");
    }
}
