//! The loss experiment of `h2lab page --loss` in its HTML report: page time by loss level,
//! decisions per level.

use super::pairs;
use super::shell::{figure, table};
use super::svg::{esc, Bar, BarChart, BarSeries};
use crate::fmt;
use crate::page::loss::{decision_cells, fmt_pct, LossLevel};
use crate::proto::LabProtocol;

fn ms_fmt(v: f64) -> String {
    fmt::ms(v)
}

/// The loss experiment: page time by loss level (median, whiskers: 95% CI) per protocol,
/// and the like-for-like decisions of every level.
pub fn page_loss_section(levels: &[LossLevel]) -> String {
    let protos: Vec<LabProtocol> = levels
        .first()
        .map(|l| l.protocols.iter().map(|p| p.proto).collect())
        .unwrap_or_default();
    let series = protos
        .iter()
        .map(|&p| BarSeries {
            name: p.label().into(),
            color: p.color().into(),
            values: levels
                .iter()
                .map(|l| {
                    l.page_ci
                        .iter()
                        .find(|c| c.proto == p)
                        .and_then(|c| c.page_ms)
                        .map(|e| Bar {
                            value: e.median,
                            lo: e.lo,
                            hi: e.hi,
                        })
                })
                .collect(),
        })
        .collect();
    let chart = BarChart {
        id: "page-time-by-loss",
        title: "Page load time by loss (median, whiskers: 95% CI)",
        categories: levels
            .iter()
            .map(|l| format!("{} loss", fmt_pct(l.loss_pct / 100.0)))
            .collect(),
        series,
        y_label: "page load time (ms)",
        fmt: &ms_fmt,
        width: 760.0,
    }
    .svg();
    let mut out = figure(
        &chart,
        "The same page over the WAN link (40 ms, 50 Mbit/s) at each loss level. TCP loss costs a \
         retransmission round trip that stalls the connection (HTTP/2: every stream); UDP loss \
         drops the datagram and QUIC resends it (HTTP/3: only the streams it carried wait).",
    );
    let mut t = vec![vec![
        "loss".to_owned(),
        "pair".into(),
        "page time ratio (95% CI)".into(),
        "verdict".into(),
        "lost by the path".into(),
    ]];
    for l in levels {
        for d in &l.decisions {
            let [loss, pair, ratio, verdict, link] = decision_cells(l, d);
            t.push(vec![
                esc(&loss),
                esc(&pair),
                esc(&ratio),
                pairs::outcome_cell(d.outcome, &verdict),
                esc(&link),
            ]);
        }
    }
    if t.len() > 1 {
        out.push_str(&table(&t, "decision"));
    }
    let lines = crate::page::loss::path_lines(levels);
    if !lines.is_empty() {
        out.push_str("<p>What the path counted:</p><ul>");
        for l in lines {
            out.push_str(&format!("<li>{}</li>", esc(&l)));
        }
        out.push_str("</ul>");
    }
    out
}
