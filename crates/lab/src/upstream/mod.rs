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
//! Statistics ([`verdict`]): the lab's own, as `h2lab compare` — each arm's median with its
//! 95% bootstrap CI per cell, and each HTTP/2 arm against the baseline (HTTP/1.1 keep-alive)
//! as the median of per-run paired ratios with its CI, classified win / parity / undecided
//! ([`crate::stats::ci::classify`], ±3% band, at least [`crate::stats::ci::MIN_ROUNDS`] (6)
//! runs to decide).
//!
//! A run that completes nothing is run once more with a longer warm-up (as `h2lab compare`
//! does); if that one completes nothing either, it is left out of the arm's medians and
//! ratios (not entered as 0 req/s) and marked in the report ([`measure`]).
//!
//! Isolation, as `h2lab compare` and `h2lab page`: the backends, the links and the
//! in-process proxy (or nginx) run on the server CPUs, the client on the others
//! ([`crate::env::pin_servers`]; `cpus:` line, results.json `isolation`), and each run
//! records what the rest of the machine did over each round; busy runs are marked, and with
//! `strict` a busy round is measured again: the lab's kernel ([`crate::kernel::rounds`]),
//! compare's too.
//!
//! Output ([`output`]): a table per cell, the seed's decision framework (response-size
//! bands × throughput and p99 advantage of each HTTP/2 arm over HTTP/1.1 keep-alive, with the
//! cells' outcomes), and the upstream connections each arm used (counted by the links:
//! accepted connections); as text, CSV, JSON and a self-contained HTML page.

pub mod measure;
pub mod nginx;
pub mod output;
mod packet;
mod paths_out;
mod report_html;
pub mod verdict;

pub use output::{band, csv, json, render, BANDS};
pub use report_html::html;
pub use verdict::Versus;

use std::net::SocketAddr;
use std::time::Duration;

use h2lab_engine::{AppProtocol, BenchConfig, ProtocolChoice, StopFlag};
use h2lab_proxy::{ProxyConfig, RunningProxy, UpstreamAddr, UpstreamProtocol};
use h2lab_server::{RunningServer, ServerConfig};

use crate::compare::axes::{HeaderSet, Payload};
use crate::env::{Isolation, Pinning};
use crate::error::LabError;
use crate::kernel::clocks::RunObserver;
use crate::kernel::{order, rounds, RunPolicy};
use crate::link::{LinkConfig, RunningLink};
use crate::netpath::{ModeChoice, PathCounters, PathMode, PathSides};
use crate::stats::ci::Estimate;
use crate::stats::MedianSpread;

/// Which proxy sits in the middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// `h2lab proxy`, in-process, one worker.
    H2lab,
    /// nginx (one worker), started with the seed's configuration.
    Nginx,
}

/// The shortest measured period `--duration` accepts at a proxy → backend round trip of
/// `rtt`: ten round trips, and at least the lab's [`RunPolicy::min_window`]. Every
/// proxied request crosses the link at least once (a new upstream connection twice more),
/// and a run starts its requests all at once, so its first completions come a few round
/// trips in; a period of a few round trips would measure the start-up, not the steady
/// state (the seed measured 3 s at 5 ms).
pub fn min_window(rtt: Duration) -> Duration {
    (rtt * 10).max(RunPolicy::LAB.min_window)
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
    /// How the servers (backends, links, proxy) and the client share the CPUs.
    pub pinning: Pinning,
    /// Measure a round again (at most [`RunPolicy::strict_retries`] times) when the machine
    /// was busy during it.
    pub strict: bool,
    /// The backends answer `/page` with `103 Early Hints` first (`serve --early-hints`), and
    /// a `page` payload (`/page?n=1&css=1&js=1`) is measured too: the report counts the
    /// interim responses each proxy passed on.
    pub early_hints: bool,
    /// Which path the proxy → backends hop crosses: the packet link (kernel TCP, default) or
    /// the relay.
    pub mode: PathMode,
    /// The packet link's TCP congestion control in both namespaces (`--cc`; `None`: theirs).
    pub tcp_cc: Option<String>,
    /// The lab's timing numbers (strict retries, the retry of a run that completed nothing,
    /// the shortest window).
    pub policy: RunPolicy,
}

impl UpstreamConfig {
    /// The seed's matrix: 8 payloads × c = 10, 50, 200, 4 arms, 6 runs of 3 s (fewer paired
    /// runs never decide: [`crate::stats::ci::MIN_ROUNDS`]).
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
            runs: 6,
            warm_up: Duration::from_millis(500),
            duration: Duration::from_secs(3),
            rtt: Duration::from_millis(5),
            backends: 4,
            proxy: ProxyKind::H2lab,
            pool: 256,
            streams: 100,
            client_threads: 2,
            pinning: Pinning::Auto,
            strict: false,
            early_hints: false,
            mode: PathMode::Packet,
            tcp_cc: None,
            policy: RunPolicy::LAB,
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
    /// Requests per second of each run, by run index (`None`: not measured in that run).
    pub rps_runs: Vec<Option<f64>>,
    /// p99 latency (ms) of each run, by run index.
    pub p99_runs: Vec<Option<f64>>,
    /// Median requests per second with its 95% bootstrap CI.
    pub rps_ci: Option<Estimate>,
    /// Median p99 (ms) with its 95% bootstrap CI.
    pub p99_ci: Option<Estimate>,
    /// Against the baseline arm (the first), paired by run; `None` for the baseline itself
    /// and for arms not measured.
    pub versus: Option<Versus>,
    /// Runs that completed nothing and were run again (with
    /// [`RunPolicy::empty_retry_warm_up`] times the warm-up).
    pub retried_runs: usize,
    /// Runs that completed nothing even when run again: left out of the medians and the
    /// ratios (`None` in `rps_runs` and `p99_runs`).
    pub empty_runs: usize,
    /// Runs measured while the machine was busy ([`crate::host::MachineLoad::busy`]).
    pub busy_runs: usize,
    /// Interim (1xx) responses the client received, all runs (`103 Early Hints` the proxy
    /// passed on from the backends).
    pub informational: u64,
    /// What the proxy → backends path counted during this arm's runs of the cell.
    pub path: Option<PathCounters>,
    /// The client workers' CPU time per request (µs) over the runs, and by run index.
    pub client_cpu_us: Option<MedianSpread>,
    /// See `client_cpu_us`.
    pub client_cpu_runs: Vec<Option<f64>>,
    /// Runs in a slow spell ([`measure::leave_out_spells`]): `None` in `rps_runs` and
    /// `p99_runs`, left out of the medians and ratios.
    pub spell_runs: usize,
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
    /// How the CPUs were split between the servers (backends, links, proxy) and the client.
    pub isolation: Isolation,
    /// Runs measured while the machine was busy, of all runs kept.
    pub busy_runs: (usize, usize),
    /// Rounds measured again because the machine was busy (`strict`).
    pub remeasured: usize,
    /// The path the proxy → backends hop crossed, and why the relay if packet mode was
    /// asked for.
    pub path: ModeChoice,
    /// The packet path's TCP congestion control per side (packet mode).
    pub path_sides: Option<PathSides>,
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
        match &self.proxy {
            // Packet mode: no relay counts them; the proxy does.
            Some(ArmProxy::H2lab(p)) if self.links.is_empty() => {
                p.stats()
                    .snapshot(Duration::from_millis(200))
                    .upstream_connections_opened
            }
            _ => self.links.iter().map(|l| l.stats().connections).sum(),
        }
    }

    /// What this arm's path has counted so far: the shared packet path, or its relays.
    fn counters(&self, path: Option<&packet::UpstreamPath>) -> Option<PathCounters> {
        if let Some(p) = path {
            return Some(p.counters());
        }
        self.links
            .iter()
            .map(|l| PathCounters::of_relay(&l.stats()))
            .reduce(|a, b| a.plus(&b))
    }
}

/// What [`start`] started: dropped (stopped) before the CPU pinning is undone.
struct Started {
    _backends: Vec<RunningServer>,
    arms: Vec<ArmEnv>,
    _nginx: Option<nginx::Nginx>,
    proxy_name: String,
    /// The packet path (packet mode), dropped after everything inside it.
    path: Option<packet::UpstreamPath>,
}

/// Starts the backends, each arm's links and proxy, and nginx if asked for.
fn start(cfg: &UpstreamConfig, mode: PathMode) -> Result<Started, LabError> {
    let path = match mode {
        PathMode::Packet => Some(packet::UpstreamPath::start(cfg)?),
        PathMode::Relay => None,
    };
    let backends: Vec<RunningServer> = (0..cfg.backends.max(1))
        .map(|_| {
            let sc = ServerConfig {
                quiet: true,
                // The proxy's cancels and pooled streams must not look like an attack.
                max_rapid_resets: u32::MAX,
                max_concurrent_streams: cfg.streams.max(100),
                early_hints: cfg.early_hints,
                ..ServerConfig::local()
            };
            match &path {
                Some(p) => p.backend(sc),
                None => h2lab_server::spawn(sc).map_err(|source| LabError::Server {
                    role: "backend",
                    source,
                }),
            }
        })
        .collect::<Result<_, _>>()?;
    let mut nginx_proc = None;
    let mut nginx_arms = Vec::new();
    let mut arms = Vec::new();
    for &arm in &cfg.arms {
        // Packet mode: the proxy connects to the backends across the path, no relay.
        let links = backends
            .iter()
            .filter(|_| path.is_none())
            .map(|b| {
                let up = b
                    .addr()
                    .ok_or(LabError::NoAddress("backend without address"))?;
                let mut lc = LinkConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), up);
                lc.rtt = cfg.rtt;
                crate::link::spawn(lc).map_err(|source| LabError::Link { name: None, source })
            })
            .collect::<Result<Vec<_>, LabError>>()?;
        let ups: Vec<UpstreamAddr> = match &path {
            None => links.iter().map(|l| UpstreamAddr::Tcp(l.addr())).collect(),
            Some(_) => backends
                .iter()
                .filter_map(RunningServer::addr)
                .map(UpstreamAddr::Tcp)
                .collect(),
        };
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
                let spawned = match &path {
                    Some(p) => p.on_client(move || h2lab_proxy::spawn(pc))?,
                    None => h2lab_proxy::spawn(pc),
                };
                match spawned {
                    Ok(p) => env.proxy = Some(ArmProxy::H2lab(p)),
                    Err(e) => env.skipped = Some(format!("proxy: {e}")),
                }
            }
            ProxyKind::Nginx => {
                let addrs: Vec<SocketAddr> = match &path {
                    None => env.links.iter().map(RunningLink::addr).collect(),
                    Some(_) => backends.iter().filter_map(RunningServer::addr).collect(),
                };
                match nginx::arm_block(arm, &addrs, cfg.pool) {
                    Ok(block) => {
                        let n = nginx_proc.get_or_insert_with(nginx::Config::default);
                        // The address is known once nginx has started (below).
                        nginx_arms.push((arms.len(), n.add(block)));
                    }
                    Err(why) => env.skipped = Some(why.to_string()),
                }
            }
        }
        arms.push(env);
    }
    let _nginx = match nginx_proc {
        Some(c) => {
            // nginx (a child process) starts in the client namespace in packet mode.
            let _side = path.as_ref().map(|p| p.client_side()).transpose()?;
            let n = c.start().map_err(LabError::Nginx)?;
            for (k, i) in nginx_arms {
                arms[k].proxy = Some(ArmProxy::Nginx(n.addr(i)));
            }
            Some(n)
        }
        None => None,
    };
    let proxy_name = match cfg.proxy {
        ProxyKind::H2lab => format!("h2lab proxy {}", env!("CARGO_PKG_VERSION")),
        ProxyKind::Nginx => nginx::version().unwrap_or_else(|| "nginx".into()),
    };
    Ok(Started {
        _backends: backends,
        arms,
        _nginx,
        proxy_name,
        path,
    })
}

/// Runs the experiment. `progress` gets a line per finished cell.
pub fn run(
    cfg: &UpstreamConfig,
    stop: &StopFlag,
    progress: &mut dyn FnMut(&str),
) -> Result<UpstreamReport, LabError> {
    // The backends, links and proxies start on the server CPUs; the client's threads, started
    // later by this thread, inherit the client CPUs. `_pin` is dropped last.
    let choice = ModeChoice::resolve(cfg.mode);
    if let Some(w) = &choice.fallback {
        progress(w);
    }
    let (started, isolation, _pin) =
        crate::env::pin_servers(&cfg.pinning, || start(cfg, choice.mode));
    let Started {
        _backends,
        mut arms,
        _nginx,
        proxy_name,
        path,
    } = started?;
    // The client measures from the client side (the proxy listens there).
    let side = path.as_ref().map(|p| p.client_side()).transpose()?;
    let path_sides = path.as_ref().map(packet::UpstreamPath::sides);
    let (mut busy, mut kept, mut remeasured) = (0usize, 0usize, 0usize);
    let mut cells = Vec::new();
    for payload in &cfg.payloads {
        for &c in &cfg.concurrency {
            let runs = cfg.runs.max(1) as usize;
            let mut samples = vec![measure::ArmRuns::new(runs); arms.len()];
            let mut counted: Vec<Option<PathCounters>> = vec![None; arms.len()];
            for run in 0..runs {
                // Forwards and backwards in turn, rotated: compare's round order.
                let n = arms.len();
                let order: Vec<usize> = (0..n)
                    .map(|k| order::round_position(k, run as u32, n))
                    .collect();
                let policy = &cfg.policy;
                let r = rounds::round(&order, cfg.strict, policy, stop, |a| {
                    let Some(addr) = arms[a].addr() else {
                        return Ok::<_, LabError>(None);
                    };
                    let bc = bench_config(addr, payload, c, cfg)?;
                    let before = arms[a].counters(path.as_ref());
                    // The client workers read their own CPU clocks at the measured edges.
                    let obs = RunObserver::new(Vec::new(), bc.threads);
                    let out = rounds::whole_run(&bc, policy, &obs, stop);
                    if let (Some(b), Some(n)) = (before, arms[a].counters(path.as_ref())) {
                        let d = n.since(&b);
                        counted[a] = Some(counted[a].map_or(d, |c| c.plus(&d)));
                    }
                    let out = out.map_err(|source| LabError::Run {
                        what: arms[a].arm.name().to_string(),
                        source,
                    })?;
                    Ok(Some((out, obs.client_ns())))
                })?;
                remeasured += r.remeasured;
                for (a, (o, cpu)) in r.outs {
                    let v = measure::RunValues::of(&o, r.busy, cpu);
                    kept += 1;
                    busy += usize::from(v.busy);
                    arms[a].completed += v.completed;
                    samples[a].record(run, &v);
                }
            }
            // Slow spells are judged on an unshaped hop only (see `kernel::spell`).
            measure::leave_out_spells(&mut samples, cfg.rtt.is_zero());
            let mut cell = Cell {
                payload: payload.clone(),
                concurrency: c,
                arms: arms
                    .iter()
                    .zip(samples)
                    .zip(counted)
                    .map(|((e, s), p)| ArmResult {
                        path: p,
                        ..s.into_result(e.arm, e.skipped.clone())
                    })
                    .collect(),
            };
            verdict::decide_cell(&mut cell);
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
    drop(side);
    Ok(UpstreamReport {
        config: cfg.clone(),
        proxy: proxy_name,
        cells,
        connections,
        isolation,
        busy_runs: (busy, kept),
        remeasured,
        path: choice,
        path_sides,
    })
}

fn present(v: &[Option<f64>]) -> Vec<f64> {
    v.iter().flatten().copied().collect()
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
