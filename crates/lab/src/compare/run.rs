//! Measuring the cells of a plan with `h2lab_engine::run`.
//!
//! Each run is a timing-based engine run: a warm-up (connections are set up, nothing is
//! counted), then the measured duration. Runs of the cells of one condition are
//! *alternated* (run 1 of every protocol, then run 2, ... with the starting protocol
//! rotated), so slow drift of the machine affects every protocol alike.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use h2lab_engine::{
    new_duration_histogram, AppProtocol, BenchConfig, IntervalRow, Observer, Phase, ProtocolChoice,
    RunResult, StopFlag, TlsInfo,
};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::matrix::{CellKey, Plan};
use crate::env::{LabEnv, Origin};
use crate::proto::Proto;
use crate::stats::Summary;

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
    /// Measured period of each run (s).
    pub duration_secs: f64,
    /// Every run.
    pub runs: Vec<RunSample>,
    /// Throughput over the runs (req/s).
    pub rps: Option<Summary>,
    /// 99th percentile latency over the runs (ms).
    pub p99_ms: Option<Summary>,
    /// Median latency over the runs (ms).
    pub p50_ms: Option<Summary>,
    /// Received MB/s over the runs.
    pub mb_per_sec: Option<Summary>,
    /// Latency percentile curve of all runs merged: `(percentile, ms)`.
    pub percentiles: Vec<(f64, f64)>,
    /// Completed requests per second over time in the median run: `(seconds since the
    /// end of the warm-up, req/s)`.
    pub timeline: Vec<(f64, f64)>,
    /// Why the cell (or some run) failed.
    pub error: Option<String>,
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

/// Records the engine's progress callbacks as a time series.
#[derive(Default)]
struct Timeline(Mutex<Vec<(f64, u64)>>);

impl Observer for Timeline {
    fn progress(&self, done: u64, _total: u64, elapsed: Duration, _errors: u64) {
        if let Ok(mut v) = self.0.lock() {
            v.push((elapsed.as_secs_f64(), done));
        }
    }
    fn tls_info(&self, _info: &TlsInfo) {}
    fn protocol(&self, _p: AppProtocol) {}
    // The cells run without a time series and h2load's phase lines are not shown.
    fn interval(&self, _row: &IntervalRow) {}
    fn phase(&self, _thread: u32, _phase: Phase) {}
}

impl Timeline {
    /// Rates between samples taken during the measured period (the final progress call,
    /// moments after the previous one, and the samples after the end are left out).
    fn rates(&self, warm_up: Duration, duration: Duration) -> Vec<(f64, f64)> {
        let v = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        let (w, d) = (warm_up.as_secs_f64(), duration.as_secs_f64());
        let inside: Vec<(f64, u64)> = v
            .into_iter()
            .filter(|(t, _)| *t >= w && *t <= w + d + 0.02)
            .collect();
        inside
            .windows(2)
            .filter_map(|p| {
                let (t0, d0) = p[0];
                let (t1, d1) = p[1];
                let dt = t1 - t0;
                (dt > 0.05 && d1 >= d0).then(|| (t1 - w, (d1 - d0) as f64 / dt))
            })
            .collect()
    }
}

/// Most a cell's run is stretched on a slow link.
const MAX_RUN: Duration = Duration::from_secs(10);

/// The warm-up and measured duration of `key`'s runs. On an emulated link a run must see
/// several "rounds" (every in-flight request completing once), or a short run on a slow
/// link measures nothing: a round takes about one RTT plus the time to push the
/// concurrency's worth of responses (and requests) through the link's bandwidth. The
/// measured period is stretched to at least 5 rounds (at most 10 s) and the warm-up to
/// cover connection set-up (4 RTTs: TCP, TLS, first request).
pub fn cell_timing(key: &CellKey, t: &Timing) -> (Duration, Duration) {
    let (rtt, down, up) = key.cond.link.shape();
    let c = f64::from(key.cond.concurrency);
    let resp = key.cond.payload.approx_bytes() as f64 + 200.0;
    let req = super::headers::size(&key.cond.headers.fields()) as f64 + 120.0;
    let xfer = |bytes: f64, bps: Option<u64>| bps.map_or(0.0, |b| c * bytes * 8.0 / b as f64);
    let round = Duration::from_secs_f64(rtt.as_secs_f64() + xfer(resp, down) + xfer(req, up));
    let duration = t.duration.max((round * 5).min(MAX_RUN));
    let warm_up = t.warm_up.max((rtt * 4).min(MAX_RUN));
    (warm_up, duration)
}

/// The engine configuration for one run of `key` against `origin`.
pub fn bench_config(key: &CellKey, origin: &Origin, t: &Timing) -> Result<BenchConfig, String> {
    let url = origin.url(&key.cond.payload.path);
    let mut cfg = BenchConfig::from_uris(&[url], None).map_err(|e| e.to_string())?;
    let streams = if key.proto.is_h2() {
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
        Proto::H1 | Proto::H1Close | Proto::H1Tls => ProtocolChoice::H1,
        Proto::H2 => ProtocolChoice::Alpn(vec!["h2".into()]),
        Proto::H2c => ProtocolChoice::H2,
    };
    cfg.require_protocol = Some(match key.proto {
        Proto::H1 | Proto::H1Close | Proto::H1Tls => AppProtocol::Http11,
        Proto::H2 => AppProtocol::H2,
        Proto::H2c => AppProtocol::H2c,
    });
    cfg.headers = key.cond.headers.fields();
    if key.proto == Proto::H1Close {
        // RFC 9112 §9.6: "close" ends the connection after this response.
        cfg.headers.push(("connection".into(), "close".into()));
    }
    cfg.connect_to = origin.connect_to.map(|a| (a.ip().to_string(), a.port()));
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

fn sample(r: &RunResult) -> RunSample {
    let h = &r.request_time;
    RunSample {
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

/// A cell being measured.
struct Pending {
    idx: usize,
    origin: Result<Origin, String>,
    runs: Vec<RunSample>,
    timelines: Vec<Vec<(f64, f64)>>,
    hist: Histogram<u64>,
    errors: Vec<String>,
}

/// Measures every cell of `plan` (alternating the protocols of each condition) and returns
/// the results in `plan.cells` order. `on_cell` is called after each cell; `stop` ends the
/// matrix early (cells not measured are returned with an error).
pub fn run_plan(
    env: &mut LabEnv,
    plan: &Plan,
    t: &Timing,
    stop: &StopFlag,
    on_cell: &mut dyn FnMut(Progress<'_>),
) -> Vec<CellResult> {
    let mut results: Vec<Option<CellResult>> = vec![None; plan.cells.len()];
    let mut done = 0usize;
    for cond in &plan.conditions {
        let mut group: Vec<Pending> = Vec::new();
        for &(_, idx) in &cond.cells {
            if results[idx].is_some() || group.iter().any(|p| p.idx == idx) {
                continue;
            }
            let key = &plan.cells[idx];
            group.push(Pending {
                idx,
                origin: env.origin(key.proto, key.cond.link),
                runs: Vec::new(),
                timelines: Vec::new(),
                hist: new_duration_histogram(),
                errors: Vec::new(),
            });
        }
        if group.is_empty() {
            continue;
        }
        for run in 0..t.runs.max(1) {
            let n = group.len();
            for k in 0..n {
                if stop.is_stopped() {
                    break;
                }
                let p = &mut group[(k + run as usize) % n];
                let key = &plan.cells[p.idx];
                let origin = match &p.origin {
                    Ok(o) => o,
                    Err(e) => {
                        if p.errors.is_empty() {
                            p.errors.push(e.clone());
                        }
                        continue;
                    }
                };
                if !p.errors.is_empty() && p.runs.is_empty() {
                    // The first run failed outright: do not insist.
                    continue;
                }
                match bench_config(key, origin, t) {
                    Err(e) => p.errors.push(e),
                    Ok(cfg) => {
                        let tl = Timeline::default();
                        match h2lab_engine::run(&cfg, &tl, stop) {
                            Ok(r) => {
                                let _ = p.hist.add(&r.request_time);
                                if r.requests.failed > 0 {
                                    if let Some(m) = r.errors.messages.first() {
                                        p.errors.push(format!(
                                            "{} failed requests ({m})",
                                            r.requests.failed
                                        ));
                                    }
                                }
                                p.runs.push(sample(&r));
                                let (w, d) = cell_timing(key, t);
                                p.timelines.push(tl.rates(w, d));
                            }
                            Err(e) => p.errors.push(e.to_string()),
                        }
                    }
                }
            }
        }
        for p in group {
            let idx = p.idx;
            let res = finish(plan.cells[idx].clone(), p, t, stop.is_stopped());
            done += 1;
            on_cell(Progress {
                done,
                total: plan.cells.len(),
                cell: &res,
            });
            if let Some(slot) = results.get_mut(idx) {
                *slot = Some(res);
            }
        }
    }
    plan.cells
        .iter()
        .zip(results)
        .map(|(key, r)| {
            r.unwrap_or_else(|| CellResult {
                key: key.clone(),
                connections: 0,
                warm_up_secs: 0.0,
                duration_secs: 0.0,
                runs: Vec::new(),
                rps: None,
                p99_ms: None,
                p50_ms: None,
                mb_per_sec: None,
                percentiles: Vec::new(),
                timeline: Vec::new(),
                error: Some("not measured (interrupted)".into()),
            })
        })
        .collect()
}

fn finish(key: CellKey, p: Pending, t: &Timing, interrupted: bool) -> CellResult {
    let (warm_up, duration) = cell_timing(&key, t);
    let col = |f: fn(&RunSample) -> f64| -> Vec<f64> { p.runs.iter().map(f).collect() };
    let rps = Summary::of(&col(|r| r.rps));
    // The timeline of the run closest to the median throughput.
    let timeline = rps
        .and_then(|s| {
            p.runs
                .iter()
                .zip(&p.timelines)
                .min_by(|a, b| {
                    (a.0.rps - s.median)
                        .abs()
                        .total_cmp(&(b.0.rps - s.median).abs())
                })
                .map(|(_, tl)| tl.clone())
        })
        .unwrap_or_default();
    let percentiles = if p.hist.is_empty() {
        Vec::new()
    } else {
        CURVE
            .iter()
            .map(|&q| (q, p.hist.value_at_quantile(q / 100.0) as f64 / 1e6))
            .collect()
    };
    let mut error = p.errors.first().cloned();
    if error.is_none() && interrupted && p.runs.is_empty() {
        error = Some("not measured (interrupted)".into());
    }
    CellResult {
        warm_up_secs: warm_up.as_secs_f64(),
        duration_secs: duration.as_secs_f64(),
        connections: key.cond.concurrency.div_ceil(if key.proto.is_h2() {
            key.cond.streams.max(1)
        } else {
            1
        }),
        key,
        rps,
        p99_ms: Summary::of(&col(|r| r.p99_ms)),
        p50_ms: Summary::of(&col(|r| r.p50_ms)),
        mb_per_sec: Summary::of(&col(|r| r.bytes_per_sec / 1e6)),
        percentiles,
        timeline,
        runs: p.runs,
        error,
    }
}

/// Estimated wall time of a plan.
pub fn estimate(plan: &Plan, t: &Timing) -> Duration {
    plan.cells
        .iter()
        .map(|k| {
            let (w, d) = cell_timing(k, t);
            (w + d + Duration::from_millis(30)) * t.runs.max(1)
        })
        .sum()
}

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
    use crate::link::Profile;

    fn key(payload: &str, link: Profile) -> CellKey {
        CellKey {
            cond: Condition {
                payload: payload.parse().unwrap(),
                headers: HeaderSet::None,
                concurrency: 50,
                streams: 1,
                link,
            },
            proto: Proto::H1,
        }
    }

    #[test]
    fn runs_are_stretched_on_slow_links() {
        let t = Timing {
            runs: 3,
            warm_up: Duration::from_millis(100),
            duration: Duration::from_millis(400),
            client_threads: 1,
        };
        let (w, d) = cell_timing(&key("100k", Profile::Loopback), &t);
        assert_eq!((w, d), (t.warm_up, t.duration));
        // 50 × 100 KiB through 50 Mbit/s is 0.84 s per round, plus 40 ms.
        let (w, d) = cell_timing(&key("100k", Profile::Wan), &t);
        assert_eq!(w, Duration::from_millis(160));
        assert!(
            d > Duration::from_millis(4300) && d < Duration::from_millis(4500),
            "{d:?}"
        );
        let (_, d) = cell_timing(&key("ping", Profile::Wan), &t);
        assert_eq!(d, t.duration);
        let (_, d) = cell_timing(&key("100m", Profile::Mobile), &t);
        assert_eq!(d, MAX_RUN);
    }
}
