//! Line charts on linear, log or "nines" x axes.

use std::fmt::Write as _;

use super::*;

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
