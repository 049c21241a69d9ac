//! The Early Hints experiment's terminal report and JSON.

use super::{HintsReport, CHROMIUM_NOTE};
use crate::stats::MedianSpread;

/// The report as JSON.
pub fn json(r: &HintsReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// The terminal report.
pub fn render_text(r: &HintsReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "early hints experiment: {} cold loads per arm, alternated; render = all CSS/JS done \
         (and the HTML); floor = the least the link allows (round trips, think time, bytes); \
         verdicts from the per-round ratios (95% CI): win, slight, parity (within ±{}) or \
         undecided",
        r.repeat,
        crate::page::loss::fmt_pct(r.equivalence)
    );
    let _ = writeln!(s, "{CHROMIUM_NOTE}");
    let _ = writeln!(s, "{}", r.path);
    for l in &r.links {
        let _ = writeln!(
            s,
            "\nlink {} ({}), page {} ({} sub-resources, {} CSS/JS, think {})",
            l.link.name,
            l.description,
            l.path,
            l.resources,
            l.render_blocking,
            crate::fmt::ms(l.think_ms)
        );
        let mut rows = vec![vec![
            "protocol".to_owned(),
            "hints".into(),
            ">render".into(),
            ">min–max".into(),
            ">floor".into(),
            ">×floor".into(),
            ">page".into(),
            ">min–max".into(),
            ">floor".into(),
            ">×floor".into(),
            ">preloaded".into(),
        ]];
        let ms = crate::fmt::ms;
        for a in &l.arms {
            let med = |m: Option<MedianSpread>| m.map_or("-".into(), |m| ms(m.median));
            let range = |m: Option<MedianSpread>| {
                m.map_or("-".into(), |m| format!("{}–{}", ms(m.min), ms(m.max)))
            };
            let fl = |f: Option<f64>| f.map_or("-".into(), ms);
            let x = |m: Option<MedianSpread>, f: Option<f64>| match (m, f) {
                (Some(m), Some(f)) => crate::page::floor::versus(m.median, f),
                _ => "-".into(),
            };
            let (fr, fp) = (a.floor.map(|f| f.render_ms), a.floor.map(|f| f.page_ms));
            rows.push(vec![
                label(a.proto, a.browser),
                if a.hints { "103" } else { "none" }.into(),
                med(a.render_ms),
                range(a.render_ms),
                fl(fr),
                x(a.render_ms, fr),
                med(a.page_ms),
                range(a.page_ms),
                fl(fp),
                x(a.page_ms, fp),
                a.preloaded.map_or("-".into(), |n| n.to_string()),
            ]);
        }
        s.push_str(&crate::fmt::table(&rows));
        if let Some(sides) = &l.path_sides {
            let _ = writeln!(s, "{sides}");
        }
        for a in &l.arms {
            if let Some(c) = &a.path {
                let hints = if a.hints { "103" } else { "no hints" };
                let who = label(a.proto, a.browser);
                let _ = writeln!(s, "path during {who} {hints} loads: {}", c.brief());
            }
        }
        for a in l.arms.iter().filter(|a| a.error.is_some()) {
            let _ = writeln!(
                s,
                "{} {}: {}",
                label(a.proto, a.browser),
                if a.hints { "hints" } else { "no hints" },
                a.error.as_deref().unwrap_or_default()
            );
        }
        for v in &l.verdicts {
            let ci = v.ratio.as_ref().map_or(String::new(), |e| {
                format!(
                    " {:.2}× (95% CI {:.2}–{:.2}×, {} rounds)",
                    e.median, e.lo, e.hi, e.n
                )
            });
            let _ = writeln!(
                s,
                "{:<25} {:<6} {} faster{ci}: {}",
                label(v.proto, v.browser),
                v.metric,
                if v.hints_faster {
                    "with hints"
                } else {
                    "without hints"
                },
                v.outcome.name()
            );
        }
    }
    s
}

/// `HTTP/2 (TLS)`, or `chromium HTTP/2 (TLS)` for a browser arm.
fn label(p: crate::proto::LabProtocol, browser: bool) -> String {
    if browser {
        format!("chromium {}", p.label())
    } else {
        p.label().to_owned()
    }
}
