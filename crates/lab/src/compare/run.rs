//! What one cell is and what its runs measured: [`RunSample`], [`CellResult`], and the engine
//! configuration of a run ([`bench_config`]; its warm-up and period are
//! [`super::timing::cell_timing`]'s). The measuring itself (rounds, CPU clocks, machine
//! load) is in [`super::measure`].

#[cfg(test)]
use std::time::Duration;

use h2lab_engine::{BenchConfig, ProtocolChoice, RunResult};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::matrix::CellKey;
use super::timing::{cell_timing, Timing};
use crate::env::Origin;
use crate::error::LabError;
use crate::host::MachineLoad;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate};
use crate::stats::MedianSpread;

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
    /// The largest share of the measured period one of the run's threads (client worker or
    /// built-in server thread) spent ready to run but waiting for a CPU
    /// ([`crate::kernel::clocks::RunObserver::starved`]); `None` when unknown.
    #[serde(default)]
    pub starved: Option<f64>,
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
            starved: None,
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
    /// Warm-up of each run (s), stretched on slow links (see [`super::timing::cell_timing`]).
    pub warm_up_secs: f64,
    /// Measured period of each run (s), as planned (on a shaped link each run after the
    /// first is rounded to whole cycles of the closed loop: [`super::timing::whole_cycles`]).
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
    cfg.connection_inactivity_timeout = Some(t.policy.inactivity_timeout);
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
        starved: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::RunPolicy;
    use crate::link::LinkProfile;

    fn key(payload: &str, link: LinkProfile) -> CellKey {
        CellKey::h1_for_test(payload, link)
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
            policy: RunPolicy::LAB,
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
}
