//! The HTML report of `h2lab compare`.

use std::fmt::Write as _;

use super::pairs;
use super::shell::{document, figure, section, table, utc};
use super::svg::{esc, Bar, BarChart, BarSeries, LineChart, LineSeries, XScale};
use crate::compare::decision::{self, DecisionRow, Metric};
use crate::compare::matrix::Section;
use crate::compare::run::CellResult;
use crate::compare::verdicts::{counts_text, decision_text};
use crate::compare::CompareReport;
use crate::fmt;
use crate::proto::LabProtocol;
use crate::stats::MedianSpread;

fn bar(s: &Option<MedianSpread>) -> Option<Bar> {
    s.map(|s| Bar {
        value: s.median,
        lo: s.min,
        hi: s.max,
    })
}

/// Conditions of `section` in plan order, with their row labels.
fn conditions(r: &CompareReport, section: Section) -> Vec<(usize, String)> {
    r.plan
        .conditions
        .iter()
        .enumerate()
        .filter(|(_, c)| c.section == section)
        .map(|(i, c)| (i, decision::row_label(&c.cond, section)))
        .collect()
}

fn bars_for(
    r: &CompareReport,
    conds: &[(usize, String)],
    protos: &[LabProtocol],
    metric: fn(&CellResult) -> Option<Bar>,
) -> (Vec<String>, Vec<BarSeries>) {
    let cats = conds.iter().map(|(_, l)| l.clone()).collect();
    let series = protos
        .iter()
        .map(|&p| BarSeries {
            name: p.label().into(),
            color: p.color().into(),
            values: conds
                .iter()
                .map(|(i, _)| r.cell(*i, p).and_then(metric))
                .collect(),
        })
        .collect();
    (cats, series)
}

/// One line per protocol for condition `cond`: the `points` of each cell that has any.
fn lines_for(
    r: &CompareReport,
    cond: usize,
    protos: &[LabProtocol],
    points: fn(&CellResult) -> &Vec<(f64, f64)>,
) -> Vec<LineSeries> {
    protos
        .iter()
        .filter_map(|&p| {
            let pts = points(r.cell(cond, p)?);
            (!pts.is_empty()).then(|| LineSeries {
                name: p.label().into(),
                color: p.color().into(),
                points: pts.clone(),
            })
        })
        .collect()
}

fn decision_table(rows: &[&DecisionRow]) -> String {
    let mut t = vec![vec![
        "condition".to_owned(),
        "throughput".into(),
        "p99 latency".into(),
        "server cost (CPU/req)".into(),
    ]];
    for r in rows {
        let mut row = vec![esc(&r.label)];
        for m in Metric::ALL {
            row.push(r.verdict(m).map_or_else(
                || "-".into(),
                |d| pairs::outcome_cell(d.outcome, &decision_text(d, true)),
            ));
        }
        t.push(row);
    }
    table(&t, "decision")
}

/// The forest plots of every family of comparisons measured (like-for-like pairs, A/A
/// controls), a section each, and their tables, one section for all.
fn families(r: &CompareReport) -> (String, String) {
    let (mut forests, mut tables) = (String::new(), String::new());
    for family in decision::families() {
        let (forest, t) = pairs::family_section(&r.decisions, family, &r.bands);
        if forest.is_empty() {
            continue;
        }
        let title = if family == decision::CONTROL {
            "A/A controls: the same protocol as two arms (never a winner)".to_owned()
        } else {
            format!("{family}, like for like: ratios and their confidence")
        };
        forests.push_str(&section(pairs::family_id(family), &title, &forest));
        let _ = write!(tables, "<h3>{}</h3>{t}", esc(&title));
    }
    if tables.is_empty() {
        tables.push_str(
            "<p>No like-for-like pair (h2 and h1-tls, h2c and h1, h3 and h2) was measured.</p>",
        );
    }
    (
        forests,
        section("pairs", "Like-for-like pairs and A/A controls", &tables),
    )
}

fn cells_table(r: &CompareReport) -> String {
    let mut t = vec![vec![
        "payload".to_owned(),
        "headers".into(),
        ">c".into(),
        ">conns × streams".into(),
        "link".into(),
        "protocol".into(),
        ">req/s median".into(),
        ">min–max".into(),
        ">p50".into(),
        ">p99 median".into(),
        ">p99 95% CI".into(),
        ">server µs/req (95% CI)".into(),
        ">client µs/req".into(),
        ">bytes in/out per req".into(),
        ">MB/s".into(),
        ">failed".into(),
        "busy runs".into(),
        "link use; what the path counted".into(),
    ]];
    for c in &r.cells {
        let k = &c.key;
        let range = |s: &Option<MedianSpread>, f: fn(f64) -> String| {
            s.map_or_else(|| "-".into(), |s| format!("{}–{}", f(s.min), f(s.max)))
        };
        t.push(vec![
            esc(&k.cond.payload.label()),
            k.cond.headers.to_string(),
            k.cond.concurrency.to_string(),
            format!("{} × {}", c.connections, k.cond.streams),
            k.cond.link.to_string(),
            format!(
                "<span style=\"color:{}\">■</span> {}",
                k.proto.color(),
                esc(&k.arm_label())
            ),
            c.rps.map_or_else(|| "-".into(), |s| fmt::num(s.median)),
            range(&c.rps, fmt::num),
            c.p50_ms
                .map_or_else(|| "-".into(), |s| esc(&fmt::ms(s.median))),
            c.p99_ms
                .map_or_else(|| "-".into(), |s| esc(&fmt::ms(s.median))),
            c.p99_ci.map_or_else(
                || "-".into(),
                |e| esc(&format!("{}–{}", fmt::ms(e.lo), fmt::ms(e.hi))),
            ),
            c.server_cpu_us.map_or_else(
                || "-".into(),
                |e| format!("{:.1} ({:.1}–{:.1})", e.median, e.lo, e.hi),
            ),
            c.client_cpu_us
                .map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            format!(
                "{} / {}",
                c.bytes_in_per_req
                    .map_or_else(|| "-".into(), |v| format!("{v:.0}")),
                c.bytes_out_per_req
                    .map_or_else(|| "-".into(), |v| format!("{v:.0}"))
            ),
            c.mb_per_sec
                .map_or_else(|| "-".into(), |s| format!("{:.1}", s.median)),
            match &c.error {
                Some(e) if c.runs.is_empty() => format!("<span class=\"note\">{}</span>", esc(e)),
                _ => c.runs.iter().map(|r| r.failed).sum::<u64>().to_string(),
            },
            if c.busy_runs > 0 {
                format!(
                    "<span class=\"note\">! {} of {}</span>",
                    c.busy_runs,
                    c.runs.len()
                )
            } else {
                "0".into()
            },
            esc(&format!(
                "{}{}",
                c.link_use.map_or_else(String::new, |l| format!(
                    "goodput {:.0}% of the link, p50 {} above the floor of {}",
                    l.goodput_pct,
                    fmt::ms(l.p50_above_floor_ms.max(0.0)),
                    fmt::ms(l.floor_ms)
                )),
                c.path
                    .map_or_else(String::new, |p| format!("; {}", p.describe()))
            )),
        ]);
    }
    table(&t, "cells")
}

fn rps_fmt(v: f64) -> String {
    format!("{} req/s", fmt::num(v))
}

fn ms_fmt(v: f64) -> String {
    fmt::ms(v)
}

/// Renders the compare report as a self-contained HTML page.
pub fn render(r: &CompareReport) -> String {
    let protos = r.protocols();
    let mut body = String::new();
    // MedianSpread.
    let b = &r.plan.base;
    let mut intro = String::new();
    let _ = write!(
        intro,
        "<p class=\"lead\">{} cells ({} conditions × {} protocols), each measured in {} rounds \
         of {} after a {} warm-up; in a round every protocol of a condition runs once, back to \
         back, the order rotated. Every decision is the ratio of two protocols' results in the \
         same round: the median of the per-round ratios and its 95% bootstrap confidence \
         interval, against the metric's equivalence band (req/s ±{}, p99 ±{}, server CPU \
         ±{}). <b>Win</b>: the interval lies outside the band; <span class=\"slight\">slight\
         </span>: it leaves 1.0 out but crosses the band's edge (the direction is known, the \
         size small); <i>parity</i>: inside the band; <i>undecided</i>: it contains 1.0 and \
         reaches outside the band (≈N more: roughly the rounds that would tell; \
         <code>--until-decided</code>). Outcomes: {}; A/A controls: {}.</p>",
        r.cells.len(),
        r.plan.conditions.len(),
        protos.len(),
        r.timing.runs,
        esc(&fmt::dur(r.timing.duration)),
        esc(&fmt::dur(r.timing.warm_up)),
        esc(fmt::pct(r.bands.throughput).trim_start_matches('+')),
        esc(fmt::pct(r.bands.p99).trim_start_matches('+')),
        esc(fmt::pct(r.bands.server_cost).trim_start_matches('+')),
        esc(&counts_text(decision::outcome_counts(&r.decisions, false))),
        esc(&counts_text(decision::outcome_counts(&r.decisions, true))),
    );
    let mut kv = vec![vec!["".to_owned(), "".into()]];
    kv.push(vec!["server".into(), esc(&r.environment)]);
    for l in &r.links {
        kv.push(vec!["link".into(), esc(l)]);
    }
    kv.push(vec!["path".into(), esc(&r.path.describe())]);
    kv.push(vec![
        "base conditions".into(),
        esc(&format!(
            "c={} concurrent requests, {} stream(s) per connection, extra request headers: {}, \
             link: {}",
            b.concurrency, b.streams, b.headers, b.link
        )),
    ]);
    kv.push(vec![
        "protocols".into(),
        esc(&protos
            .iter()
            .map(|p| format!("{} = {}", p.name(), p.label()))
            .collect::<Vec<_>>()
            .join(", ")),
    ]);
    kv.push(vec![
        "machine".into(),
        esc(&format!(
            "{} CPUs, {}/{}; client threads {}",
            r.machine.cpus, r.machine.os, r.machine.arch, r.timing.client_threads
        )),
    ]);
    kv.push(vec!["CPUs".into(), esc(&r.isolation.note)]);
    kv.push(vec![
        "busy machine".into(),
        esc(&format!(
            "{} of {} runs measured while other processes used more than {:.0}% of the CPU or \
             more than {:.0}% was stolen{}",
            r.busy_runs.0,
            r.busy_runs.1,
            crate::host::BUSY_OTHER_CPU * 100.0,
            crate::host::BUSY_STEAL * 100.0,
            if r.strict {
                " (--strict: busy rounds measured again)"
            } else {
                ""
            }
        )),
    ]);
    kv.push(vec![
        "slow spells".into(),
        esc(&if r.keep_slow_spells {
            "not looked for (--keep-slow-spells)".to_owned()
        } else {
            format!(
                "{} of {} runs measured in a round where every arm of the condition cost at \
                 least {}x its usual CPU per request (left out of the statistics); first rounds \
                 {}",
                r.spell_runs.0,
                r.spell_runs.1,
                crate::compare::spell::SPELL_FACTOR,
                if r.interleaved {
                    "interleaved across conditions"
                } else {
                    "one condition after the other"
                }
            )
        }),
    ]);
    kv.push(vec![
        "data".into(),
        "<a href=\"results.json\">results.json</a> · <a href=\"results.csv\">results.csv</a>"
            .into(),
    ]);
    intro.push_str(&table(&kv, "kv").replace("<thead><tr><th></th><th></th></tr></thead>", ""));
    body.push_str(&section("summary", "Summary", &intro));

    // Decision tables.
    let mut dec = String::new();
    let mut sections: Vec<Section> = r.decisions.iter().map(|d| d.section).collect();
    sections.dedup();
    for s in &sections {
        let rows: Vec<&DecisionRow> = r.decisions.iter().filter(|d| d.section == *s).collect();
        let _ = write!(dec, "<h3>{}</h3>{}", esc(s.title()), decision_table(&rows));
    }
    if dec.is_empty() {
        dec.push_str("<p>No condition had two protocols with results.</p>");
    }
    let (forests, pair_tables) = families(r);
    body.push_str(&forests);

    // Base charts.
    let base = conditions(r, Section::Base);
    let mut charts = String::new();
    let (cats, series) = bars_for(r, &base, &protos, |c| bar(&c.rps));
    let w = (160.0 + 110.0 * cats.len() as f64).clamp(520.0, 1180.0);
    charts.push_str(&figure(
        &BarChart {
            id: "throughput-by-payload",
            title: "Throughput by payload (median, whiskers: min–max)",
            categories: cats,
            series,
            y_label: "requests per second",
            fmt: &rps_fmt,
            width: w,
        }
        .svg(),
        "Completed responses per second at the base conditions; higher is better.",
    ));
    let (cats, series) = bars_for(r, &base, &protos, |c| bar(&c.p99_ms));
    charts.push_str(&figure(
        &BarChart {
            id: "p99-by-payload",
            title: "p99 latency by payload (median, whiskers: min–max)",
            categories: cats,
            series,
            y_label: "p99 request time (ms)",
            fmt: &ms_fmt,
            width: w,
        }
        .svg(),
        "99th percentile request time at the base conditions; lower is better.",
    ));
    body.push_str(&section(
        "payload",
        "Throughput and p99 by payload",
        &charts,
    ));
    body.push_str(&section("decision", "Decision table", &dec));
    body.push_str(&pair_tables);
    // Percentile curves.
    let mut curves = String::from("<div class=\"grid\">");
    for (i, label) in &base {
        let series = lines_for(r, *i, &protos, |c| &c.percentiles);
        if series.is_empty() {
            continue;
        }
        let id = format!("percentiles-{}", label.trim_start_matches('/'));
        let title = format!("Latency percentiles: {label}");
        curves.push_str(&figure(
            &LineChart {
                id: &id,
                title: &title,
                series,
                x_scale: XScale::Nines,
                x_label: "percentile (all runs merged)",
                y_label: "request time (ms)",
                x_fmt: &|v| format!("{v}"),
                y_fmt: &ms_fmt,
                markers: true,
                width: 580.0,
                height: 280.0,
            }
            .svg(),
            "",
        ));
    }
    curves.push_str("</div>");
    body.push_str(&section(
        "percentiles",
        "Latency percentile curves",
        &curves,
    ));

    // Other sections: bars per condition.
    for s in [
        Section::Concurrency,
        Section::Headers,
        Section::Streams,
        Section::Link,
        Section::Grid,
    ] {
        let conds = conditions(r, s);
        if conds.is_empty() {
            continue;
        }
        let mut inner = String::from("<div class=\"grid\">");
        let w = (160.0 + 95.0 * conds.len() as f64).clamp(520.0, 1180.0);
        let (cats, series) = bars_for(r, &conds, &protos, |c| bar(&c.rps));
        let id_t = format!("throughput-{s:?}").to_lowercase();
        let id_l = format!("p99-{s:?}").to_lowercase();
        let title_t = format!("Throughput {}", s.title());
        let title_l = format!("p99 latency {}", s.title());
        inner.push_str(&figure(
            &BarChart {
                id: &id_t,
                title: &title_t,
                categories: cats,
                series,
                y_label: "requests per second",
                fmt: &rps_fmt,
                width: w,
            }
            .svg(),
            "",
        ));
        let (cats, series) = bars_for(r, &conds, &protos, |c| bar(&c.p99_ms));
        inner.push_str(&figure(
            &BarChart {
                id: &id_l,
                title: &title_l,
                categories: cats,
                series,
                y_label: "p99 request time (ms)",
                fmt: &ms_fmt,
                width: w,
            }
            .svg(),
            "",
        ));
        inner.push_str("</div>");
        let title = format!("Results {}", s.title());
        body.push_str(&section(&format!("{s:?}").to_lowercase(), &title, &inner));
    }

    // Time series of the base cells.
    let mut ts = String::from("<div class=\"grid\">");
    for (i, label) in base.iter().take(8) {
        let series = lines_for(r, *i, &protos, |c| &c.timeline);
        if series.is_empty() {
            continue;
        }
        let id = format!("timeline-{}", label.trim_start_matches('/'));
        let title = format!("req/s over time: {label} (median run)");
        ts.push_str(&figure(
            &LineChart {
                id: &id,
                title: &title,
                series,
                x_scale: XScale::Linear,
                x_label: "seconds after the warm-up",
                y_label: "requests per second",
                x_fmt: &|v| format!("{v:.1}"),
                y_fmt: &rps_fmt,
                markers: false,
                width: 580.0,
                height: 240.0,
            }
            .svg(),
            "",
        ));
    }
    ts.push_str("</div>");
    body.push_str(&section(
        "timeline",
        "Throughput over time (100 ms samples)",
        &ts,
    ));

    body.push_str(&section("cells", "Every cell", &cells_table(r)));
    if !r.notes.is_empty() {
        let mut n = String::from("<ul>");
        for x in &r.notes {
            let _ = write!(n, "<li class=\"note\">{}</li>", esc(x));
        }
        n.push_str("</ul>");
        body.push_str(&section("notes", "Notes", &n));
    }
    let subtitle = format!(
        "{} · {} · {:.0} s · {}",
        utc(r.started_unix),
        match r.preset {
            crate::compare::Preset::Default => "default matrix",
            crate::compare::Preset::Quick => "--quick matrix",
            crate::compare::Preset::Tiny => "tiny matrix",
        },
        r.elapsed_secs,
        r.environment
    );
    document("h2lab compare: HTTP/1.1 vs HTTP/2", &subtitle, &body)
}
