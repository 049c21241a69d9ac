//! The page report's browser section (`page --browser`): per link, the browser's figures per
//! protocol and the simulated fetcher against the browser (per-round ratio simulated /
//! browser with its 95% CI and verdict).

use super::shell::table;
use super::svg::esc;
use crate::fmt;
use crate::page::browser_report::BrowserReport;
use crate::stats::MedianSpread;

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt::ms)
}

fn med(m: &Option<MedianSpread>) -> Option<f64> {
    m.map(|m| m.median)
}

/// The section's inner HTML for `reports` (one per link).
pub fn render(reports: &[BrowserReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let link = r.arms.first().map_or("", |a| a.link.as_str());
        out.push_str(&format!(
            "<p>Headless Chromium (<code>{}</code>), a fresh profile per load{}, link {}. \
             Page time: the load event (with <code>--slow</code>: until every fetch() \
             resolved), from the browser's own Navigation Timing. A load where any resource \
             came over another protocol is a protocol fallback and left out.</p>",
            esc(&r.binary),
            if r.pinned {
                ", pinned to the client CPUs"
            } else {
                ""
            },
            esc(link)
        ));
        let mut rows = vec![vec![
            "protocol".to_string(),
            ">page".into(),
            ">DOMContentLoaded".into(),
            ">FCP".into(),
            ">document end".into(),
            ">last response".into(),
            ">connections".into(),
            ">resources".into(),
            ">fallbacks".into(),
        ]];
        for a in &r.arms {
            rows.push(vec![
                esc(a.page.proto.label()),
                ms(med(&a.page.page_ms)),
                ms(med(&a.dom_content_loaded_ms)),
                ms(med(&a.fcp_ms)),
                ms(med(&a.response_end_ms)),
                ms(med(&a.last_response_ms)),
                a.connections.map_or_else(|| "-".into(), |c| c.to_string()),
                a.resources.map_or_else(|| "-".into(), |c| c.to_string()),
                format!("{}/{}", a.fallbacks, a.page.loads.len()),
            ]);
        }
        out.push_str(&table(&rows, "page"));
        if !r.versus.is_empty() {
            let mut rows = vec![vec![
                "protocol".to_string(),
                ">simulated".into(),
                ">browser".into(),
                ">simulated / browser".into(),
                ">95% CI".into(),
                ">rounds".into(),
                "verdict".into(),
                ">simulated / last response (95% CI)".into(),
            ]];
            for v in &r.versus {
                rows.push(vec![
                    esc(v.proto.label()),
                    ms(v.simulated_ms),
                    ms(v.browser_ms),
                    v.ratio
                        .map_or_else(|| "-".into(), |e| format!("{:.3}", e.median)),
                    v.ratio
                        .map_or_else(|| "-".into(), |e| format!("{:.3} – {:.3}", e.lo, e.hi)),
                    v.ratio.map_or_else(|| "-".into(), |e| e.n.to_string()),
                    esc(crate::page::browser_report::versus_verdict(v.outcome)),
                    v.ratio_last_response.map_or_else(
                        || "-".into(),
                        |e| format!("{:.3} ({:.3} – {:.3})", e.median, e.lo, e.hi),
                    ),
                ]);
            }
            out.push_str(&table(&rows, "page"));
        }
    }
    out
}
