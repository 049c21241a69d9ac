//! The Early Hints experiment's terminal report and JSON.

use super::{HintsReport, HintsVerdict, CHROMIUM_NOTE};
use crate::stats::MedianSpread;

/// The report as JSON.
pub fn json(r: &HintsReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

impl HintsVerdict {
    /// The verdict in compare's words: `hints -35% (-36…-34%)` (a win: the faster side and
    /// its time over the other's), `slight: no hints -2.1% (…)`, `parity hints/no hints
    /// -0.4% (…)`, `undecided hints/no hints (-4.0…+3.0%) ≈7 more`.
    pub fn words(&self, equivalence: f64) -> String {
        let more = self
            .ratio
            .and_then(|r| crate::stats::ci::rounds_to_decide(&r, equivalence));
        // `ratio` is the slower side's time over the faster's; the words read hints / none.
        let hints_over_none = self.ratio.map(|r| {
            if self.hints_faster {
                crate::page::render::inverse(&r)
            } else {
                r
            }
        });
        crate::page::render::time_words(
            self.outcome,
            ("hints", "no hints"),
            hints_over_none.as_ref(),
            more,
        )
    }
}

/// The terminal report.
pub fn render_text(r: &HintsReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let intro = format!(
        "early hints experiment: {} cold loads per arm, alternated; render = all CSS/JS done \
         (and the HTML); floor = the least the link allows (round trips, think time, bytes). \
         Verdicts from the per-round ratios with their 95% CI, against the ±{} band: a win \
         names the faster side and its time over the other's (`hints -35% (-36…-34%)`); \
         slight: the direction is known but the CI crosses the band's edge; parity: inside \
         it; undecided: the CI contains no change and reaches outside the band (≈N more: \
         roughly the rounds that would tell; fewer than {} rounds never decide)",
        r.repeat,
        crate::page::loss::fmt_pct(r.equivalence),
        crate::stats::ci::MIN_ROUNDS
    );
    let _ = writeln!(s, "{}", crate::fmt::wrap(&intro, crate::fmt::WIDTH, ""));
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
            let rounds = v.ratio.map_or(0, |e| e.n);
            let _ = writeln!(
                s,
                "{:<25} {:<6} {}, {rounds} round{}",
                label(v.proto, v.browser),
                v.metric,
                v.words(r.equivalence),
                if rounds == 1 { "" } else { "s" }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::LabProtocol;
    use crate::stats::ci::{Estimate, Outcome};

    fn v(hints_faster: bool, outcome: Outcome, median: f64, lo: f64, hi: f64) -> HintsVerdict {
        HintsVerdict {
            proto: LabProtocol::H2,
            metric: "render",
            browser: false,
            hints_faster,
            ratio: Some(Estimate {
                median,
                lo,
                hi,
                n: 6,
            }),
            outcome,
        }
    }

    /// The verdicts read as compare's decision table: the faster side named for a win or a
    /// slight difference, hints / no hints for parity and undecided.
    #[test]
    fn hints_verdicts_in_compares_words() {
        // Without hints 1.54× slower: hints' time is 35% lower.
        let w = v(true, Outcome::Win, 1.54, 1.52, 1.55).words(0.03);
        assert_eq!(w, "hints -35% (-35…-34%)");
        let w = v(false, Outcome::Slight, 1.03, 1.01, 1.05).words(0.03);
        assert_eq!(w, "slight: no hints -2.9% (-4.8…-1.0%)");
        let w = v(true, Outcome::Parity, 1.004, 0.998, 1.01).words(0.03);
        assert_eq!(w, "parity hints/no hints -0.4% (-1.0…+0.2%)");
        let w = v(false, Outcome::Undecided, 1.0, 0.96, 1.04).words(0.03);
        assert!(
            w.starts_with("undecided hints/no hints (-4.0…+4.0%) ≈"),
            "{w}"
        );
    }
}
