//! The `--json PATH` result document.
//!
//! The document carries every counter and statistic of a run, the negotiated protocol and TLS
//! details, the options used, and the merged latency histograms serialised as HdrHistogram V2
//! (deflate-compressed, base64) so that results of several runs can be [`merge`]d later without
//! losing the distribution. Its shape is versioned by `schema_version` and described by the JSON
//! Schema `schemas/bench-result.v1.json` at the repository root.
//!
//! Reading accepts both the compressed and the plain V2 encoding (the V2 cookie tells them apart).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::model::{
    h2_error_code, h2_error_name, is_paced, parse_app_protocol, ErrorCounts, LoadOptions,
    PacingCounts, RequestCounts, RunOptions, RunResult, StatusCounts, TlsInfo, Traffic,
    HISTOGRAM_SIGFIG,
};
use crate::stats::{requests_per_second, Summary};
use crate::threshold::Outcome;
use crate::timeseries::IntervalJson;

/// The `schema_version` this crate writes (and the only one it reads).
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema of [`SCHEMA_VERSION`] (`schemas/bench-result.v1.json`).
pub const SCHEMA: &str = include_str!("../../../schemas/bench-result.v1.json");

/// The `histograms.encoding` value written by this crate.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// The `histograms.encoding` value of uncompressed V2 histograms (accepted on input).
pub const HISTOGRAM_ENCODING_PLAIN: &str = "hdrhistogram-v2-base64";

/// The whole result document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchJson {
    /// Version of this document's shape; [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The tool that wrote the document.
    pub tool: ToolJson,
    /// How many runs this document covers (1, or more after [`merge`]).
    pub runs: u64,
    /// The options of the (first) run.
    pub options: OptionsJson,
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
    pub shard: Option<crate::shard::ShardJson>,
    /// The shards a merged document holds (`h2lab merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharded: Option<crate::shard::ShardedJson>,
}

/// `push` object: pushed streams and their body bytes, all unused (the benchmark never
/// requests what was pushed). Not part of h2load's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushJson {
    /// Pushed streams accepted.
    pub streams: u64,
    /// Pushed response body bytes (all unused).
    pub bytes: u64,
}

/// `open_model` object (see [`PacingCounts`]).
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

/// A request header of the options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderJson {
    /// Name (lower case).
    pub name: String,
    /// Value.
    pub value: String,
}

/// `options` object: the options of the run. Durations are in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptionsJson {
    /// URIs as given.
    pub uris: Vec<String>,
    /// `-n`.
    pub requests: u64,
    /// `-c`.
    pub clients: u32,
    /// `-m`.
    pub max_concurrent_streams: u32,
    /// `-t`.
    pub threads: u32,
    /// `-D`, seconds.
    pub duration_seconds: Option<f64>,
    /// `--warm-up-time`, seconds.
    pub warm_up_seconds: Option<f64>,
    /// `-H`.
    pub headers: Vec<HeaderJson>,
    /// `-d` body size in bytes.
    pub body_bytes: Option<u64>,
    /// Protocol choice.
    pub protocol: String,
    /// ALPN list offered for TLS.
    pub alpn_list: Vec<String>,
    /// `-B`.
    pub base_uri: Option<String>,
    /// `--connect-to`.
    pub connect_to: Option<String>,
    /// `--sni`.
    pub sni: Option<String>,
    /// `-w`.
    pub window_bits: u8,
    /// `-W`.
    pub connection_window_bits: u8,
    /// `--header-table-size`.
    pub header_table_size: u32,
    /// `--encoder-header-table-size`.
    pub encoder_header_table_size: u32,
    /// `-T`, seconds.
    pub connection_active_timeout_seconds: Option<f64>,
    /// `-N`, seconds.
    pub connection_inactivity_timeout_seconds: Option<f64>,
    /// `--require-protocol`.
    pub require_protocol: Option<String>,
    /// Longest hold of request coalescing in seconds; null unless `--coalesce` was given (and
    /// in results written before coalescing existed, which sent requests at once).
    #[serde(default)]
    pub coalesce_hold_seconds: Option<f64>,
    /// Longest read wait in seconds; null with `--read-wait 0` (and in results written
    /// before read waiting existed, which read at once).
    #[serde(default)]
    pub read_wait_seconds: Option<f64>,
    /// Load-shape options (absent when none was used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadOptionsJson>,
}

/// `options.load` object. Durations are in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadOptionsJson {
    /// `--arrival-rate`.
    pub arrival_rate: Option<f64>,
    /// `--stages`.
    pub stages: Vec<StageJson>,
    /// `--queue-limit`.
    pub queue_limit: Option<u64>,
    /// `--rps`.
    pub rps: Option<f64>,
    /// `-r`.
    pub rate: Option<u32>,
    /// `--rate-period` (with `-r`).
    pub rate_period_seconds: Option<f64>,
    /// `--timing-script-file`: number of lines.
    pub timing_script_lines: Option<u64>,
    /// Time-series interval.
    pub interval_seconds: Option<f64>,
}

/// One `--stages` entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StageJson {
    /// Length of the ramp.
    pub seconds: f64,
    /// Level at its end.
    pub target: f64,
}

impl From<&LoadOptions> for LoadOptionsJson {
    fn from(l: &LoadOptions) -> Self {
        LoadOptionsJson {
            arrival_rate: l.arrival_rate,
            stages: l
                .stages
                .iter()
                .map(|(d, t)| StageJson {
                    seconds: d.as_secs_f64(),
                    target: *t,
                })
                .collect(),
            queue_limit: l.queue_limit,
            rps: l.rps,
            rate: l.connection_rate.map(|(r, _)| r),
            rate_period_seconds: l.connection_rate.map(|(_, p)| p.as_secs_f64()),
            timing_script_lines: l.timing_script_lines,
            interval_seconds: secs(l.interval),
        }
    }
}

impl From<&LoadOptionsJson> for LoadOptions {
    fn from(l: &LoadOptionsJson) -> Self {
        LoadOptions {
            arrival_rate: l.arrival_rate,
            stages: l
                .stages
                .iter()
                .map(|s| {
                    (
                        from_secs(Some(s.seconds)).unwrap_or(Duration::ZERO),
                        s.target,
                    )
                })
                .collect(),
            queue_limit: l.queue_limit,
            rps: l.rps,
            connection_rate: l.rate.map(|r| {
                let p = from_secs(l.rate_period_seconds).unwrap_or(Duration::from_secs(1));
                (r, p)
            }),
            timing_script_lines: l.timing_script_lines,
            interval: from_secs(l.interval_seconds),
        }
    }
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
    /// [`HISTOGRAM_ENCODING`] (or [`HISTOGRAM_ENCODING_PLAIN`]).
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

/// Errors reading, writing or merging result documents.
#[derive(Debug)]
pub enum JsonError {
    /// Not valid JSON, or not the expected shape.
    Parse(serde_json::Error),
    /// A `schema_version` this build does not understand.
    UnsupportedSchema(u32),
    /// A histogram could not be decoded, encoded or added, or a value is out of range.
    Histogram(String),
    /// Writing the file failed.
    Io(io::Error),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Parse(e) => write!(f, "invalid result JSON: {e}"),
            JsonError::UnsupportedSchema(v) => write!(
                f,
                "unsupported schema_version {v} (this build reads version {SCHEMA_VERSION})"
            ),
            JsonError::Histogram(e) => write!(f, "histogram: {e}"),
            JsonError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonError::Parse(e) => Some(e),
            JsonError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<serde_json::Error> for JsonError {
    fn from(e: serde_json::Error) -> Self {
        JsonError::Parse(e)
    }
}

impl From<io::Error> for JsonError {
    fn from(e: io::Error) -> Self {
        JsonError::Io(e)
    }
}

fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

fn from_secs(s: Option<f64>) -> Option<Duration> {
    s.and_then(|s| Duration::try_from_secs_f64(s).ok())
}

impl From<&RunOptions> for OptionsJson {
    fn from(o: &RunOptions) -> Self {
        OptionsJson {
            uris: o.uris.clone(),
            requests: o.requests,
            clients: o.clients,
            max_concurrent_streams: o.max_concurrent_streams,
            threads: o.threads,
            duration_seconds: secs(o.duration),
            warm_up_seconds: secs(o.warm_up),
            headers: o
                .headers
                .iter()
                .map(|(name, value)| HeaderJson {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            body_bytes: o.body_bytes,
            protocol: o.protocol.clone(),
            alpn_list: o.alpn_list.clone(),
            base_uri: o.base_uri.clone(),
            connect_to: o.connect_to.clone(),
            sni: o.sni.clone(),
            window_bits: o.window_bits,
            connection_window_bits: o.connection_window_bits,
            header_table_size: o.header_table_size,
            encoder_header_table_size: o.encoder_header_table_size,
            connection_active_timeout_seconds: secs(o.connection_active_timeout),
            connection_inactivity_timeout_seconds: secs(o.connection_inactivity_timeout),
            require_protocol: o.require_protocol.clone(),
            coalesce_hold_seconds: secs(o.coalesce_hold),
            read_wait_seconds: secs(o.read_wait),
            load: o.load.as_ref().map(LoadOptionsJson::from),
        }
    }
}

impl From<&OptionsJson> for RunOptions {
    fn from(o: &OptionsJson) -> Self {
        RunOptions {
            uris: o.uris.clone(),
            requests: o.requests,
            clients: o.clients,
            max_concurrent_streams: o.max_concurrent_streams,
            threads: o.threads,
            duration: from_secs(o.duration_seconds),
            warm_up: from_secs(o.warm_up_seconds),
            headers: o
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
            body_bytes: o.body_bytes,
            protocol: o.protocol.clone(),
            alpn_list: o.alpn_list.clone(),
            base_uri: o.base_uri.clone(),
            connect_to: o.connect_to.clone(),
            sni: o.sni.clone(),
            window_bits: o.window_bits,
            connection_window_bits: o.connection_window_bits,
            header_table_size: o.header_table_size,
            encoder_header_table_size: o.encoder_header_table_size,
            connection_active_timeout: from_secs(o.connection_active_timeout_seconds),
            connection_inactivity_timeout: from_secs(o.connection_inactivity_timeout_seconds),
            require_protocol: o.require_protocol.clone(),
            coalesce_hold: from_secs(o.coalesce_hold_seconds),
            read_wait: from_secs(o.read_wait_seconds),
            load: o.load.as_ref().map(LoadOptions::from),
        }
    }
}

fn errors_json(e: &ErrorCounts) -> ErrorsJson {
    let names = |m: &BTreeMap<u32, u64>| -> BTreeMap<String, u64> {
        m.iter().map(|(k, v)| (h2_error_name(*k), *v)).collect()
    };
    ErrorsJson {
        total: e.total(),
        connect: e.connect,
        tls: e.tls,
        timeout: e.timeout,
        protocol: e.protocol,
        io: e.io,
        stream_resets: names(&e.stream_resets),
        goaway_errors: names(&e.goaway_errors),
        push_refused: e.push_refused,
        messages: e.messages.clone(),
    }
}

fn error_counts(e: &ErrorsJson) -> Result<ErrorCounts, JsonError> {
    let codes = |m: &BTreeMap<String, u64>| -> Result<BTreeMap<u32, u64>, JsonError> {
        m.iter()
            .map(|(k, v)| match h2_error_code(k) {
                Some(code) => Ok((code, *v)),
                None => Err(JsonError::Histogram(format!(
                    "unknown HTTP/2 error code {k:?}"
                ))),
            })
            .collect()
    };
    Ok(ErrorCounts {
        connect: e.connect,
        tls: e.tls,
        timeout: e.timeout,
        protocol: e.protocol,
        io: e.io,
        stream_resets: codes(&e.stream_resets)?,
        goaway_errors: codes(&e.goaway_errors)?,
        push_refused: e.push_refused,
        messages: e.messages.clone(),
    })
}

fn latency_stats(h: &Histogram<u64>) -> LatencyStatsJson {
    let s = Summary::from_histogram(h);
    // Summary values of a histogram are whole bucket values (except mean and sd).
    LatencyStatsJson {
        count: s.count,
        min_ns: s.min as u64,
        max_ns: s.max as u64,
        mean_ns: s.mean,
        sd_ns: s.sd,
        within_sd_percent: s.within_sd,
        p50_ns: s.percentiles[0] as u64,
        p90_ns: s.percentiles[1] as u64,
        p99_ns: s.percentiles[2] as u64,
        p99_9_ns: s.percentiles[3] as u64,
    }
}

fn rps_stats(values: &[f64]) -> RpsStatsJson {
    let s = Summary::from_samples(values);
    RpsStatsJson {
        count: s.count,
        min: s.min,
        max: s.max,
        mean: s.mean,
        sd: s.sd,
        within_sd_percent: s.within_sd,
        p50: s.percentiles[0],
        p90: s.percentiles[1],
        p99: s.percentiles[2],
        p99_9: s.percentiles[3],
    }
}

/// Serialises a histogram as V2 + deflate, base64 (standard alphabet, padded).
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String, JsonError> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| JsonError::Histogram(format!("cannot serialise: {e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// HdrHistogram V2 cookies (uncompressed, deflate-compressed).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// Size of the V2 header (cookie, payload length, normalizing offset, digits, low, high, ratio).
const V2_HEADER_LEN: usize = 40;
/// Largest decompressed histogram accepted (a 3-digit histogram of 1 ns..1 h needs a few KiB).
const MAX_DECODED_LEN: u64 = 64 << 20;

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    let word: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(word))
}

/// Turns V2 (plain or deflate) bytes into checked plain V2 bytes: the header's payload length
/// must match the bytes present, so that a hostile length cannot make the decoder allocate
/// gigabytes, and decompression is capped at [`MAX_DECODED_LEN`].
fn plain_v2(bytes: Vec<u8>) -> Result<Vec<u8>, JsonError> {
    let bad = |why: &str| JsonError::Histogram(format!("invalid HdrHistogram V2 data: {why}"));
    let plain = match be_u32(&bytes, 0) {
        Some(V2_COOKIE) => bytes,
        Some(V2_DEFLATE_COOKIE) => {
            let len = be_u32(&bytes, 4).ok_or_else(|| bad("truncated header"))? as usize;
            let compressed = bytes
                .get(8..)
                .and_then(|rest| rest.get(..len))
                .ok_or_else(|| bad("compressed payload shorter than its length"))?;
            let mut out = Vec::new();
            io::Read::read_to_end(
                &mut io::Read::take(flate2::read::ZlibDecoder::new(compressed), MAX_DECODED_LEN),
                &mut out,
            )
            .map_err(|e| bad(&format!("cannot inflate: {e}")))?;
            if be_u32(&out, 0) != Some(V2_COOKIE) {
                return Err(bad("inflated data is not a V2 histogram"));
            }
            out
        }
        _ => return Err(bad("unknown cookie")),
    };
    let payload = be_u32(&plain, 4).ok_or_else(|| bad("truncated header"))? as usize;
    if plain.len() < V2_HEADER_LEN || payload > plain.len() - V2_HEADER_LEN {
        return Err(bad("payload shorter than its length"));
    }
    Ok(plain)
}

/// Decodes a histogram written by [`encode_histogram`] (or plain V2, base64).
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, JsonError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| JsonError::Histogram(format!("invalid base64: {e}")))?;
    let plain = plain_v2(bytes)?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut io::Cursor::new(plain))
        .map_err(|e| JsonError::Histogram(format!("invalid HdrHistogram V2 data: {e:?}")))?;
    h.auto(true);
    Ok(h)
}

/// Builds the result document of a run.
pub fn to_json(r: &RunResult, options: &RunOptions) -> Result<BenchJson, JsonError> {
    let secs = r.elapsed.as_secs_f64();
    Ok(BenchJson {
        schema_version: SCHEMA_VERSION,
        tool: ToolJson {
            name: "h2lab".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        runs: 1,
        options: OptionsJson::from(options),
        interrupted: r.interrupted,
        elapsed_seconds: secs,
        protocol: ProtocolJson {
            application: r.app_protocol.map(|p| p.as_str().to_string()),
            fallback: r.protocol_fallback,
        },
        tls: r.tls.as_ref().map(|t| TlsJson {
            protocol: t.protocol.clone(),
            cipher: t.cipher.clone(),
            server_temp_key: t.server_temp_key.clone(),
            alpn: t.alpn.clone(),
        }),
        requests: RequestsJson {
            total: r.requests.total,
            started: r.requests.started,
            done: r.requests.done,
            succeeded: r.requests.succeeded,
            failed: r.requests.failed,
            errored: r.requests.errored,
            timeout: r.requests.timeout,
            completed: r.requests.completed,
        },
        status_codes: StatusJson {
            s1xx: r.status.s1xx,
            s2xx: r.status.s2xx,
            s3xx: r.status.s3xx,
            s4xx: r.status.s4xx,
            s5xx: r.status.s5xx,
        },
        traffic: TrafficJson {
            total_bytes: r.traffic.bytes_total,
            header_bytes: r.traffic.bytes_head,
            header_bytes_decompressed: r.traffic.bytes_head_decomp,
            data_bytes: r.traffic.bytes_body,
            header_space_savings: r.traffic.header_space_savings(),
        },
        throughput: ThroughputJson {
            requests_per_second: requests_per_second(r),
            bytes_per_second: if secs > 0.0 {
                r.traffic.bytes_total as f64 / secs
            } else {
                0.0
            },
        },
        latency: LatencyJson {
            request_corrected: is_paced(r).then(|| latency_stats(&r.request_time_corrected)),
            request: latency_stats(&r.request_time),
            connect: latency_stats(&r.connect_time),
            ttfb: latency_stats(&r.ttfb),
        },
        client_rps: ClientRpsJson {
            stats: rps_stats(&r.client_rps),
            values: r.client_rps.clone(),
        },
        errors: errors_json(&r.errors),
        goaways: r.goaways,
        reconnects: r.reconnects,
        read_waits: r.read_waits,
        histograms: HistogramsJson {
            encoding: HISTOGRAM_ENCODING.to_string(),
            unit: "ns".to_string(),
            significant_figures: HISTOGRAM_SIGFIG,
            request_time: encode_histogram(&r.request_time)?,
            request_time_corrected: if is_paced(r) {
                Some(encode_histogram(&r.request_time_corrected)?)
            } else {
                None
            },
            connect_time: encode_histogram(&r.connect_time)?,
            ttfb: encode_histogram(&r.ttfb)?,
        },
        open_model: r.pacing.as_ref().map(|p| OpenModelJson {
            scheduled: p.scheduled,
            on_time: p.on_time,
            late: p.late,
            dropped: p.dropped,
            unsent: p.unsent,
            not_sent: p.not_sent(),
            queue_limit: p.queue_limit,
        }),
        timeseries: (!r.timeseries.is_empty())
            .then(|| r.timeseries.iter().map(IntervalJson::from).collect()),
        push: (r.pushed_streams > 0 || r.pushed_bytes > 0).then_some(PushJson {
            streams: r.pushed_streams,
            bytes: r.pushed_bytes,
        }),
        thresholds: None,
        shard: None,
        sharded: None,
    })
}

/// Recovers the run (counters, histograms, options) from a result document. Derived
/// statistics (latency, throughput) are recomputed from it on the way back, not read.
pub fn from_json(doc: &BenchJson) -> Result<(RunResult, RunOptions), JsonError> {
    if doc.schema_version != SCHEMA_VERSION {
        return Err(JsonError::UnsupportedSchema(doc.schema_version));
    }
    let enc = doc.histograms.encoding.as_str();
    if enc != HISTOGRAM_ENCODING && enc != HISTOGRAM_ENCODING_PLAIN {
        return Err(JsonError::Histogram(format!("unknown encoding {enc:?}")));
    }
    if doc.histograms.unit != "ns" {
        return Err(JsonError::Histogram(format!(
            "unknown unit {:?}",
            doc.histograms.unit
        )));
    }
    let r = RunResult {
        elapsed: from_secs(Some(doc.elapsed_seconds)).unwrap_or(Duration::ZERO),
        // Not part of the JSON document.
        bytes_sent: 0,
        requests: RequestCounts {
            total: doc.requests.total,
            started: doc.requests.started,
            done: doc.requests.done,
            succeeded: doc.requests.succeeded,
            failed: doc.requests.failed,
            errored: doc.requests.errored,
            timeout: doc.requests.timeout,
            completed: doc.requests.completed,
        },
        status: StatusCounts {
            s1xx: doc.status_codes.s1xx,
            s2xx: doc.status_codes.s2xx,
            s3xx: doc.status_codes.s3xx,
            s4xx: doc.status_codes.s4xx,
            s5xx: doc.status_codes.s5xx,
        },
        traffic: Traffic {
            bytes_total: doc.traffic.total_bytes,
            bytes_head: doc.traffic.header_bytes,
            bytes_head_decomp: doc.traffic.header_bytes_decompressed,
            bytes_body: doc.traffic.data_bytes,
        },
        request_time: decode_histogram(&doc.histograms.request_time)?,
        request_time_corrected: match &doc.histograms.request_time_corrected {
            Some(h) => decode_histogram(h)?,
            None => crate::model::new_histogram(),
        },
        connect_time: decode_histogram(&doc.histograms.connect_time)?,
        ttfb: decode_histogram(&doc.histograms.ttfb)?,
        client_rps: doc.client_rps.values.clone(),
        app_protocol: doc
            .protocol
            .application
            .as_deref()
            .and_then(parse_app_protocol),
        protocol_fallback: doc.protocol.fallback,
        tls: doc.tls.as_ref().map(|t| TlsInfo {
            protocol: t.protocol.clone(),
            cipher: t.cipher.clone(),
            server_temp_key: t.server_temp_key.clone(),
            alpn: t.alpn.clone(),
        }),
        errors: error_counts(&doc.errors)?,
        goaways: doc.goaways,
        reconnects: doc.reconnects,
        read_waits: doc.read_waits,
        interrupted: doc.interrupted,
        pacing: doc.open_model.map(|p| PacingCounts {
            scheduled: p.scheduled,
            on_time: p.on_time,
            late: p.late,
            dropped: p.dropped,
            unsent: p.unsent,
            queue_limit: p.queue_limit,
        }),
        timeseries: doc
            .timeseries
            .iter()
            .flatten()
            .map(crate::model::IntervalRow::from)
            .collect(),
        samples: None,
        tls_resumed: 0,
        pushed_streams: doc.push.map_or(0, |p| p.streams),
        pushed_bytes: doc.push.map_or(0, |p| p.bytes),
    };
    Ok((r, RunOptions::from(&doc.options)))
}

/// How the measurement periods of merged runs relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMode {
    /// The runs happened at the same time (e.g. several load generators against one server):
    /// the merged period is the longest one, so rates add up.
    Concurrent,
    /// The runs happened one after another: the merged period is their sum, so rates average.
    Sequential,
}

/// Merges two runs: counters, errors and histograms add up, per-client rates are concatenated,
/// the period follows `mode`. The protocol is kept when both agree (else none), TLS details come
/// from the first run that has them, `protocol_fallback` and `interrupted` are or-ed.
pub fn merge_results(
    a: &RunResult,
    b: &RunResult,
    mode: MergeMode,
) -> Result<RunResult, JsonError> {
    fn add(x: &Histogram<u64>, y: &Histogram<u64>) -> Result<Histogram<u64>, JsonError> {
        let mut h = x.clone();
        h.auto(true);
        h.add(y)
            .map_err(|e| JsonError::Histogram(format!("cannot add: {e:?}")))?;
        Ok(h)
    }
    let s = |x: u64, y: u64| x.saturating_add(y);
    let mut errors = a.errors.clone();
    errors.merge(&b.errors);
    let mut client_rps = a.client_rps.clone();
    client_rps.extend_from_slice(&b.client_rps);
    Ok(RunResult {
        elapsed: match mode {
            MergeMode::Concurrent => a.elapsed.max(b.elapsed),
            MergeMode::Sequential => a.elapsed.saturating_add(b.elapsed),
        },
        requests: RequestCounts {
            total: s(a.requests.total, b.requests.total),
            started: s(a.requests.started, b.requests.started),
            done: s(a.requests.done, b.requests.done),
            succeeded: s(a.requests.succeeded, b.requests.succeeded),
            failed: s(a.requests.failed, b.requests.failed),
            errored: s(a.requests.errored, b.requests.errored),
            timeout: s(a.requests.timeout, b.requests.timeout),
            completed: s(a.requests.completed, b.requests.completed),
        },
        status: StatusCounts {
            s1xx: s(a.status.s1xx, b.status.s1xx),
            s2xx: s(a.status.s2xx, b.status.s2xx),
            s3xx: s(a.status.s3xx, b.status.s3xx),
            s4xx: s(a.status.s4xx, b.status.s4xx),
            s5xx: s(a.status.s5xx, b.status.s5xx),
        },
        traffic: Traffic {
            bytes_total: s(a.traffic.bytes_total, b.traffic.bytes_total),
            bytes_head: s(a.traffic.bytes_head, b.traffic.bytes_head),
            bytes_head_decomp: s(a.traffic.bytes_head_decomp, b.traffic.bytes_head_decomp),
            bytes_body: s(a.traffic.bytes_body, b.traffic.bytes_body),
        },
        bytes_sent: s(a.bytes_sent, b.bytes_sent),
        request_time: add(&a.request_time, &b.request_time)?,
        request_time_corrected: add(&a.request_time_corrected, &b.request_time_corrected)?,
        connect_time: add(&a.connect_time, &b.connect_time)?,
        ttfb: add(&a.ttfb, &b.ttfb)?,
        client_rps,
        app_protocol: if a.app_protocol == b.app_protocol {
            a.app_protocol
        } else {
            None
        },
        protocol_fallback: a.protocol_fallback || b.protocol_fallback,
        tls: a.tls.clone().or_else(|| b.tls.clone()),
        errors,
        goaways: s(a.goaways, b.goaways),
        reconnects: s(a.reconnects, b.reconnects),
        read_waits: s(a.read_waits, b.read_waits),
        interrupted: a.interrupted || b.interrupted,
        pacing: match (&a.pacing, &b.pacing) {
            (None, None) => None,
            (x, y) => {
                let mut p = x.clone().unwrap_or_default();
                p.merge(&y.clone().unwrap_or_default());
                Some(p)
            }
        },
        // Interval percentiles cannot be merged: merged documents carry no series.
        timeseries: Vec::new(),
        samples: None,
        tls_resumed: 0,
        pushed_streams: s(a.pushed_streams, b.pushed_streams),
        pushed_bytes: s(a.pushed_bytes, b.pushed_bytes),
    })
}

/// Merges two result documents (see [`merge_results`]). The merged document keeps the options
/// of `a` and counts the runs of both.
pub fn merge(a: &BenchJson, b: &BenchJson, mode: MergeMode) -> Result<BenchJson, JsonError> {
    let (ra, oa) = from_json(a)?;
    let (rb, _) = from_json(b)?;
    let merged = merge_results(&ra, &rb, mode)?;
    let mut doc = to_json(&merged, &oa)?;
    doc.runs = a.runs.saturating_add(b.runs);
    Ok(doc)
}

/// Parses a result document and checks its `schema_version`.
pub fn parse(s: &str) -> Result<BenchJson, JsonError> {
    let v: serde_json::Value = serde_json::from_str(s)?;
    if let Some(ver) = v.get("schema_version").and_then(|v| v.as_u64()) {
        if ver != u64::from(SCHEMA_VERSION) {
            return Err(JsonError::UnsupportedSchema(
                u32::try_from(ver).unwrap_or(u32::MAX),
            ));
        }
    }
    Ok(serde_json::from_value(v)?)
}

/// Pretty-printed JSON text of a document, with a trailing newline.
pub fn to_string(doc: &BenchJson) -> Result<String, JsonError> {
    let mut s = serde_json::to_string_pretty(doc)?;
    s.push('\n');
    Ok(s)
}

/// Writes a document to `path` atomically (temporary file in the same directory, then rename).
pub fn write(path: &Path, doc: &BenchJson) -> Result<(), JsonError> {
    let text = to_string(doc)?;
    crate::atomic::write_atomic(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{empty_result, new_histogram, AppProtocol};

    fn sample_run(scale: u64) -> RunResult {
        let mut r = RunResult {
            elapsed: Duration::from_secs(2),
            requests: RequestCounts {
                total: 100 * scale,
                started: 100 * scale,
                done: 100 * scale,
                succeeded: 99 * scale,
                failed: scale,
                errored: scale,
                timeout: 0,
                completed: 99 * scale,
            },
            status: StatusCounts {
                s2xx: 99 * scale,
                ..Default::default()
            },
            traffic: Traffic {
                bytes_total: 70_000 * scale,
                bytes_head: 1_000 * scale,
                bytes_head_decomp: 5_000 * scale,
                bytes_body: 65_300 * scale,
            },
            client_rps: vec![25.0 * scale as f64, 24.5 * scale as f64],
            app_protocol: Some(AppProtocol::H2),
            tls: Some(TlsInfo {
                protocol: "TLSv1.3".into(),
                cipher: "TLS_AES_128_GCM_SHA256".into(),
                server_temp_key: Some("X25519 253 bits".into()),
                alpn: Some("h2".into()),
            }),
            ..empty_result()
        };
        for i in 0..99 * scale {
            r.request_time.record(1_000_000 + i * 1_000).unwrap();
        }
        r.connect_time.record(200_000 * scale).unwrap();
        r.ttfb.record(400_000 * scale).unwrap();
        r.errors.stream_resets.insert(7, scale);
        r.errors.goaway_errors.insert(0xff, 1);
        r.errors.messages.push(format!("message {scale}"));
        r
    }

    #[test]
    fn histogram_round_trip() {
        let mut h = new_histogram();
        for v in [1u64, 10, 1_000, 1_000_000, 3_000_000_000] {
            h.record(v).unwrap();
        }
        let s = encode_histogram(&h).unwrap();
        let back = decode_histogram(&s).unwrap();
        assert_eq!(back, h);
        assert!(decode_histogram("not base64!").is_err());
        assert!(decode_histogram("AAAA").is_err());
        // Plain V2 is accepted too.
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&plain);
        assert_eq!(decode_histogram(&b64).unwrap(), h);
        // A header claiming a 4 GiB payload is rejected before anything is allocated.
        let mut lying = plain.clone();
        lying[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let b64 = base64::engine::general_purpose::STANDARD.encode(&lying);
        assert!(decode_histogram(&b64).is_err());
        // Same inside a deflate envelope.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        io::Write::write_all(&mut z, &lying).unwrap();
        let inner = z.finish().unwrap();
        let mut env = 0x1c84_9314u32.to_be_bytes().to_vec();
        env.extend_from_slice(&(inner.len() as u32).to_be_bytes());
        env.extend_from_slice(&inner);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&env);
        assert!(decode_histogram(&b64).is_err());
    }

    #[test]
    fn document_round_trip() {
        let r = sample_run(1);
        let opts = RunOptions {
            uris: vec!["https://localhost/".into()],
            requests: 100,
            clients: 2,
            max_concurrent_streams: 10,
            threads: 1,
            duration: Some(Duration::from_millis(1500)),
            headers: vec![("x-a".into(), "b".into())],
            protocol: "h2".into(),
            alpn_list: vec!["h2".into(), "http/1.1".into()],
            window_bits: 30,
            connection_window_bits: 30,
            header_table_size: 4096,
            encoder_header_table_size: 4096,
            ..Default::default()
        };
        let doc = to_json(&r, &opts).unwrap();
        assert_eq!(doc.schema_version, 1);
        assert_eq!(doc.requests.succeeded, 99);
        assert_eq!(doc.latency.request.count, 99);
        assert_eq!(doc.throughput.requests_per_second, 49.5);
        assert_eq!(doc.traffic.header_space_savings, 0.8);
        let text = to_string(&doc).unwrap();
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed, doc);
        let (r2, o2) = from_json(&parsed).unwrap();
        assert_eq!(o2, opts);
        assert_eq!(r2.request_time, r.request_time);
        assert_eq!(r2.requests, r.requests);
        assert_eq!(r2.traffic, r.traffic);
        assert_eq!(r2.tls, r.tls);
        assert_eq!(r2.app_protocol, r.app_protocol);
        assert_eq!(r2.errors, r.errors);
    }

    #[test]
    fn merge_adds_counters_and_histograms() {
        let a = to_json(&sample_run(1), &RunOptions::default()).unwrap();
        let b = to_json(&sample_run(2), &RunOptions::default()).unwrap();
        let m = merge(&a, &b, MergeMode::Concurrent).unwrap();
        assert_eq!(m.runs, 2);
        assert_eq!(m.requests.total, 300);
        assert_eq!(m.requests.succeeded, 297);
        assert_eq!(m.status_codes.s2xx, 297);
        assert_eq!(m.traffic.total_bytes, 210_000);
        assert_eq!(m.errors.stream_resets["REFUSED_STREAM"], 3);
        assert_eq!(m.errors.goaway_errors["0xff"], 2);
        assert_eq!(m.errors.total, 5);
        assert_eq!(m.errors.messages, vec!["message 1", "message 2"]);
        assert_eq!(m.latency.request.count, 297);
        assert_eq!(m.latency.connect.count, 2);
        assert_eq!(m.client_rps.values, vec![25.0, 24.5, 50.0, 49.0]);
        assert_eq!(m.elapsed_seconds, 2.0);
        assert_eq!(m.throughput.requests_per_second, 148.5);
        assert_eq!(m.protocol.application.as_deref(), Some("h2"));
        // The merged histogram is exactly the sum of the two.
        let (ra, _) = from_json(&a).unwrap();
        let (rb, _) = from_json(&b).unwrap();
        let mut sum = ra.request_time.clone();
        sum.add(&rb.request_time).unwrap();
        assert_eq!(decode_histogram(&m.histograms.request_time).unwrap(), sum);
        // Max latency is the larger of the two runs' maxima.
        assert_eq!(
            m.latency.request.max_ns,
            a.latency.request.max_ns.max(b.latency.request.max_ns)
        );

        let seq = merge(&a, &b, MergeMode::Sequential).unwrap();
        assert_eq!(seq.elapsed_seconds, 4.0);
        assert_eq!(seq.throughput.requests_per_second, 74.25);

        // Merging is associative on counters: three runs.
        let three = merge(&m, &a, MergeMode::Concurrent).unwrap();
        assert_eq!(three.runs, 3);
        assert_eq!(three.requests.total, 400);
    }

    #[test]
    fn merge_with_different_protocols_drops_it() {
        let mut rb = sample_run(1);
        rb.app_protocol = Some(AppProtocol::Http11);
        rb.protocol_fallback = true;
        let m = merge_results(&sample_run(1), &rb, MergeMode::Concurrent).unwrap();
        assert_eq!(m.app_protocol, None);
        assert!(m.protocol_fallback);
    }

    #[test]
    fn rejects_other_schema_versions() {
        let doc = to_json(&sample_run(1), &RunOptions::default()).unwrap();
        let text = to_string(&doc)
            .unwrap()
            .replace("\"schema_version\": 1", "\"schema_version\": 2");
        assert!(matches!(parse(&text), Err(JsonError::UnsupportedSchema(2))));
        assert!(matches!(parse("{"), Err(JsonError::Parse(_))));
    }
}
