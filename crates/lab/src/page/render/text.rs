//! The render experiment's outputs: the terminal report (per link and page the arms' times,
//! what the path counted during each arm's loads, and the verdicts) and the JSON.

use super::RenderReport;
use crate::stats::ci;
use crate::stats::MedianSpread;

/// The report as JSON.
pub fn json(r: &RenderReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// The terminal report.
pub fn render_text(r: &RenderReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "render experiment: {} cold loads per arm, alternated; render = all CSS/JS done; \
         verdicts from the per-round ratios (95% CI): win, parity (within the ±{} band) or \
         undecided (fewer than {} rounds, or the CI across the band's edge)",
        r.repeat,
        crate::page::loss::fmt_pct(r.equivalence),
        ci::MIN_ROUNDS
    );
    let _ = writeln!(s, "{}", r.path);
    for l in &r.links {
        let _ = writeln!(
            s,
            "\nlink {} ({}), page {} {} ({} sub-resources, {} CSS/JS)",
            l.link.name, l.description, l.page, l.path, l.resources, l.render_blocking
        );
        if let Some(sides) = &l.path_sides {
            let _ = writeln!(s, "{sides}");
        }
        let _ = writeln!(
            s,
            "{:<13} {:>22} {:>22} {:>7} {:>7}",
            "arm", "render (median, range)", "page (median, range)", "pushed", "wasted"
        );
        let cell = |x: Option<MedianSpread>| match x {
            Some(v) => format!(
                "{} ({}-{})",
                crate::fmt::ms(v.median),
                crate::fmt::ms(v.min),
                crate::fmt::ms(v.max)
            ),
            None => "-".into(),
        };
        for a in &l.arms {
            let _ = writeln!(
                s,
                "{:<13} {:>22} {:>22} {:>7} {:>7}{}",
                a.arm.label(),
                cell(a.render_ms),
                cell(a.page_ms),
                a.pushed_bytes,
                a.pushed_wasted_bytes,
                a.error
                    .as_ref()
                    .map_or(String::new(), |e| format!("  error: {e}"))
            );
        }
        for a in &l.arms {
            if let Some(c) = &a.path {
                let _ = writeln!(s, "path during {} loads: {}", a.arm.label(), c.brief());
            }
        }
        let all = l.verdicts.iter().map(|v| ("best of all arms", v));
        let prio = l.priorities.iter().map(|v| ("h2 prio on vs off", v));
        let push = l.push.iter().map(|v| ("h2 push vs no push", v));
        for (what, v) in all.chain(prio).chain(push) {
            let ci = v.ratio.filter(|r| r.n >= 2).map_or(String::new(), |r| {
                format!(" (95% CI {:.2}-{:.2}x, {} rounds)", r.lo, r.hi, r.n)
            });
            let _ = writeln!(
                s,
                "{:<6} {what:<17} {}: {} {:.2}x faster than {}{ci}",
                v.metric,
                v.outcome,
                v.best.label(),
                1.0 + v.margin,
                v.runner_up.label()
            );
        }
    }
    s
}
