//! The document types of the `--json` result: one struct per object of
//! `schemas/bench-result.v1.json`, serialised by serde in field order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::options::RunOptions;
use crate::threshold::Outcome;
use crate::timeseries::IntervalJson;

/// The whole result document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchJson {
    /// Version of this document's shape; [`SCHEMA_VERSION`](super::SCHEMA_VERSION).
    pub schema_version: u32,
    /// The tool that wrote the document.
    pub tool: ToolJson,
    /// How many runs this document covers (1, or more after [`merge`](super::merge)).
    pub runs: u64,
    /// The options of the (first) run.
    pub options: RunOptions,
    /// The run was stopped early by a signal.
    pub interrupted: bool,
    /// Measurement period in seconds (after warm-up).
    pub elapsed_seconds: f64,
    /// Negotiated application protocol.
    pub protocol: ProtocolJson,
    /// TLS details (absent for cleartext runs).
    pub tls: Option<TlsJson>,
    /// Request counters (h2load's meanings).
    pub requests: RequestsJson,
    /// Final response status code classes.
    pub status_codes: StatusJson,
    /// Byte counters.
    pub traffic: TrafficJson,
    /// Request and byte rates over the measurement period.
    pub throughput: ThroughputJson,
    /// Latency statistics (nanoseconds), from the histograms.
    pub latency: LatencyJson,
    /// Per-client request rates.
    pub client_rps: ClientRpsJson,
    /// Errors by kind.
    pub errors: ErrorsJson,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Reconnections.
    pub reconnects: u64,
    /// Sleeps of read waiting (0 in results written before read waiting existed).
    #[serde(default)]
    pub read_waits: u64,
    /// The latency histograms.
    pub histograms: HistogramsJson,
    /// Server push (`--push accept` runs that received pushes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushJson>,
    /// Interim (1xx) responses by code (`{"103": 300}`), in runs that received any: apart
    /// from `status_codes`, whose `1xx` is their sum. Absent in older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub informational: Option<std::collections::BTreeMap<String, u64>>,
    /// Handshakes, resumption and early data (`--tls-resume`, `--0rtt` runs only). Absent in
    /// older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumption: Option<ResumptionJson>,
    /// Open-model request accounting (`--arrival-rate` runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_model: Option<OpenModelJson>,
    /// The time series, one row per interval (when one was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<Vec<IntervalJson>>,
    /// `--threshold` verdicts (set by the CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Vec<ThresholdJson>>,
    /// The shard of a sharded run this document is (`h2lab bench --shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardJson>,
    /// The shards a merged document holds (`h2lab merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharded: Option<ShardedJson>,
    /// QUIC figures (HTTP/3 runs only): h2load 1.69+'s QUIC rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicJson>,
}

/// `quic` object: UDP datagrams, per-client RTTs and packet counts of the last QUIC
/// connection, datagrams per receive call (GRO). The statistics are computed as h2load
/// computes its QUIC rows (see `crate::quic`); the raw values make documents mergeable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuicJson {
    /// UDP datagrams sent (GSO batches count their segments).
    pub datagrams_sent: u64,
    /// UDP datagrams received (GRO batches count their segments).
    pub datagrams_received: u64,
    /// Minimum RTT per client, seconds.
    pub min_rtt_seconds: QuicStatJson,
    /// Smoothed RTT per client, seconds.
    pub smoothed_rtt_seconds: QuicStatJson,
    /// QUIC packets sent per client.
    pub packets_sent: QuicStatJson,
    /// Datagrams received per client (quinn-proto counts datagrams, not coalesced packets).
    pub packets_received: QuicStatJson,
    /// Packets declared lost per client.
    pub packets_lost: QuicStatJson,
    /// Datagrams returned per receive call.
    pub gro_packets: QuicStatJson,
    /// `gro_counts[k]`: receive calls that returned `k` datagrams.
    pub gro_counts: Vec<u64>,
}

/// One QUIC statistic (h2load's columns) and, for the per-client ones, the values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuicStatJson {
    /// The columns (`min`, `max`, `median`, `p95`, `p99`, `mean`, `sd`, `within_sd`), as
    /// keys of this object.
    #[serde(flatten)]
    pub stat: crate::layout::Stat,
    /// One value per client (absent for `gro_packets`: see `gro_counts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<f64>>,
}

/// `push` object: pushed streams and their body bytes, all unused (the benchmark never
/// requests what was pushed). Not part of h2load's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushJson {
    /// Pushed streams accepted.
    pub streams: u64,
    /// Pushed response body bytes (all unused).
    pub bytes: u64,
    /// Octets of the frames that carried the pushes (PUSH_PROMISE, and HEADERS and DATA on
    /// the promised streams, frame heads included): not in `traffic.bytes_total`. 0 in
    /// results written before it was counted.
    #[serde(default)]
    pub frame_bytes: u64,
}

/// `resumption` object: what session resumption and early data did (see
/// [`ResumeStats`](h2lab_engine::resume::ResumeStats)). Not part of h2load's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumptionJson {
    /// TLS or QUIC handshakes completed.
    pub handshakes: u64,
    /// Of those, resumed ones.
    pub resumed: u64,
    /// Connections that sent requests in early data / 0-RTT.
    pub early_data_offered: u64,
    /// ... accepted by the server.
    pub early_data_accepted: u64,
    /// ... rejected by the server.
    pub early_data_rejected: u64,
    /// Requests sent again after their early data was rejected.
    pub replayed: u64,
    /// Requests answered `425 Too Early` and sent again after the handshake.
    pub too_early: u64,
}

impl From<&h2lab_engine::resume::ResumeStats> for ResumptionJson {
    fn from(r: &h2lab_engine::resume::ResumeStats) -> Self {
        ResumptionJson {
            handshakes: r.handshakes,
            resumed: r.resumed,
            early_data_offered: r.early_offered,
            early_data_accepted: r.early_accepted,
            early_data_rejected: r.early_rejected,
            replayed: r.replayed,
            too_early: r.too_early,
        }
    }
}

impl From<&ResumptionJson> for h2lab_engine::resume::ResumeStats {
    fn from(r: &ResumptionJson) -> Self {
        h2lab_engine::resume::ResumeStats {
            handshakes: r.handshakes,
            resumed: r.resumed,
            early_offered: r.early_data_offered,
            early_accepted: r.early_data_accepted,
            early_rejected: r.early_data_rejected,
            replayed: r.replayed,
            too_early: r.too_early,
        }
    }
}

/// `open_model` object (see [`PacingCounts`](crate::model::PacingCounts)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenModelJson {
    /// Requests that became due during the measurement.
    pub scheduled: u64,
    /// Sent in the loop turn in which they became due.
    pub on_time: u64,
    /// Sent after waiting for a free slot.
    pub late: u64,
    /// Dropped: the queue was full.
    pub dropped: u64,
    /// Still queued when the run ended.
    pub unsent: u64,
    /// `dropped + unsent`: not sent on time.
    pub not_sent: u64,
    /// The queue bound over all workers.
    pub queue_limit: u64,
}

/// One `thresholds` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdJson {
    /// The threshold as given.
    pub expression: String,
    /// Whether it held.
    pub passed: bool,
    /// The measured value (ns for latencies, a fraction for rates), null if none.
    pub value: Option<f64>,
    /// The measured value for humans.
    pub display: String,
}

impl From<&Outcome> for ThresholdJson {
    fn from(o: &Outcome) -> Self {
        ThresholdJson {
            expression: o.expression.clone(),
            passed: o.passed,
            value: o.value,
            display: o.display.clone(),
        }
    }
}

/// `tool` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolJson {
    /// `h2lab`.
    pub name: String,
    /// Crate version.
    pub version: String,
}

/// `protocol` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolJson {
    /// `h2`, `h2c`, `http/1.1`, or null when no connection negotiated one (or merged runs
    /// disagree).
    pub application: Option<String>,
    /// `h2` was offered but the server selected `http/1.1`.
    pub fallback: bool,
}

/// `tls` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsJson {
    /// E.g. `TLSv1.3`.
    pub protocol: String,
    /// E.g. `TLS_AES_128_GCM_SHA256`.
    pub cipher: String,
    /// Key exchange as h2load prints it, e.g. `X25519 253 bits`.
    pub server_temp_key: Option<String>,
    /// Protocol selected by ALPN.
    pub alpn: Option<String>,
}

/// `errors` object: error events by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorsJson {
    /// Sum of the counters below (push refusals excluded).
    pub total: u64,
    /// Failed connection attempts.
    pub connect: u64,
    /// TLS failures.
    pub tls: u64,
    /// Connections dropped by `-T`/`-N`.
    pub timeout: u64,
    /// Protocol violations by the peer.
    pub protocol: u64,
    /// Connections lost with requests in flight.
    pub io: u64,
    /// Streams reset by the peer, by HTTP/2 error code name (`REFUSED_STREAM`, or `0x..`).
    pub stream_resets: BTreeMap<String, u64>,
    /// GOAWAY frames with an error, by HTTP/2 error code name.
    pub goaway_errors: BTreeMap<String, u64>,
    /// Server pushes refused.
    pub push_refused: u64,
    /// The first messages seen, for humans.
    pub messages: Vec<String>,
}

/// `requests` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestsJson {
    /// Total.
    pub total: u64,
    /// Started.
    pub started: u64,
    /// Done.
    pub done: u64,
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Errored.
    pub errored: u64,
    /// Timed out.
    pub timeout: u64,
    /// Completed with a response of any status (the numerator of `requests_per_second`).
    pub completed: u64,
}

/// `status_codes` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusJson {
    /// 1xx.
    #[serde(rename = "1xx")]
    pub s1xx: u64,
    /// 2xx.
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    /// 3xx.
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    /// 4xx.
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    /// 5xx.
    #[serde(rename = "5xx")]
    pub s5xx: u64,
}

/// `traffic` object.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrafficJson {
    /// All bytes read (after TLS decryption).
    pub total_bytes: u64,
    /// Header bytes on the wire.
    pub header_bytes: u64,
    /// Header bytes decompressed.
    pub header_bytes_decompressed: u64,
    /// Body bytes.
    pub data_bytes: u64,
    /// `1 - header_bytes / header_bytes_decompressed` (0..1).
    pub header_space_savings: f64,
}

/// `throughput` object.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThroughputJson {
    /// Requests completed with a response, per second.
    pub requests_per_second: f64,
    /// Bytes read per second.
    pub bytes_per_second: f64,
}

/// Statistics of one latency distribution, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyStatsJson {
    /// Samples.
    pub count: u64,
    /// Minimum.
    pub min_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Sample standard deviation (`n - 1`, as h2load).
    pub sd_ns: f64,
    /// Percentage of samples within mean ± sd.
    pub within_sd_percent: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p99_9_ns: u64,
}

/// `latency` object.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyJson {
    /// Paced runs only: request time from each request's intended start (corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_corrected: Option<LatencyStatsJson>,
    /// Request time (from the send).
    pub request: LatencyStatsJson,
    /// Connect time.
    pub connect: LatencyStatsJson,
    /// Time to first byte.
    pub ttfb: LatencyStatsJson,
}

/// Statistics of the per-client request rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RpsStatsJson {
    /// Clients.
    pub count: u64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (`n - 1`, as h2load).
    pub sd: f64,
    /// Percentage of clients within mean ± sd.
    pub within_sd_percent: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
}

/// `client_rps` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientRpsJson {
    /// Statistics.
    pub stats: RpsStatsJson,
    /// One value per client.
    pub values: Vec<f64>,
}

/// `histograms` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramsJson {
    /// [`HISTOGRAM_ENCODING`](super::HISTOGRAM_ENCODING) (or [`HISTOGRAM_ENCODING_PLAIN`](super::HISTOGRAM_ENCODING_PLAIN)).
    pub encoding: String,
    /// Unit of the recorded values: `ns`.
    pub unit: String,
    /// Significant figures of the histograms.
    pub significant_figures: u8,
    /// Request time histogram.
    pub request_time: String,
    /// Paced runs only: request time from the intended start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_time_corrected: Option<String>,
    /// Connect time histogram.
    pub connect_time: String,
    /// Time to first byte histogram.
    pub ttfb: String,
}

// The objects of sharded runs (module [`crate::shard`] merges them).

/// `shard` object: what one shard of a sharded run was and did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardJson {
    /// This shard, from 0.
    pub index: u32,
    /// Number of shards of the run.
    pub count: u32,
    /// The options of the whole run (identical in every shard of one run).
    pub plan: RunOptions,
    /// This shard's part of the plan.
    pub slice: SliceJson,
    /// `--start-at`, seconds since the Unix epoch (null without it).
    pub start_at_unix: Option<f64>,
    /// When the measurement started (after any warm-up), seconds since the Unix epoch.
    pub started_unix: f64,
    /// How late the shard started after `--start-at`, in seconds (0 when on time or without
    /// it).
    pub late_seconds: f64,
    /// The latency histograms of each time-series interval (for an exact merge of the series).
    #[serde(default)]
    pub interval_histograms: Vec<IntervalHistogramsJson>,
}

/// `shard.slice` object: the shard's share of the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceJson {
    /// Connections of this shard; they are the lanes `index + k·count` of the whole run's
    /// `lanes` (open-model arrivals and stage levels are dealt to those lanes).
    pub clients: u32,
    /// Connection lanes of the whole run.
    pub lanes: u32,
    /// `-n` of this shard (per connection with a timing script; 0 for timed runs).
    pub requests: u64,
    /// Worker threads of this shard.
    pub threads: u32,
    /// `-r` of this shard.
    pub rate: Option<u32>,
    /// `--queue-limit` share of this shard.
    pub queue_limit: Option<u64>,
    /// URIs of this shard (`-i` and timing-script lines are dealt round-robin to shards).
    pub uris: u64,
}

/// One interval's histograms in a shard's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalHistogramsJson {
    /// The interval (`timeseries[].index`).
    pub index: u64,
    /// Latency (corrected in paced runs), encoded like `histograms.request_time`.
    pub latency: String,
    /// Latency from the send, paced runs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected: Option<String>,
}

/// `sharded` object of a merged document: which shards it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardedJson {
    /// Number of shards of the run.
    pub count: u32,
    /// The shards merged.
    pub merged: Vec<u32>,
    /// The shards missing (only with `--allow-partial`).
    pub missing: Vec<u32>,
    /// The common start: the earliest measurement start, seconds since the Unix epoch.
    pub started_unix: f64,
    /// Latest start minus earliest start, seconds.
    pub start_spread_seconds: f64,
}
