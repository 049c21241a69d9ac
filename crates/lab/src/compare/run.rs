//! What one cell is and what its runs measured: [`Timing`], [`RunSample`], [`CellResult`],
//! and the engine configuration of a run ([`bench_config`], [`cell_timing`]). The
//! measuring itself (rounds, CPU clocks, machine load) is in [`super::measure`].

use std::time::{Duration, Instant};

use h2lab_engine::{BenchConfig, ProtocolChoice, RunResult};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::matrix::CellKey;
use crate::env::Origin;
use crate::error::LabError;
use crate::host::MachineLoad;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate};
use crate::stats::MedianSpread;

/// How long and how often each cell is measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Measured runs per cell.
    pub runs: u32,
    /// Unmeasured warm-up at the start of every run.
    #[serde(serialize_with = "ser_secs")]
    pub warm_up: Duration,
    /// Measured period of every run.
    #[serde(serialize_with = "ser_secs")]
    pub duration: Duration,
    /// Client worker threads.
    pub client_threads: u32,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// What one run of one cell measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSample {
    /// Completed responses per second.
    pub rps: f64,
    /// Received bytes per second (h2load's `B/s`).
    pub bytes_per_sec: f64,
    /// Median request time (ms).
    pub p50_ms: f64,
    /// 90th percentile (ms).
    pub p90_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Mean (ms).
    pub mean_ms: f64,
    /// Slowest request (ms).
    pub max_ms: f64,
    /// Responses completed in the measured period.
    pub completed: u64,
    /// Requests that failed (error status, reset, lost connection).
    pub failed: u64,
    /// Response header compression (`1 - wire/decoded`), h2load's "space savings".
    pub header_savings: f64,
    /// Connections re-established during the run (HTTP/1.0: one per request).
    pub reconnects: u64,
    /// The round this run belongs to (runs of a condition's arms in the same round were
    /// measured back to back: decisions pair them).
    pub round: u32,
    /// CPU time of the built-in server's threads per completed request (µs), over the
    /// measured period (per-thread CPU clocks); `None` for external servers.
    pub server_cpu_us: Option<f64>,
    /// CPU time of the client's worker threads per completed request (µs).
    pub client_cpu_us: Option<f64>,
    /// Bytes the client received per completed request (after TLS decryption: HTTP/1.1
    /// heads and bodies, HTTP/2 frames).
    pub bytes_in_per_req: f64,
    /// Bytes the client sent per completed request (requests and HTTP/2 frames, before TLS
    /// encryption: the same layer as `bytes_in_per_req`).
    pub bytes_out_per_req: Option<f64>,
    /// What the rest of the machine did during the run's round (every arm of the condition
    /// back to back: a short window alone is too few of `/proc/stat`'s clock ticks to judge).
    pub load: Option<MachineLoad>,
    /// The machine was busy during the run's round ([`MachineLoad::busy`]).
    pub busy: bool,
    /// Measured in a slow spell: every arm of the condition ran at least 1.3 times its usual
    /// cost in this round ([`super::spell`]); left out of the statistics.
    #[serde(default)]
    pub slow_spell: bool,
}

impl RunSample {
    /// A synthetic run for unit tests: round `round`, `rps` req/s, p99 `p99` ms (p50 half of
    /// it), `cpu` µs of server and client CPU per request, 100 requests completed.
    #[cfg(test)]
    pub fn synthetic(round: u32, rps: f64, p99: f64, cpu: f64) -> RunSample {
        RunSample {
            rps,
            bytes_per_sec: rps * 1000.0,
            p50_ms: p99 / 2.0,
            p90_ms: p99 * 0.9,
            p99_ms: p99,
            mean_ms: p99 / 2.0,
            max_ms: p99,
            completed: 100,
            failed: 0,
            header_savings: 0.0,
            reconnects: 0,
            round,
            server_cpu_us: Some(cpu),
            client_cpu_us: Some(cpu),
            bytes_in_per_req: 1000.0,
            bytes_out_per_req: Some(50.0),
            load: None,
            busy: false,
            slow_spell: false,
        }
    }

    /// Whether the run enters the statistics: it completed something and was not measured
    /// in a slow spell.
    pub fn counted(&self) -> bool {
        self.completed > 0 && !self.slow_spell
    }
}

/// A cell's runs and their summary.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// What was measured.
    #[serde(flatten)]
    pub key: CellKey,
    /// Connections the client opened at the start of each run.
    pub connections: u32,
    /// Warm-up of each run (s), stretched on slow links (see [`cell_timing`]).
    pub warm_up_secs: f64,
    /// Measured period of each run (s), as planned (on a shaped link each run after the
    /// first is rounded to whole cycles of the closed loop: [`whole_cycles`]).
    pub duration_secs: f64,
    /// Every run.
    pub runs: Vec<RunSample>,
    /// Throughput over the runs (req/s).
    pub rps: Option<MedianSpread>,
    /// 99th percentile latency over the runs (ms).
    pub p99_ms: Option<MedianSpread>,
    /// Median latency over the runs (ms).
    pub p50_ms: Option<MedianSpread>,
    /// Received MB/s over the runs.
    pub mb_per_sec: Option<MedianSpread>,
    /// Throughput: median of the runs with its 95% bootstrap CI.
    pub rps_ci: Option<Estimate>,
    /// p99 latency (ms): median with its 95% bootstrap CI.
    pub p99_ci: Option<Estimate>,
    /// Server CPU per request (µs): median with its 95% bootstrap CI.
    pub server_cpu_us: Option<Estimate>,
    /// Client CPU per request (µs), median of the runs.
    pub client_cpu_us: Option<f64>,
    /// Bytes received per request, median of the runs.
    pub bytes_in_per_req: Option<f64>,
    /// Bytes sent per request, median of the runs.
    pub bytes_out_per_req: Option<f64>,
    /// Runs measured while the machine was busy (flagged in the tables).
    pub busy_runs: usize,
    /// Runs measured in a slow spell ([`super::spell`]), left out of the statistics.
    pub spell_runs: usize,
    /// Runs measured again because the machine was busy (`--strict`).
    pub remeasured: usize,
    /// On a shaped link: what the link allows and how close the cell came.
    pub link_use: Option<LinkUse>,
    /// What the path counted over this cell's runs (shaped links): packets relayed, dropped
    /// at the queue and lost per direction (the relay: its TCP chunks and UDP datagrams).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<crate::netpath::PathCounters>,
    /// Latency percentile curve of all runs merged: `(percentile, ms)`.
    pub percentiles: Vec<(f64, f64)>,
    /// Completed requests per second over time in the median run: `(seconds since the
    /// end of the warm-up, req/s)`.
    pub timeline: Vec<(f64, f64)>,
    /// Why the cell (or some run) failed.
    pub error: Option<String>,
    /// Every run's latencies merged (for the percentile curve).
    #[serde(skip)]
    pub hist: Option<Histogram<u64>>,
    /// Every run's time series, in run order (the median run's is `timeline`).
    #[serde(skip)]
    pub timelines: Vec<Vec<(f64, f64)>>,
}

/// A cell on a shaped link against the link's physical limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkUse {
    /// Received bytes per second as a percentage of the link's downstream bandwidth.
    pub goodput_pct: f64,
    /// The least a request can take on this link (ms): the round trips the protocol needs
    /// (one per request, plus the TCP handshake without keep-alive) plus the request and
    /// response bytes through the bandwidth.
    pub floor_ms: f64,
    /// Median latency above that floor (ms).
    pub p50_above_floor_ms: f64,
}

/// The percentiles reported in curves.
pub const CURVE: [f64; 9] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99, 100.0];

/// Progress of a compare run, reported after every cell.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// Cells finished.
    pub done: usize,
    /// Cells planned.
    pub total: usize,
    /// The cell just finished.
    pub cell: &'a CellResult,
}

/// Link round trips (of the whole concurrency) a run on a slow link lasts at least.
pub const LINK_ROUNDS: u32 = 3;

/// Most a cell's run is stretched on a slow link.
const MAX_RUN: Duration = Duration::from_secs(10);

/// One link "round" of `key`'s condition: every in-flight request completing once — about
/// one RTT plus the time to push the concurrency's worth of responses (and requests)
/// through the link's bandwidth (the client stack's rate, [`LabProtocol::stack_bps`],
/// counts as a bandwidth too; zero on loopback for stacks without one).
pub fn link_round(key: &CellKey) -> Duration {
    let (rtt, down, up) = key.cond.link.shape();
    // A client stack slower than the link bounds a round too (HTTP/3: `stack_bps`).
    let slower = |bps: Option<u64>| match (bps, key.proto.stack_bps()) {
        (Some(b), Some(s)) => Some(b.min(s)),
        (b, s) => b.or(s),
    };
    let (down, up) = (slower(down), slower(up));
    let c = f64::from(key.cond.concurrency);
    let resp = key.cond.payload.approx_bytes() as f64 + 200.0;
    let req = super::headers::size(&key.cond.headers.fields()) as f64 + 120.0;
    let xfer = |bytes: f64, bps: Option<u64>| bps.map_or(0.0, |b| c * bytes * 8.0 / b as f64);
    Duration::from_secs_f64(rtt.as_secs_f64() + xfer(resp, down) + xfer(req, up))
}

/// The warm-up and measured duration of `key`'s runs. On an emulated link a run must see
/// several "rounds" ([`link_round`]: every in-flight request completing once), or a short
/// run on a slow link measures nothing. The measured period is stretched to at least
/// [`LINK_ROUNDS`] such rounds (at most 10 s) and the warm-up to cover connection set-up
/// (4 RTTs: TCP, TLS, first request).
pub fn cell_timing(key: &CellKey, t: &Timing) -> (Duration, Duration) {
    let (rtt, _, _) = key.cond.link.shape();
    let round = link_round(key);
    let duration = t.duration.max((round * LINK_ROUNDS).min(MAX_RUN));
    let setup = key.proto.setup_cost() * key.cond.connections();
    let warm_up = t
        .warm_up
        .max((rtt * 4).min(MAX_RUN))
        .max(setup.min(MAX_RUN));
    (warm_up, duration)
}

/// Least warm-up of a run on an arm's standing connections after its first, on an emulated
/// link: time for the client to fill its pipeline again after idling while the other arms
/// ran.
pub const RESUME_WARM_UP: Duration = Duration::from_millis(20);

/// The same on loopback, where the arm measured before has already drained (its window
/// waited for its requests in flight, [`drain_cap`]) and the pipeline refills within a few
/// request times (well under a millisecond at the lab's concurrencies). How the window length
/// trades against the number of rounds on the 2-core VM was measured (docs/methods.md, "Why it
/// works this way"): the machine's noise moves over hundreds of
/// milliseconds, so the closer two arms' windows are, the more of it their ratio cancels,
/// and the 20 ms refill was 45% of a 25 ms window's cost.
pub const LOOPBACK_RESUME_WARM_UP: Duration = Duration::from_millis(5);

/// Longest a window on loopback waits, after its measured period, for its requests in
/// flight to complete before it returns (and the next arm's window starts): they take
/// well under a millisecond unless the machine stalls, and a stall this long is one the
/// next window should not begin inside anyway.
pub const DRAIN_CAP: Duration = Duration::from_millis(200);

/// Extra warm-up of a window on loopback that follows an HTTP/1.0 window (of any condition):
/// HTTP/1.0 opens and closes a connection per request, and the sockets it leaves are torn
/// down after its window has drained. 25 ms halved the p99 penalty of the following arm in
/// the repro pairs; with HTTP/1.0 last in every round
/// ([`super::measure::round_order`]) the rest is spread over every arm.
pub const SETTLE_AFTER_CLOSE: Duration = Duration::from_millis(20);

/// The extra warm-up of a window of `key` right after a run of `last`: after HTTP/1.0 on
/// loopback [`SETTLE_AFTER_CLOSE`], otherwise none (on a shaped link the resume warm-up
/// covers a whole link round already).
pub fn settle_after(last: Option<LabProtocol>, key: &CellKey) -> Duration {
    if last == Some(LabProtocol::H1Close) && key.cond.link.shape().0.is_zero() {
        SETTLE_AFTER_CLOSE
    } else {
        Duration::ZERO
    }
}

/// How long `key`'s windows wait for their requests in flight after the measured period
/// ([`h2lab_engine::StandingRun::drain_before_reply`]): [`DRAIN_CAP`] on loopback; on an
/// emulated link nothing (the next arm's [`resume_warm_up`] covers a link round of drain,
/// which can take hundreds of milliseconds).
pub fn drain_cap(key: &CellKey) -> Duration {
    if key.cond.link.shape().0.is_zero() {
        DRAIN_CAP
    } else {
        Duration::ZERO
    }
}

/// The warm-up of `key`'s runs after the first on its standing connections (connections
/// are open; the first run warmed them up for [`cell_timing`]'s warm-up): the time for
/// every in-flight slot to be taken again — on loopback [`LOOPBACK_RESUME_WARM_UP`] (the
/// arm before has drained, [`drain_cap`]), on a shaped link [`RESUME_WARM_UP`] and one
/// [`link_round`] plus one RTT (at least two RTTs). When a window starts on a shaped link,
/// the arm measured just before still has a round of requests in flight (responses queued
/// in the relay, the server writing them and, for HTTP/1.0, tearing connections down);
/// they drain for one round, then this arm's first responses arrive an RTT later. With
/// the warm-up at two RTTs (80 ms on `wan`, shorter than 10k's 123 ms round) the drain
/// was charged to the next arm: on the kept `--quick` runs (10k over wan, 72 windows) a
/// window's server CPU per request was +19% of its cell's median after an HTTP/1.0
/// window, +12% after h1-tls, −5% after h2 or h2c.
pub fn resume_warm_up(key: &CellKey) -> Duration {
    let (rtt, _, _) = key.cond.link.shape();
    if rtt.is_zero() {
        return LOOPBACK_RESUME_WARM_UP;
    }
    let drain = (link_round(key) + rtt).min(MAX_RUN);
    RESUME_WARM_UP.max(rtt * 2).max(drain)
}

/// The least warm-up and measured period of a later window on loopback, for an arm running
/// at `rps` req/s with `concurrency` requests in flight: the window starts from an empty
/// pipeline (the one before drained, [`drain_cap`]) with every request sent at once, so the
/// first completions come a whole cycle of the closed loop (`concurrency / rps`) later, and
/// a period shorter than that measures nothing — HTTP/2 over TLS on 100 KB in a debug build
/// ran a 22 ms cycle against a 5 ms refill and a 15 ms period, and 14 of its 15 windows
/// completed no request. One cycle of warm-up and [`LINK_ROUNDS`] cycles measured (at most
/// 10 s each); `None` without a rate. At the release build's rates on this VM a cycle is
/// 0.3–3 ms, well inside the 5 ms refill and 15 ms period.
pub fn cycle_floor(concurrency: u32, rps: f64) -> Option<(Duration, Duration)> {
    if !(rps.is_finite() && rps > 0.0) {
        return None;
    }
    let cycle = Duration::from_secs_f64(f64::from(concurrency.max(1)) / rps).min(MAX_RUN);
    Some((cycle, (cycle * LINK_ROUNDS).min(MAX_RUN)))
}

/// The measured period of a run on a shaped link, rounded to a whole number of the closed
/// loop's cycles (`concurrency / rps`: the time for every in-flight request to complete once,
/// at the arm's measured rate `rps`); `planned` when that makes no sense (no rate yet, or a
/// cycle longer than the period). On a slow link the in-flight requests' responses share the
/// bandwidth and complete in waves, one per cycle: a period of 3.3 cycles held 3 or 4 waves
/// depending on where it started (10k over the WAN: 156–159 or 178–186 completions per
/// 373 ms window, the same pattern round after round), and req/s and server CPU per request
/// moved by ±12% with the phase. A period of whole cycles holds the same number of waves
/// wherever it starts. Rounded to the nearest, so the budget's plan holds on average.
pub fn whole_cycles(planned: Duration, concurrency: u32, rps: f64) -> Duration {
    if !(rps.is_finite() && rps > 0.0) {
        return planned;
    }
    let cycle = f64::from(concurrency.max(1)) / rps;
    let p = planned.as_secs_f64();
    if cycle > p || cycle < 1e-4 {
        return planned;
    }
    Duration::from_secs_f64((p / cycle).round().max(1.0) * cycle)
}

/// The engine configuration for one run of `key` against `origin`.
pub fn bench_config(key: &CellKey, origin: &Origin, t: &Timing) -> Result<BenchConfig, LabError> {
    let url = origin.url(&key.cond.payload.path);
    let mut cfg = BenchConfig::from_uris(&[url], None)?;
    let streams = if key.proto.multiplexes() {
        key.cond.streams.max(1)
    } else {
        1
    };
    cfg.clients = key.cond.concurrency.div_ceil(streams).max(1);
    cfg.max_concurrent_streams = streams;
    cfg.threads = t.client_threads.clamp(1, cfg.clients);
    let (warm_up, duration) = cell_timing(key, t);
    cfg.duration = Some(duration);
    cfg.warm_up = Some(warm_up);
    cfg.protocol = match key.proto {
        LabProtocol::H1 | LabProtocol::H1Close | LabProtocol::H1Tls => ProtocolChoice::H1,
        LabProtocol::H2 => ProtocolChoice::Alpn(vec!["h2".into()]),
        LabProtocol::H2c => ProtocolChoice::H2,
        LabProtocol::H3 => ProtocolChoice::Alpn(vec!["h3".into()]),
    };
    cfg.require_protocol = Some(key.proto.app_protocol());
    cfg.headers = key.cond.headers.fields();
    if key.proto == LabProtocol::H1Close {
        // RFC 9112 §9.6: "close" ends the connection after this response.
        cfg.headers.push(("connection".into(), "close".into()));
    }
    cfg.connect_to = origin
        .connect_to
        .first()
        .map(|a| (a.ip().to_string(), a.port()));
    // A stalled connection must not hang the matrix.
    cfg.connection_inactivity_timeout = Some(Duration::from_secs(10));
    Ok(cfg)
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64 / 1e6
    }
}

/// Bytes received per completed request, bytes and completions with the same edges: the
/// engine's [`RunResult::response_bytes`] (what each connection read up to each counted
/// response's completion since the one before). All bytes read in the measured period over
/// the responses completed in it counted, on a slow link, the responses still in flight at
/// either edge without their completions: 16.6 KB per request for a 10.4 KB response on
/// `lossy` in a 100 ms window. Falls back to that ratio where the result does not have
/// them (`response_bytes` 0). NaN when nothing completed.
pub fn bytes_in_per_req(r: &RunResult) -> f64 {
    let n = r.requests.completed;
    if n == 0 {
        return f64::NAN;
    }
    let bytes = if r.response_bytes > 0 {
        r.response_bytes
    } else {
        r.traffic.bytes_total
    };
    bytes as f64 / n as f64
}

/// Bytes sent per request: what the client wrote in the measured period over the requests
/// it started in it (the same edges; over the completed ones, requests still in flight at
/// the end counted without their completions). `None` when nothing was sent or started.
pub fn bytes_out_per_req(r: &RunResult) -> Option<f64> {
    let n = r.requests.started.max(r.requests.completed);
    (n > 0 && r.bytes_sent > 0).then(|| r.bytes_sent as f64 / n as f64)
}

/// The sample of engine result `r` (the CPU and load fields are left empty for the caller
/// to fill in).
pub fn sample(r: &RunResult, round: u32) -> RunSample {
    let h = &r.request_time;
    RunSample {
        round,
        server_cpu_us: None,
        client_cpu_us: None,
        bytes_in_per_req: bytes_in_per_req(r),
        bytes_out_per_req: bytes_out_per_req(r),
        load: None,
        busy: false,
        slow_spell: false,
        rps: r.req_per_sec(),
        bytes_per_sec: r.bytes_per_sec(),
        p50_ms: ms(h, 0.50),
        p90_ms: ms(h, 0.90),
        p99_ms: ms(h, 0.99),
        mean_ms: if h.is_empty() {
            f64::NAN
        } else {
            h.mean() / 1e6
        },
        max_ms: if h.is_empty() {
            f64::NAN
        } else {
            h.max() as f64 / 1e6
        },
        completed: r.requests.completed,
        failed: r.requests.failed,
        header_savings: r.traffic.header_space_savings(),
        reconnects: r.reconnects,
    }
}

impl CellResult {
    /// A cell with no runs yet.
    pub fn new(key: CellKey, t: &Timing) -> CellResult {
        let (warm_up, duration) = cell_timing(&key, t);
        CellResult {
            warm_up_secs: warm_up.as_secs_f64(),
            duration_secs: duration.as_secs_f64(),
            connections: key.cond.concurrency.div_ceil(if key.proto.multiplexes() {
                key.cond.streams.max(1)
            } else {
                1
            }),
            key,
            runs: Vec::new(),
            rps: None,
            p99_ms: None,
            p50_ms: None,
            mb_per_sec: None,
            rps_ci: None,
            p99_ci: None,
            server_cpu_us: None,
            client_cpu_us: None,
            bytes_in_per_req: None,
            bytes_out_per_req: None,
            busy_runs: 0,
            spell_runs: 0,
            remeasured: 0,
            link_use: None,
            path: None,
            percentiles: Vec::new(),
            timeline: Vec::new(),
            error: None,
            hist: None,
            timelines: Vec::new(),
        }
    }

    /// The values of `f` for rounds `0..rounds` (`None` where the cell has no run of that
    /// round, or one that completed nothing): the input of paired decisions.
    pub fn by_round(&self, rounds: u32, f: impl Fn(&RunSample) -> Option<f64>) -> Vec<Option<f64>> {
        let mut v = vec![None; rounds as usize];
        for r in self.runs.iter().filter(|r| r.counted()) {
            if let Some(slot) = v.get_mut(r.round as usize) {
                *slot = f(r).filter(|x| x.is_finite());
            }
        }
        v
    }

    /// The median req/s of the runs so far that completed something.
    pub fn median_rps(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.completed > 0 && r.rps.is_finite())
            .map(|r| r.rps)
            .collect();
        MedianSpread::of(&v).map(|s| s.median)
    }

    /// The highest round measured, plus one.
    pub fn rounds(&self) -> u32 {
        self.runs.iter().map(|r| r.round + 1).max().unwrap_or(0)
    }

    /// Recomputes the summaries from the runs (after runs were added). Runs that completed
    /// no request (the machine starved the client or the server for the whole period) are
    /// kept in `runs` but left out of every statistic, as are runs measured in a slow spell
    /// ([`super::spell`]).
    pub fn refresh(&mut self) {
        let col = |f: fn(&RunSample) -> f64| -> Vec<f64> {
            self.runs.iter().filter(|r| r.counted()).map(f).collect()
        };
        let seed = ci::seed_for(&format!("{:?}", self.key));
        let mut rng = ci::Rng::new(seed);
        self.rps = MedianSpread::of(&col(|r| r.rps));
        self.p99_ms = MedianSpread::of(&col(|r| r.p99_ms));
        self.p50_ms = MedianSpread::of(&col(|r| r.p50_ms));
        self.mb_per_sec = MedianSpread::of(&col(|r| r.bytes_per_sec / 1e6));
        self.rps_ci = ci::median_ci(&col(|r| r.rps), &mut rng);
        self.p99_ci = ci::median_ci(&col(|r| r.p99_ms), &mut rng);
        self.server_cpu_us = ci::median_ci(&col(|r| r.server_cpu_us.unwrap_or(f64::NAN)), &mut rng);
        let med = |v: Vec<f64>| MedianSpread::of(&v).map(|s| s.median);
        self.client_cpu_us = med(col(|r| r.client_cpu_us.unwrap_or(f64::NAN)));
        self.bytes_in_per_req = med(col(|r| r.bytes_in_per_req));
        self.bytes_out_per_req = med(col(|r| r.bytes_out_per_req.unwrap_or(f64::NAN)));
        self.busy_runs = self.runs.iter().filter(|r| r.busy).count();
        self.spell_runs = self.runs.iter().filter(|r| r.slow_spell).count();
        self.link_use = self.compute_link_use();
        // The timeline of the run closest to the median throughput.
        self.timeline = self
            .rps
            .and_then(|s| {
                self.runs
                    .iter()
                    .zip(&self.timelines)
                    .min_by(|a, b| {
                        (a.0.rps - s.median)
                            .abs()
                            .total_cmp(&(b.0.rps - s.median).abs())
                    })
                    .map(|(_, tl)| tl.clone())
            })
            .unwrap_or_default();
        self.percentiles = match &self.hist {
            Some(h) if !h.is_empty() => CURVE
                .iter()
                .map(|&q| (q, h.value_at_quantile(q / 100.0) as f64 / 1e6))
                .collect(),
            _ => Vec::new(),
        };
    }

    /// Goodput and latency against the link's limits (shaped links only).
    fn compute_link_use(&self) -> Option<LinkUse> {
        let (rtt, down, up) = self.key.cond.link.shape();
        let down = down?;
        let mb = self.mb_per_sec?.median;
        let p50 = self.p50_ms?.median;
        let resp = self
            .bytes_in_per_req
            .unwrap_or(self.key.cond.payload.approx_bytes() as f64);
        let req = self
            .bytes_out_per_req
            .unwrap_or(super::headers::size(&self.key.cond.headers.fields()) as f64 + 100.0);
        let rtts = if self.key.proto == LabProtocol::H1Close {
            2.0
        } else {
            1.0
        };
        let xfer = |bytes: f64, bps: Option<u64>| bps.map_or(0.0, |b| bytes * 8.0 / b as f64);
        let floor_ms = (rtts * rtt.as_secs_f64() + xfer(resp, Some(down)) + xfer(req, up)) * 1e3;
        Some(LinkUse {
            goodput_pct: mb * 1e6 * 8.0 / down as f64 * 100.0,
            floor_ms,
            p50_above_floor_ms: p50 - floor_ms,
        })
    }
}

/// Rounds of a condition whose runs a slow link stretches to more than 1.5× the set
/// duration: such runs are long, link-bound and steady, and more of them would blow the
/// time budget; six is the fewest that can decide ([`ci::MIN_ROUNDS`]).
pub const STRETCHED_ROUNDS: u32 = 6;

/// How many rounds `key`'s condition gets: `t.runs`, at most [`STRETCHED_ROUNDS`] when its
/// runs are stretched.
pub fn rounds_for(key: &CellKey, t: &Timing) -> u32 {
    let (_, d) = cell_timing(key, t);
    if d > t.duration.mul_f64(1.5) {
        t.runs.clamp(1, STRETCHED_ROUNDS)
    } else {
        t.runs.max(1)
    }
}

/// Per-run cost beyond the warm-up and the measured period on standing connections (the
/// command to the worker, the window's statistics, load probes).
pub const WINDOW_OVERHEAD: Duration = Duration::from_millis(8);

/// Seconds since the Unix epoch (for result metadata).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Measures how long `f` takes.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let v = f();
    (v, start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::axes::HeaderSet;
    use crate::compare::matrix::Condition;
    use crate::link::LinkProfile;

    fn key(payload: &str, link: LinkProfile) -> CellKey {
        CellKey {
            cond: Condition {
                payload: payload.parse().unwrap(),
                headers: HeaderSet::None,
                concurrency: 50,
                streams: 1,
                link,
            },
            proto: LabProtocol::H1,
            arm: 0,
        }
    }

    fn spread(median: f64) -> Option<MedianSpread> {
        Some(MedianSpread {
            median,
            min: median,
            max: median,
            n: 1,
        })
    }

    #[test]
    fn link_use_is_goodput_against_the_bandwidth_and_latency_above_the_floor() {
        let t = Timing {
            runs: 1,
            warm_up: Duration::from_millis(100),
            duration: Duration::from_millis(400),
            client_threads: 1,
        };
        // 10 KiB over the WAN (40 ms, 50 Mbit/s both ways): 2.5 MB/s received is 40% of
        // 50 Mbit/s. The floor is one RTT plus 10,640 B down and 100 B up through
        // 50 Mbit/s: 40 + 1.7024 + 0.016 = 41.7184 ms; a 60 ms median is 18.2816 above it.
        let mut c = CellResult::new(key("10k", LinkProfile::Wan), &t);
        c.mb_per_sec = spread(2.5);
        c.p50_ms = spread(60.0);
        c.bytes_in_per_req = Some(10_640.0);
        c.bytes_out_per_req = Some(100.0);
        let l = c.compute_link_use().unwrap();
        assert!((l.goodput_pct - 40.0).abs() < 1e-9, "{l:?}");
        assert!((l.floor_ms - 41.7184).abs() < 1e-9, "{l:?}");
        assert!((l.p50_above_floor_ms - 18.2816).abs() < 1e-9, "{l:?}");
        // The table says the unit.
        c.link_use = Some(l);
        let table = super::super::output::cells_table(std::slice::from_ref(&c));
        assert!(
            table.contains("40% of bw, p50 +18.3 ms over floor"),
            "{table}"
        );
        // Without keep-alive every request also pays the TCP handshake: two RTTs.
        c.key.proto = LabProtocol::H1Close;
        let l = c.compute_link_use().unwrap();
        assert!((l.floor_ms - 81.7184).abs() < 1e-9, "{l:?}");
        assert!(
            (l.p50_above_floor_ms - (60.0 - 81.7184)).abs() < 1e-9,
            "{l:?}"
        );
        // The mobile link's slower uplink (3 Mbit/s) weighs on the request bytes: 80 ms +
        // 10,640 B through 12 Mbit/s (7.0933 ms) + 100 B through 3 Mbit/s (0.2667 ms); 1.5 MB/s
        // is all of 12 Mbit/s.
        c.key.proto = LabProtocol::H1;
        c.key.cond.link = LinkProfile::Mobile;
        c.mb_per_sec = spread(1.5);
        let l = c.compute_link_use().unwrap();
        assert!((l.goodput_pct - 100.0).abs() < 1e-9, "{l:?}");
        let floor = 80.0 + 10_640.0 * 8.0 / 12e6 * 1e3 + 100.0 * 8.0 / 3e6 * 1e3;
        assert!((l.floor_ms - floor).abs() < 1e-9, "{l:?}");
        assert!((floor - 87.36).abs() < 0.001, "{floor}");
        // Nothing measured, or no shaped link: nothing to say.
        c.p50_ms = None;
        assert!(c.compute_link_use().is_none());
        c.p50_ms = spread(60.0);
        c.key.cond.link = LinkProfile::Loopback;
        assert!(c.compute_link_use().is_none());
    }

    #[test]
    fn bytes_per_request_have_the_edges_of_the_completions() {
        let mut r = h2lab_report::model::empty_result();
        // 10 responses of 10,400 B completed; 30 KB more arrived for responses still in
        // flight when the window ended; 12 requests were started, 100 B each.
        r.requests.completed = 10;
        r.requests.started = 12;
        r.response_bytes = 104_000;
        r.traffic.bytes_total = 134_000;
        r.bytes_sent = 1_200;
        assert_eq!(bytes_in_per_req(&r), 10_400.0);
        assert_eq!(bytes_out_per_req(&r), Some(100.0));
        // Where the result does not have them: all bytes over the completions.
        r.response_bytes = 0;
        assert_eq!(bytes_in_per_req(&r), 13_400.0);
        r.requests.completed = 0;
        assert!(bytes_in_per_req(&r).is_nan());
        r.requests.started = 0;
        assert_eq!(bytes_out_per_req(&r), None);
    }

    #[test]
    fn runs_are_stretched_on_slow_links() {
        let t = Timing {
            runs: 3,
            warm_up: Duration::from_millis(100),
            duration: Duration::from_millis(400),
            client_threads: 1,
        };
        let (w, d) = cell_timing(&key("100k", LinkProfile::Loopback), &t);
        assert_eq!((w, d), (t.warm_up, t.duration));
        // 50 × 100 KiB through 50 Mbit/s is 0.84 s per round, plus 40 ms: 3 rounds.
        let (w, d) = cell_timing(&key("100k", LinkProfile::Wan), &t);
        assert_eq!(w, Duration::from_millis(160));
        assert!(
            d > Duration::from_millis(2580) && d < Duration::from_millis(2700),
            "{d:?}"
        );
        let (_, d) = cell_timing(&key("ping", LinkProfile::Wan), &t);
        assert_eq!(d, t.duration);
        let (_, d) = cell_timing(&key("100m", LinkProfile::Mobile), &t);
        assert_eq!(d, MAX_RUN);
    }

    #[test]
    fn periods_on_a_link_hold_whole_cycles_of_the_closed_loop() {
        let ms = Duration::from_millis;
        // 50 in flight at 440 req/s: a 113.6 ms cycle; 373 ms is 3.28 cycles -> 3.
        let d = whole_cycles(ms(373), 50, 440.0);
        assert!((d.as_secs_f64() - 3.0 * 50.0 / 440.0).abs() < 1e-6, "{d:?}");
        // 3.6 cycles round up to 4.
        let d = whole_cycles(ms(409), 50, 440.0);
        assert!((d.as_secs_f64() - 4.0 * 50.0 / 440.0).abs() < 1e-6, "{d:?}");
        // On loopback a window holds one cycle of warm-up and three measured: 50 in flight
        // at 2,266 req/s (HTTP/2 over TLS, 100 KB, a debug build) is a 22 ms cycle.
        let (w, d) = cycle_floor(50, 2266.0).unwrap();
        assert!(w > ms(21) && w < ms(23), "{w:?}");
        assert_eq!(d, w * LINK_ROUNDS);
        // At release rates the floor is far below the 5 ms refill and 15 ms period.
        let (w, d) = cycle_floor(50, 40_000.0).unwrap();
        assert!(w < LOOPBACK_RESUME_WARM_UP && d < ms(15), "{w:?} {d:?}");
        assert_eq!(cycle_floor(50, 0.0), None);
        assert_eq!(cycle_floor(50, f64::NAN), None);
        assert_eq!(cycle_floor(50, 1e-9).unwrap(), (MAX_RUN, MAX_RUN));
        // No rate, or a cycle longer than the period: as planned.
        assert_eq!(whole_cycles(ms(373), 50, f64::NAN), ms(373));
        assert_eq!(whole_cycles(ms(373), 50, 0.0), ms(373));
        assert_eq!(whole_cycles(ms(100), 50, 100.0), ms(100));
    }

    #[test]
    fn later_windows_on_a_shaped_link_wait_out_the_previous_arms_drain() {
        // Loopback: the previous arm has drained (its window waited for it), a short
        // refill; a fast LAN: the fixed re-warm.
        let lo = key("10k", LinkProfile::Loopback);
        assert_eq!(resume_warm_up(&lo), LOOPBACK_RESUME_WARM_UP);
        assert_eq!(drain_cap(&lo), DRAIN_CAP);
        // After HTTP/1.0 on loopback a window settles longer; on a link it does not.
        assert_eq!(
            settle_after(Some(LabProtocol::H1Close), &lo),
            SETTLE_AFTER_CLOSE
        );
        assert_eq!(settle_after(Some(LabProtocol::H1), &lo), Duration::ZERO);
        assert_eq!(settle_after(None, &lo), Duration::ZERO);
        let wan10k = key("10k", LinkProfile::Wan);
        assert_eq!(
            settle_after(Some(LabProtocol::H1Close), &wan10k),
            Duration::ZERO
        );
        assert_eq!(drain_cap(&key("10k", LinkProfile::Lan)), Duration::ZERO);
        assert_eq!(
            resume_warm_up(&key("10k", LinkProfile::Lan)),
            RESUME_WARM_UP
        );
        // 10k over the WAN: 50 × ~10.4 KB through 50 Mbit/s is 84 ms, plus 40 ms: a 124 ms
        // round, and one RTT more for this arm's first responses (two RTTs were 80 ms).
        let wan = key("10k", LinkProfile::Wan);
        let round = link_round(&wan);
        assert!(round > Duration::from_millis(120) && round < Duration::from_millis(130));
        assert_eq!(resume_warm_up(&wan), round + Duration::from_millis(40));
        // A tiny payload over the WAN: about two RTTs, as before.
        let ping = resume_warm_up(&key("ping", LinkProfile::Wan));
        assert!(ping >= Duration::from_millis(80) && ping < Duration::from_millis(90));
    }
}
