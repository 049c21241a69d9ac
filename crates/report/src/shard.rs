//! Sharded runs: the `shard` object of one shard's result document and the exact merge of
//! the results of all shards (`h2lab merge`).
//!
//! A shard's document is an ordinary result (its counters and histograms are the shard's
//! own) plus a [`ShardJson`]: which shard it is, the options of the whole run (the *plan*, the
//! same in every shard), the shard's slice of it, when its measurement started (wall clock)
//! and the latency histograms of every time-series interval. Merging adds counters and
//! histograms (HdrHistograms add exactly: every statistic of the merged histogram is the one
//! a single process recording every request would report), measures rates over the common
//! window (the earliest start to the latest end) and sums the time series interval by
//! interval on the common start.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::json::{
    decode_histogram, encode_histogram, from_json, merge_results, to_json, BenchJson, JsonError,
    MergeMode,
};
use crate::model::{IntervalHistograms, IntervalLatency, IntervalRow, RunOptions, RunResult};

pub use crate::json::{IntervalHistogramsJson, ShardJson, ShardedJson, SliceJson};

/// Encodes the kept interval histograms of a run's time series.
pub fn interval_histograms(rows: &[IntervalRow]) -> Result<Vec<IntervalHistogramsJson>, JsonError> {
    rows.iter()
        .filter_map(|r| r.histograms.as_deref().map(|h| (r.index, h)))
        .map(|(index, h)| {
            let enc = |bytes: &[u8]| -> Result<String, JsonError> {
                let hist = IntervalHistograms::decode(bytes).ok_or_else(|| {
                    JsonError::Histogram(format!("interval {index}: unreadable histogram"))
                })?;
                encode_histogram(&hist)
            };
            Ok(IntervalHistogramsJson {
                index,
                latency: enc(&h.latency)?,
                uncorrected: h.uncorrected.as_deref().map(enc).transpose()?,
            })
        })
        .collect()
}

/// Why shard results could not be merged (one line each).
#[derive(Debug)]
pub enum MergeError {
    /// A document has no `shard` object.
    NotAShard(String),
    /// Two documents come from different runs.
    DifferentPlans(String, String),
    /// A shard index is not below the shard count.
    OutOfRange(String, u32, u32),
    /// The same shard twice.
    Duplicate(u32, u32, String, String),
    /// Shards are missing (and `--allow-partial` was not given).
    Missing(Vec<u32>, u32),
    /// Nothing to merge.
    Empty,
    /// A document could not be decoded or the result encoded.
    Json(String, JsonError),
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::NotAShard(n) => write!(
                f,
                "{n}: not a shard result (no \"shard\" object; run h2lab bench --shard i/N --json)"
            ),
            MergeError::DifferentPlans(a, b) => write!(
                f,
                "{a} and {b} are shards of different runs (their plans or shard counts differ)"
            ),
            MergeError::OutOfRange(n, i, c) => write!(f, "{n}: shard {i}/{c} is out of range"),
            MergeError::Duplicate(i, c, a, b) => {
                write!(f, "shard {i}/{c} given twice: {a} and {b}")
            }
            MergeError::Missing(m, c) => write!(
                f,
                "missing shard{} {} of {c} (--allow-partial merges what is there)",
                if m.len() == 1 { "" } else { "s" },
                list(m)
            ),
            MergeError::Empty => write!(f, "no result to merge"),
            MergeError::Json(n, e) => write!(f, "{n}: {e}"),
        }
    }
}

impl std::error::Error for MergeError {}

/// `0, 2, 3`.
pub fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The merge of shard results.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The whole run: counters and histograms added, elapsed = the common window, the time
    /// series summed on the common start.
    pub result: RunResult,
    /// The options of the whole run.
    pub options: RunOptions,
    /// The merged document (with its `sharded` object).
    pub doc: BenchJson,
    /// Shards merged and missing.
    pub sharded: ShardedJson,
}

/// Merges shard documents (`(name, document)` pairs; names are used in errors).
pub fn merge_shards(
    docs: &[(String, BenchJson)],
    allow_partial: bool,
) -> Result<Merged, MergeError> {
    let (first_name, first) = docs.first().ok_or(MergeError::Empty)?;
    let first_shard = first
        .shard
        .as_ref()
        .ok_or_else(|| MergeError::NotAShard(first_name.clone()))?;
    let count = first_shard.count;
    let mut by_index: BTreeMap<u32, (&str, &BenchJson, &ShardJson)> = BTreeMap::new();
    for (name, doc) in docs {
        let s = doc
            .shard
            .as_ref()
            .ok_or_else(|| MergeError::NotAShard(name.clone()))?;
        if s.count != count || s.plan != first_shard.plan {
            return Err(MergeError::DifferentPlans(first_name.clone(), name.clone()));
        }
        if s.index >= count {
            return Err(MergeError::OutOfRange(name.clone(), s.index, count));
        }
        if let Some((other, _, _)) = by_index.insert(s.index, (name, doc, s)) {
            return Err(MergeError::Duplicate(
                s.index,
                count,
                other.to_string(),
                name.clone(),
            ));
        }
    }
    let missing: Vec<u32> = (0..count).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::Missing(missing, count));
    }
    let start = by_index
        .values()
        .map(|(_, _, s)| s.started_unix)
        .fold(f64::INFINITY, f64::min);
    let latest_start = by_index
        .values()
        .map(|(_, _, s)| s.started_unix)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut merged: Option<RunResult> = None;
    let mut end = start;
    let mut series = SeriesSum::default();
    let interval = first_shard
        .plan
        .load
        .as_ref()
        .and_then(|l| l.interval)
        .map(|d| d.as_secs_f64())
        .filter(|s| *s > 0.0);
    for (name, doc, s) in by_index.values() {
        let bad = |e| MergeError::Json(name.to_string(), e);
        let (r, _) = from_json(doc).map_err(bad)?;
        end = end.max(s.started_unix + doc.elapsed_seconds);
        if let Some(iv) = interval {
            let shift = ((s.started_unix - start) / iv).round().max(0.0) as u64;
            series.add(&r.timeseries, s, shift, iv).map_err(bad)?;
        }
        merged = Some(match merged {
            None => r,
            Some(m) => merge_results(&m, &r, MergeMode::Concurrent).map_err(bad)?,
        });
    }
    let mut result = merged.ok_or(MergeError::Empty)?;
    result.elapsed = Duration::try_from_secs_f64(end - start).unwrap_or(result.elapsed);
    result.timeseries = series.rows();
    let options = first_shard.plan.clone();
    let sharded = ShardedJson {
        count,
        merged: by_index.keys().copied().collect(),
        missing,
        started_unix: start,
        start_spread_seconds: (latest_start - start).max(0.0),
    };
    let mut doc =
        to_json(&result, &options).map_err(|e| MergeError::Json(first_name.clone(), e))?;
    doc.sharded = Some(sharded.clone());
    Ok(Merged {
        result,
        options,
        doc,
        sharded,
    })
}

/// One merged interval.
#[derive(Default)]
struct SumRow {
    row: IntervalRow,
    latency: Option<Histogram<u64>>,
    uncorrected: Option<Histogram<u64>>,
    /// Some shard's row had no histograms: the percentiles are then the highest of the shards'.
    approximate: bool,
}

/// The time series of several shards summed by interval on the common start.
#[derive(Default)]
struct SeriesSum {
    rows: BTreeMap<u64, SumRow>,
}

fn add_hist(into: &mut Option<Histogram<u64>>, h: Histogram<u64>) -> Result<(), JsonError> {
    match into {
        None => *into = Some(h),
        Some(m) => m
            .add(&h)
            .map_err(|e| JsonError::Histogram(format!("cannot add: {e:?}")))?,
    }
    Ok(())
}

fn max_latency(a: &mut IntervalLatency, b: &IntervalLatency) {
    a.count += b.count;
    a.p50 = a.p50.max(b.p50);
    a.p90 = a.p90.max(b.p90);
    a.p99 = a.p99.max(b.p99);
    a.max = a.max.max(b.max);
}

impl SeriesSum {
    /// Adds one shard's rows, its interval `i` landing in merged interval `i + shift`.
    fn add(
        &mut self,
        rows: &[IntervalRow],
        shard: &ShardJson,
        shift: u64,
        iv: f64,
    ) -> Result<(), JsonError> {
        let hists: BTreeMap<u64, &IntervalHistogramsJson> = shard
            .interval_histograms
            .iter()
            .map(|h| (h.index, h))
            .collect();
        for r in rows {
            let index = r.index + shift;
            let e = self.rows.entry(index).or_default();
            let m = &mut e.row;
            m.index = index;
            m.start = Duration::try_from_secs_f64(index as f64 * iv).unwrap_or_default();
            m.length = m.length.max(r.length);
            m.target = match (m.target, r.target) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            m.started += r.started;
            m.completed += r.completed;
            m.succeeded += r.succeeded;
            m.failed += r.failed;
            m.bytes += r.bytes;
            m.errors.connect += r.errors.connect;
            m.errors.tls += r.errors.tls;
            m.errors.timeout += r.errors.timeout;
            m.errors.protocol += r.errors.protocol;
            m.errors.io += r.errors.io;
            m.errors.stream_reset += r.errors.stream_reset;
            m.errors.goaway += r.errors.goaway;
            m.late += r.late;
            m.dropped += r.dropped;
            m.active_connections += r.active_connections;
            match hists.get(&r.index) {
                Some(h) => {
                    add_hist(&mut e.latency, decode_histogram(&h.latency)?)?;
                    if let Some(u) = &h.uncorrected {
                        add_hist(&mut e.uncorrected, decode_histogram(u)?)?;
                    }
                }
                None => {
                    e.approximate = true;
                    max_latency(&mut m.latency, &r.latency);
                    max_latency(&mut m.latency_uncorrected, &r.latency_uncorrected);
                }
            }
        }
        Ok(())
    }

    fn rows(self) -> Vec<IntervalRow> {
        self.rows
            .into_values()
            .map(|e| {
                let mut r = e.row;
                if !e.approximate {
                    r.latency = e
                        .latency
                        .as_ref()
                        .map(IntervalLatency::of)
                        .unwrap_or_default();
                    r.latency_uncorrected = match &e.uncorrected {
                        Some(h) => IntervalLatency::of(h),
                        None => r.latency,
                    };
                }
                r
            })
            .collect()
    }
}
