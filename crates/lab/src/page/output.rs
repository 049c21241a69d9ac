//! Terminal output and JSON of `h2lab page`.

use std::fmt::Write as _;

use super::slow::{expected_h1_ms, SEED_H1_MS, SEED_H2_MS};
use super::{PageReport, ProtoPage, Ratio};
use crate::fmt;

fn row(label: &str, cols: &[ProtoPage], f: impl Fn(&ProtoPage) -> String) -> Vec<String> {
    let mut v = vec![label.to_owned()];
    v.extend(cols.iter().map(f));
    v
}

fn median_ms(p: &ProtoPage) -> String {
    p.page_ms.map_or_else(|| "-".into(), |s| fmt::ms(s.median))
}

/// The side-by-side table of page loads.
pub fn page_table(cols: &[ProtoPage]) -> String {
    let mut head = vec![String::new()];
    head.extend(cols.iter().map(|c| format!(">{}", c.proto.label())));
    let bytes = |f: fn(&super::load::WireBytes) -> u64| {
        move |p: &ProtoPage| {
            p.median_load
                .as_ref()
                .map_or_else(|| "-".into(), |l| fmt::bytes(f(&l.bytes) as f64))
        }
    };
    let mut rows = vec![
        head,
        row("page load time, median", cols, median_ms),
        row("page load time, p90", cols, |p| fmt::ms(p.page_p90_ms)),
        row("page load time, min–max", cols, |p| {
            p.page_ms.map_or_else(
                || "-".into(),
                |s| format!("{}–{}", fmt::ms(s.min), fmt::ms(s.max)),
            )
        }),
        row("HTML done at (median load)", cols, |p| {
            p.median_load
                .as_ref()
                .map_or_else(|| "-".into(), |l| fmt::ms(l.html_ms))
        }),
        row("connections opened", cols, |p| {
            p.median_load
                .as_ref()
                .map_or_else(|| "-".into(), |l| l.connections.to_string())
        }),
        row("connection limit × streams", cols, |p| {
            format!("{} × {}", p.connections_limit, p.streams)
        }),
        row("requests (failed)", cols, |p| {
            p.median_load
                .as_ref()
                .map_or_else(|| "-".into(), |l| format!("{} ({})", l.requests, l.failed))
        }),
        row("request headers sent", cols, bytes(|b| b.request_headers)),
        row(
            "response headers received",
            cols,
            bytes(|b| b.response_headers),
        ),
        row(
            "  … decompressed",
            cols,
            bytes(|b| b.response_headers_decoded),
        ),
        row("response bodies", cols, bytes(|b| b.response_bodies)),
        row("all bytes written", cols, bytes(|b| b.written)),
        row("all bytes read", cols, bytes(|b| b.read)),
    ];
    let pushed = |f: fn(&super::load::PushBytes) -> u64| {
        move |p: &ProtoPage| {
            p.median_load
                .as_ref()
                .map_or_else(|| "-".into(), |l| fmt::bytes(f(&l.push) as f64))
        }
    };
    if cols
        .iter()
        .any(|p| p.median_load.as_ref().is_some_and(|l| l.push.streams > 0))
    {
        rows.push(row("pushed streams", cols, |p| {
            p.median_load
                .as_ref()
                .map_or_else(|| "-".into(), |l| l.push.streams.to_string())
        }));
        rows.push(row("pushed bytes used", cols, pushed(|b| b.bytes_used)));
        rows.push(row("pushed bytes wasted", cols, pushed(|b| b.bytes_wasted)));
    }
    fmt::table(&rows)
}

/// `HTTP/2 (TLS) loads the page 4.59× faster than HTTP/1.1 (TLS) (95% CI 4.41–4.80×; median
/// 515 ms vs 2.37 s): win.` The factor is the median of the per-round ratios (the ratio of
/// the medians when no round paired the two), the CI that median's (from 2 rounds on), then
/// the verdict ([`Ratio::verdict_text`]).
pub fn ratio_line(r: &Ratio, what: &str) -> String {
    let (factor, ci) = match r.round_ratio {
        Some(e) if e.n >= 2 => (
            e.median,
            format!(
                "95% CI {}–{}; ",
                fmt::ratio(e.lo).trim_end_matches('×'),
                fmt::ratio(e.hi)
            ),
        ),
        Some(e) => (e.median, String::new()),
        None => (r.ratio, String::new()),
    };
    format!(
        "{} {what} {} faster than {} ({ci}median {} vs {}): {}.",
        r.faster.label(),
        fmt::ratio(factor),
        r.slower.label(),
        fmt::ms(r.faster_ms),
        fmt::ms(r.slower_ms),
        r.verdict_text()
    )
}

/// How the verdicts of the ratio lines are reached, with the band used.
pub fn verdict_note(equivalence: f64) -> String {
    format!(
        "Verdict: the median of the per-round ratios of page times (the protocols alternate \
         load by load, so the loads of a round were measured back to back) with its 95% CI; \
         win (CI outside ±{0}), parity (CI within ±{0}) or undecided (CI across the band's \
         edge, or fewer than {1} rounds).",
        super::loss::fmt_pct(equivalence),
        crate::stats::ci::MIN_ROUNDS
    )
}

/// The whole terminal summary.
pub fn render_text(r: &PageReport) -> String {
    let mut out = String::new();
    if let Some(p) = &r.page {
        let _ = writeln!(
            out,
            "\nPage load: {} — HTML + {} sub-resources, {} cold load(s) per protocol (new \
             connections, cache off)\nlink {}\n",
            p.url, p.resources, r.repeat, r.link
        );
        out.push_str(&page_table(&r.protocols));
        if let Some(ratio) = &r.ratio {
            let _ = writeln!(out, "\n{}", ratio_line(ratio, "loads the page"));
        }
        if let Some(ratio) = &r.h3_vs_h2 {
            let _ = writeln!(out, "{}", ratio_line(ratio, "loads the page"));
        }
        if r.ratio.is_some() {
            let _ = writeln!(out, "{}", verdict_note(r.equivalence));
        }
        for p in &r.protocols {
            if let Some(e) = &p.error {
                let _ = writeln!(out, "{}: {e}", p.proto.label());
            }
        }
        for l in super::paths::count_lines(r) {
            let _ = writeln!(out, "{l}");
        }
    }
    if !r.loss.is_empty() {
        let _ = writeln!(
            out,
            "\nPage load under loss: the same page at each loss level ({} cold load(s) per \
             protocol and level, alternated; the table above is the first level). Page time \
             median with its 95% CI; per pair the median of the per-round ratios of page \
             times (below 1: the first protocol is faster) with its 95% CI; win / parity \
             (within ±{}) / undecided (CI across the band's edge, or fewer than {} rounds)\n",
            r.repeat,
            super::loss::fmt_pct(r.equivalence),
            crate::stats::ci::MIN_ROUNDS
        );
        for l in &r.loss {
            let _ = writeln!(out, "link {}", l.link);
        }
        out.push('\n');
        out.push_str(&super::loss::render(&r.loss));
    }
    if let Some(s) = &r.slow {
        let _ = writeln!(
            out,
            "\nSlow endpoint: {} parallel requests to /delay?ms={} ({} run(s) per protocol)\n\
             link {}\n",
            s.config.requests,
            s.config.delay.as_millis(),
            r.repeat.max(1),
            r.link
        );
        let mut head = vec![String::new()];
        head.extend(s.results.iter().map(|c| format!(">{}", c.proto.label())));
        let rows = vec![
            head,
            row("connections opened", &s.results, |p| {
                p.median_load
                    .as_ref()
                    .map_or_else(|| "-".into(), |l| l.connections.to_string())
            }),
            row("all responses done, median", &s.results, median_ms),
            row("in theory (rounds × delay)", &s.results, |p| {
                let rounds = if p.proto.multiplexes() {
                    s.config
                        .requests
                        .div_ceil(p.connections_limit * p.streams.max(1))
                } else {
                    s.config.requests.div_ceil(p.connections_limit)
                };
                format!(
                    "{} round(s) = {}",
                    rounds,
                    fmt::ms(if p.proto.multiplexes() {
                        f64::from(rounds) * s.config.delay.as_secs_f64() * 1000.0
                    } else {
                        expected_h1_ms(&s.config, p.connections_limit)
                    })
                )
            }),
        ];
        out.push_str(&fmt::table(&rows));
        if let Some(ratio) = &s.ratio {
            let _ = writeln!(out, "\n{}", ratio_line(ratio, "finishes"));
            let _ = writeln!(
                out,
                "{}",
                verdict_note(r.equivalence).replace("page times", "times")
            );
        }
        let _ = writeln!(
            out,
            "Seed (Chrome, 6 connections vs HTTP/2): {} vs {} = {}.",
            fmt::ms(SEED_H1_MS),
            fmt::ms(SEED_H2_MS),
            fmt::ratio(SEED_H1_MS / SEED_H2_MS)
        );
    }
    if let Some(lt) = &r.load_test {
        let stages: Vec<String> = lt
            .config
            .stages
            .iter()
            .map(|s| format!("{}:{}", fmt::short_dur(s.duration), s.users))
            .collect();
        let _ = writeln!(
            out,
            "\nLoad test: stages {} (duration:users), think time {}\n",
            stages.join(", "),
            fmt::dur(lt.config.think)
        );
        let mut rows = vec![vec![
            "protocol".to_owned(),
            ">pages".into(),
            ">failed".into(),
            ">page median".into(),
            ">page p90".into(),
            ">peak connections".into(),
        ]];
        for (p, t) in &lt.results {
            rows.push(vec![
                p.label().into(),
                t.pages.len().to_string(),
                t.failed_pages.to_string(),
                t.page_ms.map_or_else(|| "-".into(), |s| fmt::ms(s.median)),
                fmt::ms(t.page_p90_ms),
                t.peak_connections.to_string(),
            ]);
        }
        out.push_str(&fmt::table(&rows));
        for (p, t) in &lt.results {
            if let Some(e) = &t.error {
                let _ = writeln!(out, "{}: {e}", p.label());
            }
        }
        match &lt.ratio {
            Some(ratio) => {
                let _ = writeln!(out, "\n{}", ratio_line(ratio, "loads the page under load"));
                let _ = writeln!(
                    out,
                    "The scenario ran {} times per protocol, alternated; the verdict pairs \
                     each round's median page times, as above.",
                    lt.config.rounds
                );
            }
            None if lt.config.rounds < 2 => {
                let _ = writeln!(
                    out,
                    "\nOne round per protocol, run one after the other: no verdict \
                     (--load-rounds {} or more alternates them and decides).",
                    crate::stats::ci::MIN_ROUNDS
                );
            }
            None => {}
        }
    }
    if let Some(v) = &r.repeat_view {
        out.push_str(&super::repeat::render_text(v, &r.link));
    }
    for b in &r.browser {
        out.push_str(&super::browser_report::render_text(b));
    }
    if !r.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

/// The report as pretty JSON.
pub fn json(r: &PageReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::LabProtocol;
    use crate::stats::ci::{Estimate, Outcome};

    fn ratio(n: usize, lo: f64, hi: f64, outcome: Outcome) -> Ratio {
        Ratio {
            faster: LabProtocol::H2,
            slower: LabProtocol::H1Tls,
            ratio: 4.63,
            faster_ms: 515.0,
            slower_ms: 2370.0,
            round_ratio: Some(Estimate {
                median: 4.59,
                lo,
                hi,
                n,
            }),
            outcome,
            winner: (outcome == Outcome::Win).then_some(LabProtocol::H2),
            equivalence: 0.03,
        }
    }

    #[test]
    fn ratio_lines_state_the_per_round_ratio_its_ci_and_the_verdict() {
        assert_eq!(
            ratio_line(&ratio(6, 4.41, 4.8, Outcome::Win), "loads the page"),
            "HTTP/2 (TLS) loads the page 4.59× faster than HTTP/1.1 (TLS) (95% CI 4.41–4.80×; \
             median 515 ms vs 2.37 s): win."
        );
        assert_eq!(
            ratio_line(&ratio(5, 4.41, 4.8, Outcome::Undecided), "loads the page"),
            "HTTP/2 (TLS) loads the page 4.59× faster than HTTP/1.1 (TLS) (95% CI 4.41–4.80×; \
             median 515 ms vs 2.37 s): undecided (5 rounds: 6 or more can decide)."
        );
        // One round: no interval, the single ratio.
        let one = ratio(1, 4.59, 4.59, Outcome::Undecided);
        assert_eq!(
            ratio_line(&one, "finishes"),
            "HTTP/2 (TLS) finishes 4.59× faster than HTTP/1.1 (TLS) (median 515 ms vs 2.37 s): \
             undecided (1 round: 6 or more can decide)."
        );
        assert!(verdict_note(0.05).contains("±5%"));
    }
}
