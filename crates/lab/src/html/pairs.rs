//! The like-for-like comparisons of the compare report, one section per family of
//! [`crate::kernel::pairs::PAIRS`] (HTTP/2 vs HTTP/1.1, HTTP/3 vs HTTP/2) and one for
//! the A/A controls, each drawn the same way: a forest plot per metric and a table. Adding
//! a pair to the table of pairs adds it here with no code.

use super::forest::{ForestPlot, ForestRow};
use super::shell::{figure, table};
use super::svg::esc;
use crate::compare::decision::{Bands, Comparison, DecisionRow, Metric, CONTROL};
use crate::compare::verdicts::{arm_name, decision_text};
use crate::stats::ci::Outcome;

/// The header of a pair table: the condition, the pair, one column per metric.
pub fn header() -> Vec<String> {
    vec![
        "condition".to_owned(),
        "pair".into(),
        "req/s".into(),
        "p99".into(),
        "server CPU/req".into(),
    ]
}

/// `h2c/h1`.
fn pair_name(c: &Comparison) -> String {
    format!("{}/{}", arm_name(c.a), arm_name(c.b))
}

/// One row of a pair table (escaped HTML): the condition `label`, the pair, and the
/// decision of each metric, coloured by its outcome (`-` without one).
pub fn row(label: &str, c: &Comparison) -> Vec<String> {
    let mut v = vec![esc(label), esc(&pair_name(c))];
    for m in Metric::ALL {
        v.push(c.decision(m).map_or_else(
            || "-".into(),
            |d| outcome_cell(d.outcome, &decision_text(d, false)),
        ));
    }
    v
}

/// The section id prefix of a family: `forest` for HTTP/2 vs HTTP/1.1 (the first), then
/// `forest-h3`, `forest-aa`.
pub fn family_id(family: &str) -> &'static str {
    match family {
        crate::compare::decision::H2_VS_H1 => "forest",
        crate::compare::decision::H3_VS_H2 => "forest-h3",
        CONTROL => "forest-aa",
        _ => "forest-pair",
    }
}

/// The family's forest plots (one per metric) and its table; both empty when no condition
/// measured it.
pub fn family_section(rows: &[DecisionRow], family: &str, bands: &Bands) -> (String, String) {
    let mut t = vec![header()];
    for r in rows {
        for c in r.family(family) {
            t.push(row(&r.label, c));
        }
    }
    if t.len() == 1 {
        return (String::new(), String::new());
    }
    let (new, old) = family
        .split_once(" vs ")
        .unwrap_or(("the second arm", "the first"));
    let mut out = String::from("<div class=\"grid\">");
    for m in Metric::ALL {
        let frows: Vec<ForestRow> = rows
            .iter()
            .flat_map(|r| {
                r.family(family).filter_map(move |c| {
                    let d = c.decision(m)?;
                    Some(ForestRow {
                        label: format!("{} {}", r.label, pair_name(c)),
                        ratio: d.ratio?,
                        outcome: d.outcome,
                    })
                })
            })
            .collect();
        out.push_str(&forest_figure(
            m,
            family_id(family),
            (new, old),
            frows,
            bands.of(m),
            "One row per condition and pair, paired by round; the shaded band is the \
             equivalence band (parity inside it). Green: win, blue: slight (direction known, \
             size within reach of the band), grey: parity, olive: undecided.",
        ));
    }
    out.push_str("</div>");
    (out, table(&t, "decision"))
}

/// The forest plot of metric `m` comparing `new` with `old` (their names, e.g. `HTTP/2`) as
/// a captioned figure, its element id `{prefix}-throughput`…, the equivalence band `band`;
/// empty without rows.
pub fn forest_figure(
    m: Metric,
    prefix: &str,
    (new, old): (&str, &str),
    rows: Vec<ForestRow>,
    band: f64,
    caption: &str,
) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let (id, title, x_label) = forest_titles(m, prefix, new, old);
    figure(
        &ForestPlot {
            id: &id,
            title: &title,
            x_label,
            rows,
            band,
        }
        .svg(),
        caption,
    )
}

/// The element id (`{prefix}-throughput`…), title and axis label of the forest plot of
/// metric `m` comparing `new` with `old`.
fn forest_titles(m: Metric, prefix: &str, new: &str, old: &str) -> (String, String, &'static str) {
    match m {
        Metric::Throughput => (
            format!("{prefix}-throughput"),
            format!("Throughput: {new} ÷ {old} (right of 1 = {new} faster)"),
            "ratio of req/s, median of the per-round ratios, 95% CI",
        ),
        Metric::P99 => (
            format!("{prefix}-p99"),
            format!("p99 latency: {new} ÷ {old} (left of 1 = {new} faster)"),
            "ratio of p99 request times, median and 95% CI",
        ),
        Metric::ServerCost => (
            format!("{prefix}-server-cost"),
            format!("Server cost: {new} ÷ {old} (left of 1 = {new} cheaper)"),
            "ratio of server CPU per request, median and 95% CI",
        ),
    }
}

/// A decision cell: `text` (escaped) in a span classed by its outcome (`win`, `slight`,
/// `par`, `und`).
pub fn outcome_cell(o: Outcome, text: &str) -> String {
    let class = match o {
        Outcome::Win => "win",
        Outcome::Slight => "slight",
        Outcome::Parity => "par",
        Outcome::Undecided => "und",
    };
    format!("<span class=\"{class}\">{}</span>", esc(text))
}
