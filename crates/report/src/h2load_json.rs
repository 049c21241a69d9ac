//! h2load's `--output-file` document (JSON "v1", h2load 1.69+), key for key:
//!
//! ```text
//! {"version":"v1","metadata":{"generator":…},
//!  "measurements":{"duration":…,"request_per_second":…,"bytes_per_second":…,
//!   "requests":{"total","started","done","succeeded","failed","errored","timeout"},
//!   "status_codes":{"2xx","3xx","4xx","5xx"},
//!   "traffic":{"total","headers","headers_decompressed","data"},
//!   "udp_datagram":{"sent","recv"},                       (HTTP/3 runs only)
//!   "performance":{"request":STAT,"connect":STAT,"ttfb":STAT,"request_per_second":STAT,
//!     "min_rtt":STAT,"smoothed_rtt":STAT,"packets_sent":STAT,"packets_recv":STAT,
//!     "packets_lost":STAT,"gro_packets":STAT}}}       (the last six: HTTP/3 runs only)
//! STAT = {"min","max","median","p95","p99","mean","sd","within_sd","samples":[…]}
//! ```
//!
//! As in nghttp2's `src/h2load.cc` (tag v1.70.0, `write_result`): times in seconds, `duration`
//! the whole run, `request_per_second` and `bytes_per_second` as on the `finished in` line. The
//! statistics are those of the text table (`--output-format=h2load-1.70`); `samples` are the
//! run's raw samples, sorted, at most 1,000,000 (a reservoir, see `h2lab_engine::samples`).
//! `generator` names h2lab, not h2load. h2lab's own `--json` document is a different one.

use std::io;
use std::path::Path;

use serde::Serialize;

use crate::layout::Stat;
use crate::model::RunResult;
use crate::stats::{bytes_per_second, requests_per_second};

/// The document.
#[derive(Debug, Serialize)]
pub struct Document {
    /// Always `"v1"`.
    pub version: &'static str,
    /// Who wrote it.
    pub metadata: Metadata,
    /// The results.
    pub measurements: Measurements,
}

/// `metadata`.
#[derive(Debug, Serialize)]
pub struct Metadata {
    /// `h2lab <version>`.
    pub generator: String,
}

/// `measurements`.
#[derive(Debug, Serialize)]
pub struct Measurements {
    /// Seconds, the whole run.
    pub duration: f64,
    /// As on the `finished in` line.
    pub request_per_second: f64,
    /// As on the `finished in` line (integer).
    pub bytes_per_second: u64,
    /// The `requests:` line.
    pub requests: Requests,
    /// The `status codes:` line.
    pub status_codes: StatusCodes,
    /// The `traffic:` line.
    pub traffic: TrafficJson,
    /// The `UDP datagram:` line (HTTP/3 runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_datagram: Option<UdpDatagram>,
    /// The latency table.
    pub performance: Performance,
}

/// `udp_datagram` (HTTP/3 runs only).
#[derive(Debug, Serialize)]
#[allow(missing_docs)] // Reason: the fields are h2load 1.70's JSON keys, one for one (see the struct doc)
pub struct UdpDatagram {
    pub sent: u64,
    pub recv: u64,
}

/// `requests`.
#[derive(Debug, Serialize)]
#[allow(missing_docs)] // Reason: the fields are h2load 1.70's JSON keys, one for one (see the struct doc)
pub struct Requests {
    pub total: u64,
    pub started: u64,
    pub done: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub errored: u64,
    pub timeout: u64,
}

/// `status_codes`.
#[derive(Debug, Serialize)]
#[allow(missing_docs)] // Reason: the fields are h2load 1.70's JSON keys, one for one (see the struct doc)
pub struct StatusCodes {
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    #[serde(rename = "5xx")]
    pub s5xx: u64,
}

/// `traffic` (bytes).
#[derive(Debug, Serialize)]
#[allow(missing_docs)] // Reason: the fields are h2load 1.70's JSON keys, one for one (see the struct doc)
pub struct TrafficJson {
    pub total: u64,
    pub headers: u64,
    pub headers_decompressed: u64,
    pub data: u64,
}

/// `performance`.
#[derive(Debug, Serialize)]
#[allow(missing_docs)] // Reason: the fields are h2load 1.70's JSON keys, one for one (see the struct doc)
pub struct Performance {
    pub request: StatJson,
    pub connect: StatJson,
    pub ttfb: StatJson,
    pub request_per_second: StatJson,
    /// The QUIC rows (HTTP/3 runs only), flattened into `performance` as h2load writes them.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicPerformance>,
}

/// The QUIC entries of `performance` (HTTP/3 runs only): RTTs in seconds.
#[derive(Debug, Serialize)]
#[allow(missing_docs)] // Reason: the fields are h2load 1.70's JSON keys, one for one (see the struct doc)
pub struct QuicPerformance {
    pub min_rtt: StatJson,
    pub smoothed_rtt: StatJson,
    pub packets_sent: StatJson,
    pub packets_recv: StatJson,
    pub packets_lost: StatJson,
    pub gro_packets: StatJson,
}

fn quic_performance(q: &h2lab_engine::QuicStats) -> QuicPerformance {
    use crate::quic::{as_f64, gro_samples, gro_stat, int_stat, time_stat, MAX_SAMPLES};
    let secs = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        StatJson::new(time_stat(&v), 1.0, v)
    };
    let ints = |v: &[u64]| StatJson::new(int_stat(v), 1.0, as_f64(v));
    QuicPerformance {
        min_rtt: secs(&q.min_rtt),
        smoothed_rtt: secs(&q.smoothed_rtt),
        packets_sent: ints(&q.packets_sent),
        packets_recv: ints(&q.packets_recv),
        packets_lost: ints(&q.packets_lost),
        gro_packets: StatJson::new(
            gro_stat(&q.gro_counts),
            1.0,
            gro_samples(&q.gro_counts, MAX_SAMPLES),
        ),
    }
}

/// One statistic (h2load 1.70's keys: those of [`Stat`]) with its samples.
#[derive(Debug, Serialize)]
pub struct StatJson {
    /// The columns, as keys of this object.
    #[serde(flatten)]
    pub stat: Stat,
    /// The samples.
    pub samples: Vec<f64>,
}

impl StatJson {
    fn new(st: Stat, scale: f64, samples: Vec<f64>) -> StatJson {
        StatJson {
            stat: Stat {
                min: st.min * scale,
                max: st.max * scale,
                median: st.median * scale,
                p95: st.p95 * scale,
                p99: st.p99 * scale,
                mean: st.mean * scale,
                sd: st.sd * scale,
                within_sd: st.within_sd,
            },
            samples,
        }
    }
}

/// Builds the document of a run (samples from `r.samples`, empty arrays when none were kept).
pub fn document(r: &RunResult) -> Document {
    const NS: f64 = 1e-9;
    let samples = r.samples.clone().unwrap_or_default();
    let mut rps = r.client_rps.clone();
    rps.sort_by(f64::total_cmp);
    Document {
        version: "v1",
        metadata: Metadata {
            generator: format!("h2lab {}", env!("CARGO_PKG_VERSION")),
        },
        measurements: Measurements {
            duration: r.elapsed.as_secs_f64(),
            request_per_second: requests_per_second(r),
            bytes_per_second: bytes_per_second(r),
            requests: Requests {
                total: r.requests.total,
                started: r.requests.started,
                done: r.requests.done,
                succeeded: r.requests.succeeded,
                failed: r.requests.failed,
                errored: r.requests.errored,
                timeout: r.requests.timeout,
            },
            status_codes: StatusCodes {
                s2xx: r.status.s2xx,
                s3xx: r.status.s3xx,
                s4xx: r.status.s4xx,
                s5xx: r.status.s5xx,
            },
            traffic: TrafficJson {
                total: r.traffic.bytes_total,
                headers: r.traffic.bytes_head,
                headers_decompressed: r.traffic.bytes_head_decomp,
                data: r.traffic.bytes_body,
            },
            udp_datagram: r.quic.as_ref().map(|q| UdpDatagram {
                sent: q.datagrams_sent,
                recv: q.datagrams_recv,
            }),
            performance: Performance {
                request: StatJson::new(Stat::from_histogram(&r.request_time), NS, samples.request),
                connect: StatJson::new(Stat::from_histogram(&r.connect_time), NS, samples.connect),
                ttfb: StatJson::new(Stat::from_histogram(&r.ttfb), NS, samples.ttfb),
                request_per_second: StatJson::new(Stat::from_samples(&rps), 1.0, rps),
                quic: r.quic.as_ref().map(quic_performance),
            },
        },
    }
}

/// Writes the document of `r` to `path` (atomically: a reader never sees half a file).
pub fn write(path: &Path, r: &RunResult) -> io::Result<()> {
    let text = serde_json::to_string(&document(r)).map_err(io::Error::other)?;
    crate::write_atomic(path, text.as_bytes())
}
