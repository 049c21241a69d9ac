//! The browser arms' results: per protocol the browser's own figures (load event,
//! DOMContentLoaded, First Contentful Paint, document responseEnd, connections, protocol
//! fallbacks), the page-time ratio between the browser's protocols with its verdict, and the
//! simulated fetcher against the browser per protocol: the per-round ratio simulated /
//! browser with its 95% CI — the validation of the simulated fetcher (1.0: the simulation
//! takes as long as Chromium; below 1: it is faster than the browser).
//!
//! A load where any resource (or the document) came over another protocol than the arm's
//! is a protocol fallback: counted, and left out of every time and ratio.

use serde::Serialize;

use super::browser::BrowserArms;
use super::{LoadBrief, ProtoPage, Ratio};
use crate::host::MachineLoad;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome, Rng};
use crate::stats::{quantile, MedianSpread};

/// One browser arm's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrowserArmReport {
    /// Page time per load (the load event; `--slow`: until all fetches resolved) as the
    /// simulated arms report theirs; a fallback load has `failed` = 1 and is left out.
    /// `connections_limit` is the browser's (6 for HTTP/1.1, else 1) and `streams` 0 (the
    /// browser follows the server's limit).
    pub page: ProtoPage,
    /// The link crossed.
    pub link: String,
    /// Loads where a resource used another protocol than the arm's (left out).
    pub fallbacks: u32,
    /// The first fallback's first resource on another protocol, and that protocol's arm.
    pub fallback_example: Option<String>,
    /// DOMContentLoaded (ms from navigation start) over the measured loads.
    pub dom_content_loaded_ms: Option<MedianSpread>,
    /// First Contentful Paint (ms) over the loads that reported one.
    pub fcp_ms: Option<MedianSpread>,
    /// The document's responseEnd (ms).
    pub response_end_ms: Option<MedianSpread>,
    /// The last response's end (ms): the latest responseEnd of the document and every
    /// resource (with `--slow`, of the fetches).
    pub last_response_ms: Option<MedianSpread>,
    /// Connections the browser opened: on the check load before the rounds (DevTools'
    /// `Network` domain on, off during the measured loads for its cost), or the median over
    /// the measured loads when they counted them (`--repeat-view`).
    pub connections: Option<f64>,
    /// Whether [`BrowserArmReport::connections`] comes from the check load.
    pub connections_from_check: bool,
    /// When the browser sent its last request (ms; the latest `requestStart`): requests
    /// found early and sent late waited inside the browser, not on the network.
    pub last_request_ms: Option<MedianSpread>,
    /// CPU time of all the browser's processes from the navigation until the figures were
    /// collected (ms), over the measured loads: the browser's own cost of a load.
    pub cpu_ms: Option<MedianSpread>,
    /// The same from the browser's start (its start-up included).
    pub process_cpu_ms: Option<MedianSpread>,
    /// Cores the browser kept busy during the load (its CPU time over the wall time), median.
    pub cores: Option<f64>,
    /// What the rest of the machine did per load (the browser's own processes not counted),
    /// by round; `None` where it could not be read.
    pub machine: Vec<Option<MachineLoad>>,
    /// Loads measured while the machine was busy ([`MachineLoad::busy`]), of `machine`'s.
    pub busy_loads: u32,
    /// Resources with a timing entry, median over the measured loads.
    pub resources: Option<f64>,
}

/// The simulated fetcher against the browser on one protocol and link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimVsBrowser {
    /// The protocol.
    pub proto: LabProtocol,
    /// The link.
    pub link: String,
    /// The simulated arm's median page time (ms).
    pub simulated_ms: Option<f64>,
    /// The browser arm's median page time (ms).
    pub browser_ms: Option<f64>,
    /// Per-round ratio simulated / browser: median, 95% CI, paired rounds.
    pub ratio: Option<Estimate>,
    /// The same against the browser's last response ([`BrowserArmReport::last_response_ms`]):
    /// the network part alone.
    pub ratio_last_response: Option<Estimate>,
    /// `parity` (the CI within 1 ± equivalence: the simulation matches the browser), `win`
    /// (the CI lies outside the band: the simulation differs, on the ratio's side; the text
    /// and HTML say `differs`), `undecided`.
    pub outcome: Outcome,
}

/// Everything the browser arms produced (`results.json`'s `browser`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrowserReport {
    /// The browser binary.
    pub binary: String,
    /// Whether the browser ran on the client's CPUs only (`taskset`).
    pub pinned: bool,
    /// `--browser-only`: no simulated arm ran.
    pub only: bool,
    /// One entry per browser arm.
    pub arms: Vec<BrowserArmReport>,
    /// The browser's slowest against its fastest protocol, with the verdict.
    pub ratio: Option<Ratio>,
    /// Simulated / browser per protocol (empty with `--browser-only`).
    pub versus: Vec<SimVsBrowser>,
    /// The equivalence band of the verdicts.
    pub equivalence: f64,
}

fn median(v: &[f64]) -> Option<f64> {
    MedianSpread::of(v).map(|s| s.median)
}

fn by_round(p: &ProtoPage, rounds: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; rounds];
    for l in p.loads.iter().filter(|l| l.failed == 0) {
        if let Some(slot) = v.get_mut(l.round as usize) {
            *slot = Some(l.page_ms);
        }
    }
    v
}

/// Summarises `arms` against the simulated arms `sims` (same rounds) on `link`.
pub fn summarise(
    b: &BrowserArms,
    sims: &[ProtoPage],
    link: &str,
    only: bool,
    equivalence: f64,
) -> BrowserReport {
    let mut arms = Vec::new();
    for a in &b.arms {
        let expected = match a.proto {
            LabProtocol::H1Tls => "http/1.1",
            LabProtocol::H3 => "h3",
            _ => "h2",
        };
        let mut loads = Vec::new();
        let mut fallbacks = 0;
        let mut example = None;
        let (mut times, mut dcl, mut fcp, mut resp, mut conns, mut res) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut last = Vec::new();
        let (mut sent, mut cpu, mut pcpu, mut cores) = (vec![], vec![], vec![], vec![]);
        for (round, l) in a.rounds.iter().enumerate() {
            let Some(l) = l else { continue };
            let off = l.off_protocol(expected);
            let fallback = !off.is_empty();
            if fallback {
                fallbacks += 1;
                if example.is_none() {
                    let got = if off[0] == "(document)" {
                        l.document_protocol.clone()
                    } else {
                        l.resources
                            .iter()
                            .find(|r| r.url == off[0])
                            .map(|r| r.protocol.clone())
                            .unwrap_or_default()
                    };
                    example = Some(format!("{} over {got:?}", off[0]));
                }
            } else {
                times.push(l.page_ms());
                dcl.push(l.dom_content_loaded_ms);
                fcp.extend(l.fcp_ms);
                resp.push(l.response_end_ms);
                last.push(l.last_response_ms());
                sent.push(l.last_request_ms());
                cpu.extend(l.cpu_ms);
                pcpu.extend(l.process_cpu_ms);
                if let Some(c) = l.cpu_ms.filter(|_| l.window_ms > 0.0) {
                    cores.push(c / l.window_ms);
                }
                conns.push(l.connections as f64);
                res.push(l.resources.len() as f64);
            }
            loads.push(LoadBrief {
                page_ms: l.page_ms(),
                connections: a.check.as_ref().unwrap_or(l).connections as u32,
                requests: l.resources.len() as u32 + 1,
                failed: u32::from(fallback),
                round: round as u32,
            });
        }
        let page = ProtoPage {
            proto: a.proto,
            connections_limit: if a.proto == LabProtocol::H1Tls { 6 } else { 1 },
            streams: 0,
            loads,
            page_ms: MedianSpread::of(&times),
            page_p90_ms: quantile(&times, 0.9),
            median_load: None,
            error: a.error.clone(),
        };
        arms.push(BrowserArmReport {
            page,
            link: link.to_string(),
            fallbacks,
            fallback_example: example,
            dom_content_loaded_ms: MedianSpread::of(&dcl),
            fcp_ms: MedianSpread::of(&fcp),
            response_end_ms: MedianSpread::of(&resp),
            last_response_ms: MedianSpread::of(&last),
            connections: match &a.check {
                Some(c) => Some(c.connections as f64),
                None if a.opts_count_connections() => median(&conns),
                None => None,
            },
            connections_from_check: a.check.is_some(),
            last_request_ms: MedianSpread::of(&sent),
            cpu_ms: MedianSpread::of(&cpu),
            process_cpu_ms: MedianSpread::of(&pcpu),
            cores: median(&cores),
            busy_loads: a.machine.iter().flatten().filter(|m| m.busy()).count() as u32,
            machine: a.machine.clone(),
            resources: median(&res),
        });
    }
    let pages: Vec<ProtoPage> = arms.iter().map(|a| a.page.clone()).collect();
    let ratio = Ratio::of_pages(&pages, equivalence, "browser");
    let mut versus = Vec::new();
    if !only {
        for (a, raw) in arms.iter().zip(&b.arms) {
            let Some(s) = sims.iter().find(|s| s.proto == a.page.proto) else {
                continue;
            };
            let rounds = s
                .loads
                .iter()
                .chain(&a.page.loads)
                .map(|l| l.round as usize + 1)
                .max()
                .unwrap_or(0);
            let seed = ci::seed_for(&format!("page simulated/browser {}", a.page.proto.name()));
            let ratio = ci::paired_ratio(
                &by_round(s, rounds),
                &by_round(&a.page, rounds),
                &mut Rng::new(seed),
            );
            // The browser's last response by round (fallbacks left out, as above).
            let mut last = vec![None; rounds];
            for (l, brief) in raw.rounds.iter().flatten().zip(&a.page.loads) {
                if brief.failed == 0 {
                    if let Some(slot) = last.get_mut(brief.round as usize) {
                        *slot = Some(l.last_response_ms());
                    }
                }
            }
            let ratio_last_response =
                ci::paired_ratio(&by_round(s, rounds), &last, &mut Rng::new(seed ^ 1));
            versus.push(SimVsBrowser {
                proto: a.page.proto,
                link: link.to_string(),
                simulated_ms: s.page_ms.map(|m| m.median),
                browser_ms: a.page.page_ms.map(|m| m.median),
                outcome: ratio.map_or(Outcome::Undecided, |r| ci::classify(&r, equivalence)),
                ratio,
                ratio_last_response,
            });
        }
    }
    BrowserReport {
        binary: b.binary.display().to_string(),
        pinned: b.pinned,
        only,
        arms,
        ratio,
        versus,
        equivalence,
    }
}

/// The verdict of a simulated / browser ratio in words: `parity` (the simulation matches the
/// browser within the band), `differs` (its CI lies outside the band), `differs slightly` (its
/// CI excludes 1.0 and crosses the band's edge), `undecided`.
pub fn versus_verdict(o: Outcome) -> &'static str {
    match o {
        Outcome::Parity => "parity",
        Outcome::Win => "differs",
        Outcome::Slight => "differs slightly",
        Outcome::Undecided => "undecided",
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), crate::fmt::ms)
}

/// The load average range (`min–max`) over the browser loads, `-` when unknown.
pub fn loadavg_range(r: &BrowserReport) -> String {
    let v: Vec<f64> = r
        .arms
        .iter()
        .flat_map(|a| a.machine.iter().flatten().map(|m| m.loadavg))
        .filter(|l| l.is_finite())
        .collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "-".into()
    } else {
        format!("{lo:.1}–{hi:.1}")
    }
}

/// Browser loads measured while the machine was busy, of those whose load was read.
pub fn busy_loads(r: &BrowserReport) -> (u32, usize) {
    let busy = r.arms.iter().map(|a| a.busy_loads).sum();
    let all = r
        .arms
        .iter()
        .map(|a| a.machine.iter().flatten().count())
        .sum();
    (busy, all)
}

/// The browser's own cost per protocol (when it sent its last request, its CPU per load,
/// the cores it kept busy) and the machine's load during its loads.
fn cost_text(r: &BrowserReport) -> String {
    let mut s = format!(
        "  {:<16} {:>10} {:>12} {:>12} {:>6} {:>6}\n",
        "browser cost", "last sent", "CPU/load", "+ start-up", "cores", "busy"
    );
    for a in &r.arms {
        let med = |m: &Option<MedianSpread>| m.map(|m| m.median);
        s.push_str(&format!(
            "  {:<16} {:>10} {:>12} {:>12} {:>6} {:>6}\n",
            a.page.proto.label(),
            ms(med(&a.last_request_ms)),
            ms(med(&a.cpu_ms)),
            ms(med(&a.process_cpu_ms)),
            a.cores.map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            format!("{}/{}", a.busy_loads, a.machine.iter().flatten().count()),
        ));
    }
    let (busy, all) = busy_loads(r);
    s.push_str(&format!(
        "  machine: {busy} of {all} browser loads measured while other processes used more \
         than {:.0}% of the CPUs or the hypervisor stole more than {:.0}% (the browser's own \
         processes not counted); load average {}\n",
        crate::host::BUSY_OTHER_CPU * 100.0,
        crate::host::BUSY_STEAL * 100.0,
        loadavg_range(r)
    ));
    if r.arms.iter().any(|a| a.connections_from_check) {
        s.push_str(
            "  conns: counted on a check load before the rounds (DevTools Network domain on; \
             off during the measured loads, for its CPU cost)\n",
        );
    }
    s
}

/// The browser section of the text output.
pub fn render_text(r: &BrowserReport) -> String {
    let mut s = String::new();
    let link = r.arms.first().map_or("", |a| a.link.as_str());
    s.push_str(&format!(
        "\nbrowser: {} (headless, fresh profile per load{}), link {link}\n",
        r.binary,
        if r.pinned { ", on the client CPUs" } else { "" }
    ));
    s.push_str(&format!(
        "  {:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>5} {:>9}\n",
        "protocol", "page", "DCL", "FCP", "doc end", "last resp", "conns", "res", "fallback"
    ));
    for a in &r.arms {
        let med = |m: &Option<MedianSpread>| m.map(|m| m.median);
        s.push_str(&format!(
            "  {:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>5} {:>9}\n",
            a.page.proto.label(),
            ms(med(&a.page.page_ms)),
            ms(med(&a.dom_content_loaded_ms)),
            ms(med(&a.fcp_ms)),
            ms(med(&a.response_end_ms)),
            ms(med(&a.last_response_ms)),
            a.connections.map_or_else(|| "-".into(), |c| format!("{c}")),
            a.resources.map_or_else(|| "-".into(), |c| format!("{c}")),
            format!("{}/{}", a.fallbacks, a.page.loads.len()),
        ));
        if let Some(e) = &a.fallback_example {
            s.push_str(&format!(
                "    protocol fallback: {e} (those loads left out)\n"
            ));
        }
        if let Some(e) = &a.page.error {
            s.push_str(&format!("    error: {e}\n"));
        }
    }
    s.push_str(&cost_text(r));
    if let Some(ratio) = &r.ratio {
        s.push_str(&format!(
            "  browser: {} / {} = {:.2}x, {}\n",
            ratio.slower.label(),
            ratio.faster.label(),
            ratio.ratio,
            ratio.verdict_text()
        ));
    }
    if !r.versus.is_empty() {
        s.push_str(&format!(
            "  simulated vs browser (per-round ratio simulated/browser, 95% CI; parity within \
             ±{:.0}%):\n",
            r.equivalence * 100.0
        ));
        for v in &r.versus {
            let est = |r: Option<Estimate>| {
                r.map_or_else(
                    || "-".to_string(),
                    |e| format!("{:.3} [{:.3}, {:.3}] n={}", e.median, e.lo, e.hi, e.n),
                )
            };
            s.push_str(&format!(
                "  {:<16} simulated {:>10}  browser {:>10}  ratio {}  {}; to the browser's \
                 last response {}\n",
                v.proto.label(),
                ms(v.simulated_ms),
                ms(v.browser_ms),
                est(v.ratio),
                versus_verdict(v.outcome),
                est(v.ratio_last_response)
            ));
        }
    }
    s
}
