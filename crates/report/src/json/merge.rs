//! Merging runs and result documents.

use hdrhistogram::Histogram;

use super::convert::{from_json, to_json};
use super::schema::BenchJson;
use super::JsonError;
use crate::model::{RequestCounts, RunResult, StatusCounts, Traffic};

/// How the measurement periods of merged runs relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMode {
    /// The runs happened at the same time (e.g. several load generators against one server):
    /// the merged period is the longest one, so rates add up.
    Concurrent,
    /// The runs happened one after another: the merged period is their sum, so rates average.
    Sequential,
}

/// `a` and `b` merged by `merge` (one absent: merged with the default), `None` when both are.
fn merge_opt<T: Clone + Default>(
    a: &Option<T>,
    b: &Option<T>,
    merge: impl FnOnce(&mut T, &T),
) -> Option<T> {
    if a.is_none() && b.is_none() {
        return None;
    }
    let mut m = a.clone().unwrap_or_default();
    merge(&mut m, &b.clone().unwrap_or_default());
    Some(m)
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
        response_bytes: s(a.response_bytes, b.response_bytes),
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
        pacing: merge_opt(&a.pacing, &b.pacing, |p, q| p.merge(q)),
        // Interval percentiles cannot be merged: merged documents carry no series.
        timeseries: Vec::new(),
        samples: None,
        quic: merge_opt(&a.quic, &b.quic, |p, q| p.merge(q)),
        tls_resumed: 0,
        resume: {
            let mut m = a.resume;
            m.merge(&b.resume);
            m
        },
        informational: merge_informational(&a.informational, &b.informational),
        pushed_streams: s(a.pushed_streams, b.pushed_streams),
        pushed_bytes: s(a.pushed_bytes, b.pushed_bytes),
        pushed_frame_bytes: s(a.pushed_frame_bytes, b.pushed_frame_bytes),
    })
}

/// Interim response counts of two runs added code by code (ascending).
fn merge_informational(a: &[(u16, u64)], b: &[(u16, u64)]) -> Vec<(u16, u64)> {
    let mut sum: std::collections::BTreeMap<u16, u64> = a.iter().copied().collect();
    for &(code, n) in b {
        *sum.entry(code).or_default() += n;
    }
    sum.into_iter().collect()
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
