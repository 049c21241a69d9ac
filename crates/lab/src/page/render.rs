//! `h2lab page --render`: the experiment seed 000 could not run — what RFC 9218
//! prioritisation buys a page whose render-blocking CSS and JS compete with its images.
//!
//! A realistic page (the built-in `/page` with stylesheets and scripts in the head and
//! images after them, all sizes drawn from the seed) is loaded cold, the way a browser
//! does — HTTP/1.1 over 6 connections, HTTP/2 over one — with the browser's default
//! priorities on every HTTP/2 request (CSS `u=0`, JS `u=1`, images `u=5, i`; see
//! [`h2lab_engine::priority`]). Four arms, alternated load by load, on each emulated link:
//!
//! - `http/1.1 x6`: six connections; priorities mean nothing there;
//! - `h2 prio off`: a server that ignores priorities (round-robin, as nginx does);
//! - `h2 prio on`: a server that schedules by RFC 9218 (as h2o and nghttpd do).
//!
//! Both servers are the built-in one, started in-process (`--priorities off` and
//! `rfc9218`): on a packet path's server side by default, each behind its own link relay with
//! `--mode relay` (`render::path`). Per arm it reports the time until every
//! render-blocking resource is complete ("render", the metric the seed's reference cites),
//! the time until the page is complete, and the verdict between the arms with the lab's
//! rule: the arms alternate load by load, so load `i` of every arm is round `i`; a verdict
//! takes the per-round ratios of two arms' times (runner-up / best), their median and 95% CI
//! ([`ci::paired_ratio`]), and calls it a win, slight, parity or undecided against the
//! equivalence band ([`ci::classify`]; fewer than [`ci::MIN_ROUNDS`] rounds are undecided).
//!
//! - `h2 push`: the RFC 9218 server with `--push`: the page's CSS and JS are pushed
//!   (PUSH_PROMISE before the HTML) to a client that accepts push and uses the pushed
//!   responses instead of requesting them (`pushed` and `wasted` columns).
//!
//! When nghttpd is installed, two more arms load the same page (written to files) from
//! nghttpd with `--no-rfc7540-pri` (RFC 9218 priorities), behind the same link: without
//! push, and with `-p` pushing the CSS and JS (configuration written by the lab). When h2o
//! is installed, `h2 h2o` loads the same files from h2o (configuration written by the lab;
//! h2o 2.2 predates RFC 9218 and ignores the `priority` header). On a packet path nghttpd
//! and h2o run on its server side, in process groups of their own.
//!
//! Every arm records what the path counted during its loads (`path`: packets relayed,
//! dropped at the queue, lost, per direction; the relay's TCP chunks).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use h2lab_engine::config::{Scheme, Target};
use h2lab_engine::priority::render_blocking;
use h2lab_server::sched::PriorityMode;
use h2lab_server::{RunningServer, ServerConfig};
use serde::Serialize;

use crate::env::Origin;
use crate::error::LabError;
use crate::link::LinkProfile;
use crate::netpath::{ModeChoice, PathCounters, PathMode, PathSides};
use crate::page::load::{PageLoad, PoolSpec};
use crate::proto::LabProtocol;
use crate::stats::ci;
use crate::stats::MedianSpread;

mod one_page;
pub(crate) mod path;
mod text;
mod verdict;

use one_page::Page;
use path::{LinkPath, Reach};
pub use text::{json, render_text};
use verdict::verdict;
pub use verdict::RenderVerdict;
pub(crate) use verdict::{inverse, time_words};

/// The default page: the seed's 300 images of 1–8 KiB, with 4 stylesheets of ~24 KiB and
/// 4 scripts of ~64 KiB in the head.
pub const DEFAULT_RENDER_QUERY: &str =
    "n=300&min=1k&max=8k&seed=1&css=4&css_size=24k&js=4&js_size=64k";

/// The same page with its scripts at the end of the body, after the images (a common
/// layout): the scripts are requested behind 300 images, which is where a server's
/// priorities can overtake the images already queued.
pub const LATE_JS_RENDER_QUERY: &str =
    "n=300&min=1k&max=8k&seed=1&css=4&css_size=24k&js=4&js_size=64k&js_at=end";

/// One emulated link of the experiment.
#[derive(Debug, Clone, Serialize)]
pub struct RenderLink {
    /// Name in the report (`wan`, `lossy`).
    pub name: String,
    /// RTT, rates and loss.
    #[serde(skip)]
    pub profile: LinkProfile,
    /// Segment loss probability added to the profile.
    pub loss: f64,
}

impl RenderLink {
    /// The links of the default experiment: `wan` (40 ms, 50 Mbit/s) and `lossy` (the same
    /// with 2% loss).
    pub fn defaults() -> Vec<RenderLink> {
        vec![
            RenderLink {
                name: "wan".into(),
                profile: LinkProfile::Wan,
                loss: 0.0,
            },
            RenderLink {
                name: "lossy".into(),
                profile: LinkProfile::Wan,
                loss: 0.02,
            },
        ]
    }

    /// RTT, rates and loss, and the path: `packet link (kernel TCP)`, or the relay's model
    /// of TCP.
    pub(crate) fn describe(&self, mode: PathMode) -> String {
        let base = crate::env::describe_profile_shape(self.profile);
        let shape = if self.loss > 0.0 {
            format!("{base}, {}% loss", self.loss * 100.0)
        } else {
            base
        };
        if !self.shaped() {
            return shape;
        }
        match (mode, crate::link::LinkRecord::of(self.profile).model_text()) {
            (PathMode::Packet, _) => format!("{shape}; {}", PathMode::Packet.label()),
            (PathMode::Relay, Some(model)) => format!("{shape}; {model}"),
            (PathMode::Relay, None) => format!("{shape}; {}", PathMode::Relay.label()),
        }
    }

    /// Whether it shapes anything (not a loopback link without loss).
    pub(crate) fn shaped(&self) -> bool {
        self.profile != LinkProfile::Loopback || self.loss > 0.0
    }
}

/// What `h2lab page --render` needs.
#[derive(Debug, Clone)]
pub struct RenderConfig {
    /// Pages to load: (name, query of the built-in `/page`).
    pub pages: Vec<(String, String)>,
    /// Links to run on.
    pub links: Vec<RenderLink>,
    /// Cold loads per arm and link (6 or more can decide a verdict).
    pub repeat: u32,
    /// Longest one load may take.
    pub timeout: Duration,
    /// Equivalence band of the verdicts (a fraction: 0.03 is ±3%).
    pub equivalence: f64,
    /// Which path shaped links cross: the packet link (kernel TCP, the default) or the relay.
    pub mode: PathMode,
    /// TCP congestion control across a packet path (`None`: the namespaces' default).
    pub tcp_cc: Option<String>,
}

impl Default for RenderConfig {
    fn default() -> Self {
        RenderConfig {
            pages: vec![
                ("head".into(), DEFAULT_RENDER_QUERY.into()),
                ("late-js".into(), LATE_JS_RENDER_QUERY.into()),
            ],
            links: RenderLink::defaults(),
            repeat: 6,
            timeout: Duration::from_secs(120),
            equivalence: ci::DEFAULT_EQUIVALENCE,
            mode: PathMode::Packet,
            tcp_cc: None,
        }
    }
}

/// The arms, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// HTTP/1.1 over TLS, 6 connections.
    H1x6,
    /// HTTP/2, server ignoring priorities.
    H2PrioOff,
    /// HTTP/2, server scheduling by RFC 9218.
    H2PrioOn,
    /// HTTP/2, server scheduling by RFC 9218 and pushing the CSS and JS; client accepting.
    H2Push,
    /// HTTP/2 against nghttpd with RFC 9218 priorities (`--no-rfc7540-pri`), when installed.
    Nghttpd,
    /// nghttpd pushing the CSS and JS (`-p`), client accepting.
    NghttpdPush,
    /// HTTP/2 against h2o serving the same files as nghttpd, when installed.
    H2o,
}

impl Arm {
    /// Every arm.
    pub const ALL: [Arm; 4] = [Arm::H1x6, Arm::H2PrioOff, Arm::H2PrioOn, Arm::H2Push];

    /// Label in tables.
    pub fn label(self) -> &'static str {
        match self {
            Arm::H1x6 => "http/1.1 x6",
            Arm::H2PrioOff => "h2 prio off",
            Arm::H2PrioOn => "h2 prio on",
            Arm::H2Push => "h2 push",
            Arm::Nghttpd => "h2 nghttpd",
            Arm::NghttpdPush => "h2 ngh push",
            Arm::H2o => "h2 h2o",
        }
    }
}

/// One arm on one link.
#[derive(Debug, Clone, Serialize)]
pub struct ArmResult {
    /// Which arm.
    pub arm: Arm,
    /// Time until every render-blocking CSS/JS response is complete, ms.
    pub render_ms: Option<MedianSpread>,
    /// Time until the page is complete, ms.
    pub page_ms: Option<MedianSpread>,
    /// Each load that completed: (render ms, page ms).
    pub loads: Vec<(f64, f64)>,
    /// The round of each of `loads` (0: the first); loads of the same round were measured
    /// back to back, and the verdicts pair them.
    pub load_rounds: Vec<u32>,
    /// Pushed body bytes per load (mean over the loads; 0 without push).
    pub pushed_bytes: u64,
    /// Pushed body bytes never used, per load (mean).
    pub pushed_wasted_bytes: u64,
    /// First error, if loads failed.
    pub error: Option<String>,
    /// What the path counted during the arm's loads (`None`: a direct link).
    pub path: Option<PathCounters>,
}

/// One page on one link.
#[derive(Debug, Clone, Serialize)]
pub struct RenderLinkResult {
    /// The page's name (`head`, `late-js`).
    pub page: String,
    /// Its URL path.
    pub path: String,
    /// Sub-resources.
    pub resources: usize,
    /// CSS and JS among them.
    pub render_blocking: usize,
    /// The link.
    pub link: RenderLink,
    /// Its description (RTT, rates, loss, path).
    pub description: String,
    /// Each side's TCP congestion control (a packet path).
    pub path_sides: Option<PathSides>,
    /// Per arm.
    pub arms: Vec<ArmResult>,
    /// Best arm per metric, and the priorities-on vs off comparison.
    pub verdicts: Vec<RenderVerdict>,
    /// `h2 prio on` against `h2 prio off` only, render metric (the seed's question).
    pub priorities: Option<RenderVerdict>,
    /// `h2 push` against `h2 prio on` only, render metric (what push adds).
    pub push: Option<RenderVerdict>,
}

/// The whole experiment.
#[derive(Debug, Clone, Serialize)]
pub struct RenderReport {
    /// The path shaped links crossed (packet link or relay), and why the relay if not asked.
    pub path: ModeChoice,
    /// Loads per arm, page and link.
    pub repeat: u32,
    /// Equivalence band of the verdicts (a fraction: 0.03 is ±3%).
    pub equivalence: f64,
    /// Per link.
    pub links: Vec<RenderLinkResult>,
    /// Wall time of the whole run, s.
    pub elapsed_secs: f64,
}

/// A running built-in server of the experiment.
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

fn start_server(lp: &LinkPath, mode: PriorityMode, push: bool) -> Result<Server, LabError> {
    let dir = std::env::temp_dir().join(format!(
        "h2lab-render-{}-{}",
        std::process::id(),
        match mode {
            PriorityMode::Off => "off",
            PriorityMode::Rfc9218 => "on",
        }
    ));
    let dir = if push {
        dir.with_extension("push")
    } else {
        dir
    };
    let cfg = ServerConfig {
        listen: None,
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.clone()),
        priorities: mode,
        // Every request of the page in flight at once, so the order of the responses is
        // the server's decision (with the usual limit of 100 a browser holds the rest in
        // its own priority queue, which this client does not model).
        max_concurrent_streams: 1000,
        push,
        ..ServerConfig::local()
    };
    let server = lp.server(cfg)?;
    let tls = server
        .tls_addr()
        .ok_or(LabError::NoAddress("built-in server: no TLS address"))?;
    Ok(Server { server, tls, dir })
}

fn pool(proto: LabProtocol, server: SocketAddr, via: &Reach, timeout: Duration) -> PoolSpec {
    PoolSpec {
        proto,
        origin: Origin {
            target: Target {
                scheme: Scheme::Https,
                host: server.ip().to_string(),
                port: server.port(),
                path: "/".into(),
            },
            connect_to: vec![via.tcp],
            unix_socket: None,
        },
        connections: if proto.is_h2() { 1 } else { 6 },
        streams: 1000,
        gauge: None,
        timeout,
        push: false,
    }
}

/// Render time of one load: when the last render-blocking response completed (the HTML's
/// end when there is none).
pub fn render_ms(load: &PageLoad, paths: &[String]) -> f64 {
    load.timeline
        .iter()
        .filter(|t| paths.get(t.path).is_some_and(|p| render_blocking(p)))
        .map(|t| t.done_ms)
        .fold(load.html_ms, f64::max)
}

/// Runs the experiment; `log` receives progress lines.
pub fn run(cfg: &RenderConfig, log: &mut dyn FnMut(&str)) -> Result<RenderReport, LabError> {
    let start = Instant::now();
    let path = match cfg.links.iter().any(RenderLink::shaped) {
        true => ModeChoice::resolve(cfg.mode),
        false => ModeChoice::fixed(cfg.mode),
    };
    path.fallback.iter().for_each(|w| log(w));
    let mut report = RenderReport {
        path,
        repeat: cfg.repeat.max(1),
        equivalence: cfg.equivalence,
        links: Vec::new(),
        elapsed_secs: 0.0,
    };
    for rl in &cfg.links {
        let lp = LinkPath::start(rl, report.path.mode, cfg.tcp_cc.as_deref())?;
        if let Some(sides) = lp.describe_sides() {
            log(&format!("link {}: {}: {sides}", rl.name, lp.mode().label()));
        }
        let servers = [
            start_server(&lp, PriorityMode::Rfc9218, false)?,
            start_server(&lp, PriorityMode::Off, false)?,
            start_server(&lp, PriorityMode::Rfc9218, true)?,
        ];
        let reach = servers
            .iter()
            .map(|s| lp.reach(s.tls, None))
            .collect::<Result<Vec<_>, _>>()?;
        for (page_name, query) in &cfg.pages {
            let page = Page {
                link: rl,
                path: &lp,
                servers: &servers,
                reach: &reach,
                name: page_name,
                query,
            };
            report.links.push(page.run(cfg, report.repeat, log)?);
        }
        drop(reach);
        drop(servers);
    }
    report.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::load::RequestTiming;

    fn t(path: usize, done_ms: f64) -> RequestTiming {
        RequestTiming {
            path,
            conn: 0,
            sent_ms: 0.0,
            first_byte_ms: 0.0,
            done_ms,
            status: 200,
            body_bytes: 0,
            request_bytes: 0,
        }
    }

    #[test]
    fn render_time_is_the_last_blocking_response() {
        let paths: Vec<String> = ["/page", "/a.css", "/b.js", "/c.png"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let load = PageLoad {
            page_ms: 90.0,
            html_ms: 10.0,
            connections: 1,
            requests: 4,
            failed: 0,
            bytes: Default::default(),
            timeline: vec![t(0, 10.0), t(1, 30.0), t(2, 50.0), t(3, 90.0)],
            conns: Vec::new(),
            push: Default::default(),
        };
        assert_eq!(render_ms(&load, &paths), 50.0);
        let only_html = PageLoad {
            timeline: vec![t(0, 10.0), t(3, 90.0)],
            ..load
        };
        assert_eq!(render_ms(&only_html, &paths), 10.0);
    }
}
