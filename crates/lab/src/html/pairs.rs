//! The parts of a like-for-like pair (HTTP/2 vs HTTP/1.1, HTTP/3 vs HTTP/2) that the
//! compare report draws the same way for every pair: the table's header and rows, the
//! forest-plot rows and titles, and the coloured verdict cell.

use super::forest::{ForestPlot, ForestRow};
use super::shell::figure;
use super::svg::esc;
use crate::compare::decision::{pair_text, Decision, Metric};
use crate::proto::LabProtocol;

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

/// One row of a pair table (escaped HTML): the condition `label`, `new / old`, and the
/// decision of each metric (`-` without one).
pub fn row(label: &str, new: LabProtocol, old: LabProtocol, decisions: &[Decision]) -> Vec<String> {
    let mut v = vec![
        esc(label),
        esc(&format!("{} / {}", new.short(), old.short())),
    ];
    for m in Metric::ALL {
        v.push(
            decisions
                .iter()
                .find(|d| d.metric == m)
                .map_or_else(|| "-".into(), |d| esc(&pair_text(d))),
        );
    }
    v
}

/// The forest-plot row of metric `m` for the pair `new`/`old` of condition `label`
/// (`None` without a decision on `m` or without a ratio).
pub fn forest_row(
    label: &str,
    new: LabProtocol,
    old: LabProtocol,
    decisions: &[Decision],
    m: Metric,
) -> Option<ForestRow> {
    let d = decisions.iter().find(|d| d.metric == m)?;
    Some(ForestRow {
        label: format!("{label} {}/{}", new.short(), old.short()),
        ratio: d.ratio?,
        outcome: d.outcome,
    })
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

/// A verdict cell: `text` (escaped) in a `win` span when `won`, else a `par` one.
pub fn verdict_cell(won: bool, text: &str) -> String {
    format!(
        "<span class=\"{}\">{}</span>",
        if won { "win" } else { "par" },
        esc(text)
    )
}
