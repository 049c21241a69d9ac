//! Terminal tables, CSV and JSON of a compare run.

use std::fmt::Write as _;

use super::decision;
use super::run::{CellResult, Progress};
use super::CompareReport;
use crate::fmt;
use crate::stats::Summary;

/// `41,234 (40,100–42,011)`.
fn with_range(s: &Option<Summary>, f: fn(f64) -> String) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ({}–{})", f(s.median), f(s.min), f(s.max)),
        Some(s) => f(s.median),
        None => "-".into(),
    }
}

fn ms_short(v: f64) -> String {
    fmt::ms(v).replace(" ms", "").replace(" s", "s")
}

/// One progress line for a finished cell.
pub fn progress_line(p: &Progress<'_>) -> String {
    let c = p.cell;
    let w = p.total.to_string().len();
    let body = match (&c.rps, &c.p99_ms) {
        (Some(r), Some(l)) => format!(
            "{} req/s, p99 {}",
            with_range(&Some(*r), fmt::num),
            fmt::ms(l.median)
        ),
        _ => format!("failed: {}", c.error.as_deref().unwrap_or("no result")),
    };
    format!(
        "[{:>w$}/{}] {:<12} {:<34} {body}",
        p.done,
        p.total,
        c.key.proto.short(),
        c.key.cond.describe(),
    )
}

/// The table of every cell.
pub fn cells_table(cells: &[CellResult]) -> String {
    let mut t: Vec<Vec<String>> = vec![vec![
        "payload".into(),
        "headers".into(),
        ">c".into(),
        ">conns×streams".into(),
        "link".into(),
        "protocol".into(),
        ">req/s (min–max)".into(),
        ">p50 ms".into(),
        ">p99 ms (min–max)".into(),
        ">MB/s".into(),
        ">failed".into(),
    ]];
    for c in cells {
        let k = &c.key;
        let failed: u64 = c.runs.iter().map(|r| r.failed).sum();
        t.push(vec![
            k.cond.payload.label(),
            k.cond.headers.to_string(),
            k.cond.concurrency.to_string(),
            format!("{}×{}", c.connections, k.cond.streams),
            k.cond.link.to_string(),
            k.proto.short().into(),
            with_range(&c.rps, fmt::num),
            c.p50_ms.map_or_else(|| "-".into(), |s| ms_short(s.median)),
            with_range(&c.p99_ms, ms_short),
            c.mb_per_sec
                .map_or_else(|| "-".into(), |s| format!("{:.1}", s.median)),
            if c.error.is_some() && c.runs.is_empty() {
                "error".into()
            } else {
                failed.to_string()
            },
        ]);
    }
    fmt::table(&t)
}

/// The whole terminal summary: settings, cells, decision table, notes.
pub fn render_text(r: &CompareReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "h2lab compare: {} cells, {} run(s) of {} after a {} warm-up each, in {:.0} s",
        r.cells.len(),
        r.timing.runs,
        fmt::dur(r.timing.duration),
        fmt::dur(r.timing.warm_up),
        r.elapsed_secs
    );
    let _ = writeln!(out, "server: {}", r.environment);
    for l in &r.links {
        let _ = writeln!(out, "link {l}");
    }
    out.push('\n');
    out.push_str(&cells_table(&r.cells));
    out.push('\n');
    out.push_str(&decision::render(&r.decisions, &r.plan, r.timing.runs));
    if !r.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn csv_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        String::new()
    }
}

/// One CSV row per cell: its settings, then median/min/max of throughput, p50, p99, MB/s.
pub fn csv(r: &CompareReport) -> String {
    let mut out = String::from(
        "protocol,payload,path,headers,concurrency,streams,connections,link,runs,\
         rps_median,rps_min,rps_max,p50_ms_median,p99_ms_median,p99_ms_min,p99_ms_max,\
         mb_per_sec_median,failed,error\n",
    );
    for c in &r.cells {
        let k = &c.key;
        let s = |x: &Option<Summary>, f: fn(&Summary) -> f64| x.as_ref().map_or(f64::NAN, f);
        let failed: u64 = c.runs.iter().map(|r| r.failed).sum();
        let row = [
            k.proto.name().to_owned(),
            csv_field(&k.cond.payload.name),
            csv_field(&k.cond.payload.path),
            k.cond.headers.to_string(),
            k.cond.concurrency.to_string(),
            k.cond.streams.to_string(),
            c.connections.to_string(),
            k.cond.link.to_string(),
            c.runs.len().to_string(),
            csv_num(s(&c.rps, |x| x.median)),
            csv_num(s(&c.rps, |x| x.min)),
            csv_num(s(&c.rps, |x| x.max)),
            csv_num(s(&c.p50_ms, |x| x.median)),
            csv_num(s(&c.p99_ms, |x| x.median)),
            csv_num(s(&c.p99_ms, |x| x.min)),
            csv_num(s(&c.p99_ms, |x| x.max)),
            csv_num(s(&c.mb_per_sec, |x| x.median)),
            failed.to_string(),
            csv_field(c.error.as_deref().unwrap_or("")),
        ];
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// The report as pretty JSON.
pub fn json(r: &CompareReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
