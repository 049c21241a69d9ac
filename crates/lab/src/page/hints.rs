//! `h2lab page --render --early-hints`: what `103 Early Hints` buy a page whose server
//! thinks before answering.
//!
//! Two built-in servers (TLS and QUIC, in-process), one with `--early-hints` (its `/page`
//! answers `103` naming the page's CSS and JS at once, then its `200` after the page query's
//! `think=`), one without: per link on a packet path's server side by default, each behind
//! its own link relay (TCP and UDP) with `--mode relay`; the fetcher and Chromium run on the
//! client side (`render::path`). Per
//! protocol (HTTP/1.1 over 6 connections, HTTP/2, HTTP/3) two arms, without and with hints,
//! alternated load by load (cold loads: new connections, no cache); the fetcher acts on a
//! 103 as browsers do (it requests the hinted CSS/JS at once and uses them when the HTML
//! names them). Per arm: the time until every render-blocking CSS/JS is done ("render",
//! never before the HTML) and until the page is complete; per protocol the paired verdict
//! with and without hints for both (per-round ratio, 95% CI, the four outcomes of
//! [`ci::classify`]); and each arm against the floor the link allows ([`arm_floor`]), with
//! what the path counted during its loads.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use h2lab_engine::config::{Scheme, Target};
use h2lab_engine::priority::render_blocking;
use h2lab_server::{RunningServer, ServerConfig};
use serde::Serialize;

use super::floor::{handshake_rtts, link_shape, transfer_ms};
use super::load::{self, PageLoad, PoolSpec};
use super::render::path::{self as netpath, LinkPath, Reach};
use super::render::{render_ms, RenderLink};
use crate::env::Origin;
use crate::error::LabError;
use crate::netpath::{ModeChoice, PathCounters, PathMode, PathSides};
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome};
use crate::stats::MedianSpread;

mod chromium;
mod text;
use chromium::ChromiumArm;
pub use text::{json, render_text};

/// The default page: 30 images of 1–8 KiB, 2 stylesheets of ~24 KiB and 2 scripts of
/// ~64 KiB in the head, and 200 ms of server think time before the HTML.
pub const DEFAULT_HINTS_QUERY: &str =
    "n=30&min=1k&max=8k&seed=1&css=2&css_size=24k&js=2&js_size=64k&think=200ms";

/// How the simulated arms relate to Chromium's handling of 103 (its `docs/early-hints.md`).
pub const CHROMIUM_NOTE: &str = "Chromium (since 103) acts on a 103's preload and preconnect \
    links for top-level navigations over HTTP/2 and HTTP/3 only, and only on the first 103; it \
    ignores 103 over HTTP/1.1, so the HTTP/1.1 arm with hints shows what a client acting on \
    it would gain, not what Chromium does";

/// What the experiment needs.
#[derive(Debug, Clone)]
pub struct HintsConfig {
    /// Query of the built-in `/page` (its `think=` is the server's think time).
    pub page_query: String,
    /// Links to run on.
    pub links: Vec<RenderLink>,
    /// Protocols (TLS ones: h1-tls, h2, h3).
    pub protocols: Vec<LabProtocol>,
    /// Cold loads per arm and link (6 or more can decide a verdict).
    pub repeat: u32,
    /// Longest one load may take.
    pub timeout: Duration,
    /// Equivalence band of the verdicts (a fraction).
    pub equivalence: f64,
    /// `--browser`: Chromium arms too (HTTP/2 and HTTP/3, with and without hints).
    pub browser: Option<std::path::PathBuf>,
    /// Which path shaped links cross: the packet link (kernel TCP, the default) or the relay.
    pub mode: PathMode,
    /// TCP congestion control across a packet path (`None`: the namespaces' default).
    pub tcp_cc: Option<String>,
}

impl Default for HintsConfig {
    fn default() -> Self {
        HintsConfig {
            page_query: DEFAULT_HINTS_QUERY.into(),
            links: RenderLink::defaults(),
            protocols: vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3],
            repeat: 6,
            timeout: Duration::from_secs(120),
            equivalence: ci::DEFAULT_EQUIVALENCE,
            browser: None,
            mode: PathMode::Packet,
            tcp_cc: None,
        }
    }
}

/// The least times an arm's link allows (ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HintsFloor {
    /// Render-blocking CSS/JS done (and the HTML).
    pub render_ms: f64,
    /// Page complete.
    pub page_ms: f64,
}

/// One protocol with or without hints on one link.
#[derive(Debug, Clone, Serialize)]
pub struct HintArm {
    /// Protocol.
    pub proto: LabProtocol,
    /// The server sent `103 Early Hints`.
    pub hints: bool,
    /// Loaded by Chromium (else the simulated fetcher).
    pub browser: bool,
    /// Render time over the loads (ms).
    pub render_ms: Option<MedianSpread>,
    /// Page time over the loads (ms).
    pub page_ms: Option<MedianSpread>,
    /// Each complete load: (render ms, page ms).
    pub loads: Vec<(f64, f64)>,
    /// The round of each of `loads`.
    pub load_rounds: Vec<u32>,
    /// Sub-resources requested before the HTML was complete (the preloads), median load;
    /// `None` for Chromium, whose Resource Timing does not show it (a resource preloaded on
    /// a 103 is timed from when the document asked for it, served from the preload).
    pub preloaded: Option<u32>,
    /// The floor, from the median load's bytes.
    pub floor: Option<HintsFloor>,
    /// First error, if loads failed.
    pub error: Option<String>,
    /// What the path counted during the arm's loads (`None`: a direct link).
    pub path: Option<PathCounters>,
}

/// With against without hints, one protocol, one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HintsVerdict {
    /// Protocol.
    pub proto: LabProtocol,
    /// `render` or `page`.
    pub metric: &'static str,
    /// Chromium's arms (else the simulated fetcher's).
    pub browser: bool,
    /// Hints made it faster (by the per-round ratios).
    pub hints_faster: bool,
    /// Per-round ratio slower / faster: median, 95% CI, rounds.
    pub ratio: Option<Estimate>,
    /// Win, slight, parity or undecided.
    pub outcome: Outcome,
}

/// One link.
#[derive(Debug, Clone, Serialize)]
pub struct HintsLinkResult {
    /// The link.
    pub link: RenderLink,
    /// Its description (RTT, rates, loss, path).
    pub description: String,
    /// Each side's TCP congestion control (a packet path).
    pub path_sides: Option<PathSides>,
    /// The page's path.
    pub path: String,
    /// The server's think time (ms).
    pub think_ms: f64,
    /// Sub-resources, and CSS/JS among them.
    pub resources: usize,
    /// CSS and JS.
    pub render_blocking: usize,
    /// Per protocol, without then with hints.
    pub arms: Vec<HintArm>,
    /// Per protocol and metric.
    pub verdicts: Vec<HintsVerdict>,
}

/// The whole experiment.
#[derive(Debug, Clone, Serialize)]
pub struct HintsReport {
    /// The path shaped links crossed (packet link or relay), and why the relay if not asked.
    pub path: ModeChoice,
    /// Loads per arm and link.
    pub repeat: u32,
    /// Equivalence band.
    pub equivalence: f64,
    /// Per link.
    pub links: Vec<HintsLinkResult>,
    /// Wall time, s.
    pub elapsed_secs: f64,
}

/// `think=200ms`, `think=2s`, `think=150` of a page query, in ms (0 without).
pub fn think_ms(query: &str) -> f64 {
    let Some(v) = query.split('&').find_map(|kv| kv.strip_prefix("think=")) else {
        return 0.0;
    };
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().map_or(0.0, |n| n * scale)
}

/// The floor of `proto` on a link of `rtt` ms and `down` bit/s, with or without hints:
/// `blocking` CSS/JS bytes, `total` bytes read. Without hints the CSS/JS are requested
/// after the HTML: handshake, request, think, one more round trip and their bytes. With
/// hints they are requested when the 103 arrives (one round trip after the handshake; on
/// HTTP/1.1 over new connections, since the first one waits for the HTML), and render is
/// never before the HTML itself (handshake, request, think).
pub fn arm_floor(
    proto: LabProtocol,
    hints: bool,
    rtt: f64,
    down: Option<u64>,
    think: f64,
    blocking: u64,
    total: u64,
) -> HintsFloor {
    let hs = f64::from(handshake_rtts(proto, false));
    let html = (hs + 1.0) * rtt + think;
    let after_html = html + rtt;
    if !hints {
        return HintsFloor {
            render_ms: after_html + transfer_ms(blocking, down),
            page_ms: after_html + transfer_ms(total, down),
        };
    }
    let extra_handshake = if proto.multiplexes() { 0.0 } else { hs * rtt };
    let preloads = (hs + 2.0) * rtt + extra_handshake + transfer_ms(blocking, down);
    let render = preloads.max(html);
    HintsFloor {
        render_ms: render,
        page_ms: render.max(after_html + transfer_ms(total.saturating_sub(blocking), down)),
    }
}

struct Server {
    server: RunningServer,
    tls: SocketAddr,
    dir: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.shutdown();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_server(lp: &LinkPath, hints: bool) -> Result<Server, LabError> {
    let dir = std::env::temp_dir().join(format!(
        "h2lab-hints-{}-{}",
        std::process::id(),
        if hints { "on" } else { "off" }
    ));
    let cfg = ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.clone()),
        h3: true,
        early_hints: hints,
        max_concurrent_streams: 1000,
        ..ServerConfig::local()
    };
    let server = lp.server(cfg)?;
    let tls = server
        .tls_addr()
        .ok_or(LabError::NoAddress("built-in server: no TLS address"))?;
    Ok(Server { server, tls, dir })
}

fn pool(proto: LabProtocol, up: SocketAddr, r: &Reach, timeout: Duration) -> PoolSpec {
    let via = if proto.is_h3() { r.udp } else { Some(r.tcp) };
    PoolSpec {
        proto,
        origin: Origin {
            target: Target {
                scheme: Scheme::Https,
                host: up.ip().to_string(),
                port: up.port(),
                path: "/".into(),
            },
            connect_to: via.into_iter().collect(),
            unix_socket: None,
        },
        connections: if proto.multiplexes() { 1 } else { 6 },
        streams: 1000,
        gauge: None,
        timeout,
        push: false,
    }
}

/// Body bytes of the render-blocking responses of a load.
fn blocking_bytes(l: &PageLoad, paths: &[String]) -> u64 {
    l.timeline
        .iter()
        .filter(|t| t.path > 0 && paths.get(t.path).is_some_and(|p| render_blocking(p)))
        .map(|t| t.body_bytes)
        .sum()
}

/// Sub-resources sent before the HTML was complete: the preloads of a 103.
fn preloaded(l: &PageLoad) -> u32 {
    let n = l
        .timeline
        .iter()
        .filter(|t| t.path > 0 && t.sent_ms < l.html_ms)
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Runs the experiment; `log` receives progress lines.
pub fn run(cfg: &HintsConfig, log: &mut dyn FnMut(&str)) -> Result<HintsReport, LabError> {
    let start = Instant::now();
    let repeat = cfg.repeat.max(1);
    let choice = match cfg.links.iter().any(RenderLink::shaped) {
        true => ModeChoice::resolve(cfg.mode),
        false => ModeChoice::fixed(cfg.mode),
    };
    choice.fallback.iter().for_each(|w| log(w));
    let mut report = HintsReport {
        path: choice,
        repeat,
        equivalence: cfg.equivalence,
        links: Vec::new(),
        elapsed_secs: 0.0,
    };
    let path = format!("/page?{}", cfg.page_query);
    let think = think_ms(&cfg.page_query);
    for rl in &cfg.links {
        let lp = LinkPath::start(rl, report.path.mode, cfg.tcp_cc.as_deref())?;
        if let Some(sides) = lp.describe_sides() {
            log(&format!("link {}: {}: {sides}", rl.name, lp.mode().label()));
        }
        let servers = [start_server(&lp, false)?, start_server(&lp, true)?];
        let reach = servers
            .iter()
            .map(|s| lp.reach(s.tls, s.server.h3_addr()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut chrome = match &cfg.browser {
            None => Vec::new(),
            Some(b) => {
                let cert = |s: &Server| {
                    s.server
                        .cert_path()
                        .map(std::path::Path::to_path_buf)
                        .ok_or(LabError::NoAddress("built-in server: no certificate"))
                };
                let (c_off, c_on) = (cert(&servers[0])?, cert(&servers[1])?);
                let servers = [
                    (false, c_off.as_path(), &reach[0]),
                    (true, c_on.as_path(), &reach[1]),
                ];
                ChromiumArm::all(b, &cfg.protocols, servers, &path, cfg.timeout)?
            }
        };
        let mut arms: Vec<(LabProtocol, bool, PoolSpec)> = Vec::new();
        for &p in &cfg.protocols {
            for (k, s) in servers.iter().enumerate() {
                arms.push((p, k == 1, pool(p, s.tls, &reach[k], cfg.timeout)));
            }
        }
        // The fetcher and Chromium (child processes) on the client side of a packet path.
        let side = lp.client_side()?;
        let first = pool(LabProtocol::H2, servers[0].tls, &reach[0], cfg.timeout);
        let found = load::discover(&first, &path).map_err(LabError::from)?;
        let mut paths = vec![path.clone()];
        paths.extend(found.paths.iter().cloned());
        let blocking = paths.iter().filter(|p| render_blocking(p)).count();
        log(&format!(
            "link {} ({}), page {path}: {} sub-resources, {blocking} CSS/JS, think {}",
            rl.name,
            rl.describe(lp.mode()),
            paths.len() - 1,
            crate::fmt::ms(think)
        ));
        let mut loads: Vec<Vec<(PageLoad, u32)>> = vec![Vec::new(); arms.len()];
        let mut errors: Vec<Option<String>> = vec![None; arms.len()];
        let mut counted: Vec<Option<PathCounters>> = vec![None; arms.len()];
        for i in 0..repeat as usize {
            for k in 0..arms.len() {
                let j = (k + i) % arms.len();
                let (proto, hints, p) = &arms[j];
                let r = &reach[usize::from(*hints)];
                let before = lp.counters(r);
                let result = load::load_page(p, &paths);
                netpath::add(&mut counted[j], before, lp.counters(r));
                match result {
                    Ok(l) if l.failed == 0 => {
                        log(&format!(
                            "  {} load {}/{repeat} {:<16} {:<8} render {:>9}  page {:>9}",
                            rl.name,
                            i + 1,
                            proto.label(),
                            if *hints { "hints" } else { "no hints" },
                            crate::fmt::ms(render_ms(&l, &paths)),
                            crate::fmt::ms(l.page_ms)
                        ));
                        loads[j].push((l, i as u32));
                    }
                    Ok(l) => {
                        errors[j].get_or_insert(format!("{} requests failed", l.failed));
                    }
                    Err(e) => {
                        log(&format!("  {} {}: {e}", rl.name, proto.label()));
                        errors[j].get_or_insert(e.to_string());
                    }
                }
            }
            for c in &mut chrome {
                let r = &reach[usize::from(c.hints())];
                let before = lp.counters(r);
                c.round(i, &rl.name, repeat, log);
                c.count(before, lp.counters(r));
            }
        }
        drop(side);
        let (rtt, down) = link_shape(rl.profile);
        let results: Vec<HintArm> = arms
            .iter()
            .zip(loads)
            .zip(errors)
            .zip(counted)
            .map(|((((proto, hints, _), ls), error), path)| {
                let pairs: Vec<(f64, f64)> = ls
                    .iter()
                    .map(|(l, _)| (render_ms(l, &paths), l.page_ms))
                    .collect();
                let page = MedianSpread::of(&pairs.iter().map(|x| x.1).collect::<Vec<_>>());
                let median = page.and_then(|s| {
                    ls.iter().map(|(l, _)| l).min_by(|a, b| {
                        (a.page_ms - s.median)
                            .abs()
                            .total_cmp(&(b.page_ms - s.median).abs())
                    })
                });
                HintArm {
                    proto: *proto,
                    hints: *hints,
                    browser: false,
                    render_ms: MedianSpread::of(&pairs.iter().map(|x| x.0).collect::<Vec<_>>()),
                    page_ms: page,
                    load_rounds: ls.iter().map(|x| x.1).collect(),
                    loads: pairs,
                    preloaded: Some(median.map_or(0, preloaded)),
                    floor: median.map(|l| {
                        let b = blocking_bytes(l, &paths);
                        arm_floor(*proto, *hints, rtt, down, think, b, l.bytes.read)
                    }),
                    error,
                    path,
                }
            })
            .collect();
        let mut results = results;
        let browsed: Vec<HintArm> = chrome.into_iter().map(|c| c.result(&results)).collect();
        results.extend(browsed);
        let mut verdicts = Vec::new();
        for (b, &p) in [false, true]
            .into_iter()
            .flat_map(|b| cfg.protocols.iter().map(move |p| (b, p)))
        {
            let find = |h: bool| {
                results
                    .iter()
                    .find(|a| a.proto == p && a.hints == h && a.browser == b)
            };
            if let (Some(off), Some(on)) = (find(false), find(true)) {
                for metric in ["render", "page"] {
                    verdicts.push(verdict(metric, off, on, repeat as usize, cfg.equivalence));
                }
            }
        }
        report.links.push(HintsLinkResult {
            link: rl.clone(),
            description: rl.describe(lp.mode()),
            path_sides: lp.sides(),
            path: path.clone(),
            think_ms: think,
            resources: paths.len() - 1,
            render_blocking: blocking,
            arms: results,
            verdicts,
        });
        drop(reach);
        drop(servers);
    }
    report.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(report)
}

/// `a`'s `metric` by round.
fn by_round(a: &HintArm, metric: &str, rounds: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; rounds];
    for (l, &r) in a.loads.iter().zip(&a.load_rounds) {
        if let Some(slot) = v.get_mut(r as usize) {
            *slot = Some(if metric == "render" { l.0 } else { l.1 });
        }
    }
    v
}

/// With hints against without, paired by round (presumed: hints faster).
fn verdict(
    metric: &'static str,
    off: &HintArm,
    on: &HintArm,
    rounds: usize,
    equivalence: f64,
) -> HintsVerdict {
    let (a, b) = (by_round(on, metric, rounds), by_round(off, metric, rounds));
    let what = format!("page hints {metric} {} {}", on.proto.name(), on.browser);
    let (ratio, swapped, outcome) = ci::faster_of(&a, &b, ci::seed_for(&what), equivalence);
    HintsVerdict {
        proto: on.proto,
        metric,
        browser: on.browser,
        hints_faster: !swapped,
        ratio,
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_of_a_query() {
        assert_eq!(think_ms("n=3&think=200ms"), 200.0);
        assert_eq!(think_ms("think=2s&n=1"), 2000.0);
        assert_eq!(think_ms("think=150"), 150.0);
        assert_eq!(think_ms("n=3"), 0.0);
    }

    #[test]
    fn hints_move_the_css_and_js_into_the_think_time() {
        // wan: 40 ms, 50 Mbit/s; 200 ms think; 100 kB of CSS/JS (16 ms), 200 kB in all.
        let (rtt, down) = (40.0, Some(50_000_000));
        let off = arm_floor(LabProtocol::H2, false, rtt, down, 200.0, 100_000, 200_000);
        // HTML at 3 RTT + think = 320; CSS/JS one RTT later plus their bytes.
        assert!((off.render_ms - (360.0 + 16.0)).abs() < 1e-9, "{off:?}");
        assert!((off.page_ms - (360.0 + 32.0)).abs() < 1e-9, "{off:?}");
        let on = arm_floor(LabProtocol::H2, true, rtt, down, 200.0, 100_000, 200_000);
        // The preloads end at 4 RTT + 16 ms = 176, inside the think time: render = HTML.
        assert_eq!(on.render_ms, 320.0);
        assert!((on.page_ms - (360.0 + 16.0)).abs() < 1e-9, "{on:?}");
        // HTTP/1.1 opens new connections for the preloads; HTTP/3 needs one RTT less.
        let h1 = arm_floor(LabProtocol::H1Tls, true, rtt, down, 0.0, 100_000, 200_000);
        assert!((h1.render_ms - (6.0 * 40.0 + 16.0)).abs() < 1e-9, "{h1:?}");
        let h3 = arm_floor(LabProtocol::H3, false, rtt, down, 0.0, 0, 0);
        assert_eq!(h3.render_ms, 3.0 * 40.0);
    }
}
