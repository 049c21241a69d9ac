//! The HTML report of `h2lab page`.

use std::fmt::Write as _;

use super::shell::{document, figure, section, table, utc};
use super::svg::{
    esc, Bar, BarChart, BarSeries, LineChart, LineSeries, Waterfall, WaterfallRow, XScale,
};
use crate::fmt;
use crate::page::load::PageLoad;
use crate::page::output::{ratio_line, verdict_note};
use crate::page::{PageReport, ProtoPage};
use crate::stats::ci::Outcome;

fn ms_fmt(v: f64) -> String {
    fmt::ms(v)
}

fn bytes_fmt(v: f64) -> String {
    fmt::bytes(v)
}

fn time_bars(id: &str, title: &str, cols: &[ProtoPage]) -> String {
    let series = cols
        .iter()
        .map(|p| BarSeries {
            name: p.proto.label().into(),
            color: p.proto.color().into(),
            values: vec![
                p.page_ms.map(|s| Bar {
                    value: s.median,
                    lo: s.min,
                    hi: s.max,
                }),
                p.page_ms.map(|_| Bar::plain(p.page_p90_ms)),
            ],
        })
        .collect();
    BarChart {
        id,
        title,
        categories: vec!["median".into(), "p90".into()],
        series,
        y_label: "time (ms)",
        fmt: &ms_fmt,
        width: 560.0,
    }
    .svg()
}

fn waterfall(
    id: &str,
    title: &str,
    load: &PageLoad,
    x_max: f64,
    paths: Option<&[String]>,
) -> String {
    let mut rows: Vec<WaterfallRow> = load
        .timeline
        .iter()
        .map(|t| WaterfallRow {
            start: t.sent_ms,
            first_byte: t.first_byte_ms,
            end: t.done_ms,
            conn: t.conn,
            label: format!(
                "{} on connection {}: sent {}, first byte {}, done {} ({} B, status {})",
                paths
                    .and_then(|p| p.get(t.path))
                    .cloned()
                    .unwrap_or_else(|| format!("request {}", t.path)),
                t.conn,
                fmt::ms(t.sent_ms),
                fmt::ms(t.first_byte_ms),
                fmt::ms(t.done_ms),
                t.body_bytes,
                t.status
            ),
        })
        .collect();
    rows.sort_by(|a, b| a.start.total_cmp(&b.start));
    Waterfall {
        id,
        title,
        rows,
        conns: load
            .conns
            .iter()
            .map(|c| (c.id, c.opened_ms, c.ready_ms))
            .collect(),
        x_max,
        width: 1160.0,
    }
    .svg()
}

fn page_table(cols: &[ProtoPage]) -> String {
    let mut head = vec![String::new()];
    head.extend(cols.iter().map(|c| {
        format!(
            "><span style=\"color:{}\">■</span> {}",
            c.proto.color(),
            esc(c.proto.label())
        )
    }));
    let mut rows = vec![head];
    let mut add = |label: &str, f: &dyn Fn(&ProtoPage) -> String| {
        let mut r = vec![esc(label)];
        r.extend(cols.iter().map(|c| esc(&f(c))));
        rows.push(r);
    };
    let ml = |p: &ProtoPage, f: &dyn Fn(&PageLoad) -> String| {
        p.median_load.as_ref().map_or_else(|| "-".into(), f)
    };
    add("page load time, median", &|p| {
        p.page_ms.map_or_else(|| "-".into(), |s| fmt::ms(s.median))
    });
    add("page load time, p90", &|p| fmt::ms(p.page_p90_ms));
    add("min – max", &|p| {
        p.page_ms.map_or_else(
            || "-".into(),
            |s| format!("{} – {}", fmt::ms(s.min), fmt::ms(s.max)),
        )
    });
    add("loads", &|p| p.loads.len().to_string());
    add("connections opened", &|p| {
        ml(p, &|l| l.connections.to_string())
    });
    add("connection limit × streams", &|p| {
        format!("{} × {}", p.connections_limit, p.streams)
    });
    add("requests (failed)", &|p| {
        ml(p, &|l| format!("{} ({})", l.requests, l.failed))
    });
    add("request headers sent", &|p| {
        ml(p, &|l| fmt::bytes(l.bytes.request_headers as f64))
    });
    add("response headers received", &|p| {
        ml(p, &|l| fmt::bytes(l.bytes.response_headers as f64))
    });
    add("… decompressed", &|p| {
        ml(p, &|l| fmt::bytes(l.bytes.response_headers_decoded as f64))
    });
    add("response bodies", &|p| {
        ml(p, &|l| fmt::bytes(l.bytes.response_bodies as f64))
    });
    add("all bytes written / read", &|p| {
        ml(p, &|l| {
            format!(
                "{} / {}",
                fmt::bytes(l.bytes.written as f64),
                fmt::bytes(l.bytes.read as f64)
            )
        })
    });
    table(&rows, "page")
}

fn header_bytes_chart(cols: &[ProtoPage]) -> String {
    let series = cols
        .iter()
        .map(|p| {
            let b = p.median_load.as_ref().map(|l| l.bytes);
            BarSeries {
                name: p.proto.label().into(),
                color: p.proto.color().into(),
                values: vec![
                    b.map(|b| Bar::plain(b.request_headers as f64)),
                    b.map(|b| Bar::plain(b.response_headers as f64)),
                    b.map(|b| Bar::plain(b.response_headers_decoded as f64)),
                ],
            }
        })
        .collect();
    BarChart {
        id: "header-bytes",
        title: "Header bytes per page load (header compression)",
        categories: vec![
            "request headers sent".into(),
            "response headers received".into(),
            "response headers decoded".into(),
        ],
        series,
        y_label: "bytes",
        fmt: &bytes_fmt,
        width: 640.0,
    }
    .svg()
}

fn connections_chart(id: &str, cols: &[ProtoPage]) -> String {
    let series = cols
        .iter()
        .map(|p| BarSeries {
            name: p.proto.label().into(),
            color: p.proto.color().into(),
            values: vec![p
                .median_load
                .as_ref()
                .map(|l| Bar::plain(f64::from(l.connections)))],
        })
        .collect();
    BarChart {
        id,
        title: "Connections opened per page load",
        categories: vec!["connections".into()],
        series,
        y_label: "connections",
        fmt: &|v| format!("{v:.0}"),
        width: 420.0,
    }
    .svg()
}

/// The verdicts of the report's ratio lines in a table: scenario, faster and slower
/// protocol, per-round ratio with its 95% CI, paired rounds, outcome. Empty without one.
fn verdict_table(r: &PageReport) -> String {
    let lines = r
        .ratio
        .iter()
        .chain(r.h3_vs_h2.iter())
        .map(|x| ("page load", x))
        .chain(
            r.slow
                .iter()
                .filter_map(|s| s.ratio.as_ref())
                .map(|x| ("slow endpoint", x)),
        )
        .chain(
            r.load_test
                .iter()
                .filter_map(|l| l.ratio.as_ref())
                .map(|x| ("load test", x)),
        );
    let mut rows = vec![vec![
        "scenario".to_owned(),
        "faster".into(),
        "slower".into(),
        ">ratio (per-round median)".into(),
        ">95% CI".into(),
        ">rounds".into(),
        "verdict".into(),
    ]];
    for (what, x) in lines {
        let e = x.round_ratio.as_ref();
        let class = match x.outcome {
            Outcome::Win => "win",
            _ => "par",
        };
        rows.push(vec![
            what.into(),
            esc(x.faster.label()),
            esc(x.slower.label()),
            esc(&fmt::ratio(e.map_or(x.ratio, |e| e.median))),
            e.filter(|e| e.n >= 2).map_or_else(
                || "-".into(),
                |e| esc(&format!("{}–{}", fmt::ratio(e.lo), fmt::ratio(e.hi))),
            ),
            e.map_or(0, |e| e.n).to_string(),
            format!("<span class=\"{class}\">{}</span>", esc(&x.verdict_text())),
        ]);
    }
    if rows.len() == 1 {
        return String::new();
    }
    let mut out = table(&rows, "verdicts");
    let _ = write!(
        out,
        "<p class=\"par\">{}</p>",
        esc(&verdict_note(r.equivalence))
    );
    out
}

/// Renders the page report as a self-contained HTML page.
pub fn render(r: &PageReport) -> String {
    let mut body = String::new();
    let mut intro = String::new();
    for ratio in r.ratio.iter().chain(r.h3_vs_h2.iter()) {
        let _ = write!(
            intro,
            "<p class=\"lead\"><b>{}</b></p>",
            esc(&ratio_line(ratio, "loads the page"))
        );
    }
    if let Some(s) = r.slow.as_ref().and_then(|s| s.ratio.as_ref()) {
        let _ = write!(
            intro,
            "<p class=\"lead\"><b>{}</b></p>",
            esc(&ratio_line(s, "finishes the parallel slow requests"))
        );
    }
    if let Some(l) = r.load_test.as_ref().and_then(|l| l.ratio.as_ref()) {
        let _ = write!(
            intro,
            "<p class=\"lead\"><b>{}</b></p>",
            esc(&ratio_line(l, "loads the page under load"))
        );
    }
    intro.push_str(&verdict_table(r));
    let mut kv = vec![vec![String::new(), String::new()]];
    if let Some(p) = &r.page {
        kv.push(vec![
            "page".into(),
            esc(&format!(
                "{} — HTML + {} same-origin sub-resources{}",
                p.url,
                p.resources,
                if p.other_origins > 0 {
                    format!(" ({} on other origins, not loaded)", p.other_origins)
                } else {
                    String::new()
                }
            )),
        ]);
        kv.push(vec![
            "method".into(),
            esc(&format!(
                "{} cold load(s) per protocol, alternated; new connections and no cache for \
                 every load; sub-resources requested once the HTML is complete",
                r.repeat
            )),
        ]);
    }
    kv.push(vec!["server".into(), esc(&r.environment)]);
    kv.push(vec!["link".into(), esc(&r.link)]);
    kv.push(vec![
        "machine".into(),
        esc(&format!(
            "{} CPUs, {}/{}",
            r.machine.cpus, r.machine.os, r.machine.arch
        )),
    ]);
    kv.push(vec![
        "data".into(),
        "<a href=\"results.json\">results.json</a>".into(),
    ]);
    intro.push_str(&table(&kv, "kv").replace("<thead><tr><th></th><th></th></tr></thead>", ""));
    body.push_str(&section("summary", "Summary", &intro));

    if r.page.is_some() && !r.protocols.is_empty() {
        let mut inner = page_table(&r.protocols);
        inner.push_str("<div class=\"grid\">");
        inner.push_str(&figure(
            &time_bars("page-time", "Page load time", &r.protocols),
            "From the start of the load (before connecting) to the last response.",
        ));
        inner.push_str(&figure(
            &connections_chart("page-connections", &r.protocols),
            "",
        ));
        inner.push_str(&figure(
            &header_bytes_chart(&r.protocols),
            "HTTP/1.1 sends and receives header text with every request; HTTP/2 compresses \
             repeated headers with HPACK.",
        ));
        inner.push_str("</div>");
        body.push_str(&section("loads", "Page loads", &inner));
        let x_max = r
            .protocols
            .iter()
            .filter_map(|p| p.median_load.as_ref())
            .map(|l| l.page_ms)
            .fold(0.0f64, f64::max);
        let mut wf = String::new();
        for p in &r.protocols {
            if let Some(l) = &p.median_load {
                let id = format!("waterfall-{}", p.proto.name());
                let title = format!(
                    "{}: {} requests on {} connection(s), {}",
                    p.proto.label(),
                    l.requests,
                    l.connections,
                    fmt::ms(l.page_ms)
                );
                wf.push_str(&figure(
                    &waterfall(&id, &title, l, x_max, None),
                    "One row per request in the order sent; light: waiting for the response, \
                     solid: receiving it; grey bars on top: connection set-up (TCP + TLS). \
                     Same time axis for every protocol.",
                ));
            }
        }
        body.push_str(&section("waterfalls", "Waterfalls (median load)", &wf));
    }

    if !r.loss.is_empty() {
        body.push_str(&section(
            "loss",
            "Page load under loss: HTTP/1.1 vs HTTP/2 vs HTTP/3",
            &super::page_loss::page_loss_section(&r.loss),
        ));
    }

    if let Some(s) = &r.slow {
        let mut inner = String::new();
        let _ = write!(
            inner,
            "<p>{} parallel requests to <code>/delay?ms={}</code> — the seed's browser case \
             (Chrome, 6 connections: 34,182 ms; HTTP/2: 2,270 ms; 15×).</p>",
            s.config.requests,
            s.config.delay.as_millis()
        );
        inner.push_str(&page_table(&s.results));
        let series = s
            .results
            .iter()
            .map(|p| BarSeries {
                name: p.proto.label().into(),
                color: p.proto.color().into(),
                values: vec![p.page_ms.map(|m| Bar {
                    value: m.median,
                    lo: m.min,
                    hi: m.max,
                })],
            })
            .collect();
        inner.push_str(&figure(
            &BarChart {
                id: "slow-time",
                title: "All slow responses done",
                categories: vec![format!("{} × /delay", s.config.requests)],
                series,
                y_label: "time (ms)",
                fmt: &ms_fmt,
                width: 480.0,
            }
            .svg(),
            "",
        ));
        let x_max = s
            .results
            .iter()
            .filter_map(|p| p.median_load.as_ref())
            .map(|l| l.page_ms)
            .fold(0.0f64, f64::max);
        for p in &s.results {
            if let Some(l) = &p.median_load {
                let id = format!("slow-waterfall-{}", p.proto.name());
                let title = format!("{}: {} connection(s)", p.proto.label(), l.connections);
                inner.push_str(&figure(&waterfall(&id, &title, l, x_max, None), ""));
            }
        }
        body.push_str(&section("slow", "Slow endpoint", &inner));
    }

    if let Some(lt) = &r.load_test {
        let mut inner = String::new();
        let stages: Vec<String> = lt
            .config
            .stages
            .iter()
            .map(|s| format!("{} → {} users", fmt::short_dur(s.duration), s.users))
            .collect();
        let _ = write!(
            inner,
            "<p>Stages: {}; think time {}; every page load cold.</p>",
            esc(&stages.join(", ")),
            esc(&fmt::dur(lt.config.think))
        );
        let mut t = vec![vec![
            "protocol".to_owned(),
            ">pages".into(),
            ">failed".into(),
            ">page median".into(),
            ">page p90".into(),
            ">peak connections".into(),
        ]];
        for (p, x) in &lt.results {
            t.push(vec![
                esc(p.label()),
                x.pages.len().to_string(),
                x.failed_pages.to_string(),
                x.page_ms
                    .map_or_else(|| "-".into(), |s| esc(&fmt::ms(s.median))),
                esc(&fmt::ms(x.page_p90_ms)),
                x.peak_connections.to_string(),
            ]);
        }
        inner.push_str(&table(&t, "load"));
        inner.push_str("<div class=\"grid\">");
        let line = |id: &str,
                    title: &str,
                    y: &str,
                    pts: &dyn Fn(&crate::page::users::LoadTestResult) -> Vec<(f64, f64)>,
                    markers: bool| {
            LineChart {
                id,
                title,
                series: lt
                    .results
                    .iter()
                    .map(|(p, x)| LineSeries {
                        name: p.label().into(),
                        color: p.color().into(),
                        points: pts(x),
                    })
                    .collect(),
                x_scale: XScale::Linear,
                x_label: "seconds since the start",
                y_label: y,
                x_fmt: &|v| format!("{v:.0}"),
                y_fmt: &|v| format!("{v:.1}"),
                markers,
                width: 580.0,
                height: 260.0,
            }
            .svg()
        };
        inner.push_str(&figure(
            &line(
                "load-page-time",
                "Page load time over time",
                "page load time (ms)",
                &|x| x.pages.clone(),
                true,
            ),
            "Each point is a completed page load.",
        ));
        inner.push_str(&figure(
            &line(
                "load-connections",
                "Open connections over time",
                "connections",
                &|x| {
                    x.samples
                        .iter()
                        .map(|s| (s.t, s.connections as f64))
                        .collect()
                },
                false,
            ),
            "",
        ));
        inner.push_str(&figure(
            &line(
                "load-rps",
                "Requests per second over time",
                "req/s",
                &|x| x.samples.iter().map(|s| (s.t, s.req_per_sec)).collect(),
                false,
            ),
            "",
        ));
        inner.push_str(&figure(
            &line(
                "load-users",
                "Virtual users over time",
                "users",
                &|x| {
                    x.samples
                        .iter()
                        .map(|s| (s.t, f64::from(s.users)))
                        .collect()
                },
                false,
            ),
            "",
        ));
        inner.push_str("</div>");
        body.push_str(&section("load", "Load test", &inner));
    }
    if !r.browser.is_empty() {
        body.push_str(&section(
            "browser",
            "Real browser (Chromium) beside the simulated loads",
            &super::browser::render(&r.browser),
        ));
    }
    let counted = crate::page::paths::count_lines(r);
    if !counted.is_empty() {
        let li: String = counted
            .iter()
            .map(|l| format!("<li>{}</li>", esc(l)))
            .collect();
        body.push_str(&section(
            "path",
            "What the path counted",
            &format!("<ul>{li}</ul>"),
        ));
    }
    if !r.notes.is_empty() {
        let mut n = String::from("<ul>");
        for x in &r.notes {
            let _ = write!(n, "<li class=\"note\">{}</li>", esc(x));
        }
        n.push_str("</ul>");
        body.push_str(&section("notes", "Notes", &n));
    }
    let subtitle = format!(
        "{} · {:.0} s · {}",
        utc(r.started_unix),
        r.elapsed_secs,
        r.link
    );
    document("h2lab page: browser-like page loads", &subtitle, &body)
}
