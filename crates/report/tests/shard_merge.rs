//! Merging shard results is exact: N shards' histograms merged report every statistic of the
//! one histogram of all recorded values; counters add up; rates use the common window; the
//! time series are summed on the common start with percentiles from merged histograms; and
//! results that do not belong together are refused with one-line errors.

use std::time::Duration;

use h2lab_report::json::{self, BenchJson};
use h2lab_report::model::{
    empty_result, IntervalHistograms, IntervalLatency, IntervalRow, LoadOptions, RequestCounts,
    StatusCounts,
};
use h2lab_report::shard::{self, merge_shards, MergeError, ShardJson, SliceJson};
use h2lab_report::{text, RunOptions, RunResult};

/// A deterministic spread of latencies (1 µs .. ~2 s, heavy tail) from a seed.
fn values(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (1_000.0 * (1.0 / (1.0 - u * 0.9995)).powf(2.3)) as u64 + (x % 997)
        })
        .collect()
}

fn options() -> RunOptions {
    RunOptions {
        uris: vec!["http://127.0.0.1:8080/".into()],
        requests: 0,
        clients: 12,
        max_concurrent_streams: 4,
        threads: 1,
        duration: Some(Duration::from_secs(3)),
        protocol: "h2c".into(),
        load: Some(LoadOptions {
            interval: Some(Duration::from_secs(1)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn result_of(v: &[u64]) -> RunResult {
    let mut r = empty_result();
    let n = v.len() as u64;
    r.requests = RequestCounts {
        total: n,
        started: n,
        done: n,
        succeeded: n,
        completed: n,
        ..Default::default()
    };
    r.status = StatusCounts {
        s2xx: n,
        ..Default::default()
    };
    r.traffic.bytes_total = n * 100;
    r.traffic.bytes_body = n * 80;
    for x in v {
        r.request_time.record(*x).unwrap();
        r.ttfb.record(*x / 2 + 1).unwrap();
    }
    r.connect_time.record(100_000).unwrap();
    r.elapsed = Duration::from_secs(3);
    r.client_rps = vec![n as f64 / 3.0];
    r
}

/// Shard `i` of `count`: the values, its start offset, and one time-series row per second
/// holding the values that fall in it (values split in thirds).
fn shard_doc(i: u32, count: u32, v: &[u64], start: f64) -> (String, BenchJson) {
    let mut r = result_of(v);
    let third = v.len().div_ceil(3);
    r.timeseries = v
        .chunks(third)
        .enumerate()
        .map(|(k, part)| {
            let mut h = h2lab_report::model::new_histogram();
            for x in part {
                h.record(*x).unwrap();
            }
            IntervalRow {
                index: k as u64,
                start: Duration::from_secs(k as u64),
                length: Duration::from_secs(1),
                completed: part.len() as u64,
                started: part.len() as u64,
                succeeded: part.len() as u64,
                active_connections: 3,
                latency: IntervalLatency::of(&h),
                latency_uncorrected: IntervalLatency::of(&h),
                histograms: Some(Box::new(IntervalHistograms {
                    latency: IntervalHistograms::encode(&h),
                    uncorrected: None,
                })),
                ..Default::default()
            }
        })
        .collect();
    let mut opts = options();
    opts.clients = 3;
    let mut doc = json::to_json(&r, &opts).unwrap();
    doc.shard = Some(ShardJson {
        index: i,
        count,
        plan: options(),
        slice: SliceJson {
            clients: 3,
            lanes: 12,
            requests: 0,
            threads: 1,
            rate: None,
            queue_limit: None,
            uris: 1,
        },
        start_at_unix: Some(1_800_000_000.0),
        started_unix: 1_800_000_000.0 + start,
        late_seconds: start,
        interval_histograms: shard::interval_histograms(&r.timeseries).unwrap(),
    });
    // Through text, as h2lab merge reads it.
    let doc = json::parse(&json::to_string(&doc).unwrap()).unwrap();
    (format!("s{i}.json"), doc)
}

fn schema_valid(doc: &BenchJson) {
    let schema: serde_json::Value = serde_json::from_str(json::SCHEMA).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json::to_string(doc).unwrap()).unwrap();
    let errors: Vec<String> = v.iter_errors(&value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn merged_histograms_report_exactly_the_statistics_of_one_histogram() {
    let parts: Vec<Vec<u64>> = (0..4)
        .map(|i| values(i + 7, 3_000 + 17 * i as usize))
        .collect();
    let all: Vec<u64> = parts.iter().flatten().copied().collect();
    let docs: Vec<(String, BenchJson)> = parts
        .iter()
        .enumerate()
        .map(|(i, v)| shard_doc(i as u32, 4, v, 0.0))
        .collect();
    for (_, d) in &docs {
        schema_valid(d);
    }
    let m = merge_shards(&docs, false).unwrap();
    schema_valid(&m.doc);
    let one = result_of(&all);
    // The histograms are the same, so is every statistic computed from them.
    assert_eq!(m.result.request_time, one.request_time);
    assert_eq!(m.result.ttfb, one.ttfb);
    let single = json::to_json(&one, &options()).unwrap();
    // min, max, mean, sd, +/- sd and percentiles (each shard recorded one connect time).
    assert_eq!(m.doc.latency.request, single.latency.request);
    assert_eq!(m.doc.latency.ttfb, single.latency.ttfb);
    assert_eq!(m.doc.latency.connect.count, 4);
    for q in 0..=1000 {
        let q = f64::from(q) / 1000.0;
        assert_eq!(
            m.result.request_time.value_at_quantile(q),
            one.request_time.value_at_quantile(q),
            "quantile {q}"
        );
    }
    // The h2load-style latency lines are identical.
    let lines = |s: String| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("time for request") || l.starts_with("time to 1st"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(lines(text::summary(&m.result)), lines(text::summary(&one)));
    assert_eq!(m.result.requests, one.requests);
    assert_eq!(m.result.status, one.status);
    assert_eq!(m.result.traffic, one.traffic);
    assert_eq!(m.doc.options, options(), "the whole plan");
    assert_eq!(m.sharded.merged, [0, 1, 2, 3]);
}

#[test]
fn rates_use_the_common_window_and_series_sum_on_the_common_start() {
    let a = values(1, 900);
    let b = values(2, 600);
    // Shard 1 started 1 s after shard 0: its interval k is the whole run's interval k + 1.
    let docs = vec![shard_doc(0, 2, &a, 0.0), shard_doc(1, 2, &b, 1.0)];
    let m = merge_shards(&docs, false).unwrap();
    assert_eq!(m.result.elapsed, Duration::from_secs(4), "0 .. 1 + 3 s");
    assert_eq!(m.sharded.start_spread_seconds, 1.0);
    let ts = &m.result.timeseries;
    assert_eq!(ts.len(), 4);
    let done: Vec<u64> = ts.iter().map(|r| r.completed).collect();
    assert_eq!(done, [300, 300 + 200, 300 + 200, 200]);
    assert_eq!(ts[1].active_connections, 6);
    assert_eq!(ts[3].start, Duration::from_secs(3));
    // Interval 1 holds a's second third and b's first: percentiles of their union.
    let mut h = h2lab_report::model::new_histogram();
    for x in a[300..600].iter().chain(&b[..200]) {
        h.record(*x).unwrap();
    }
    assert_eq!(ts[1].latency, IntervalLatency::of(&h));
}

#[test]
fn results_that_do_not_belong_together_are_refused() {
    let v = values(3, 100);
    let s0 = shard_doc(0, 3, &v, 0.0);
    let s1 = shard_doc(1, 3, &v, 0.0);
    let s2 = shard_doc(2, 3, &v, 0.0);
    let one_line = |e: MergeError| {
        let s = e.to_string();
        assert!(!s.contains('\n'), "{s}");
        s
    };
    let e = one_line(merge_shards(&[s0.clone(), s1.clone()], false).unwrap_err());
    assert!(e.contains("missing shard 2 of 3"), "{e}");
    assert!(e.contains("--allow-partial"), "{e}");
    let p = merge_shards(&[s0.clone(), s2.clone()], true).unwrap();
    assert_eq!(p.sharded.missing, [1]);
    assert_eq!(p.result.requests.done, 200);
    schema_valid(&p.doc);
    let e = one_line(merge_shards(&[s0.clone(), s1.clone(), s1.clone()], false).unwrap_err());
    assert!(
        e.contains("shard 1/3 given twice: s1.json and s1.json"),
        "{e}"
    );
    let mut other = s2.clone();
    other.1.shard.as_mut().unwrap().plan.clients = 13;
    let e = one_line(merge_shards(&[s0.clone(), s1.clone(), other], false).unwrap_err());
    assert!(e.contains("different runs"), "{e}");
    let mut four = s2.clone();
    four.1.shard.as_mut().unwrap().count = 4;
    assert!(matches!(
        merge_shards(&[s0.clone(), four], false),
        Err(MergeError::DifferentPlans(..))
    ));
    let mut plain = s1.clone();
    plain.1.shard = None;
    let e = one_line(merge_shards(&[s0, plain], false).unwrap_err());
    assert!(e.contains("not a shard result"), "{e}");
}
