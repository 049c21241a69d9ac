//! Grouped bar charts with spread whiskers.

use std::fmt::Write as _;

use super::*;

/// One bar: a median with its spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Bar height (the median).
    pub value: f64,
    /// Whisker low end (min), or the value.
    pub lo: f64,
    /// Whisker high end (max), or the value.
    pub hi: f64,
}

impl Bar {
    /// A bar without a spread.
    pub fn plain(v: f64) -> Bar {
        Bar {
            value: v,
            lo: v,
            hi: v,
        }
    }
}

/// A named, coloured series of bars (one per category; `None` = not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    /// Legend name.
    pub name: String,
    /// Fill colour.
    pub color: String,
    /// One entry per category.
    pub values: Vec<Option<Bar>>,
}

/// Grouped vertical bars with min–max whiskers.
pub struct BarChart<'a> {
    /// Identifier (`data-chart`).
    pub id: &'a str,
    /// Title drawn on top.
    pub title: &'a str,
    /// Category (group) labels along x.
    pub categories: Vec<String>,
    /// Series (bars within a group).
    pub series: Vec<BarSeries>,
    /// Y axis label.
    pub y_label: &'a str,
    /// Formats values for ticks and tooltips.
    pub fmt: &'a dyn Fn(f64) -> String,
    /// Width in px.
    pub width: f64,
}

impl BarChart<'_> {
    /// The SVG.
    pub fn svg(&self) -> String {
        let legend: Vec<(&str, &str)> = self
            .series
            .iter()
            .map(|s| (s.name.as_str(), s.color.as_str()))
            .collect();
        let top = top_for(&legend, 62.0, self.width - 12.0);
        let f = Frame {
            w: self.width,
            h: 254.0 + top,
            left: 62.0,
            right: 12.0,
            top,
            bottom: 44.0,
        };
        let mut out = String::new();
        f.open("bars", self.id, self.title, &mut out);
        f.legend(&legend, &mut out);
        let ymax_raw = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .map(|b| b.hi.max(b.value))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let ticks = nice_ticks(ymax_raw * 1.05, 5);
        let ymax = ticks.last().copied().unwrap_or(1.0).max(1e-12);
        f.y_axis(&ticks, ymax, &|v| short_num(v), self.y_label, &mut out);
        let ncat = self.categories.len().max(1);
        let gw = f.pw() / ncat as f64;
        let nser = self.series.len().max(1);
        let bw = (gw * 0.8 / nser as f64).min(48.0);
        let base = f.top + f.ph();
        let y = |v: f64| f.top + f.ph() * (1.0 - (v / ymax).clamp(0.0, 1.0));
        for (ci, cat) in self.categories.iter().enumerate() {
            let gx = f.left + gw * ci as f64;
            let start = gx + (gw - bw * nser as f64) / 2.0;
            for (si, s) in self.series.iter().enumerate() {
                let Some(Some(b)) = s.values.get(ci) else {
                    continue;
                };
                if !b.value.is_finite() {
                    continue;
                }
                let x = start + bw * si as f64;
                let top = y(b.value);
                let tip = if b.hi > b.lo {
                    format!(
                        "{} {}: {} (min {}, max {})",
                        s.name,
                        cat,
                        (self.fmt)(b.value),
                        (self.fmt)(b.lo),
                        (self.fmt)(b.hi)
                    )
                } else {
                    format!("{} {}: {}", s.name, cat, (self.fmt)(b.value))
                };
                let _ = write!(
                    out,
                    "<rect class=\"mark\" data-series=\"{}\" data-category=\"{}\" \
                     data-value=\"{}\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{:.1}\" \
                     height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                    esc(&s.name),
                    esc(cat),
                    b.value,
                    (bw - 2.0).max(1.0),
                    (base - top).max(0.5),
                    s.color,
                    esc(&tip)
                );
                if b.hi > b.lo && b.lo.is_finite() && b.hi.is_finite() {
                    let cx = x + (bw - 2.0) / 2.0;
                    let (y0, y1) = (y(b.lo), y(b.hi));
                    let _ = write!(
                        out,
                        "<path class=\"whisker\" d=\"M{cx:.1} {y0:.1}V{y1:.1}M{:.1} {y0:.1}H{:.1}M{:.1} {y1:.1}H{:.1}\" \
                         stroke=\"#222\" stroke-width=\"1\" fill=\"none\"/>",
                        cx - 3.0,
                        cx + 3.0,
                        cx - 3.0,
                        cx + 3.0
                    );
                }
            }
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
                gx + gw / 2.0,
                base + 16.0,
                esc(cat)
            );
        }
        out.push_str("</svg>");
        out
    }
}
