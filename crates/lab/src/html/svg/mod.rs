//! SVG charts drawn as text: grouped bars with spread whiskers, line charts (linear, log or
//! "nines" x axes), and request waterfalls. Every chart is a standalone `<svg class="chart">`
//! with inline colours (no CSS or script needed to render); every data mark carries
//! `class="mark"` and `data-series`/`data-value` attributes and a `<title>` tooltip, which
//! also lets tests find the marks in a rendered page.

use std::fmt::Write as _;

mod bar;
mod line;
mod waterfall;

pub use bar::{Bar, BarChart, BarSeries};
pub use line::{LineChart, LineSeries, XScale};
pub use waterfall::{Waterfall, WaterfallRow};

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// "Nice" tick values covering `0..=max` (steps of 1, 2 or 5 × 10^k), about `n` of them.
pub fn nice_ticks(max: f64, n: usize) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0, 1.0];
    }
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut t = 0.0;
    while t < max + step * 0.999 {
        v.push(t);
        t += step;
        if v.len() > 50 {
            break;
        }
    }
    v
}

/// Compact axis numbers: `0`, `2.5`, `40k`, `1.2M`.
pub fn short_num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 || (a >= 1.0 && v.fract() == 0.0) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    s.replace(".0k", "k").replace(".0M", "M")
}

/// Fixed palette for things without a natural colour (connections).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

const FONT: &str = "font-family=\"system-ui,-apple-system,Segoe UI,Roboto,sans-serif\"";
const AXIS: &str = "#555";
const GRID: &str = "#e4e4e4";

struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    fn pw(&self) -> f64 {
        self.w - self.left - self.right
    }
    fn ph(&self) -> f64 {
        self.h - self.top - self.bottom
    }
    fn open(&self, kind: &str, id: &str, title: &str, out: &mut String) {
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{}\" \
             data-kind=\"{kind}\" viewBox=\"0 0 {:.0} {:.0}\" width=\"{:.0}\" height=\"{:.0}\" \
             role=\"img\" aria-label=\"{}\" {FONT} font-size=\"12\">\
             <rect x=\"0\" y=\"0\" width=\"{:.0}\" height=\"{:.0}\" fill=\"#ffffff\"/>\
             <text x=\"{:.1}\" y=\"18\" font-size=\"14\" font-weight=\"600\" fill=\"#222\">{}</text>",
            esc(id),
            self.w,
            self.h,
            self.w,
            self.h,
            esc(title),
            self.w,
            self.h,
            self.left,
            esc(title)
        );
    }
    /// Horizontal grid lines and y tick labels for values `ticks` on `0..=ymax`.
    fn y_axis(
        &self,
        ticks: &[f64],
        ymax: f64,
        fmt: &dyn Fn(f64) -> String,
        label: &str,
        out: &mut String,
    ) {
        for &t in ticks {
            let y = self.top + self.ph() * (1.0 - t / ymax);
            let _ = write!(
                out,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{AXIS}\">{}</text>",
                self.left,
                self.left + self.pw(),
                self.left - 6.0,
                y + 4.0,
                esc(&fmt(t))
            );
        }
        let _ = write!(
            out,
            "<text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\" \
             fill=\"{AXIS}\">{}</text>\
             <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{AXIS}\"/>",
            self.top + self.ph() / 2.0,
            esc(label),
            self.left,
            self.top + self.ph(),
            self.left + self.pw(),
            self.top + self.ph()
        );
    }
    fn legend(&self, items: &[(&str, &str)], out: &mut String) {
        for (x, line, name, color) in legend_layout(items, self.left, self.w - self.right) {
            let y = 32.0 + LEGEND_LINE * line as f64;
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{color}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#333\">{}</text>",
                y - 9.0,
                x + 14.0,
                y,
                esc(name)
            );
        }
    }
}

/// Height of one legend line.
const LEGEND_LINE: f64 = 15.0;

/// Legend entries placed left to right, wrapping at `right`: `(x, line, name, colour)`.
fn legend_layout<'a>(
    items: &[(&'a str, &'a str)],
    left: f64,
    right: f64,
) -> Vec<(f64, usize, &'a str, &'a str)> {
    let mut v = Vec::with_capacity(items.len());
    let (mut x, mut line) = (left, 0usize);
    for &(name, color) in items {
        let w = 22.0 + 6.6 * name.chars().count() as f64;
        if x > left && x + w > right {
            x = left;
            line += 1;
        }
        v.push((x, line, name, color));
        x += w + 10.0;
    }
    v
}

/// The top margin for a chart whose legend has `items`: room for the title and every
/// legend line.
fn top_for(items: &[(&str, &str)], left: f64, right: f64) -> f64 {
    let lines = legend_layout(items, left, right)
        .last()
        .map_or(1, |e| e.1 + 1);
    46.0 + LEGEND_LINE * (lines.saturating_sub(1)) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_numbers() {
        assert_eq!(
            nice_ticks(95.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(nice_ticks(0.0, 5), vec![0.0, 1.0]);
        assert_eq!(short_num(45_000.0), "45k");
        assert_eq!(short_num(1500.0), "1.5k");
        assert_eq!(short_num(2_000_000.0), "2M");
        assert_eq!(short_num(0.25), "0.25");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let items = [("HTTP/1.0 (no keep-alive)", "#000"); 4];
        let l = legend_layout(&items, 62.0, 508.0);
        assert_eq!(
            l.iter().map(|e| e.1).max(),
            Some(1),
            "wraps onto a second line"
        );
        assert_eq!(top_for(&items, 62.0, 508.0), 61.0);
        assert_eq!(top_for(&items[..1], 62.0, 508.0), 46.0);
    }

    #[test]
    fn charts_have_marks() {
        let fmt = |v: f64| format!("{v:.0}");
        let b = BarChart {
            id: "t",
            title: "T <x>",
            categories: vec!["a".into(), "b".into()],
            series: vec![BarSeries {
                name: "s".into(),
                color: "#f00".into(),
                values: vec![
                    Some(Bar {
                        value: 10.0,
                        lo: 8.0,
                        hi: 12.0,
                    }),
                    None,
                ],
            }],
            y_label: "req/s",
            fmt: &fmt,
            width: 400.0,
        }
        .svg();
        assert!(b.starts_with("<svg") && b.ends_with("</svg>"));
        assert_eq!(b.matches("class=\"mark\"").count(), 1);
        assert!(b.contains("whisker"));
        assert!(b.contains("T &lt;x&gt;"));
        let l = LineChart {
            id: "l",
            title: "L",
            series: vec![LineSeries {
                name: "x".into(),
                color: "#00f".into(),
                points: vec![(50.0, 1.0), (99.0, 2.0), (100.0, 3.0)],
            }],
            x_scale: XScale::Nines,
            x_label: "percentile",
            y_label: "ms",
            x_fmt: &|v| format!("{v}"),
            y_fmt: &|v| format!("{v}"),
            markers: true,
            width: 400.0,
            height: 260.0,
        }
        .svg();
        assert_eq!(l.matches("class=\"mark\"").count(), 1);
        assert!(l.contains(">max<"));
        let w = Waterfall {
            id: "w",
            title: "W",
            rows: vec![WaterfallRow {
                start: 0.0,
                first_byte: 5.0,
                end: 9.0,
                conn: 0,
                label: "r".into(),
            }],
            conns: vec![(0, 0.0, Some(1.0))],
            x_max: 0.0,
            width: 400.0,
        }
        .svg();
        assert_eq!(w.matches("class=\"mark\"").count(), 1);
        assert_eq!(w.matches("class=\"mark conn\"").count(), 1);
    }
}
