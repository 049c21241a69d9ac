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

/// The browser's own cost per protocol and the machine's load during its loads.
fn cost(r: &BrowserReport) -> String {
    let mut rows = vec![vec![
        "protocol".to_string(),
        ">last request sent".into(),
        ">browser CPU per load".into(),
        ">with its start-up".into(),
        ">cores busy".into(),
        ">busy-machine loads".into(),
    ]];
    for a in &r.arms {
        rows.push(vec![
            esc(a.page.proto.label()),
            ms(med(&a.last_request_ms)),
            ms(med(&a.cpu_ms)),
            ms(med(&a.process_cpu_ms)),
            a.cores.map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            format!("{}/{}", a.busy_loads, a.machine.iter().flatten().count()),
        ]);
    }
    let (busy, all) = crate::page::browser_report::busy_loads(r);
    format!(
        "{}<p>Browser CPU: every Chromium process, from the navigation until the figures were \
         collected. Machine: {busy} of {all} browser loads measured while other processes used \
         more than {:.0}% of the CPUs or the hypervisor stole more than {:.0}% (the browser's \
         own processes not counted); load average {}.{}</p>",
        table(&rows, "page"),
        crate::host::BUSY_OTHER_CPU * 100.0,
        crate::host::BUSY_STEAL * 100.0,
        esc(&crate::page::browser_report::loadavg_range(r)),
        if r.arms.iter().any(|a| a.connections_from_check) {
            " Connections: counted on a check load before the rounds (DevTools' Network \
             domain, off during the measured loads for its CPU cost)."
        } else {
            ""
        }
    )
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
        out.push_str(&cost(r));
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
