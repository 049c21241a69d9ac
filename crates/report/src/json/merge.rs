//! Merging runs and result documents.

use super::convert::{from_json, to_json};
use super::schema::BenchJson;
use super::JsonError;
use crate::model::RunResult;

/// How the measurement periods of merged runs relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMode {
    /// The runs happened at the same time (e.g. several load generators against one server):
    /// the merged period is the longest one, so rates add up.
    Concurrent,
    /// The runs happened one after another: the merged period is their sum, so rates average.
    Sequential,
}

/// Merges two runs: counters, errors and histograms add up, per-client rates are concatenated
/// ([`RunResult::add`]), the period follows `mode`. The protocol is kept when both agree (else
/// none), TLS details come from the first run that has them, `protocol_fallback` and
/// `interrupted` are or-ed; merged documents carry no time series (interval percentiles cannot
/// be merged) and no raw samples.
pub fn merge_results(
    a: &RunResult,
    b: &RunResult,
    mode: MergeMode,
) -> Result<RunResult, JsonError> {
    let mut m = a.clone();
    m.add(b)
        .map_err(|e| JsonError::Histogram(format!("cannot add: {e:?}")))?;
    m.elapsed = match mode {
        MergeMode::Concurrent => a.elapsed.max(b.elapsed),
        MergeMode::Sequential => a.elapsed.saturating_add(b.elapsed),
    };
    if a.app_protocol != b.app_protocol {
        m.app_protocol = None;
    }
    m.timeseries = Vec::new();
    m.samples = None;
    Ok(m)
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
