//! Terminal tables, CSV and JSON of a compare run.

use std::fmt::Write as _;

use super::run::{CellResult, Progress};
use super::CompareReport;
use crate::fmt;
use crate::stats::ci::Estimate;
use crate::stats::MedianSpread;

/// `41,234 (40,100–42,011)`: a median and its 95% CI.
fn with_ci(e: &Option<Estimate>, f: fn(f64) -> String) -> String {
    match e {
        Some(e) if e.n > 1 => format!("{} ({}–{})", f(e.median), f(e.lo), f(e.hi)),
        Some(e) => f(e.median),
        None => "-".into(),
    }
}

fn us(v: f64) -> String {
    if v.is_finite() {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    } else {
        "-".into()
    }
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// `41,234 (40,100–42,011)`.
fn with_range(s: &Option<MedianSpread>, f: fn(f64) -> String) -> String {
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
            "{} req/s, p99 {}{}{}",
            with_range(&Some(*r), fmt::num),
            fmt::ms(l.median),
            c.server_cpu_us
                .map_or_else(String::new, |e| format!(", server {} µs/req", us(e.median))),
            if c.busy_runs > 0 {
                format!(" (busy in {}/{} runs)", c.busy_runs, c.runs.len())
            } else {
                String::new()
            }
        ),
        _ => format!("failed: {}", c.error.as_deref().unwrap_or("no result")),
    };
    fmt::wrap_long_lines(&format!(
        "[{:>w$}/{}] {:<12} {:<34} {body}",
        p.done,
        p.total,
        c.key.arm_label(),
        c.key.cond.describe(),
    ))
}

/// The cell table that fits a terminal: per condition (named once, on its first row) each
/// protocol's req/s with its 95% CI, p99, server CPU per request with its CI, and the busy
/// marks (`busy_column`); [`cells_table`] has every column (`--wide`).
pub fn cells_table_narrow(cells: &[CellResult]) -> String {
    let mut t: Vec<Vec<String>> = vec![vec![
        "condition".into(),
        "protocol".into(),
        ">req/s (95% CI)".into(),
        ">p99 ms".into(),
        ">server µs/req (95% CI)".into(),
        "busy".into(),
    ]];
    let mut last = String::new();
    for c in cells {
        let cond = c.key.cond.describe();
        let shown = if cond == last {
            String::new()
        } else {
            cond.clone()
        };
        last = cond;
        t.push(vec![
            shown,
            c.key.arm_label(),
            if c.error.is_some() && c.runs.is_empty() {
                "error (see notes)".into()
            } else {
                with_ci(&c.rps_ci, fmt::num)
            },
            c.p99_ms.map_or_else(|| "-".into(), |s| ms_short(s.median)),
            with_ci(&c.server_cpu_us, us),
            busy_column(c),
        ]);
    }
    fmt::fit_table(&t, fmt::WIDTH)
}

/// The table of every cell: medians with their 95% bootstrap CI, cost per request, `!`
/// where the machine was busy during some run and `~` where runs fell in a slow spell.
pub fn cells_table(cells: &[CellResult]) -> String {
    let mut t: Vec<Vec<String>> = vec![vec![
        "payload".into(),
        "headers".into(),
        ">c".into(),
        ">conns×streams".into(),
        "link".into(),
        "protocol".into(),
        ">req/s (95% CI)".into(),
        ">p50 ms".into(),
        ">p99 ms (95% CI)".into(),
        ">server µs/req (95% CI)".into(),
        ">client µs/req".into(),
        ">B in/out per req".into(),
        ">MB/s".into(),
        ">failed".into(),
        "busy".into(),
    ]];
    let link_cells = cells
        .iter()
        .any(|c| c.link_use.is_some() || c.path.is_some());
    if link_cells {
        t[0].push(">link use".into());
    }
    for c in cells {
        let k = &c.key;
        let failed: u64 = c.runs.iter().map(|r| r.failed).sum();
        let mut row = vec![
            k.cond.payload.label(),
            k.cond.headers.to_string(),
            k.cond.concurrency.to_string(),
            format!("{}×{}", c.connections, k.cond.streams),
            k.cond.link.to_string(),
            k.arm_label(),
            with_ci(&c.rps_ci, fmt::num),
            c.p50_ms.map_or_else(|| "-".into(), |s| ms_short(s.median)),
            with_ci(&c.p99_ci, ms_short),
            with_ci(&c.server_cpu_us, us),
            opt(c.client_cpu_us, us),
            format!(
                "{}/{}",
                opt(c.bytes_in_per_req, |v| format!("{v:.0}")),
                opt(c.bytes_out_per_req, |v| format!("{v:.0}"))
            ),
            c.mb_per_sec
                .map_or_else(|| "-".into(), |s| format!("{:.1}", s.median)),
            if c.error.is_some() && c.runs.is_empty() {
                "error".into()
            } else {
                failed.to_string()
            },
            busy_column(c),
        ];
        if link_cells {
            let mut u = c.link_use.map_or_else(String::new, |l| {
                format!(
                    "{:.0}% of bw, p50 +{} over floor",
                    l.goodput_pct,
                    fmt::ms(l.p50_above_floor_ms.max(0.0))
                )
            });
            if let Some(p) = &c.path {
                u.push_str(&format!("; path {}", p.brief()));
            }
            row.push(u);
        }
        t.push(row);
    }
    fmt::table(&t)
}

/// The cells table's `busy` column: `! b/n` runs on a busy machine, `~ s` runs in a slow
/// spell (left out of the statistics).
fn busy_column(c: &CellResult) -> String {
    let mut v = Vec::new();
    if c.busy_runs > 0 {
        v.push(format!("! {}/{}", c.busy_runs, c.runs.len()));
    }
    if c.spell_runs > 0 {
        v.push(format!("~ {}", c.spell_runs));
    }
    v.join(" ")
}

/// How many runs the machine was busy during (`!` in the tables).
pub fn busy_line(r: &CompareReport) -> String {
    busy_text(r.busy_runs, r.strict)
}

/// `busy.0` of `busy.1` runs measured while the machine was busy, and what `--strict` does
/// about it (the `machine:` line of compare and upstream).
pub fn busy_text(busy: (usize, usize), strict: bool) -> String {
    format!(
        "{} of {} runs measured while other processes used more than {:.0}% of the CPUs or the \
         hypervisor stole more than {:.0}% (marked !){}",
        busy.0,
        busy.1,
        crate::host::BUSY_OTHER_CPU * 100.0,
        crate::host::BUSY_STEAL * 100.0,
        if strict {
            "; --strict measured busy rounds again (up to twice)"
        } else if busy.0 > 0 {
            "; --strict measures such rounds again"
        } else {
            ""
        }
    )
}

/// The whole terminal summary (settings, cells, decision table, notes), every line within
/// [`fmt::WIDTH`] columns.
pub fn render_text(r: &CompareReport) -> String {
    render_text_with(r, false)
}

/// The terminal summary; `wide` prints every column of the cell table ([`cells_table`]),
/// which may be wider than a terminal.
pub fn render_text_with(r: &CompareReport, wide: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "h2lab compare: {} cells, {} round(s) of {} {}{}{}, in {:.0} s",
        r.cells.len(),
        r.timing.runs,
        fmt::dur(r.timing.duration),
        if r.fresh_connections {
            format!("after a {} warm-up each", fmt::dur(r.timing.warm_up))
        } else {
            format!(
                "on each arm's open connections (warm-up {} on the first)",
                fmt::dur(r.timing.warm_up)
            )
        },
        match r.budget_secs {
            Some(b) => format!(
                " (+{} budget rounds: undecided conditions nearest to deciding first, then CIs \
                 wider than {:.0}%; budget {b:.0} s)",
                r.sequential_rounds,
                100.0 * r.target_width
            ),
            None => String::new(),
        },
        if r.extra_rounds > 0 {
            format!(" (+{} rounds on undecided conditions)", r.extra_rounds)
        } else {
            String::new()
        },
        r.elapsed_secs
    );
    let _ = writeln!(out, "server: {}", r.environment);
    let _ = writeln!(out, "cpus: {}", r.isolation.note);
    let _ = writeln!(out, "machine: {}", busy_line(r));
    for l in &r.links {
        let _ = writeln!(out, "link {l}");
    }
    if r.link_models.iter().any(|l| l.relayed) {
        let _ = writeln!(out, "path: {}", r.path.describe());
    }
    out.push('\n');
    out = fmt::wrap_long_lines(&out);
    if wide {
        out.push_str(&cells_table(&r.cells));
    } else {
        out.push_str(&cells_table_narrow(&r.cells));
    }
    out.push('\n');
    let rounds = r.cells.iter().map(CellResult::rounds).max().unwrap_or(0);
    out.push_str(&super::verdicts::render(
        &r.decisions,
        &r.plan,
        rounds,
        &r.bands,
    ));
    if !r.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &r.notes {
            let _ = writeln!(out, "{}", fmt::wrap(&format!("- {n}"), fmt::WIDTH, "  "));
        }
    }
    if wide {
        // The wide cell table stays as it is (the prose around it is wrapped).
        return out;
    }
    fmt::wrap_long_lines(&out)
}

/// A CSV field, quoted when it needs to be.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A CSV number (4 decimals; empty when not finite).
pub fn csv_num(v: f64) -> String {
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
         mb_per_sec_median,failed,error,arm,rps_ci_lo,rps_ci_hi,p99_ms_ci_lo,p99_ms_ci_hi,\
         server_cpu_us_per_req,server_cpu_us_ci_lo,server_cpu_us_ci_hi,client_cpu_us_per_req,\
         bytes_in_per_req,bytes_out_per_req,busy_runs,goodput_pct,p50_above_floor_ms,\
         spell_runs\n",
    );
    for c in &r.cells {
        let k = &c.key;
        let s =
            |x: &Option<MedianSpread>, f: fn(&MedianSpread) -> f64| x.as_ref().map_or(f64::NAN, f);
        let e = |x: &Option<Estimate>, f: fn(&Estimate) -> f64| x.as_ref().map_or(f64::NAN, f);
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
            (k.arm + 1).to_string(),
            csv_num(e(&c.rps_ci, |x| x.lo)),
            csv_num(e(&c.rps_ci, |x| x.hi)),
            csv_num(e(&c.p99_ci, |x| x.lo)),
            csv_num(e(&c.p99_ci, |x| x.hi)),
            csv_num(e(&c.server_cpu_us, |x| x.median)),
            csv_num(e(&c.server_cpu_us, |x| x.lo)),
            csv_num(e(&c.server_cpu_us, |x| x.hi)),
            csv_num(c.client_cpu_us.unwrap_or(f64::NAN)),
            csv_num(c.bytes_in_per_req.unwrap_or(f64::NAN)),
            csv_num(c.bytes_out_per_req.unwrap_or(f64::NAN)),
            c.busy_runs.to_string(),
            csv_num(c.link_use.map_or(f64::NAN, |l| l.goodput_pct)),
            csv_num(c.link_use.map_or(f64::NAN, |l| l.p50_above_floor_ms)),
            c.spell_runs.to_string(),
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
