//! `h2lab compare`: the protocol matrix.
//!
//! Measures protocols (HTTP/1.1 keep-alive, HTTP/1.0 without keep-alive, HTTP/1.1 over TLS,
//! HTTP/2 over TLS, h2c, HTTP/3) across payloads, request header sizes, concurrency, streams
//! per connection and emulated links ([`matrix`] decides which cells, [`plan`] what they
//! cost), repeats every cell ([`run`](mod@run)), and decides per condition which protocol
//! wins on throughput and on p99 latency, only when the difference is larger than the
//! run-to-run spread ([`decision`]). [`output`] renders the terminal tables, JSON and CSV;
//! [`crate::html`] the HTML report.
//!
//! With no target it starts the built-in server and the links in-process
//! ([`crate::env::LabEnv`]).

pub mod arms;
pub mod axes;
pub mod decision;
pub mod headers;
pub mod matrix;
pub mod measure;
pub mod order;
pub mod output;
pub mod paths;
pub mod plan;
pub mod run;
pub mod schedule;
pub mod sequential;
pub mod spell;
pub mod timing;
pub mod verdicts;
pub use crate::kernel::wall;

use std::time::Duration;

use h2lab_engine::StopFlag;
use serde::Serialize;

use crate::env::{BuiltinOptions, Isolation, LabEnv, Pinning, Targets};
use crate::error::LabError;
use crate::kernel::RunPolicy;
use crate::link::LinkProfile;
use crate::proto::LabProtocol;
use axes::{HeaderSet, Payload};
use decision::DecisionRow;
use matrix::{Axes, MatrixPlan};
use run::{CellResult, Progress};
use timing::Timing;

/// A predefined size of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// About 5 minutes on 2 cores: 7 payloads × 6 protocols (h3 included) at the base point,
    /// and concurrency 10/200, 4 KiB headers, 10 streams, LAN and WAN links on 2 payloads;
    /// 9 rounds of 100 ms (each arm's connections kept open between its runs, HTTP/3's QUIC
    /// connections too; fewer rounds, at least 6, when they would not fit), then more rounds on imprecise conditions within a 285 s budget.
    Default,
    /// About 1 minute: 4 payloads × 5 protocols (no h3: it would not fit) on loopback; 4 KiB headers on the 10k
    /// payload; 9 rounds of 100 ms (each arm's connections kept open between its runs; fewer,
    /// at least 6, when they would not fit), then more rounds on imprecise conditions within a
    /// 55 s budget.
    Quick,
    /// A few seconds, for tests: 2 payloads, 2 protocols, 2 short runs.
    Tiny,
}

fn payloads(names: &[&str]) -> Vec<Payload> {
    names
        .iter()
        .filter_map(|n| n.parse::<Payload>().ok())
        .collect()
}

/// Everything a compare run needs.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The preset the settings came from.
    pub preset: Preset,
    /// The axes.
    pub axes: Axes,
    /// Runs, warm-up and duration per cell.
    pub timing: Timing,
    /// Servers to measure; `None` starts the built-in server.
    pub targets: Option<Targets>,
    /// Built-in server worker threads.
    pub server_threads: usize,
    /// How the built-in server and the client share the CPUs.
    pub pinning: Pinning,
    /// The equivalence band of each metric's decisions: ratios within `1 ± band` are
    /// parity.
    pub bands: decision::Bands,
    /// Measure a round again when the machine was busy during it.
    pub strict: bool,
    /// After the matrix, keep adding rounds to conditions with undecided verdicts for at
    /// most this long.
    pub until_decided: Option<Duration>,
    /// Wall-time budget of the whole run: after every condition's first `timing.runs`
    /// rounds, the time left goes to conditions whose throughput or server-cost CIs are
    /// wider than `target_width` ([`sequential`]); `None` measures the first rounds only.
    pub budget: Option<Duration>,
    /// The relative CI width (`(hi - lo) / ratio`) at which a condition stops getting
    /// rounds from the budget.
    pub target_width: f64,
    /// Measure every run on fresh connections (a whole engine run: connect, warm up,
    /// measure, close) instead of the arms' standing connections ([`arms`]).
    pub fresh_connections: bool,
    /// Keep runs measured in a slow spell in the statistics ([`spell`]; by default they are
    /// left out).
    pub keep_slow_spells: bool,
    /// Which path shaped links cross (packet link by default, or the relay).
    pub mode: crate::netpath::PathMode,
    /// The packet link's TCP congestion control in both namespaces (`--cc`; `None`: theirs).
    pub tcp_cc: Option<String>,
}

impl CompareConfig {
    /// The settings of `preset` against the built-in server.
    pub fn preset(preset: Preset) -> CompareConfig {
        // Like for like: h2 against h1-tls, h2c against h1, h3 against h2; HTTP/1.0 as seed
        // 004's baseline.
        let all6 = vec![
            LabProtocol::H1,
            LabProtocol::H1Close,
            LabProtocol::H1Tls,
            LabProtocol::H2,
            LabProtocol::H2c,
            LabProtocol::H3,
        ];
        // HTTP/3's arms stand like the others (the engine's standing run drives QUIC between
        // windows) and the cost model ([`plan`]) prices every arm, so the default's first
        // rounds are fitted to the budget with them. `--quick` leaves `h3` out: with it, its
        // first rounds plan at 13 s instead of 9 s of its 55 s, and a round of its 100 KB
        // condition costs about three times as much (HTTP/3's windows there stretch to
        // 0.2 s, three rounds at its user-space stack's rate, against 15 ms), so fewer of the
        // budget's rounds that narrow the intervals (`h2lab compare --help` says so).
        let all5: Vec<LabProtocol> = all6[..5].to_vec();
        let (axes, timing) = match preset {
            Preset::Default => (
                Axes {
                    protocols: all6.clone(),
                    payloads: payloads(&["ping", "json", "1k", "10k", "50k", "100k", "compute"]),
                    sweep_payloads: payloads(&["json", "100k"]),
                    headers: vec![HeaderSet::None, HeaderSet::Large(4)],
                    concurrency: vec![10, 50, 200],
                    streams: vec![1, 10],
                    links: vec![LinkProfile::Loopback, LinkProfile::Lan, LinkProfile::Wan],
                    full: false,
                },
                Timing {
                    runs: 9,
                    warm_up: Duration::from_millis(100),
                    duration: WINDOW,
                    client_threads: 1,
                    policy: RunPolicy::LAB,
                },
            ),
            Preset::Quick => (
                Axes {
                    protocols: all5,
                    payloads: payloads(&["ping", "1k", "10k", "100k"]),
                    sweep_payloads: payloads(&["10k"]),
                    headers: vec![HeaderSet::None, HeaderSet::Large(4)],
                    concurrency: vec![50],
                    streams: vec![1],
                    // Loopback only: in its one-minute budget the WAN condition never
                    // decided (6 windows of 373 ms per arm, intervals 10-90% wide in every
                    // recorded run) and took a third of the budget (`--links loopback,wan`
                    // adds it back).
                    links: vec![LinkProfile::Loopback],
                    full: false,
                },
                Timing {
                    runs: 9,
                    warm_up: Duration::from_millis(100),
                    duration: WINDOW,
                    client_threads: 1,
                    policy: RunPolicy::LAB,
                },
            ),
            Preset::Tiny => (
                Axes {
                    protocols: vec![LabProtocol::H1, LabProtocol::H2c],
                    payloads: payloads(&["ping", "10k"]),
                    sweep_payloads: payloads(&["10k"]),
                    headers: vec![HeaderSet::None],
                    concurrency: vec![10],
                    streams: vec![1],
                    links: vec![LinkProfile::Loopback],
                    full: false,
                },
                Timing {
                    runs: 2,
                    warm_up: Duration::from_millis(50),
                    duration: Duration::from_millis(200),
                    client_threads: 1,
                    policy: RunPolicy::LAB,
                },
            ),
        };
        CompareConfig {
            preset,
            axes,
            timing,
            targets: None,
            server_threads: 1,
            pinning: Pinning::Auto,
            bands: decision::Bands::default(),
            strict: false,
            until_decided: None,
            budget: match preset {
                Preset::Default => Some(DEFAULT_BUDGET),
                Preset::Quick => Some(QUICK_BUDGET),
                Preset::Tiny => None,
            },
            target_width: DEFAULT_TARGET_WIDTH,
            fresh_connections: false,
            keep_slow_spells: false,
            mode: crate::netpath::PathMode::Packet,
            tcp_cc: None,
        }
    }
}

/// The measured period of a run in the default and `--quick` matrices
/// ([`RunPolicy::window`](crate::kernel::RunPolicy::window), where it was measured).
pub const WINDOW: Duration = RunPolicy::LAB.window;

/// The shortest measured window `--duration` accepts
/// ([`RunPolicy::min_window`](crate::kernel::RunPolicy::min_window)).
pub const MIN_WINDOW: Duration = RunPolicy::LAB.min_window;

/// The default matrix's wall-time budget (its limit is 5 minutes on 2 cores).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(285);
/// `--quick`'s wall-time budget (its limit is 1 minute).
pub const QUICK_BUDGET: Duration = Duration::from_secs(55);
/// Default target relative CI width of the sequential rounds: 3%, half the default
/// equivalence band's width, so that a CI that narrow can straddle an edge of the band
/// only when the ratio lies within 3% of that edge.
pub const DEFAULT_TARGET_WIDTH: f64 = 0.03;

pub use crate::kernel::Machine;

/// The version of `schemas/compare-result.v1.json` that `results.json` follows.
pub const SCHEMA_VERSION: u32 = 1;

/// `schemas/compare-result.v1.json`: the JSON Schema of `results.json`.
pub const SCHEMA: &str = include_str!("../../../../schemas/compare-result.v1.json");

/// Everything a compare run produced (serialised as `results.json`, described by
/// `schemas/compare-result.v1.json`).
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `h2lab compare`.
    pub tool: &'static str,
    /// h2lab version.
    pub version: &'static str,
    /// Start time, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Wall time of the whole run (s).
    pub elapsed_secs: f64,
    /// The preset the settings came from.
    pub preset: Preset,
    /// The servers measured.
    pub environment: String,
    /// The link profiles used, described (with the model of TCP the relay applied).
    pub links: Vec<String>,
    /// The link profiles used: shape and TCP model, one per entry of `links`.
    pub link_models: Vec<crate::link::LinkRecord>,
    /// The machine.
    pub machine: Machine,
    /// How the CPUs were split between the built-in server and the client.
    pub isolation: Isolation,
    /// Runs, warm-up, duration per cell.
    pub timing: Timing,
    /// The decisions' equivalence bands (`±` this fraction is parity), per metric.
    pub bands: decision::Bands,
    /// Busy rounds were measured again.
    pub strict: bool,
    /// Extra rounds added to undecided conditions (`--until-decided`).
    pub extra_rounds: u32,
    /// Rounds added from the budget to conditions with wide CIs ([`sequential`]).
    pub sequential_rounds: u32,
    /// The budget ([`CompareConfig::budget`]), in seconds.
    pub budget_secs: Option<f64>,
    /// The target relative CI width of the sequential rounds.
    pub target_width: f64,
    /// Runs measured while the machine was busy, of all runs.
    pub busy_runs: (usize, usize),
    /// The cells and conditions.
    pub plan: MatrixPlan,
    /// Every measured cell, in `plan.cells` order.
    pub cells: Vec<CellResult>,
    /// The decision table.
    pub decisions: Vec<DecisionRow>,
    /// Things worth knowing (skipped protocols, failed cells).
    pub notes: Vec<String>,
    /// Where the wall time went ([`wall`]).
    pub wall: wall::WallTally,
    /// Runs measured on fresh connections each ([`CompareConfig::fresh_connections`]).
    pub fresh_connections: bool,
    /// The first rounds were interleaved across conditions ([`schedule::interleaves`]).
    pub interleaved: bool,
    /// Runs measured in a slow spell ([`spell`]), of all runs, and whether they were kept in
    /// the statistics (`--keep-slow-spells`).
    pub spell_runs: (usize, usize),
    /// Runs measured in a slow spell stayed in the statistics.
    pub keep_slow_spells: bool,
    /// The path shaped links crossed (`packet link (kernel TCP)` or `relay (modelled TCP)`)
    /// and each packet path's TCP congestion control per side.
    pub path: paths::PathRecord,
}

impl CompareReport {
    /// The cell for `proto` at condition index `cond` of the plan.
    pub fn cell(&self, cond: usize, proto: LabProtocol) -> Option<&CellResult> {
        let pc = self.plan.conditions.get(cond)?;
        let (_, i) = pc.cells.iter().find(|(p, _)| *p == proto)?;
        self.cells.get(*i)
    }

    /// The protocols compared.
    pub fn protocols(&self) -> Vec<LabProtocol> {
        let mut v: Vec<LabProtocol> = self
            .plan
            .conditions
            .iter()
            .flat_map(|c| c.cells.iter().map(|(p, _)| *p))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Runs the matrix: starts the environment, measures, decides. `on_start` gets the plan, the
/// estimated time and a description of the servers (and, on a second line, the CPU split).
/// `on_cell` sees each cell as
/// it finishes (for progress output); `stop` interrupts (the report then covers what was
/// measured).
pub fn run(
    cfg: &CompareConfig,
    stop: &StopFlag,
    on_start: &mut dyn FnMut(&MatrixPlan, Duration, &str),
    on_cell: &mut dyn FnMut(Progress<'_>),
) -> Result<CompareReport, LabError> {
    let started_unix = crate::kernel::unix_now();
    // Before the built-in server pins this thread to the client's CPUs (the machine's CPUs,
    // not the client's share).
    let machine = Machine::this();
    // Room for every standing arm of a block and the in-process server's side of each
    // connection (schedule::run_plan interleaves conditions whose arms fit).
    arms::raise_open_files_limit(4 * u64::from(arms::MAX_OPEN_CONNECTIONS) + 1024);
    let start = std::time::Instant::now();
    let mut env = match &cfg.targets {
        None => LabEnv::builtin(&BuiltinOptions {
            threads: cfg.server_threads,
            pinning: cfg.pinning.clone(),
            // HTTP/3 (a UDP socket, a thread and `alt-svc` on TLS responses) only when measured.
            h3: cfg.axes.protocols.contains(&LabProtocol::H3),
            tcp_cc: cfg.tcp_cc.clone(),
            ..BuiltinOptions::default()
        })?,
        Some(t) => LabEnv::external(t.clone()),
    };
    let mut notes = Vec::new();
    let mut axes = cfg.axes.clone();
    let available = env.targets().available();
    let skipped: Vec<LabProtocol> = axes
        .protocols
        .iter()
        .copied()
        .filter(|p| !available.contains(p))
        .collect();
    for p in &skipped {
        notes.push(format!(
            "{} skipped: no {} URL for it (see --h1-url, --h2-url, --h2c-url, --h3-url)",
            p.label(),
            if p.tls() { "https://" } else { "http://" }
        ));
    }
    axes.protocols.retain(|p| available.contains(p));
    if axes.protocols.is_empty() {
        return Err(LabError::NothingToMeasure(
            "none of the requested protocols can be measured against the target",
        ));
    }
    if !env.is_builtin() {
        notes.push(
            "external target: payload paths (/ping, /json, /data?size=, /compute) assume an \
             h2lab serve-compatible server; give --payloads NAME=/path for others"
                .into(),
        );
    }
    let path = paths::choose(&mut env, &axes.links, cfg.mode);
    if axes.protocols.contains(&LabProtocol::H3)
        && axes.links.iter().any(|l| *l != LinkProfile::Loopback)
        && path.mode == crate::netpath::PathMode::Relay
    {
        notes.push(crate::proto::H3_LINK_CAVEAT.into());
    }
    let plan = axes.plan();
    let isolation = env.isolation().clone();
    on_start(
        &plan,
        plan::estimate(&plan, &cfg.timing, cfg.fresh_connections),
        &format!(
            "{}\ncpus: {}{}",
            env.describe(),
            isolation.note,
            paths::start_lines(&path)
        ),
    );
    let env_secs = start.elapsed();
    let mut m = measure::Measurer::new(&mut env, &cfg.timing, cfg.strict, stop)
        .fresh_connections(cfg.fresh_connections)
        .slow_spells(!cfg.keep_slow_spells);
    let interleaved = schedule::interleaves(&plan, cfg.fresh_connections);
    m.wall().phase("start", env_secs);
    let t = std::time::Instant::now();
    let mut cells = schedule::run_plan(&mut m, &plan, cfg.budget.map(|b| start + b), on_cell);
    m.wall().phase("first rounds", t.elapsed());
    let t = std::time::Instant::now();
    let mut decisions = decision::decide_all(&plan, &cells, &cfg.bands);
    m.wall().phase("decisions", t.elapsed());
    let t = std::time::Instant::now();
    let mut sequential_rounds = 0;
    if let Some(budget) = cfg.budget {
        sequential_rounds = sequential::refine(
            &mut m,
            &plan,
            &mut cells,
            &mut decisions,
            &cfg.bands,
            cfg.target_width,
            start + budget,
        );
        m.wall().phase("budget rounds", t.elapsed());
    }
    let mut extra_rounds = 0;
    if let Some(limit) = cfg.until_decided {
        let t = std::time::Instant::now();
        extra_rounds = until_decided(&mut m, &plan, &mut cells, &mut decisions, cfg, limit);
        m.wall().phase("until decided", t.elapsed());
    }
    m.close_arms();
    let wall = std::mem::take(m.wall());
    drop(m);
    let empty: usize = cells
        .iter()
        .map(|c| c.runs.iter().filter(|r| r.completed == 0).count())
        .sum();
    if empty > 0 {
        notes.push(format!(
            "{empty} run(s) completed no request in their measured period (with no failed \
             request: the machine starved the client or the server); they are left out of the \
             statistics"
        ));
    }
    let busy_runs = (
        cells.iter().map(|c| c.busy_runs).sum(),
        cells.iter().map(|c| c.runs.len()).sum(),
    );
    let spell_runs = (cells.iter().map(|c| c.spell_runs).sum(), busy_runs.1);
    if spell_runs.0 > 0 {
        notes.push(format!(
            "{} run(s) were measured in a slow spell (every arm of the condition ran at least \
             {}x its usual CPU per request in that round: the machine itself was slower) and \
             are left out of the statistics (--keep-slow-spells keeps them)",
            spell_runs.0,
            spell::SPELL_FACTOR
        ));
    }
    for c in &cells {
        if let Some(e) = &c.error {
            notes.push(format!(
                "{} {}: {e}",
                c.key.proto.short(),
                c.key.cond.describe()
            ));
        }
    }
    let (links, link_models) = paths::records(&axes.links, path.mode);
    let path = paths::PathRecord::of(&env, &axes.links, path);
    Ok(CompareReport {
        schema_version: SCHEMA_VERSION,
        tool: "h2lab compare",
        version: env!("CARGO_PKG_VERSION"),
        started_unix,
        elapsed_secs: start.elapsed().as_secs_f64(),
        preset: cfg.preset,
        environment: env.describe().to_owned(),
        links,
        link_models,
        machine,
        isolation,
        timing: cfg.timing.clone(),
        bands: cfg.bands,
        strict: cfg.strict,
        extra_rounds,
        sequential_rounds,
        budget_secs: cfg.budget.map(|b| b.as_secs_f64()),
        target_width: cfg.target_width,
        busy_runs,
        plan,
        cells,
        decisions,
        notes,
        wall,
        fresh_connections: cfg.fresh_connections,
        interleaved,
        spell_runs,
        path,
        keep_slow_spells: cfg.keep_slow_spells,
    })
}

/// Whether any decision of `row` is undecided.
fn undecided(row: &DecisionRow) -> bool {
    row.all()
        .any(|d| !d.control && d.outcome == crate::stats::ci::Outcome::Undecided)
}

/// Adds rounds to the conditions with undecided verdicts (one round per such condition per
/// pass) until none is left or `limit` is spent; returns how many rounds were added.
fn until_decided(
    m: &mut measure::Measurer<'_>,
    plan: &MatrixPlan,
    cells: &mut [CellResult],
    decisions: &mut Vec<DecisionRow>,
    cfg: &CompareConfig,
    limit: Duration,
) -> u32 {
    let start = std::time::Instant::now();
    let mut added = 0;
    loop {
        let todo: Vec<&matrix::PlannedCondition> = plan
            .conditions
            .iter()
            .filter(|pc| {
                decisions
                    .iter()
                    .any(|r| r.condition == pc.cond && r.section == pc.section && undecided(r))
            })
            .collect();
        if todo.is_empty() {
            return added;
        }
        for pc in todo {
            if m.stopped() || start.elapsed() >= limit {
                return added;
            }
            let mut idxs: Vec<usize> = pc.cells.iter().map(|&(_, i)| i).collect();
            idxs.dedup();
            let round = idxs.iter().map(|&i| cells[i].rounds()).max().unwrap_or(0);
            m.round(cells, &idxs, round);
            m.refresh(cells, &idxs);
            added += 1;
        }
        *decisions = decision::decide_all(plan, cells, &cfg.bands);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_preset_includes_h3_and_the_presets_fit_their_budgets() {
        for (preset, budget) in [
            (Preset::Default, DEFAULT_BUDGET),
            (Preset::Quick, QUICK_BUDGET),
        ] {
            let cfg = CompareConfig::preset(preset);
            assert_eq!(
                cfg.axes.protocols.contains(&LabProtocol::H3),
                preset == Preset::Default,
                "{preset:?}"
            );
            assert!(cfg.axes.protocols.contains(&LabProtocol::H2), "{preset:?}");
            if preset == Preset::Quick {
                // What h3 would cost `--quick` (`--help` says it): its arms stand, and its
                // first rounds take about a third longer than without it (its 100 KB windows
                // stretch to its stack's rate), leaving fewer of the budget's rounds that
                // narrow the intervals.
                let mut a = cfg.axes.clone();
                a.protocols.push(LabProtocol::H3);
                let with = a.plan();
                let est = plan::estimate(&with, &cfg.timing, false);
                let without = plan::estimate(&cfg.axes.plan(), &cfg.timing, false);
                eprintln!("Quick with h3: {est:?}, without: {without:?}");
                let h3 = with
                    .cells
                    .iter()
                    .find(|k| k.proto == LabProtocol::H3)
                    .unwrap();
                assert!(plan::stands(h3, false), "{est:?}");
                assert!(est > without.mul_f64(1.25), "{est:?} vs {without:?}");
            }
            let plan = cfg.axes.plan();
            let est = plan::estimate(&plan, &cfg.timing, false);
            // The planned first rounds leave room for a loaded machine's slowdown: the
            // first rounds shrink to fit (down to 6 rounds), so 6 rounds must fit with a
            // quarter to spare (the default run with h3 took 1.05× its plan at load 8–10).
            let mut six = cfg.timing.clone();
            six.runs = 6;
            let floor = plan::estimate(&plan, &six, false);
            let without_h3 = {
                let mut a = cfg.axes.clone();
                a.protocols.retain(|p| *p != LabProtocol::H3);
                plan::estimate(&a.plan(), &cfg.timing, false)
            };
            eprintln!(
                "{preset:?}: {} cells, first rounds {est:?} (6 rounds {floor:?}; without h3 \
                 {without_h3:?}), budget {budget:?}",
                plan.cells.len()
            );
            assert!(est < budget, "{preset:?}: {est:?}");
            assert!(floor.mul_f64(1.25) < budget, "{preset:?}: {floor:?}");
        }
    }
}
