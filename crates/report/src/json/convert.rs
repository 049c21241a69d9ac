//! Conversion between a run ([`RunResult`] and [`RunOptions`]) and its result document.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::histogram::{decode_histogram, encode_histogram};
use super::schema::*;
use super::{JsonError, HISTOGRAM_ENCODING, HISTOGRAM_ENCODING_PLAIN, SCHEMA_VERSION};
use crate::model::{
    h2_error_code, h2_error_name, is_paced, parse_app_protocol, ErrorCounts, PacingCounts,
    RequestCounts, RunOptions, RunResult, StatusCounts, TlsInfo, Traffic, HISTOGRAM_SIGFIG,
};
use crate::stats::{requests_per_second, DistributionSummary};
use crate::timeseries::IntervalJson;

fn from_secs(s: Option<f64>) -> Option<Duration> {
    s.and_then(|s| Duration::try_from_secs_f64(s).ok())
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
        messages: e.messages.iter().map(ToString::to_string).collect(),
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
        messages: e.messages.iter().map(|m| m.as_str().into()).collect(),
    })
}

fn latency_stats(h: &Histogram<u64>) -> LatencyStatsJson {
    let s = DistributionSummary::from_histogram(h);
    // DistributionSummary values of a histogram are whole bucket values (except mean and sd).
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
    let s = DistributionSummary::from_samples(values);
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
        options: options.clone(),
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
            frame_bytes: r.pushed_frame_bytes,
        }),
        informational: (!r.informational.is_empty()).then(|| {
            r.informational
                .iter()
                .map(|&(code, n)| (code.to_string(), n))
                .collect()
        }),
        resumption: (!r.resume.is_empty()).then(|| (&r.resume).into()),
        thresholds: None,
        shard: None,
        sharded: None,
        quic: r.quic.as_ref().map(quic_json),
    })
}

fn quic_stat_json(st: crate::layout::Stat, values: Option<Vec<f64>>) -> QuicStatJson {
    QuicStatJson { stat: st, values }
}

fn quic_json(q: &h2lab_engine::QuicStats) -> QuicJson {
    use crate::quic::{gro_stat, int_stat, time_stat};
    let ints = |v: &[u64]| quic_stat_json(int_stat(v), Some(v.iter().map(|x| *x as f64).collect()));
    QuicJson {
        datagrams_sent: q.datagrams_sent,
        datagrams_received: q.datagrams_recv,
        min_rtt_seconds: quic_stat_json(time_stat(&q.min_rtt), Some(q.min_rtt.clone())),
        smoothed_rtt_seconds: quic_stat_json(
            time_stat(&q.smoothed_rtt),
            Some(q.smoothed_rtt.clone()),
        ),
        packets_sent: ints(&q.packets_sent),
        packets_received: ints(&q.packets_recv),
        packets_lost: ints(&q.packets_lost),
        gro_packets: quic_stat_json(gro_stat(&q.gro_counts), None),
        gro_counts: q.gro_counts.clone(),
    }
}

/// The run's QUIC figures back from a document (values as written; absent lists empty).
fn quic_from_json(j: &QuicJson) -> h2lab_engine::QuicStats {
    let ints = |s: &QuicStatJson| -> Vec<u64> {
        s.values
            .iter()
            .flatten()
            .map(|v| if *v > 0.0 { *v as u64 } else { 0 })
            .collect()
    };
    h2lab_engine::QuicStats {
        datagrams_sent: j.datagrams_sent,
        datagrams_recv: j.datagrams_received,
        min_rtt: j.min_rtt_seconds.values.clone().unwrap_or_default(),
        smoothed_rtt: j.smoothed_rtt_seconds.values.clone().unwrap_or_default(),
        packets_sent: ints(&j.packets_sent),
        packets_recv: ints(&j.packets_received),
        packets_lost: ints(&j.packets_lost),
        gro_counts: j.gro_counts.clone(),
    }
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
        response_bytes: 0,
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
        quic: doc.quic.as_ref().map(quic_from_json),
        tls_resumed: 0,
        resume: doc.resumption.as_ref().map(Into::into).unwrap_or_default(),
        informational: doc
            .informational
            .iter()
            .flatten()
            .filter_map(|(code, &n)| Some((code.parse().ok()?, n)))
            .collect(),
        pushed_streams: doc.push.map_or(0, |p| p.streams),
        pushed_bytes: doc.push.map_or(0, |p| p.bytes),
        pushed_frame_bytes: doc.push.map_or(0, |p| p.frame_bytes),
    };
    Ok((r, doc.options.clone()))
}
