//! The upstream experiment's self-contained HTML page ([`html`]): the cells, the
//! comparisons against the baseline, the decision framework and the connections per arm.
//! The text, CSV and JSON outputs are [`super::output`]'s.

use std::fmt::Write as _;

use super::measure::{empty_runs, marks};
use super::output::{
    baseline, connections_line, framework, h2_arms, ratio_word, summary_text, FrameworkRow,
};
use super::UpstreamReport;
use crate::compare::output::busy_text;
use crate::html::shell::{document, section, table};
use crate::html::svg::esc;
use crate::stats::ci::Estimate;

fn ci_html(x: &Option<Estimate>, digits: usize) -> String {
    match x {
        Some(x) if x.n > 1 => format!(
            "{:.digits$} <small>({:.digits$}–{:.digits$})</small>",
            x.median, x.lo, x.hi
        ),
        Some(x) => format!("{:.digits$}", x.median),
        None => "-".into(),
    }
}

/// A self-contained HTML page: the cells, the comparisons against the baseline, the
/// decision framework and the connections per arm.
pub fn html(r: &UpstreamReport) -> String {
    let cfg = &r.config;
    let base = baseline(r);
    let mut body = String::new();
    let mut rows = vec![{
        let mut h = vec!["payload".to_string(), ">c".to_string()];
        for a in &cfg.arms {
            h.push(format!(">{} req/s", a.name()));
            h.push(format!(">{} p99 ms", a.name()));
        }
        h
    }];
    for c in &r.cells {
        let mut row = vec![esc(&c.payload.label()), c.concurrency.to_string()];
        for a in &c.arms {
            if a.skipped.is_some() {
                row.push("n/a".into());
                row.push("n/a".into());
            } else {
                row.push(format!("{}{}", ci_html(&a.rps_ci, 0), esc(&marks(a))));
                row.push(ci_html(&a.p99_ci, 1));
            }
        }
        rows.push(row);
    }
    let mut notes = format!(
        "<p>{}<br>cpus: {}<br>machine: {}</p><ul>{}</ul>",
        esc(&super::paths_out::path_line(r)),
        esc(&r.isolation.note),
        esc(&busy_text(r.busy_runs, cfg.strict)),
        super::paths_out::counters_html(r, esc)
    );
    let empty = empty_runs(r);
    if !empty.is_empty() {
        notes.push_str(
            "<p>* runs that completed nothing, even when run again with a 4x warm-up, are left \
             out of the medians and ratios:</p><ul>",
        );
        for l in &empty {
            let _ = write!(notes, "<li>{}</li>", esc(l));
        }
        notes.push_str("</ul>");
    }
    body.push_str(&section(
        "cells",
        "Cells (median of the runs, 95% bootstrap CI)",
        &format!("{}{notes}", table(&rows, "cells")),
    ));
    let mut vs = String::new();
    for (ai, arm) in h2_arms(r) {
        let mut rows = vec![vec![
            "payload".to_string(),
            ">c".to_string(),
            "req/s".to_string(),
            "p99".to_string(),
        ]];
        for c in &r.cells {
            let Some(v) = c.arms.get(ai).and_then(|a| a.versus) else {
                continue;
            };
            rows.push(vec![
                esc(&c.payload.label()),
                c.concurrency.to_string(),
                esc(&ratio_word(&v.throughput)),
                esc(&ratio_word(&v.p99)),
            ]);
        }
        let _ = write!(
            vs,
            "<h3>{} vs {base}</h3>{}",
            esc(arm.name()),
            table(&rows, "versus")
        );
    }
    body.push_str(&section(
        "versus",
        &format!(
            "Against {base} keep-alive (per-run paired ratios; win outside ±3%, parity inside)"
        ),
        &vs,
    ));
    let mut fw = String::new();
    for (ai, arm) in h2_arms(r) {
        let mut rows = vec![vec![
            "Response".to_string(),
            "Throughput advantage".to_string(),
            "P99 latency advantage".to_string(),
        ]];
        for (name, row) in framework(r, ai) {
            match row {
                FrameworkRow::Skipped(why) => rows.push(vec![esc(name), esc(&why), String::new()]),
                FrameworkRow::Measured(t, l) => rows.push(vec![
                    esc(name),
                    esc(&summary_text(&t)),
                    esc(&summary_text(&l)),
                ]),
            }
        }
        let _ = write!(
            fw,
            "<h3>{} vs {base}</h3>{}",
            esc(arm.name()),
            table(&rows, "framework")
        );
    }
    body.push_str(&section(
        "framework",
        "Decision framework (seed 004): response size × advantage over HTTP/1.1 keep-alive",
        &fw,
    ));
    let mut rows = vec![vec!["arm".to_string(), "upstream connections".to_string()]];
    for (arm, conns, done) in &r.connections {
        rows.push(vec![
            esc(arm.name()),
            esc(&connections_line(r, *arm, *conns, *done)),
        ]);
    }
    body.push_str(&section(
        "connections",
        "Upstream connections",
        &table(&rows, "conns"),
    ));
    let subtitle = format!(
        "client (HTTP/1.1) → {} → link ({} ms RTT) → {} backends; {} runs of {:.1} s per arm and cell, arms alternated",
        r.proxy,
        cfg.rtt.as_secs_f64() * 1000.0,
        cfg.backends,
        cfg.runs,
        cfg.duration.as_secs_f64()
    );
    document("h2lab upstream", &subtitle, &body)
}
