//! h2load's `--output-file` document: its key paths are exactly those of h2load 1.70's
//! `write_result` (`tests/data/h2load-1.70-output-file.keys`, source named there), in h2load's
//! order, with the values of the run.

use std::collections::BTreeSet;
use std::time::Duration;

use h2lab_engine::samples::Samples;
use h2lab_report::h2load_json;
use h2lab_report::model::{empty_result, RequestCounts};
use h2lab_report::RunResult;
use serde_json::Value;

fn paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for (k, v) in m {
            let p = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            out.push(p.clone());
            paths(v, &p, out);
        }
    }
}

fn source_keys() -> Vec<String> {
    let path = format!(
        "{}/tests/data/h2load-1.70-output-file.keys",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn result(samples: bool) -> RunResult {
    let mut r = RunResult {
        elapsed: Duration::from_millis(500),
        requests: RequestCounts {
            total: 4,
            started: 4,
            done: 4,
            succeeded: 3,
            failed: 1,
            completed: 4,
            ..Default::default()
        },
        client_rps: vec![9.0, 7.0],
        ..empty_result()
    };
    r.status.s2xx = 3;
    r.status.s4xx = 1;
    r.traffic.bytes_total = 1000;
    r.traffic.bytes_head = 100;
    r.traffic.bytes_head_decomp = 400;
    r.traffic.bytes_body = 800;
    for ns in [1_000_000u64, 2_000_000, 3_000_000, 4_000_000] {
        r.request_time.record(ns).unwrap();
    }
    r.connect_time.record(100_000).unwrap();
    r.ttfb.record(1_100_000).unwrap();
    if samples {
        r.samples = Some(Samples {
            request: vec![0.001, 0.002, 0.003, 0.004],
            connect: vec![0.0001],
            ttfb: vec![0.0011],
        });
    }
    r
}

#[test]
fn keys_are_h2loads_in_h2loads_order() {
    let doc = serde_json::to_value(h2load_json::document(&result(true))).unwrap();
    let mut got = Vec::new();
    paths(&doc, "", &mut got);
    let want = source_keys();
    let (g, w): (BTreeSet<_>, BTreeSet<_>) = (got.iter().collect(), want.iter().collect());
    assert_eq!(
        g.difference(&w).collect::<Vec<_>>(),
        Vec::<&&String>::new(),
        "keys h2load does not write"
    );
    assert_eq!(
        w.difference(&g).collect::<Vec<_>>(),
        Vec::<&&String>::new(),
        "h2load keys missing"
    );
    // Order: serde writes the fields in declaration order; h2load's text order is the file's.
    let text = serde_json::to_string(&h2load_json::document(&result(true))).unwrap();
    let mut last = 0;
    for key in [
        "\"version\"",
        "\"metadata\"",
        "\"generator\"",
        "\"measurements\"",
        "\"duration\"",
        "\"request_per_second\"",
        "\"bytes_per_second\"",
        "\"requests\"",
        "\"status_codes\"",
        "\"traffic\"",
        "\"headers_decompressed\"",
        "\"performance\"",
        "\"request\"",
        "\"connect\"",
        "\"ttfb\"",
    ] {
        let at = text[last..]
            .find(key)
            .unwrap_or_else(|| panic!("{key} out of order"));
        last += at;
    }
}

#[test]
fn values_of_the_run() {
    let doc = serde_json::to_value(h2load_json::document(&result(true))).unwrap();
    assert_eq!(doc["version"], "v1");
    assert!(doc["metadata"]["generator"]
        .as_str()
        .unwrap()
        .starts_with("h2lab "));
    let m = &doc["measurements"];
    assert_eq!(m["duration"], 0.5);
    assert_eq!(m["request_per_second"], 8.0);
    assert_eq!(m["bytes_per_second"], 2000);
    assert_eq!(m["requests"]["succeeded"], 3);
    assert_eq!(m["status_codes"]["4xx"], 1);
    assert_eq!(m["traffic"]["headers_decompressed"], 400);
    let req = &m["performance"]["request"];
    assert_eq!(
        req["samples"],
        serde_json::json!([0.001, 0.002, 0.003, 0.004])
    );
    // Seconds, from the 3-significant-figure histogram.
    assert!((req["min"].as_f64().unwrap() - 0.001).abs() < 1e-6, "{req}");
    assert!((req["max"].as_f64().unwrap() - 0.004).abs() < 1e-5, "{req}");
    let rps = &m["performance"]["request_per_second"];
    assert_eq!(rps["samples"], serde_json::json!([7.0, 9.0]));
    assert_eq!(rps["median"], 8.0);
    assert_eq!(rps["mean"], 8.0);
    // Without kept samples the arrays are empty, the keys the same.
    let doc = serde_json::to_value(h2load_json::document(&result(false))).unwrap();
    assert_eq!(
        doc["measurements"]["performance"]["connect"]["samples"],
        serde_json::json!([])
    );
}
