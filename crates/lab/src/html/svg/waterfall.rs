//! Request waterfalls.

use std::fmt::Write as _;

use super::*;

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
