//! The path lines of the upstream report: which path the proxy → backends hop crossed and
//! what it counted per cell and arm (text and HTML).

use super::UpstreamReport;

/// `path: packet link (kernel TCP); TCP congestion control bbr (client side: client and
/// proxy), bbr (server side: backends)`, and the fallback warning if any.
pub fn path_line(r: &UpstreamReport) -> String {
    let mut s = format!("path: {}", r.path.label);
    if let Some(sd) = &r.path_sides {
        s.push_str(&format!(
            "; TCP congestion control {} (client side: client and proxy), {} (server side: \
             backends)",
            sd.client_tcp_cc, sd.server_tcp_cc
        ));
    }
    if let Some(w) = &r.path.fallback {
        s.push_str(&format!(" ({w})"));
    }
    s
}

/// One line per cell and arm: what the proxy → backends path counted during its runs.
pub fn counter_lines(r: &UpstreamReport) -> Vec<String> {
    let mut out = Vec::new();
    for c in &r.cells {
        for a in &c.arms {
            if let Some(p) = &a.path {
                out.push(format!(
                    "{} c={} {}: {}",
                    c.payload.label(),
                    c.concurrency,
                    a.arm.name(),
                    p.describe()
                ));
            }
        }
    }
    out
}

/// The text section: the counters, one line each.
pub fn counters_text(r: &UpstreamReport) -> String {
    let lines = counter_lines(r);
    if lines.is_empty() {
        return String::new();
    }
    let mut s = "\nWhat the proxy -> backends path counted (per cell and arm)\n".to_owned();
    for l in lines {
        s.push_str("  ");
        s.push_str(&l);
        s.push('\n');
    }
    s
}

/// The counters as HTML list items, escaped by `esc`.
pub fn counters_html(r: &UpstreamReport, esc: fn(&str) -> String) -> String {
    counter_lines(r)
        .iter()
        .map(|l| format!("<li>{}</li>", esc(l)))
        .collect()
}
