//! SVG charts drawn as text: grouped bars with spread whiskers, line charts (linear, log or
//! "nines" x axes), and request waterfalls. Every chart is a standalone `<svg class="chart">`
//! with inline colours (no CSS or script needed to render); every data mark carries
//! `class="mark"` and `data-series`/`data-value` attributes and a `<title>` tooltip, which
//! also lets tests find the marks in a rendered page.

use std::fmt::Write as _;

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

/// How the x axis of a line chart maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    /// Linear from the smallest to the largest x.
    Linear,
    /// Logarithmic (x > 0).
    Log,
    /// Percentiles on a "nines" scale: 50, 90, 99, 99.9, 99.99 equally spaced; 100 = max.
    Nines,
}

/// A named, coloured line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineSeries {
    /// Legend name.
    pub name: String,
    /// Stroke colour.
    pub color: String,
    /// `(x, y)` points in x order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
pub struct LineChart<'a> {
    /// Identifier (`data-chart`).
    pub id: &'a str,
    /// Title drawn on top.
    pub title: &'a str,
    /// Lines.
    pub series: Vec<LineSeries>,
    /// X scale.
    pub x_scale: XScale,
    /// X axis label.
    pub x_label: &'a str,
    /// Y axis label.
    pub y_label: &'a str,
    /// Formats x values for ticks.
    pub x_fmt: &'a dyn Fn(f64) -> String,
    /// Formats y values for tooltips.
    pub y_fmt: &'a dyn Fn(f64) -> String,
    /// Draw a dot at every point.
    pub markers: bool,
    /// Width in px.
    pub width: f64,
    /// Height in px.
    pub height: f64,
}

fn nines(p: f64) -> f64 {
    if p >= 100.0 {
        4.6
    } else {
        (-(1.0 - p / 100.0).log10()).clamp(0.0, 4.3)
    }
}

impl LineChart<'_> {
    /// The SVG.
    pub fn svg(&self) -> String {
        let legend: Vec<(&str, &str)> = self
            .series
            .iter()
            .map(|s| (s.name.as_str(), s.color.as_str()))
            .collect();
        let top = top_for(&legend, 62.0, self.width - 16.0);
        let f = Frame {
            w: self.width,
            h: self.height + top - 46.0,
            left: 62.0,
            right: 16.0,
            top,
            bottom: 44.0,
        };
        let mut out = String::new();
        f.open("lines", self.id, self.title, &mut out);
        f.legend(&legend, &mut out);
        let pts = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter())
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        let tx = |x: f64| match self.x_scale {
            XScale::Linear => x,
            XScale::Log => x.max(1e-12).log10(),
            XScale::Nines => nines(x),
        };
        let (mut xmin, mut xmax) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(tx(p.0)), b.max(tx(p.0)))
        });
        if !xmin.is_finite() {
            (xmin, xmax) = (0.0, 1.0);
        }
        if self.x_scale == XScale::Linear {
            xmin = xmin.min(0.0);
        }
        if (xmax - xmin).abs() < 1e-12 {
            xmax = xmin + 1.0;
        }
        let ymax_raw = pts().map(|p| p.1).fold(0.0f64, f64::max);
        let ticks = nice_ticks(ymax_raw * 1.05, 5);
        let ymax = ticks.last().copied().unwrap_or(1.0).max(1e-12);
        f.y_axis(&ticks, ymax, &|v| short_num(v), self.y_label, &mut out);
        let px = |x: f64| f.left + f.pw() * (tx(x) - xmin) / (xmax - xmin);
        let py = |y: f64| f.top + f.ph() * (1.0 - (y / ymax).clamp(0.0, 1.0));
        // X ticks.
        let xticks: Vec<f64> = match self.x_scale {
            XScale::Nines => vec![50.0, 90.0, 99.0, 99.9, 99.99, 100.0],
            XScale::Log => {
                let mut v = Vec::new();
                let mut e = xmin.floor();
                while e <= xmax + 1e-9 {
                    for m in [1.0, 2.0, 5.0] {
                        let x = m * 10f64.powf(e);
                        if tx(x) >= xmin - 1e-9 && tx(x) <= xmax + 1e-9 {
                            v.push(x);
                        }
                    }
                    e += 1.0;
                }
                v
            }
            XScale::Linear => nice_ticks(xmax, 6)
                .into_iter()
                .filter(|t| *t >= xmin && *t <= xmax * 1.0001)
                .collect(),
        };
        let base = f.top + f.ph();
        for t in xticks {
            let x = px(t);
            let label = if self.x_scale == XScale::Nines && t >= 100.0 {
                "max".to_owned()
            } else {
                (self.x_fmt)(t)
            };
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{base:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{AXIS}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{AXIS}\">{}</text>",
                base + 4.0,
                base + 16.0,
                esc(&label)
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{AXIS}\">{}</text>",
            f.left + f.pw() / 2.0,
            f.h - 8.0,
            esc(self.x_label)
        );
        for s in &self.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            if pts.is_empty() {
                continue;
            }
            let mut d = String::new();
            for (i, (x, y)) in pts.iter().enumerate() {
                let _ = write!(
                    d,
                    "{}{:.1} {:.1}",
                    if i == 0 { "M" } else { "L" },
                    px(*x),
                    py(*y)
                );
            }
            let last = pts.last().map_or(0.0, |p| p.1);
            if let [(x, y)] = pts[..] {
                // A single point: the dot is the mark (a one-point path has no extent).
                let _ = write!(
                    out,
                    "<circle class=\"mark\" data-series=\"{}\" data-value=\"{y}\" cx=\"{:.1}\" \
                     cy=\"{:.1}\" r=\"3.5\" fill=\"{}\"><title>{}: {} at {}</title></circle>",
                    esc(&s.name),
                    px(x),
                    py(y),
                    s.color,
                    esc(&s.name),
                    esc(&(self.y_fmt)(y)),
                    esc(&(self.x_fmt)(x))
                );
                continue;
            }
            let _ = write!(
                out,
                "<path class=\"mark\" data-series=\"{}\" data-value=\"{last}\" data-points=\"{}\" \
                 d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-linejoin=\"round\">\
                 <title>{}</title></path>",
                esc(&s.name),
                pts.len(),
                s.color,
                esc(&s.name)
            );
            if self.markers {
                for (x, y) in &pts {
                    let _ = write!(
                        out,
                        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>{}: {} at {}</title></circle>",
                        px(*x),
                        py(*y),
                        s.color,
                        esc(&s.name),
                        esc(&(self.y_fmt)(*y)),
                        esc(&(self.x_fmt)(*x))
                    );
                }
            }
        }
        out.push_str("</svg>");
        out
    }
}

/// One request of a waterfall: waiting (sent → first byte) and receiving (→ done).
#[derive(Debug, Clone, PartialEq)]
pub struct WaterfallRow {
    /// Request handed to the connection (ms).
    pub start: f64,
    /// First response byte (ms).
    pub first_byte: f64,
    /// Response complete (ms).
    pub end: f64,
    /// Connection number (colour).
    pub conn: u32,
    /// Tooltip.
    pub label: String,
}

/// A request waterfall: one thin row per request, coloured by connection, light while
/// waiting for the response, solid while receiving it; connection set-up drawn as grey
/// bars on top.
pub struct Waterfall<'a> {
    /// Identifier (`data-chart`).
    pub id: &'a str,
    /// Title.
    pub title: &'a str,
    /// Requests in display order.
    pub rows: Vec<WaterfallRow>,
    /// Connections: `(id, opened ms, ready ms)`.
    pub conns: Vec<(u32, f64, Option<f64>)>,
    /// Right end of the time axis (ms); 0 = the last request's end.
    pub x_max: f64,
    /// Width in px.
    pub width: f64,
}

impl Waterfall<'_> {
    /// The SVG.
    pub fn svg(&self) -> String {
        let n = self.rows.len().max(1) as f64;
        let nconn = self.conns.len().min(12) as f64;
        let row_h = (420.0 / n).clamp(1.2, 10.0);
        let conn_h = 6.0;
        let plot_h = n * row_h + nconn * (conn_h + 2.0) + 8.0;
        let f = Frame {
            w: self.width,
            h: plot_h + 46.0 + 40.0,
            left: 62.0,
            right: 16.0,
            top: 46.0,
            bottom: 40.0,
        };
        let mut out = String::new();
        f.open("waterfall", self.id, self.title, &mut out);
        let mut conn_ids: Vec<u32> = self.rows.iter().map(|r| r.conn).collect();
        conn_ids.sort_unstable();
        conn_ids.dedup();
        let color = |c: u32| PALETTE[c as usize % PALETTE.len()];
        let names: Vec<String> = conn_ids
            .iter()
            .take(8)
            .map(|c| format!("connection {c}"))
            .collect();
        let legend: Vec<(&str, &str)> = names
            .iter()
            .zip(&conn_ids)
            .map(|(n, c)| (n.as_str(), color(*c)))
            .collect();
        f.legend(&legend, &mut out);
        let xmax_raw = if self.x_max > 0.0 {
            self.x_max
        } else {
            self.rows.iter().map(|r| r.end).fold(0.0f64, f64::max)
        };
        let ticks = nice_ticks(xmax_raw, 8);
        let xmax = ticks.last().copied().unwrap_or(1.0).max(1e-9);
        let px = |x: f64| f.left + f.pw() * (x / xmax).clamp(0.0, 1.0);
        let bottom = f.top + plot_h;
        for &t in &ticks {
            let x = px(t);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"{GRID}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{AXIS}\">{}</text>",
                f.top,
                bottom + 16.0,
                esc(&if t == 0.0 { "0".to_owned() } else { crate::fmt::ms(t) })
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{AXIS}\">time since the \
             start of the load</text>",
            f.left + f.pw() / 2.0,
            f.h - 6.0
        );
        let mut y = f.top + 4.0;
        for (id, opened, ready) in self.conns.iter().take(12) {
            let end = ready.unwrap_or(*opened);
            let _ = write!(
                out,
                "<rect class=\"mark conn\" data-series=\"connection {id}\" data-value=\"{:.3}\" \
                 x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{conn_h}\" fill=\"#888\">\
                 <title>connection {id}: set-up {} → {}</title></rect>",
                end - opened,
                px(*opened),
                (px(end) - px(*opened)).max(1.0),
                esc(&crate::fmt::ms(*opened)),
                esc(&crate::fmt::ms(end))
            );
            y += conn_h + 2.0;
        }
        y += 4.0;
        for r in &self.rows {
            let c = color(r.conn);
            let (x0, x1, x2) = (
                px(r.start),
                px(r.first_byte.max(r.start)),
                px(r.end.max(r.start)),
            );
            let _ = write!(
                out,
                "<g class=\"mark\" data-series=\"connection {}\" data-value=\"{:.3}\">\
                 <title>{}</title>\
                 <rect x=\"{x0:.1}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{c}\" fill-opacity=\"0.6\"/>\
                 <rect x=\"{x1:.1}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{c}\"/></g>",
                r.conn,
                r.end - r.start,
                esc(&r.label),
                (x1 - x0).max(0.6),
                (row_h - 0.3).max(0.9),
                (x2 - x1).max(0.8),
                (row_h - 0.3).max(0.9)
            );
            y += row_h;
        }
        let _ = write!(
            out,
            "<text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\" \
             fill=\"{AXIS}\">requests ({})</text>",
            f.top + plot_h / 2.0,
            self.rows.len()
        );
        out.push_str("</svg>");
        out
    }
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
