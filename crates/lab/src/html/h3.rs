//! The HTTP/3 parts of the reports: the *HTTP/3 vs HTTP/2* decisions of `h2lab compare`
//! (forest plots and table) and the loss experiment of `h2lab page --loss` (page time by
//! loss level, decisions per level).

use super::forest::ForestRow;
use super::pairs;
use super::shell::{figure, table};
use super::svg::{esc, Bar, BarChart, BarSeries};
use crate::compare::decision::Metric;
use crate::compare::CompareReport;
use crate::fmt;
use crate::page::loss::{decision_cells, fmt_pct, LossLevel};
use crate::proto::LabProtocol;

fn ms_fmt(v: f64) -> String {
    fmt::ms(v)
}

/// The HTTP/3-vs-HTTP/2 decisions (`h3` / `h2`, both encrypted) of every condition, as a
/// table and one forest plot per metric; empty when no condition measured both.
pub fn compare_section(r: &CompareReport) -> String {
    let mut t = vec![pairs::header()];
    for row in &r.decisions {
        for p in &row.h3_vs_h2 {
            t.push(pairs::row(&row.label, p.h3, p.h2, &p.decisions));
        }
    }
    if t.len() == 1 {
        return String::new();
    }
    let mut out = String::from("<div class=\"grid\">");
    for m in Metric::ALL {
        let rows: Vec<ForestRow> = r
            .decisions
            .iter()
            .flat_map(|row| {
                row.h3_vs_h2
                    .iter()
                    .filter_map(move |p| pairs::forest_row(&row.label, p.h3, p.h2, &p.decisions, m))
            })
            .collect();
        out.push_str(&pairs::forest_figure(
            m,
            "forest-h3",
            ("HTTP/3", "HTTP/2"),
            rows,
            r.equivalence,
            "One row per condition: HTTP/3 (QUIC over UDP) against HTTP/2 over TLS, paired by \
             round; the shaded band is the equivalence band. Green: win, grey: parity, olive: \
             undecided.",
        ));
    }
    out.push_str("</div>");
    out.push_str(&table(&t, "decision"));
    out
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
        "lost by the link: TCP chunks / UDP datagrams".into(),
    ]];
    for l in levels {
        for d in &l.decisions {
            let [loss, pair, ratio, verdict, link] = decision_cells(l, d);
            t.push(vec![
                esc(&loss),
                esc(&pair),
                esc(&ratio),
                pairs::verdict_cell(d.winner.is_some(), &verdict),
                esc(&link),
            ]);
        }
    }
    if t.len() > 1 {
        out.push_str(&table(&t, "decision"));
    }
    out
}
