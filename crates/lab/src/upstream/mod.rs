//! `h2lab upstream`: the upstream-hop experiment of seed 004.
//!
//! Topology: client (HTTP/1.1, h2lab's engine) → proxy → emulated link (5 ms RTT by default,
//! one [`crate::link`] relay per backend and arm) → 4 built-in backends (`h2lab serve`).
//! Arms: the proxy talks to the backends over HTTP/1.1 keep-alive, HTTP/1.0, h2c with one
//! stream per connection (nginx 1.29's `proxy_http_version 2`) or h2c multiplexed. Every
//! cell (payload × concurrency) is measured `runs` times per arm, arms alternated within each
//! cell (the starting arm rotated), so drift of the machine affects every arm alike.
//!
//! The proxy is `h2lab proxy` (in-process) or nginx ([`nginx`]: the seed's server blocks with
//! `keepalive 256`; nginx before 1.29.4 has no HTTP/2 upstream and no version has upstream
//! multiplexing, so those arms are reported as not supported).
//!
//! Output ([`render`]): a table per cell, the seed's decision framework (response-size
//! bands × throughput and p99 advantage of each HTTP/2 arm over HTTP/1.1 keep-alive, a win
//! only when the medians differ by more than the run-to-run spread), and the upstream
//! connections each arm used (counted by the links: accepted connections).

pub mod nginx;

use std::net::SocketAddr;
use std::time::Duration;

use h2lab_engine::{AppProtocol, BenchConfig, NoopObserver, ProtocolChoice, StopFlag};
use h2lab_proxy::{ProxyConfig, RunningProxy, UpstreamAddr, UpstreamProtocol};
use h2lab_server::{RunningServer, ServerConfig};

use crate::compare::axes::{HeaderSet, Payload};
use crate::error::LabError;
use crate::link::{LinkConfig, RunningLink};
use crate::stats::MedianSpread;

/// Which proxy sits in the middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// `h2lab proxy`, in-process, one worker.
    H2lab,
    /// nginx (one worker), started with the seed's configuration.
    Nginx,
}

/// Experiment settings.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Upstream protocols compared (the first is the baseline of the decision table).
    pub arms: Vec<UpstreamProtocol>,
    /// Response payloads (`info` is sent with about 4 KiB of request headers).
    pub payloads: Vec<Payload>,
    /// Client concurrencies (HTTP/1.1 connections).
    pub concurrency: Vec<u32>,
    /// Runs per cell and arm.
    pub runs: u32,
    /// Warm-up of each run.
    pub warm_up: Duration,
    /// Measured period of each run.
    pub duration: Duration,
    /// Round-trip time of the proxy → backend links.
    pub rtt: Duration,
    /// Backends.
    pub backends: usize,
    /// The proxy.
    pub proxy: ProxyKind,
    /// Keep-alive connections per upstream (nginx `keepalive 256`); for h2c-mux the most
    /// connections per upstream.
    pub pool: usize,
    /// Streams per h2c-mux connection.
    pub streams: u32,
    /// Client threads.
    pub client_threads: u32,
}

impl UpstreamConfig {
    /// The seed's matrix: 8 payloads × c = 10, 50, 200, 4 arms, 3 runs of 3 s.
    pub fn seed() -> Self {
        let payloads = [
            "ping", "json", "1k", "10k", "50k", "100k", "compute", "info",
        ]
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
        UpstreamConfig {
            arms: vec![
                UpstreamProtocol::H1,
                UpstreamProtocol::H10,
                UpstreamProtocol::H2c,
                UpstreamProtocol::H2cMux,
            ],
            payloads,
            concurrency: vec![10, 50, 200],
            runs: 3,
            warm_up: Duration::from_millis(500),
            duration: Duration::from_secs(3),
            rtt: Duration::from_millis(5),
            backends: 4,
            proxy: ProxyKind::H2lab,
            pool: 256,
            streams: 100,
            client_threads: 2,
        }
    }

    /// `--quick`: 4 payloads × c = 10, 200, 2 runs of 1 s.
    pub fn quick() -> Self {
        UpstreamConfig {
            payloads: ["ping", "10k", "100k", "info"]
                .iter()
                .filter_map(|p| p.parse().ok())
                .collect(),
            concurrency: vec![10, 200],
            runs: 2,
            warm_up: Duration::from_millis(300),
            duration: Duration::from_secs(1),
            ..UpstreamConfig::seed()
        }
    }
}

/// One arm at one cell.
#[derive(Debug, Clone)]
pub struct ArmResult {
    /// The arm.
    pub arm: UpstreamProtocol,
    /// Requests per second over the runs.
    pub rps: Option<MedianSpread>,
    /// p99 latency (ms) over the runs.
    pub p99_ms: Option<MedianSpread>,
    /// Failed requests over the runs.
    pub failed: u64,
    /// Why the arm was not measured (not supported, failed to start).
    pub skipped: Option<String>,
}

/// One payload × concurrency cell.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The payload.
    pub payload: Payload,
    /// Client concurrency.
    pub concurrency: u32,
    /// Per arm, in [`UpstreamConfig::arms`] order.
    pub arms: Vec<ArmResult>,
}

/// Everything measured.
#[derive(Debug, Clone)]
pub struct UpstreamReport {
    /// The settings.
    pub config: UpstreamConfig,
    /// The proxy, as a name and version.
    pub proxy: String,
    /// Every cell.
    pub cells: Vec<Cell>,
    /// Upstream connections accepted by each arm's links over the whole experiment, with
    /// the requests the arm completed.
    pub connections: Vec<(UpstreamProtocol, Option<u64>, u64)>,
}

/// A running arm: its links and its proxy.
struct ArmEnv {
    arm: UpstreamProtocol,
    links: Vec<RunningLink>,
    proxy: Option<ArmProxy>,
    skipped: Option<String>,
    completed: u64,
}

enum ArmProxy {
    H2lab(RunningProxy),
    Nginx(SocketAddr),
}

impl ArmEnv {
    fn addr(&self) -> Option<SocketAddr> {
        match &self.proxy {
            Some(ArmProxy::H2lab(p)) => p.addr(),
            Some(ArmProxy::Nginx(a)) => Some(*a),
            None => None,
        }
    }

    fn connections(&self) -> u64 {
        self.links.iter().map(|l| l.stats().connections).sum()
    }
}

/// Runs the experiment. `progress` gets a line per finished cell.
pub fn run(
    cfg: &UpstreamConfig,
    stop: &StopFlag,
    progress: &mut dyn FnMut(&str),
) -> Result<UpstreamReport, LabError> {
    let backends: Vec<RunningServer> = (0..cfg.backends.max(1))
        .map(|_| {
            h2lab_server::spawn(ServerConfig {
                quiet: true,
                // The proxy's cancels and pooled streams must not look like an attack.
                max_rapid_resets: u32::MAX,
                max_concurrent_streams: cfg.streams.max(100),
                ..ServerConfig::local()
            })
            .map_err(|source| LabError::Server {
                role: "backend",
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    let mut nginx_proc = None;
    let mut arms = Vec::new();
    for &arm in &cfg.arms {
        let links = backends
            .iter()
            .map(|b| {
                let up = b
                    .addr()
                    .ok_or(LabError::NoAddress("backend without address"))?;
                let mut lc = LinkConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), up);
                lc.rtt = cfg.rtt;
                crate::link::spawn(lc).map_err(|source| LabError::Link { name: None, source })
            })
            .collect::<Result<Vec<_>, LabError>>()?;
        let ups: Vec<UpstreamAddr> = links.iter().map(|l| UpstreamAddr::Tcp(l.addr())).collect();
        let mut env = ArmEnv {
            arm,
            links,
            proxy: None,
            skipped: None,
            completed: 0,
        };
        match cfg.proxy {
            ProxyKind::H2lab => {
                let mut pc = ProxyConfig::local(ups, arm);
                pc.pool = if arm == UpstreamProtocol::H2cMux {
                    4
                } else {
                    cfg.pool
                };
                pc.streams = cfg.streams;
                match h2lab_proxy::spawn(pc) {
                    Ok(p) => env.proxy = Some(ArmProxy::H2lab(p)),
                    Err(e) => env.skipped = Some(format!("proxy: {e}")),
                }
            }
            ProxyKind::Nginx => {
                let addrs: Vec<SocketAddr> = env.links.iter().map(RunningLink::addr).collect();
                match nginx::arm_block(arm, &addrs, cfg.pool) {
                    Ok(block) => {
                        let n = nginx_proc.get_or_insert_with(nginx::Config::default);
                        let port = n
                            .add(block)
                            .map_err(|e| LabError::Anchor(format!("nginx: {e}")))?;
                        env.proxy = Some(ArmProxy::Nginx(SocketAddr::from(([127, 0, 0, 1], port))));
                    }
                    Err(why) => env.skipped = Some(why),
                }
            }
        }
        arms.push(env);
    }
    let _nginx = match nginx_proc {
        Some(c) => Some(c.start().map_err(LabError::Anchor)?),
        None => None,
    };
    let proxy_name = match cfg.proxy {
        ProxyKind::H2lab => format!("h2lab proxy {}", env!("CARGO_PKG_VERSION")),
        ProxyKind::Nginx => nginx::version().unwrap_or_else(|| "nginx".into()),
    };

    let mut cells = Vec::new();
    for payload in &cfg.payloads {
        for &c in &cfg.concurrency {
            let mut samples: Vec<(Vec<f64>, Vec<f64>, u64)> = vec![Default::default(); arms.len()];
            for run in 0..cfg.runs.max(1) {
                for k in 0..arms.len() {
                    if stop.is_stopped() {
                        break;
                    }
                    let a = (k + run as usize) % arms.len();
                    let Some(addr) = arms[a].addr() else { continue };
                    let bc = bench_config(addr, payload, c, cfg)?;
                    match h2lab_engine::run(&bc, &NoopObserver, stop) {
                        Ok(r) => {
                            let s = &mut samples[a];
                            s.0.push(r.req_per_sec());
                            let h = &r.request_time;
                            s.1.push(if h.is_empty() {
                                f64::NAN
                            } else {
                                h.value_at_quantile(0.99) as f64 / 1e6
                            });
                            s.2 += r.requests.failed;
                            arms[a].completed += r.requests.completed;
                        }
                        Err(source) => {
                            return Err(LabError::Run {
                                what: arms[a].arm.name().to_string(),
                                source,
                            })
                        }
                    }
                }
            }
            let cell = Cell {
                payload: payload.clone(),
                concurrency: c,
                arms: arms
                    .iter()
                    .zip(&samples)
                    .map(|(e, s)| ArmResult {
                        arm: e.arm,
                        rps: MedianSpread::of(&s.0),
                        p99_ms: MedianSpread::of(&s.1),
                        failed: s.2,
                        skipped: e.skipped.clone(),
                    })
                    .collect(),
            };
            progress(&cell_line(&cell));
            cells.push(cell);
        }
    }
    let connections = arms
        .iter()
        .map(|e| {
            (
                e.arm,
                e.proxy.is_some().then(|| e.connections()),
                e.completed,
            )
        })
        .collect();
    Ok(UpstreamReport {
        config: cfg.clone(),
        proxy: proxy_name,
        cells,
        connections,
    })
}

fn bench_config(
    addr: SocketAddr,
    payload: &Payload,
    c: u32,
    cfg: &UpstreamConfig,
) -> Result<BenchConfig, LabError> {
    let url = format!("http://{addr}{}", payload.path);
    let mut bc = BenchConfig::from_uris(&[url], None)?;
    bc.clients = c.max(1);
    bc.max_concurrent_streams = 1;
    bc.threads = cfg.client_threads.clamp(1, bc.clients);
    bc.duration = Some(cfg.duration);
    bc.warm_up = Some(cfg.warm_up);
    bc.protocol = ProtocolChoice::H1;
    bc.require_protocol = Some(AppProtocol::Http11);
    if payload.name == "info" {
        bc.headers = HeaderSet::Large(4).fields();
    }
    bc.connection_inactivity_timeout = Some(Duration::from_secs(10));
    Ok(bc)
}

fn cell_line(c: &Cell) -> String {
    let mut s = format!("{:>8} c={:<4}", c.payload.label(), c.concurrency);
    for a in &c.arms {
        match (&a.skipped, a.rps) {
            (Some(_), _) => s.push_str(&format!("  {}: n/a", a.arm.name())),
            (None, Some(r)) => s.push_str(&format!("  {}: {:.0} req/s", a.arm.name(), r.median)),
            (None, None) => s.push_str(&format!("  {}: -", a.arm.name())),
        }
    }
    s
}

/// The seed's response-size bands.
pub const BANDS: [&str; 4] = ["< 1KB", "1-10KB", "~50KB", ">= 100KB"];

/// The band of a payload.
pub fn band(p: &Payload) -> usize {
    let b = p.approx_bytes();
    if p.name == "info" || p.name == "compute" || b < 1024 {
        0
    } else if b <= 10 * 1024 {
        1
    } else if b < 100 * 1024 {
        2
    } else {
        3
    }
}

/// Relative advantage of `alt` over `base` (positive: `alt` better) and whether it is
/// decided (the medians differ by more than both spreads).
fn advantage(
    base: Option<MedianSpread>,
    alt: Option<MedianSpread>,
    higher_better: bool,
) -> Option<(f64, bool)> {
    let (b, a) = (base?, alt?);
    if b.median <= 0.0 || a.median <= 0.0 {
        return None;
    }
    let rel = if higher_better {
        a.median / b.median - 1.0
    } else {
        b.median / a.median - 1.0
    };
    // One run has no spread: nothing is decided from it.
    let decided = a.n >= 2 && b.n >= 2 && (a.median - b.median).abs() > a.spread().max(b.spread());
    Some((rel, decided))
}

fn fmt_adv(v: &[(f64, bool)]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let mut rel: Vec<f64> = v.iter().map(|x| x.0).collect();
    rel.sort_by(f64::total_cmp);
    let med = crate::stats::median_sorted(&rel);
    let decided = v.iter().filter(|x| x.1).count();
    format!(
        "{:+.0}% ({:+.0}..{:+.0}; {decided}/{} decided)",
        med * 100.0,
        rel[0] * 100.0,
        rel[rel.len() - 1] * 100.0,
        v.len()
    )
}

/// The text report.
pub fn render(r: &UpstreamReport) -> String {
    let mut out = String::new();
    let cfg = &r.config;
    out.push_str(&format!(
        "h2lab upstream: client (HTTP/1.1) -> {} -> link ({} ms RTT) -> {} backends (h2lab serve); {} runs of {:.1} s per arm and cell, arms alternated\n\n",
        r.proxy,
        cfg.rtt.as_secs_f64() * 1000.0,
        cfg.backends,
        cfg.runs,
        cfg.duration.as_secs_f64()
    ));
    out.push_str(&format!("{:>8} {:>5}", "payload", "c"));
    for a in &cfg.arms {
        out.push_str(&format!(" | {:>22}", format!("{} req/s, p99 ms", a.name())));
    }
    out.push('\n');
    for c in &r.cells {
        out.push_str(&format!("{:>8} {:>5}", c.payload.label(), c.concurrency));
        for a in &c.arms {
            let v = match (&a.skipped, a.rps, a.p99_ms) {
                (Some(_), _, _) => "n/a".to_string(),
                (None, Some(rps), Some(p99)) => format!(
                    "{:.0}±{:.0}, {:.1}{}",
                    rps.median,
                    rps.spread() / 2.0,
                    p99.median,
                    if a.failed > 0 { " (errors)" } else { "" }
                ),
                _ => "-".to_string(),
            };
            out.push_str(&format!(" | {v:>22}"));
        }
        out.push('\n');
    }
    let base = cfg.arms.first().copied();
    out.push_str(&format!(
        "\nDecision framework (advantage over {} keep-alive; median over the band's cells, range, cells where the difference exceeds the run-to-run spread)\n",
        base.map_or("-", UpstreamProtocol::name)
    ));
    for (ai, &arm) in cfg.arms.iter().enumerate().skip(1) {
        if !arm.is_h2() {
            continue;
        }
        out.push_str(&format!(
            "\n  {} vs {}\n",
            arm.name(),
            base.map_or("-", UpstreamProtocol::name)
        ));
        out.push_str(&format!(
            "  {:<10} | {:<40} | {}\n",
            "Response", "Throughput advantage", "P99 latency advantage"
        ));
        for (bi, name) in BANDS.iter().enumerate() {
            let cells: Vec<&Cell> = r.cells.iter().filter(|c| band(&c.payload) == bi).collect();
            if cells.is_empty() {
                continue;
            }
            if let Some(why) = cells[0].arms.get(ai).and_then(|a| a.skipped.clone()) {
                out.push_str(&format!("  {name:<10} | {why}\n"));
                continue;
            }
            let thr: Vec<(f64, bool)> = cells
                .iter()
                .filter_map(|c| advantage(c.arms[0].rps, c.arms[ai].rps, true))
                .collect();
            let lat: Vec<(f64, bool)> = cells
                .iter()
                .filter_map(|c| advantage(c.arms[0].p99_ms, c.arms[ai].p99_ms, false))
                .collect();
            out.push_str(&format!(
                "  {name:<10} | {:<40} | {}\n",
                fmt_adv(&thr),
                fmt_adv(&lat)
            ));
        }
    }
    out.push_str("\nUpstream connections used (accepted by the links over the whole experiment)\n");
    for (arm, conns, completed) in &r.connections {
        match conns {
            Some(n) => out.push_str(&format!(
                "  {:<8} {n} connections for {completed} measured requests ({:.1} per connection; warm-ups and connections cut when a run ends count too)\n",
                arm.name(),
                if *n == 0 { 0.0 } else { *completed as f64 / *n as f64 }
            )),
            None => out.push_str(&format!(
                "  {:<8} not measured ({})\n",
                arm.name(),
                r.cells
                    .first()
                    .and_then(|c| c.arms.iter().find(|a| a.arm == *arm))
                    .and_then(|a| a.skipped.clone())
                    .unwrap_or_default()
            )),
        }
    }
    out
}
