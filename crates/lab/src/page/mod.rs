//! `h2lab page`: browser-like page loads.
//!
//! Loads a page and all its sub-resources the way a browser does — HTTP/1.1 with up to 6
//! connections per host and no pipelining, HTTP/2 and HTTP/3 with one multiplexed
//! connection each (all three by default against the built-in server) — cold
//! (new connections, no cache), repeated and alternated between protocols. The default
//! target is the built-in server's `/page` (the seed article's 15×20 table of 300 images
//! of 1–8 KB) behind the `wan` link profile. It reports page load time (median, p90),
//! connections, requests and bytes on the wire split into headers and bodies, and the
//! page-time ratio between the protocols with its verdict ([`ratio`]: the per-round ratios of
//! loads measured back to back, their 95% CI, win / parity / undecided).
//!
//! Two more scenarios from the seeds: [`slow`] (100 parallel requests to a 2-second
//! endpoint over 6 HTTP/1.1 connections vs one HTTP/2 connection) and [`users`] (virtual
//! users following ramp/hold stages, recording page time and open connections over time).

pub mod anchor;
pub mod browser;
pub mod browser_report;
pub mod floor;
pub mod hints;
pub mod html;
pub mod load;
pub mod loss;
pub mod output;
pub(crate) mod paths;
pub mod ratio;
pub mod render;
pub mod repeat;
pub mod rounds;
pub mod slow;
pub use slow::SlowConfig;
pub mod users;

pub use ratio::Ratio;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::env::{BuiltinOptions, LabEnv, Route, Targets};
use crate::error::LabError;
use crate::kernel::Machine;
use crate::link::LinkProfile;
use crate::netpath::PathMode;
use crate::proto::LabProtocol;
use crate::stats::{quantile, MedianSpread};
use load::{PageLoad, PoolSpec};
use users::LoadTestConfig;
pub use users::LoadTestReport;

/// The built-in page: 300 images of 1–8 KiB in a 15-column table (the seed's page).
pub const DEFAULT_PAGE_QUERY: &str = "n=300&min=1k&max=8k&seed=1";

/// Everything `h2lab page` needs.
#[derive(Debug, Clone)]
pub struct PageConfig {
    /// The page URL; `None` loads the built-in server's `/page`.
    pub url: Option<String>,
    /// Query of the built-in `/page` (`n`, `min`, `max`, `seed`).
    pub page_query: String,
    /// Protocols to compare; `None`: HTTP/1.1 and HTTP/2 over TLS and HTTP/3 on the built-in
    /// server (HTTP/3 not in the slow-endpoint and load-test scenarios), HTTP/1.1 and HTTP/2
    /// over TLS for an `https://` URL, h1 and h2c for an `http://` URL.
    pub protocols: Option<Vec<LabProtocol>>,
    /// Emulated link.
    pub link: LinkProfile,
    /// HTTP/1.x connections per host.
    pub h1_connections: u32,
    /// HTTP/2 connections per host.
    pub h2_connections: u32,
    /// HTTP/2 streams per connection (also capped by the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    pub h2_streams: u32,
    /// Page loads per protocol.
    pub repeat: u32,
    /// Equivalence band of the verdicts (a fraction: ratios whose 95% CI lies within
    /// `1 ± equivalence` are parity).
    pub equivalence: f64,
    /// Run the load test after the page loads.
    pub load_test: Option<LoadTestConfig>,
    /// Run the slow-endpoint scenario instead of page loads.
    pub slow: Option<SlowConfig>,
    /// Built-in server threads.
    pub server_threads: usize,
    /// How the built-in server and the client share the CPUs.
    pub pinning: crate::env::Pinning,
    /// Longest a single page load may take.
    pub timeout: Duration,
    /// Accept HTTP/2 server push (`--push accept`; the built-in server then pushes each
    /// page's CSS and JS); default refuse, as browsers do.
    pub push: bool,
    /// Which path shaped links cross: the packet link (kernel TCP, the default) or the relay.
    pub mode: PathMode,
    /// The packet link's TCP congestion control in both namespaces (`--cc`; `None`: theirs).
    pub tcp_cc: Option<String>,
    /// Where connections to the page's URL go instead of its host (`-B unix:PATH`,
    /// `--connect-to`); `None`: the URL's host.
    pub route: Option<Route>,
    /// The loss experiment (`--loss 0,1,3`): page loads on each of these links (the WAN at
    /// each loss level, [`LinkProfile::wan_with_loss`]) instead of `link` alone; empty: off.
    pub loss_levels: Vec<LinkProfile>,
    /// `--browser`: every round also loads the page with headless Chromium per protocol
    /// ([`browser`]); `None`: off.
    pub browser: Option<browser::BrowserConfig>,
    /// `--repeat-view`: each load is a first visit and a returning visit ([`repeat`]).
    pub repeat_view: bool,
    /// `--0rtt` (with `repeat_view`): the returning visit sends its first requests as TLS 1.3
    /// early data / QUIC 0-RTT, and the built-in server accepts them (`serve --0rtt`).
    pub zero_rtt: bool,
}

impl Default for PageConfig {
    fn default() -> Self {
        PageConfig {
            url: None,
            page_query: DEFAULT_PAGE_QUERY.into(),
            protocols: None,
            link: LinkProfile::Wan,
            h1_connections: 6,
            h2_connections: 1,
            h2_streams: 100,
            repeat: 6,
            equivalence: crate::stats::ci::DEFAULT_EQUIVALENCE,
            load_test: None,
            slow: None,
            server_threads: 1,
            pinning: crate::env::Pinning::Auto,
            timeout: Duration::from_secs(120),
            push: false,
            route: None,
            mode: PathMode::Packet,
            tcp_cc: None,
            loss_levels: Vec::new(),
            browser: None,
            repeat_view: false,
            zero_rtt: false,
        }
    }
}

/// One page load, briefly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadBrief {
    /// Page load time (ms).
    pub page_ms: f64,
    /// Connections opened.
    pub connections: u32,
    /// Requests made.
    pub requests: u32,
    /// Requests that failed.
    pub failed: u32,
    /// The round of the load (0: the first); loads of the same round were measured back to
    /// back, and the verdicts pair them.
    pub round: u32,
}

/// One protocol's page loads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtoPage {
    /// Protocol.
    pub proto: LabProtocol,
    /// Most connections allowed.
    pub connections_limit: u32,
    /// Streams per connection allowed.
    pub streams: u32,
    /// Every load that completed (a failed one leaves its round out).
    pub loads: Vec<LoadBrief>,
    /// Page load time over the loads (ms).
    pub page_ms: Option<MedianSpread>,
    /// 90th percentile page load time (ms).
    pub page_p90_ms: f64,
    /// The load closest to the median, in full (waterfall, bytes).
    pub median_load: Option<PageLoad>,
    /// Why loads failed.
    pub error: Option<String>,
}

/// The page under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageInfo {
    /// Its URL (as named in requests).
    pub url: String,
    /// Request target of the HTML.
    pub html_path: String,
    /// Same-origin sub-resources found.
    pub resources: usize,
    /// References to other origins (not loaded).
    pub other_origins: usize,
}

/// The slow-endpoint scenario's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowReport {
    /// Settings.
    pub config: SlowConfig,
    /// One entry per protocol.
    pub results: Vec<ProtoPage>,
    /// Slowest / fastest, with the verdict from the per-round ratios.
    pub ratio: Option<Ratio>,
}

/// Everything `h2lab page` produced (serialised as `results.json`).
#[derive(Debug, Clone, Serialize)]
pub struct PageReport {
    /// `h2lab page`.
    pub tool: &'static str,
    /// h2lab version.
    pub version: &'static str,
    /// Start, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Wall time (s).
    pub elapsed_secs: f64,
    /// The servers.
    pub environment: String,
    /// How the CPUs were split between the built-in server and the client.
    pub isolation: crate::env::Isolation,
    /// The link, described (with the model of TCP the relay applied).
    pub link: String,
    /// The links used (the one link, or one per loss level): shape and TCP model.
    pub link_models: Vec<crate::link::LinkRecord>,
    /// The path shaped links crossed (packet link or relay), and why the relay if not asked.
    pub path: crate::netpath::ModeChoice,
    /// Each packet path's TCP congestion control per side, by link profile.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_sides: Vec<(String, crate::netpath::PathSides)>,
    /// What the path counted during each protocol's loads (`--loss` levels: their own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_counts: Vec<loss::ProtoPath>,
    /// The machine.
    pub machine: Machine,
    /// The page (page loads only).
    pub page: Option<PageInfo>,
    /// Loads per protocol.
    pub repeat: u32,
    /// Equivalence band of the verdicts (a fraction: 0.03 is ±3%).
    pub equivalence: f64,
    /// Page loads per protocol (empty for the slow scenario).
    pub protocols: Vec<ProtoPage>,
    /// Page-time ratio of the slowest and the fastest protocol, with its verdict (per-round
    /// ratio, 95% CI, outcome).
    pub ratio: Option<Ratio>,
    /// HTTP/3 against HTTP/2 (as `ratio`), when both loaded the page and the overall
    /// `ratio` is not already that pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h3_vs_h2: Option<Ratio>,
    /// The slow-endpoint scenario.
    pub slow: Option<SlowReport>,
    /// The load test.
    pub load_test: Option<LoadTestReport>,
    /// The loss experiment, one entry per loss level (empty unless `--loss`); `protocols`
    /// and `ratio` then hold the first level's loads.
    pub loss: Vec<loss::LossLevel>,
    /// The browser arms (`--browser`), one entry per link (per loss level with `--loss`):
    /// their figures and the simulated / browser ratios.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub browser: Vec<browser_report::BrowserReport>,
    /// The returning visits (`--repeat-view`); `protocols` then holds the first views.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_view: Option<repeat::RepeatReport>,
    /// Things worth knowing.
    pub notes: Vec<String>,
}

impl PageReport {
    /// Sets `ratio` and `h3_vs_h2` from `protocols`, decided against `1 ± equivalence`.
    fn decide(&mut self, equivalence: f64) {
        self.ratio = Ratio::of_pages(&self.protocols, equivalence, "load");
        self.h3_vs_h2 = Ratio::h3_vs_h2(&self.protocols, self.ratio.as_ref(), equivalence, "load");
    }
}

/// Summarises repeated loads of one protocol: `rounds[i]` is round `i`'s load (`None`: it
/// failed).
pub fn proto_page(
    proto: LabProtocol,
    pool: &PoolSpec,
    rounds: Vec<Option<PageLoad>>,
    error: Option<String>,
) -> ProtoPage {
    let briefs: Vec<LoadBrief> = rounds
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            l.as_ref().map(|l| LoadBrief {
                page_ms: l.page_ms,
                connections: l.connections,
                requests: l.requests,
                failed: l.failed,
                round: i as u32,
            })
        })
        .collect();
    let loads: Vec<PageLoad> = rounds.into_iter().flatten().collect();
    let times: Vec<f64> = loads.iter().map(|l| l.page_ms).collect();
    let summary = MedianSpread::of(&times);
    let median_load = summary.and_then(|s| {
        loads
            .iter()
            .min_by(|a, b| {
                (a.page_ms - s.median)
                    .abs()
                    .total_cmp(&(b.page_ms - s.median).abs())
            })
            .cloned()
    });
    ProtoPage {
        proto,
        connections_limit: pool.connections,
        streams: if proto.multiplexes() { pool.streams } else { 1 },
        loads: briefs,
        page_ms: summary,
        page_p90_ms: quantile(&times, 0.9),
        median_load,
        error,
    }
}

fn pools(
    env: &mut LabEnv,
    cfg: &PageConfig,
    link: LinkProfile,
    protos: &[LabProtocol],
) -> Result<Vec<PoolSpec>, LabError> {
    protos
        .iter()
        .map(|&p| {
            Ok(PoolSpec {
                proto: p,
                origin: env.origin(p, link)?,
                connections: if p.multiplexes() {
                    cfg.h2_connections
                } else {
                    cfg.h1_connections
                },
                streams: if p.multiplexes() { cfg.h2_streams } else { 1 },
                gauge: None,
                timeout: cfg.timeout,
                push: cfg.push,
            })
        })
        .collect()
}

/// Whether page loads compare HTTP/3 too when `--protocols` is not given: HTTP/1.1 × 6 vs
/// HTTP/2 vs HTTP/3 (the page loads and the loss experiment); the seeds' slow-endpoint and
/// load-test scenarios keep their HTTP/1.1 vs HTTP/2 unless `--protocols` lists `h3`.
fn h3_by_default(cfg: &PageConfig) -> bool {
    cfg.slow.is_none() && cfg.load_test.is_none()
}

/// Runs `h2lab page` (see the module docs). `log` receives progress lines.
pub fn run(cfg: &PageConfig, log: &mut dyn FnMut(&str)) -> Result<PageReport, LabError> {
    let start = Instant::now();
    let started_unix = crate::kernel::unix_now();
    // Before the built-in server pins this thread to the client's CPUs (the machine's CPUs,
    // not the client's share).
    let machine = Machine::this();
    let (mut env, html_path) = match &cfg.url {
        None => (
            LabEnv::builtin(&BuiltinOptions {
                threads: cfg.server_threads,
                pinning: cfg.pinning.clone(),
                push: cfg.push,
                h3: match &cfg.protocols {
                    Some(v) => v.contains(&LabProtocol::H3),
                    None => h3_by_default(cfg),
                },
                tcp_cc: cfg.tcp_cc.clone(),
                zero_rtt: cfg.zero_rtt,
            })?,
            format!("/page?{}", cfg.page_query),
        ),
        Some(u) => {
            let t = h2lab_engine::Target::parse(u)?;
            let mut targets = Targets::from_url(u)?;
            if targets.h2.is_some()
                && cfg
                    .protocols
                    .as_ref()
                    .is_some_and(|v| v.contains(&LabProtocol::H3))
            {
                // Asked for: HTTP/3 on the same host and port (UDP), as Alt-Svc usually says.
                targets.h3 = targets.h2.clone();
            }
            (
                LabEnv::external(targets).with_route(cfg.route.clone()),
                t.path,
            )
        }
    };
    let available = env.targets().available();
    let protos: Vec<LabProtocol> = match &cfg.protocols {
        Some(v) => v.clone(),
        // The built-in server answers HTTP/3; an external URL only when `--protocols` asks.
        None if available.contains(&LabProtocol::H3) && h3_by_default(cfg) => {
            vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]
        }
        None if available.contains(&LabProtocol::H2) => vec![LabProtocol::H1Tls, LabProtocol::H2],
        None => vec![LabProtocol::H1, LabProtocol::H2c],
    };
    let mut notes = Vec::new();
    for p in protos.iter().filter(|p| !available.contains(p)) {
        notes.push(format!(
            "{} skipped: the target URL cannot serve it",
            p.label()
        ));
    }
    let protos: Vec<LabProtocol> = protos
        .into_iter()
        .filter(|p| available.contains(p))
        .collect();
    if protos.is_empty() {
        return Err(LabError::NothingToMeasure(
            "no protocol to measure against this target",
        ));
    }
    let first_link = cfg.loss_levels.first().copied().unwrap_or(cfg.link);
    let links_used = if cfg.loss_levels.is_empty() {
        vec![cfg.link]
    } else {
        cfg.loss_levels.clone()
    };
    let shaped = links_used.iter().any(|l| *l != LinkProfile::Loopback);
    let path = match shaped {
        true => env.set_mode(cfg.mode).clone(),
        false => crate::netpath::ModeChoice::fixed(cfg.mode),
    };
    path.fallback.iter().for_each(|w| log(w));
    if protos.contains(&LabProtocol::H3) && shaped && path.mode == PathMode::Relay {
        notes.push(crate::proto::H3_LINK_CAVEAT.into());
    }
    let pools = pools(&mut env, cfg, first_link, &protos)?;
    let link = paths::describe(first_link, path.mode);
    log(&format!("server: {}", env.describe()));
    log(&format!("cpus: {}", env.isolation().note));
    log(&format!("link {link}"));
    let mut report = PageReport {
        tool: "h2lab page",
        version: env!("CARGO_PKG_VERSION"),
        started_unix,
        elapsed_secs: 0.0,
        environment: env.describe().to_owned(),
        isolation: env.isolation().clone(),
        link,
        link_models: links_used
            .iter()
            .map(|&p| paths::record(p, path.mode))
            .collect(),
        path,
        path_sides: Vec::new(),
        path_counts: Vec::new(),
        machine,
        page: None,
        repeat: cfg.repeat,
        equivalence: cfg.equivalence,
        protocols: Vec::new(),
        ratio: None,
        h3_vs_h2: None,
        slow: None,
        load_test: None,
        loss: Vec::new(),
        browser: Vec::new(),
        repeat_view: None,
        notes,
    };
    let only = cfg.browser.as_ref().is_some_and(|b| b.only);
    let side = env.client_side(first_link)?;
    if let Some(s) = &cfg.slow {
        let w = browser::fetches(s);
        let mut barms = browser::arms_for(&mut env, cfg, first_link, &protos, w)?;
        let extra = browser::as_extra(&mut barms);
        let slow = slow::run(&pools, s, cfg.repeat, cfg.equivalence, extra, log);
        let link = report.link.clone();
        browser::finish(barms, &slow.results, &link, cfg.equivalence, &mut report);
        report.slow = Some(slow);
        drop(side);
        paths::finish(&env, &links_used, &mut report);
        report.elapsed_secs = start.elapsed().as_secs_f64();
        return Ok(report);
    }
    let first = pools
        .first()
        .ok_or(LabError::NothingToMeasure("no protocol"))?;
    let found = load::discover(first, &html_path).map_err(LabError::from)?;
    log(&format!(
        "page {}{html_path}: {} same-origin sub-resources{}",
        first.origin_prefix(),
        found.paths.len(),
        if found.other_origins > 0 {
            format!(" ({} on other origins, not loaded)", found.other_origins)
        } else {
            String::new()
        }
    ));
    if found.paths.is_empty() {
        report
            .notes
            .push("the page references no same-origin sub-resources".into());
    }
    report.page = Some(PageInfo {
        url: format!("{}{html_path}", first.origin_prefix()),
        html_path: html_path.clone(),
        resources: found.paths.len(),
        other_origins: found.other_origins,
    });
    let workload = h2lab_browser::Workload::Page(html_path.clone());
    let mut paths = vec![html_path];
    paths.extend(found.paths);
    if !cfg.loss_levels.is_empty() {
        drop(side);
        for &level in &cfg.loss_levels {
            let level_pools = self::pools(&mut env, cfg, level, &protos)?;
            let _side = env.client_side(level)?;
            let link = paths::describe(level, report.path.mode);
            log(&format!("link {link}"));
            let w = workload.clone();
            let mut barms = browser::arms_for(&mut env, cfg, level, &protos, w)?;
            let env = &env;
            let mut counts = || paths::link_loss(env, &protos, level);
            let extra = browser::as_extra(&mut barms);
            let lv = loss::run_level(
                level,
                link.clone(),
                &level_pools,
                &paths,
                cfg.repeat,
                cfg.equivalence,
                &mut counts,
                extra,
                log,
            );
            browser::finish(barms, &lv.protocols, &link, cfg.equivalence, &mut report);
            report.loss.push(lv);
        }
        if let Some(first) = report.loss.first() {
            report.protocols = first.protocols.clone();
        }
        paths::finish(&env, &links_used, &mut report);
        report.decide(cfg.equivalence);
        report.elapsed_secs = start.elapsed().as_secs_f64();
        return Ok(report);
    }
    let mut barms = browser::arms_for(&mut env, cfg, first_link, &protos, workload)?;
    let labels = pools.iter().map(|p| p.proto.label().to_string()).collect();
    let mut sims = rounds::SimLoads::new("load", labels, cfg.repeat.max(1) as usize);
    let mut views = repeat::Views::new(cfg.repeat_view, cfg.zero_rtt, pools.len());
    let mut per = vec![None; pools.len()];
    let mut counts = || paths::link_loss(&env, &protos, first_link);
    let sim_protos: Vec<LabProtocol> = pools.iter().map(|p| p.proto).collect();
    for i in 0..cfg.repeat.max(1) as usize {
        let extra = browser::as_extra(&mut barms);
        let mut sim = |j: usize, log: &mut dyn FnMut(&str)| {
            let r = loss::path_of_load(&mut counts, &mut per[j], || {
                views.load(j, &pools[j], &paths, log)
            });
            if !sims.keep(j, i, r, log) {
                views.skip(j);
            }
        };
        browser::run_round(i, &sim_protos, extra, &mut sim, log);
    }
    if !only {
        for ((pool, l), e) in pools.iter().zip(sims.loads).zip(sims.errors) {
            report.protocols.push(proto_page(pool.proto, pool, l, e));
        }
    }
    report.decide(cfg.equivalence);
    let (eq, b) = (cfg.equivalence, barms.as_ref());
    report.repeat_view = views.finish(&pools, &report.protocols, first_link, eq, b);
    let (sims, link) = (report.protocols.clone(), report.link.clone());
    browser::finish(barms, &sims, &link, cfg.equivalence, &mut report);
    if let Some(lt) = &cfg.load_test {
        report.load_test = Some(users::run_rounds(&pools, &paths, lt, cfg.equivalence, log));
    }
    drop(side);
    report.path_counts = paths::per_protocol(&pools, per);
    paths::finish(&env, &links_used, &mut report);
    report.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(report)
}
