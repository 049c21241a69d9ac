//! The forest plot: one row per condition, a ratio and its confidence interval on a log
//! axis, against a line at 1.0 and the shaded equivalence band. Green rows are wins, blue
//! slight differences, grey parity, olive undecided (colours no protocol uses).

use std::fmt::Write as _;

use super::svg::esc;
use crate::stats::ci::{Estimate, Outcome};

/// One row of a forest plot.
#[derive(Debug, Clone)]
pub struct ForestRow {
    /// Row label (condition and pair).
    pub label: String,
    /// The ratio and its CI.
    pub ratio: Estimate,
    /// Its outcome (colours the row).
    pub outcome: Outcome,
}

/// A forest plot (see the module docs).
#[derive(Debug, Clone)]
pub struct ForestPlot<'a> {
    /// Element id.
    pub id: &'a str,
    /// Title above the plot.
    pub title: &'a str,
    /// What the ratio is (`HTTP/2 ÷ HTTP/1.1 req/s`), under the axis.
    pub x_label: &'a str,
    /// The rows, top to bottom.
    pub rows: Vec<ForestRow>,
    /// Half-width of the equivalence band (0.03: 0.97–1.03).
    pub band: f64,
}

fn color(o: Outcome) -> &'static str {
    match o {
        Outcome::Win => "#2ca02c",
        Outcome::Slight => "#1f5fa8",
        Outcome::Parity => "#7f7f7f",
        Outcome::Undecided => "#bcbd22",
    }
}

impl ForestPlot<'_> {
    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> String {
        let (w, left, right, top, row_h) = (760.0, 250.0, 24.0, 34.0, 18.0);
        let h = top + row_h * self.rows.len().max(1) as f64 + 42.0;
        let finite = |v: f64| v.is_finite() && v > 0.0;
        let mut lo = 1.0 - self.band * 2.0;
        let mut hi = 1.0 + self.band * 2.0;
        for r in &self.rows {
            for v in [r.ratio.lo, r.ratio.hi, r.ratio.median] {
                if finite(v) {
                    lo = f64::min(lo, v);
                    hi = f64::max(hi, v);
                }
            }
        }
        let (llo, lhi) = ((lo * 0.95).ln(), (hi * 1.05).ln());
        let x = |v: f64| left + (v.max(1e-9).ln() - llo) / (lhi - llo) * (w - left - right);
        let bottom = h - 42.0;
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart forest\" id=\"{}\" \
             viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" \
             font-size=\"11\"><text x=\"{}\" y=\"18\" font-size=\"13\" font-weight=\"600\">{}\
             </text>",
            esc(self.id),
            left,
            esc(self.title)
        );
        // Equivalence band and the line at 1.
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#e8f0e8\"/>\
             <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{top}\" y2=\"{bottom:.1}\" stroke=\"#333\" \
             stroke-width=\"1\"/>",
            x(1.0 - self.band),
            x(1.0 + self.band) - x(1.0 - self.band),
            bottom - top,
            x(1.0),
            x(1.0)
        );
        // Ticks.
        for t in [
            0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 4.0, 8.0,
        ] {
            if t < lo * 0.95 || t > hi * 1.05 {
                continue;
            }
            let _ = write!(
                s,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{bottom:.1}\" y2=\"{1:.1}\" \
                 stroke=\"#999\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{t}\
                 </text>",
                x(t),
                bottom + 4.0,
                bottom + 16.0
            );
        }
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            (left + w - right) / 2.0,
            bottom + 32.0,
            esc(self.x_label)
        );
        for (i, r) in self.rows.iter().enumerate() {
            let y = top + row_h * (i as f64 + 0.5);
            let c = color(r.outcome);
            let e = &r.ratio;
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 8.0,
                y + 4.0,
                esc(&r.label)
            );
            if !(finite(e.lo) && finite(e.hi) && finite(e.median)) {
                continue;
            }
            let _ = write!(
                s,
                "<g class=\"mark\" data-series=\"{}\" data-value=\"{:.4}\"><title>{}: {:.3} \
                 ({:.3}–{:.3}), {}</title><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" \
                 y2=\"{y:.1}\" stroke=\"{c}\" stroke-width=\"2\"/><circle cx=\"{:.1}\" \
                 cy=\"{y:.1}\" r=\"4\" fill=\"{c}\"/></g>",
                esc(&r.label),
                e.median,
                esc(&r.label),
                e.median,
                e.lo,
                e.hi,
                r.outcome.name(),
                x(e.lo),
                x(e.hi),
                x(e.median)
            );
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_one_mark_per_row_and_the_band() {
        let est = |m: f64| Estimate {
            median: m,
            lo: m * 0.97,
            hi: m * 1.03,
            n: 6,
        };
        let p = ForestPlot {
            id: "f",
            title: "t",
            x_label: "ratio",
            rows: vec![
                ForestRow {
                    label: "/ping h2c/h1".into(),
                    ratio: est(1.2),
                    outcome: Outcome::Win,
                },
                ForestRow {
                    label: "1k <b>".into(),
                    ratio: est(1.0),
                    outcome: Outcome::Parity,
                },
                ForestRow {
                    label: "10k".into(),
                    ratio: est(1.02),
                    outcome: Outcome::Slight,
                },
                ForestRow {
                    label: "100k".into(),
                    ratio: est(1.0),
                    outcome: Outcome::Undecided,
                },
            ],
            band: 0.03,
        };
        let s = p.svg();
        assert_eq!(s.matches("class=\"mark\"").count(), 4);
        // All four outcomes, each its own colour.
        for c in ["#2ca02c", "#1f5fa8", "#7f7f7f", "#bcbd22", "#e8f0e8"] {
            assert!(s.contains(c), "{c}");
        }
        assert!(s.contains("1k &lt;b&gt;"));
    }
}
