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
    let intro = format!(
        "render experiment: {} cold loads per arm, alternated; render = all CSS/JS done. \
         Verdicts from the per-round ratios with their 95% CI, against the ±{} band: a win \
         names the faster arm and its time over the other's (`h2 prio on -48% (-50…-45%)`); \
         slight: the direction is known but the CI crosses the band's edge; parity: inside \
         it; undecided: the CI contains no change and reaches outside the band (≈N more: \
         roughly the rounds that would tell; fewer than {} rounds never decide)",
        r.repeat,
        crate::page::loss::fmt_pct(r.equivalence),
        ci::MIN_ROUNDS
    );
    let _ = writeln!(s, "{}", crate::fmt::wrap(&intro, crate::fmt::WIDTH, ""));
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
            let rounds = v.ratio.map_or(0, |r| r.n);
            let _ = writeln!(
                s,
                "{:<6} {what:<18} {}, {rounds} round{}",
                v.metric,
                v.words(r.equivalence),
                if rounds == 1 { "" } else { "s" }
            );
        }
    }
    s
}
