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
//! `rfc9218`), each behind its own link relay. Per arm it reports the time until every
//! render-blocking resource is complete ("render", the metric the seed's reference cites),
//! the time until the page is complete, and the verdict between the arms with the lab's
//! rule: the arms alternate load by load, so load `i` of every arm is round `i`; a verdict
//! takes the per-round ratios of two arms' times (runner-up / best), their median and 95% CI
//! ([`ci::paired_ratio`]), and calls it a win, parity or undecided against the equivalence
//! band ([`ci::classify`]; fewer than [`ci::MIN_ROUNDS`] rounds are undecided).
//!
//! - `h2 push`: the RFC 9218 server with `--push`: the page's CSS and JS are pushed
//!   (PUSH_PROMISE before the HTML) to a client that accepts push and uses the pushed
//!   responses instead of requesting them (`pushed` and `wasted` columns).
//!
//! When nghttpd is installed, two more arms load the same page (written to files) from
//! nghttpd with `--no-rfc7540-pri` (RFC 9218 priorities), behind the same link: without
//! push, and with `-p` pushing the CSS and JS (configuration written by the lab). When h2o
//! is installed, `h2 h2o` loads the same files from h2o (configuration written by the lab;
//! h2o 2.2 predates RFC 9218 and ignores the `priority` header).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use h2lab_engine::config::{Scheme, Target};
use h2lab_engine::priority::render_blocking;
use h2lab_server::sched::PriorityMode;
use h2lab_server::{RunningServer, ServerConfig};
use serde::Serialize;

use crate::env::Origin;
use crate::error::LabError;
use crate::link::{self, LinkConfig, LinkProfile, RunningLink};
use crate::page::anchor;
use crate::page::load::{self, PageLoad, PoolSpec};
use crate::proto::LabProtocol;
use crate::stats::ci;
use crate::stats::MedianSpread;

mod verdict;

use verdict::verdict;
pub use verdict::RenderVerdict;

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

    pub(crate) fn describe(&self) -> String {
        let base = crate::env::describe_profile_shape(self.profile);
        let shape = if self.loss > 0.0 {
            format!("{base}, {}% loss", self.loss * 100.0)
        } else {
            base
        };
        match crate::link::LinkRecord::of(self.profile).model_text() {
            Some(model) => format!("{shape}; {model}"),
            None => shape,
        }
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
    /// Its description (RTT, rates, loss).
    pub description: String,
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

fn start_server(mode: PriorityMode, push: bool) -> Result<Server, LabError> {
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
    let server = h2lab_server::spawn(cfg).map_err(|source| LabError::Server {
        role: "built-in server",
        source,
    })?;
    let tls = server
        .tls_addr()
        .ok_or(LabError::NoAddress("built-in server: no TLS address"))?;
    Ok(Server { server, tls, dir })
}

fn pool(
    proto: LabProtocol,
    upstream: SocketAddr,
    link: &RunningLink,
    timeout: Duration,
) -> PoolSpec {
    PoolSpec {
        proto,
        origin: Origin {
            target: Target {
                scheme: Scheme::Https,
                host: upstream.ip().to_string(),
                port: upstream.port(),
                path: "/".into(),
            },
            connect_to: vec![link.addr()],
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
    let on = start_server(PriorityMode::Rfc9218, false)?;
    let off = start_server(PriorityMode::Off, false)?;
    let pushing = start_server(PriorityMode::Rfc9218, true)?;
    let mut report = RenderReport {
        repeat: cfg.repeat.max(1),
        equivalence: cfg.equivalence,
        links: Vec::new(),
        elapsed_secs: 0.0,
    };
    let runs = cfg
        .links
        .iter()
        .flat_map(|l| cfg.pages.iter().map(move |p| (l, p)));
    for (rl, (page_name, query)) in runs {
        let html_path = format!("/page?{query}");
        let mk = |up: SocketAddr| {
            let mut c = LinkConfig::profile(rl.profile, SocketAddr::from(([127, 0, 0, 1], 0)), up);
            c.loss = rl.loss;
            link::spawn(c).map_err(|source| LabError::Link {
                name: Some(rl.name.clone()),
                source,
            })
        };
        let link_on = mk(on.tls)?;
        let link_off = mk(off.tls)?;
        let link_push = mk(pushing.tls)?;
        let first = pool(LabProtocol::H1Tls, on.tls, &link_on, cfg.timeout);
        let found = load::discover(&first, &html_path).map_err(LabError::from)?;
        let mut paths = vec![html_path.clone()];
        paths.extend(found.paths.iter().cloned());
        let mut ng_paths = vec![anchor::PAGE_FILE.to_owned()];
        ng_paths.extend(found.paths.iter().cloned());
        let mut ng = Vec::new();
        if let Some(bin) = anchor::nghttpd_path() {
            for (arm, push) in [(Arm::Nghttpd, false), (Arm::NghttpdPush, true)] {
                let tag = format!("{page_name}-{}", if push { "push" } else { "nopush" });
                match anchor::start(&bin, &on.dir, query, &found.paths, &tag, push) {
                    Ok(n) => ng.push((arm, push, mk(n.addr)?, n)),
                    Err(e) => log(&format!("{} arm skipped: {e}", arm.label())),
                }
            }
        }
        if let Some(bin) = anchor::h2o_path() {
            match anchor::start_h2o(&bin, &on.dir, query, &found.paths, page_name) {
                Ok(n) => ng.push((Arm::H2o, false, mk(n.addr)?, n)),
                Err(e) => log(&format!("{} arm skipped: {e}", Arm::H2o.label())),
            }
        }
        let mut pools: Vec<(Arm, PoolSpec, &[String])> = vec![
            (Arm::H1x6, first, &paths),
            (
                Arm::H2PrioOff,
                pool(LabProtocol::H2, off.tls, &link_off, cfg.timeout),
                &paths,
            ),
            (
                Arm::H2PrioOn,
                pool(LabProtocol::H2, on.tls, &link_on, cfg.timeout),
                &paths,
            ),
            (
                Arm::H2Push,
                PoolSpec {
                    push: true,
                    ..pool(LabProtocol::H2, pushing.tls, &link_push, cfg.timeout)
                },
                &paths,
            ),
        ];
        for (arm, push, l, n) in &ng {
            pools.push((
                *arm,
                PoolSpec {
                    push: *push,
                    ..pool(LabProtocol::H2, n.addr, l, cfg.timeout)
                },
                &ng_paths,
            ));
        }
        let resources = paths.len() - 1;
        let blocking = paths.iter().filter(|p| render_blocking(p)).count();
        log(&format!(
            "link {} ({}), page {page_name}: {resources} sub-resources, {blocking} CSS/JS",
            rl.name,
            rl.describe(),
        ));
        let mut loads: Vec<Vec<(f64, f64)>> = vec![Vec::new(); pools.len()];
        let mut rounds: Vec<Vec<u32>> = vec![Vec::new(); pools.len()];
        let mut pushed: Vec<Vec<(u64, u64)>> = vec![Vec::new(); pools.len()];
        let mut errors: Vec<Option<String>> = vec![None; pools.len()];
        for i in 0..report.repeat as usize {
            for k in 0..pools.len() {
                let j = (k + i) % pools.len();
                let (arm, p, paths) = &pools[j];
                match load::load_page(p, paths) {
                    Ok(l) if l.failed == 0 => {
                        let r = render_ms(&l, paths);
                        log(&format!(
                            "  {} load {}/{} {:<12} render {:>9}  page {:>9}",
                            rl.name,
                            i + 1,
                            report.repeat,
                            arm.label(),
                            crate::fmt::ms(r),
                            crate::fmt::ms(l.page_ms)
                        ));
                        loads[j].push((r, l.page_ms));
                        rounds[j].push(i as u32);
                        pushed[j].push((l.push.bytes, l.push.bytes_wasted));
                    }
                    Ok(l) => {
                        errors[j].get_or_insert(format!("{} requests failed", l.failed));
                    }
                    Err(e) => {
                        log(&format!("  {} {}: {e}", rl.name, arm.label()));
                        errors[j].get_or_insert(e.to_string());
                    }
                }
            }
        }
        let arms: Vec<ArmResult> = pools
            .iter()
            .zip(loads)
            .zip(rounds)
            .zip(pushed)
            .zip(errors)
            .map(|(((((arm, _, _), l), load_rounds), pu), error)| {
                let r: Vec<f64> = l.iter().map(|x| x.0).collect();
                let p: Vec<f64> = l.iter().map(|x| x.1).collect();
                let n = (pu.len() as u64).max(1);
                ArmResult {
                    arm: *arm,
                    render_ms: MedianSpread::of(&r),
                    page_ms: MedianSpread::of(&p),
                    loads: l,
                    load_rounds,
                    pushed_bytes: pu.iter().map(|x| x.0).sum::<u64>() / n,
                    pushed_wasted_bytes: pu.iter().map(|x| x.1).sum::<u64>() / n,
                    error,
                }
            })
            .collect();
        let all: Vec<Arm> = arms.iter().map(|a| a.arm).collect();
        let verdicts = ["render", "page"]
            .into_iter()
            .filter_map(|m| verdict(m, &arms, &all, cfg.equivalence))
            .collect();
        let eq = cfg.equivalence;
        let priorities = verdict("render", &arms, &[Arm::H2PrioOff, Arm::H2PrioOn], eq);
        let push = verdict("render", &arms, &[Arm::H2PrioOn, Arm::H2Push], eq);
        report.links.push(RenderLinkResult {
            page: page_name.clone(),
            path: html_path.clone(),
            resources,
            render_blocking: blocking,
            description: rl.describe(),
            link: rl.clone(),
            arms,
            verdicts,
            priorities,
            push,
        });
        link_on.shutdown();
        link_off.shutdown();
        link_push.shutdown();
        for (_, _, l, n) in ng {
            l.shutdown();
            drop(n);
        }
    }
    drop((on, off, pushing));
    report.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(report)
}

/// The report as JSON.
pub fn json(r: &RenderReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// The terminal report.
pub fn render_text(r: &RenderReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "render experiment: {} cold loads per arm, alternated; render = all CSS/JS done; \
         verdicts from the per-round ratios (95% CI): win, parity (within the ±{} band) or \
         undecided (fewer than {} rounds, or the CI across the band's edge)",
        r.repeat,
        super::loss::fmt_pct(r.equivalence),
        ci::MIN_ROUNDS
    );
    for l in &r.links {
        let _ = writeln!(
            s,
            "\nlink {} ({}), page {} {} ({} sub-resources, {} CSS/JS)",
            l.link.name, l.description, l.page, l.path, l.resources, l.render_blocking
        );
        let _ = writeln!(
            s,
            "{:<13} {:>22} {:>22} {:>7} {:>7}",
            "arm", "render (median, range)", "page (median, range)", "pushed", "wasted"
        );
        let cell = |x: Option<MedianSpread>| match x {
            Some(v) => format!(
                "{} ({}-{})",
                crate::fmt::ms(v.median),
                crate::fmt::ms(v.min),
                crate::fmt::ms(v.max)
            ),
            None => "-".into(),
        };
        for a in &l.arms {
            let _ = writeln!(
                s,
                "{:<13} {:>22} {:>22} {:>7} {:>7}{}",
                a.arm.label(),
                cell(a.render_ms),
                cell(a.page_ms),
                a.pushed_bytes,
                a.pushed_wasted_bytes,
                a.error
                    .as_ref()
                    .map_or(String::new(), |e| format!("  error: {e}"))
            );
        }
        let all = l.verdicts.iter().map(|v| ("best of all arms", v));
        let prio = l.priorities.iter().map(|v| ("h2 prio on vs off", v));
        let push = l.push.iter().map(|v| ("h2 push vs no push", v));
        for (what, v) in all.chain(prio).chain(push) {
            let ci = v.ratio.filter(|r| r.n >= 2).map_or(String::new(), |r| {
                format!(" (95% CI {:.2}-{:.2}x, {} rounds)", r.lo, r.hi, r.n)
            });
            let _ = writeln!(
                s,
                "{:<6} {what:<17} {}: {} {:.2}x faster than {}{ci}",
                v.metric,
                v.outcome,
                v.best.label(),
                1.0 + v.margin,
                v.runner_up.label()
            );
        }
    }
    s
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
