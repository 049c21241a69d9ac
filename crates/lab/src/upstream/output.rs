//! The upstream experiment's report: text, CSV, JSON and a self-contained HTML page, with the
//! seed's decision framework (response-size bands × throughput and p99 advantage of each
//! HTTP/2 arm over HTTP/1.1 keep-alive) filled from the cells' paired-ratio outcomes
//! ([`super::verdict`]). Formatting is shared with `h2lab compare` (CSV fields, ratio text,
//! the HTML shell).

use std::fmt::Write as _;

use h2lab_proxy::UpstreamProtocol;
use serde_json::json;

use super::measure::{empty_runs, informational, marks, spell_runs};
use super::verdict::Ratio;
use super::{Cell, UpstreamReport};
use crate::compare::axes::Payload;
use crate::compare::output::{busy_text, csv_field, csv_num};
use crate::compare::verdicts::ratio_text;

use crate::stats::ci::Estimate;
use crate::stats::{median_sorted, Better};

/// The seed's response-size bands.
pub const BANDS: [&str; 4] = ["< 1KB", "1-10KB", "~50KB", ">= 100KB"];

/// The band of a payload.
pub fn band(p: &Payload) -> usize {
    let b = p.approx_bytes();
    if p.name == "info" || p.name == "compute" || b < 1024 {
        0
    } else if b <= 10 * 1024 {
        1
    } else if b < 100 * 1024 {
        2
    } else {
        3
    }
}

/// One box of the decision framework: the advantages of an arm over the baseline in the
/// band's cells (median and range) and how the cells were decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BandSummary {
    /// Median advantage (positive: the arm is better).
    pub median: f64,
    /// Smallest advantage.
    pub min: f64,
    /// Largest advantage.
    pub max: f64,
    /// Cells where the arm wins.
    pub better: usize,
    /// Cells where the baseline wins.
    pub worse: usize,
    /// Cells at parity (within ±3%).
    pub parity: usize,
    /// Cells not decided.
    pub undecided: usize,
}

impl BandSummary {
    fn of(ratios: &[Ratio], better: Better) -> Option<BandSummary> {
        let mut adv: Vec<f64> = ratios.iter().filter_map(|r| r.advantage(better)).collect();
        if adv.is_empty() {
            return None;
        }
        adv.sort_by(f64::total_cmp);
        let mut s = BandSummary {
            median: median_sorted(&adv),
            min: adv[0],
            max: adv[adv.len() - 1],
            ..BandSummary::default()
        };
        for r in ratios {
            match r.word() {
                "better" => s.better += 1,
                "worse" => s.worse += 1,
                "parity" => s.parity += 1,
                _ => s.undecided += 1,
            }
        }
        Some(s)
    }

    /// `+5.1% (-6.0..+92%): 3 better, 1 parity, 2 undecided`.
    pub fn text(&self) -> String {
        let counts: Vec<String> = [
            (self.better, "better"),
            (self.worse, "worse"),
            (self.parity, "parity"),
            (self.undecided, "undecided"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
        format!(
            "{} ({}..{}): {}",
            crate::fmt::pct(self.median),
            crate::fmt::pct(self.min),
            crate::fmt::pct(self.max),
            counts.join(", ")
        )
    }
}

/// One band of the decision framework.
#[derive(Debug, Clone)]
pub enum FrameworkRow {
    /// The arm's throughput and p99 summaries over the band's cells.
    Measured(Option<BandSummary>, Option<BandSummary>),
    /// The arm was not measured: why.
    Skipped(String),
}

/// The decision framework of arm `ai` (index in the config's arms), per band.
pub fn framework(r: &UpstreamReport, ai: usize) -> Vec<(&'static str, FrameworkRow)> {
    let mut rows = Vec::new();
    for (bi, name) in BANDS.iter().enumerate() {
        let cells: Vec<&Cell> = r.cells.iter().filter(|c| band(&c.payload) == bi).collect();
        if cells.is_empty() {
            continue;
        }
        if let Some(why) = cells[0].arms.get(ai).and_then(|a| a.skipped.clone()) {
            rows.push((*name, FrameworkRow::Skipped(why)));
            continue;
        }
        let vs: Vec<_> = cells
            .iter()
            .filter_map(|c| c.arms.get(ai).and_then(|a| a.versus))
            .collect();
        let thr: Vec<Ratio> = vs.iter().map(|v| v.throughput).collect();
        let lat: Vec<Ratio> = vs.iter().map(|v| v.p99).collect();
        rows.push((
            *name,
            FrameworkRow::Measured(
                BandSummary::of(&thr, Better::Higher),
                BandSummary::of(&lat, Better::Lower),
            ),
        ));
    }
    rows
}

pub(super) fn summary_text(s: &Option<BandSummary>) -> String {
    s.as_ref().map_or_else(|| "-".into(), BandSummary::text)
}

/// `+18% (+12…+25%) better`: a paired ratio with the outcome from the arm's side.
pub(super) fn ratio_word(r: &Ratio) -> String {
    match &r.ratio {
        Some(e) => format!("{} {}", ratio_text(e), r.word()),
        None => "-".into(),
    }
}

pub(super) fn baseline(r: &UpstreamReport) -> &'static str {
    r.config.arms.first().map_or("-", |a| a.name())
}

/// Indices of the HTTP/2 arms compared with the baseline.
pub(super) fn h2_arms(r: &UpstreamReport) -> impl Iterator<Item = (usize, UpstreamProtocol)> + '_ {
    r.config
        .arms
        .iter()
        .copied()
        .enumerate()
        .skip(1)
        .filter(|(_, a)| a.is_h2())
}

pub(super) fn connections_line(
    r: &UpstreamReport,
    arm: UpstreamProtocol,
    conns: Option<u64>,
    done: u64,
) -> String {
    match conns {
        Some(n) => format!(
            "{n} connections for {done} measured requests ({:.1} per connection; warm-ups and connections cut when a run ends count too)",
            if n == 0 { 0.0 } else { done as f64 / n as f64 }
        ),
        None => format!(
            "not measured ({})",
            r.cells
                .first()
                .and_then(|c| c.arms.iter().find(|a| a.arm == arm))
                .and_then(|a| a.skipped.clone())
                .unwrap_or_default()
        ),
    }
}

/// The text report.
pub fn render(r: &UpstreamReport) -> String {
    let mut out = String::new();
    let cfg = &r.config;
    let _ = writeln!(
        out,
        "h2lab upstream: client (HTTP/1.1) -> {} -> link ({} ms RTT) -> {} backends (h2lab serve); {} runs of {:.1} s per arm and cell, arms alternated\n",
        r.proxy,
        cfg.rtt.as_secs_f64() * 1000.0,
        cfg.backends,
        cfg.runs,
        cfg.duration.as_secs_f64()
    );
    out.push_str(&super::paths_out::path_line(r));
    let _ = writeln!(out, "\ncpus: {}", r.isolation.note);
    let _ = writeln!(out, "machine: {}", busy_text(r.busy_runs, cfg.strict));
    if r.remeasured > 0 {
        let _ = writeln!(
            out,
            "  ({} rounds measured again because the machine was busy)",
            r.remeasured
        );
    }
    out.push('\n');
    let _ = write!(out, "{:>8} {:>5}", "payload", "c");
    for a in &cfg.arms {
        let _ = write!(out, " | {:>22}", format!("{} req/s, p99 ms", a.name()));
    }
    out.push('\n');
    for c in &r.cells {
        let _ = write!(out, "{:>8} {:>5}", c.payload.label(), c.concurrency);
        for a in &c.arms {
            let v = match (&a.skipped, a.rps, a.p99_ms) {
                (Some(_), _, _) => "n/a".to_string(),
                (None, Some(rps), Some(p99)) => format!(
                    "{:.0}±{:.0}, {:.1}{}{}",
                    rps.median,
                    rps.spread() / 2.0,
                    p99.median,
                    if a.failed > 0 { " (errors)" } else { "" },
                    marks(a)
                ),
                (None, _, _) if a.empty_runs > 0 => format!("-{}", marks(a)),
                _ => "-".to_string(),
            };
            let _ = write!(out, " | {v:>22}");
        }
        out.push('\n');
    }
    let empty = empty_runs(r);
    if !empty.is_empty()
        || r.cells
            .iter()
            .any(|c| c.arms.iter().any(|a| a.busy_runs > 0))
    {
        out.push_str(
            "\n  ! some run measured while the machine was busy; * some run completed nothing, \
             even when run again with a 4x warm-up: left out of the medians and ratios\n",
        );
    }
    for line in empty
        .iter()
        .map(|l| format!("* {l}"))
        .chain(informational(r))
        .chain(spell_runs(r))
    {
        let _ = writeln!(out, "  {line}");
    }
    let base = baseline(r);
    let _ = writeln!(
        out,
        "\nAgainst {base} keep-alive, per cell (median of the per-run ratios arm/{base}, 95% bootstrap CI; win outside ±3%, parity inside, undecided across or with fewer than {} runs)",
        crate::stats::ci::MIN_ROUNDS
    );
    for (ai, arm) in h2_arms(r) {
        let _ = writeln!(out, "\n  {} vs {base}", arm.name());
        for c in &r.cells {
            let Some(v) = c.arms.get(ai).and_then(|a| a.versus) else {
                continue;
            };
            let _ = writeln!(
                out,
                "  {:>8} c={:<4} req/s {:<40} p99 {}",
                c.payload.label(),
                c.concurrency,
                ratio_word(&v.throughput),
                ratio_word(&v.p99)
            );
        }
    }
    let _ = writeln!(
        out,
        "\nDecision framework (advantage over {base} keep-alive: median over the band's cells at every concurrency, range, and how the cells were decided)"
    );
    for (ai, arm) in h2_arms(r) {
        let _ = writeln!(out, "\n  {} vs {base}", arm.name());
        let _ = writeln!(
            out,
            "  {:<10} | {:<48} | P99 latency advantage",
            "Response", "Throughput advantage"
        );
        for (name, row) in framework(r, ai) {
            match row {
                FrameworkRow::Skipped(why) => {
                    let _ = writeln!(out, "  {name:<10} | {why}");
                }
                FrameworkRow::Measured(thr, lat) => {
                    let _ = writeln!(
                        out,
                        "  {name:<10} | {:<48} | {}",
                        summary_text(&thr),
                        summary_text(&lat)
                    );
                }
            }
        }
    }
    out.push_str("\nUpstream connections used (accepted by the links over the whole experiment)\n");
    for (arm, conns, completed) in &r.connections {
        let _ = writeln!(
            out,
            "  {:<8} {}",
            arm.name(),
            connections_line(r, *arm, *conns, *completed)
        );
    }
    out + &super::paths_out::counters_text(r)
}

pub(super) fn e(x: &Option<Estimate>, f: fn(&Estimate) -> f64) -> f64 {
    x.as_ref().map_or(f64::NAN, f)
}

/// One CSV row per cell and arm: the arm's medians with their CIs, then its paired ratios
/// against the baseline with their outcomes (empty for the baseline), then the runs that
/// completed nothing and were run again, those left out (completed nothing again) and those
/// measured while the machine was busy (as results.json's `retried_runs`, `empty_runs`,
/// `busy_runs`).
pub fn csv(r: &UpstreamReport) -> String {
    let mut out = String::from(
        "payload,path,band,concurrency,arm,runs,skipped,failed,rps_median,rps_ci_lo,rps_ci_hi,\
         p99_ms_median,p99_ms_ci_lo,p99_ms_ci_hi,baseline,rps_ratio,rps_ratio_lo,rps_ratio_hi,\
         rps_outcome,p99_ratio,p99_ratio_lo,p99_ratio_hi,p99_outcome,retried_runs,empty_runs,\
         busy_runs\n",
    );
    let base = baseline(r);
    for c in &r.cells {
        for a in &c.arms {
            let v = a.versus;
            let ratio = |m: Option<Ratio>| -> [String; 4] {
                match m {
                    Some(m) => [
                        csv_num(e(&m.ratio, |x| x.median)),
                        csv_num(e(&m.ratio, |x| x.lo)),
                        csv_num(e(&m.ratio, |x| x.hi)),
                        m.word().to_owned(),
                    ],
                    None => Default::default(),
                }
            };
            let mut row = vec![
                csv_field(&c.payload.name),
                csv_field(&c.payload.path),
                csv_field(BANDS[band(&c.payload)]),
                c.concurrency.to_string(),
                a.arm.name().to_owned(),
                a.rps_runs.iter().flatten().count().to_string(),
                csv_field(a.skipped.as_deref().unwrap_or("")),
                a.failed.to_string(),
                csv_num(e(&a.rps_ci, |x| x.median)),
                csv_num(e(&a.rps_ci, |x| x.lo)),
                csv_num(e(&a.rps_ci, |x| x.hi)),
                csv_num(e(&a.p99_ci, |x| x.median)),
                csv_num(e(&a.p99_ci, |x| x.lo)),
                csv_num(e(&a.p99_ci, |x| x.hi)),
                if v.is_some() {
                    base.to_owned()
                } else {
                    String::new()
                },
            ];
            row.extend(ratio(v.map(|v| v.throughput)));
            row.extend(ratio(v.map(|v| v.p99)));
            row.extend([a.retried_runs, a.empty_runs, a.busy_runs].map(|n| n.to_string()));
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

fn summary_json(s: &Option<BandSummary>) -> serde_json::Value {
    match s {
        None => serde_json::Value::Null,
        Some(s) => json!({
            "median_advantage": s.median, "min_advantage": s.min, "max_advantage": s.max,
            "better": s.better, "worse": s.worse, "parity": s.parity, "undecided": s.undecided,
        }),
    }
}

/// The report as pretty JSON: settings, every cell with its runs, CIs and paired ratios,
/// the decision framework and the connections per arm.
pub fn json(r: &UpstreamReport) -> String {
    let cfg = &r.config;
    let cells: Vec<_> = r
        .cells
        .iter()
        .map(|c| {
            let arms: Vec<_> = c
                .arms
                .iter()
                .map(|a| {
                    json!({
                        "arm": a.arm.name(), "skipped": a.skipped, "failed": a.failed,
                        "rps_runs": a.rps_runs, "p99_ms_runs": a.p99_runs,
                        "rps": a.rps_ci, "p99_ms": a.p99_ci, "versus_baseline": a.versus,
                        "retried_runs": a.retried_runs, "empty_runs": a.empty_runs,
                        "busy_runs": a.busy_runs, "informational": a.informational, "path": a.path,
                        "spell_runs": a.spell_runs, "client_cpu_us_runs": a.client_cpu_runs,
                    })
                })
                .collect();
            json!({
                "payload": c.payload, "band": BANDS[band(&c.payload)],
                "concurrency": c.concurrency, "arms": arms,
            })
        })
        .collect();
    let framework: Vec<_> = h2_arms(r)
        .map(|(ai, arm)| {
            let bands: Vec<_> = framework(r, ai)
                .into_iter()
                .map(|(name, row)| match row {
                    FrameworkRow::Skipped(why) => json!({"band": name, "not_measured": why}),
                    FrameworkRow::Measured(t, l) => json!({
                        "band": name, "throughput": summary_json(&t), "p99": summary_json(&l),
                    }),
                })
                .collect();
            json!({"arm": arm.name(), "baseline": baseline(r), "bands": bands})
        })
        .collect();
    let conns: Vec<_> = r
        .connections
        .iter()
        .map(|(a, n, done)| json!({"arm": a.name(), "connections": n, "measured_requests": done}))
        .collect();
    let v = json!({
        "experiment": "upstream",
        "proxy": r.proxy,
        "config": {
            "arms": cfg.arms.iter().map(|a| a.name()).collect::<Vec<_>>(),
            "concurrency": cfg.concurrency, "runs": cfg.runs,
            "warm_up_s": cfg.warm_up.as_secs_f64(), "duration_s": cfg.duration.as_secs_f64(),
            "rtt_ms": cfg.rtt.as_secs_f64() * 1000.0, "backends": cfg.backends,
            "pool": cfg.pool, "streams": cfg.streams, "early_hints": cfg.early_hints,
            "equivalence": crate::stats::ci::DEFAULT_EQUIVALENCE, "strict": cfg.strict,
        },
        "isolation": r.isolation, "path": r.path, "path_sides": r.path_sides,
        "machine": {
            "busy_runs": r.busy_runs.0, "runs": r.busy_runs.1,
            "remeasured_rounds": r.remeasured,
        },
        "cells": cells,
        "decision_framework": framework,
        "upstream_connections": conns,
    });
    serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
