//! The JSON written for a run validates against `schemas/bench-result.v1.json`, and the schema
//! rejects documents that drift from it.

use std::time::Duration;

use h2lab_report::json::{self, MergeMode, SCHEMA};
use h2lab_report::model::{
    empty_result, AppProtocol, RequestCounts, StatusCounts, TlsInfo, Traffic,
};
use h2lab_report::{RunOptions, RunResult};

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_valid(doc: &serde_json::Value) {
    let v = validator();
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

fn run(tls: bool) -> RunResult {
    let mut r = RunResult {
        elapsed: Duration::from_millis(1234),
        requests: RequestCounts {
            total: 1000,
            started: 1000,
            done: 1000,
            succeeded: 990,
            failed: 10,
            errored: 8,
            timeout: 2,
            completed: 992,
        },
        status: StatusCounts {
            s2xx: 990,
            s5xx: 2,
            ..Default::default()
        },
        traffic: Traffic {
            bytes_total: 700_000,
            bytes_head: 12_000,
            bytes_head_decomp: 150_000,
            bytes_body: 653_000,
        },
        client_rps: vec![800.5, 802.25],
        app_protocol: Some(if tls {
            AppProtocol::H2
        } else {
            AppProtocol::H2c
        }),
        tls: tls.then(|| TlsInfo {
            protocol: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            server_temp_key: Some("X25519 253 bits".into()),
            alpn: Some("h2".into()),
        }),
        goaways: 1,
        reconnects: 1,
        read_waits: 7,
        ..empty_result()
    };
    for i in 0..990u64 {
        r.request_time.record(50_000 + i * 997).unwrap();
    }
    r.connect_time.record(120_000).unwrap();
    r.connect_time.record(180_000).unwrap();
    r.ttfb.record(400_000).unwrap();
    r.ttfb.record(410_000).unwrap();
    r.errors.connect = 8;
    r.errors.timeout = 2;
    r.errors.stream_resets.insert(7, 1);
    r.errors
        .messages
        .push("connect to 127.0.0.1:1: Connection refused".into());
    r
}

fn options() -> RunOptions {
    RunOptions {
        uris: vec!["https://127.0.0.1:8443/index.html".into()],
        requests: 1000,
        clients: 2,
        max_concurrent_streams: 10,
        threads: 1,
        duration: None,
        warm_up: None,
        headers: vec![("user-agent".into(), "h2lab".into())],
        body_bytes: Some(12),
        protocol: "h2".into(),
        alpn_list: vec!["h2".into(), "http/1.1".into()],
        base_uri: None,
        connect_to: Some("localhost:8443".into()),
        sni: Some("example.test".into()),
        window_bits: 30,
        connection_window_bits: 30,
        header_table_size: 4096,
        encoder_header_table_size: 4096,
        connection_active_timeout: Some(Duration::from_secs(5)),
        connection_inactivity_timeout: None,
        require_protocol: Some("h2".into()),
        coalesce_hold: Some(Duration::from_millis(1)),
        read_wait: Some(Duration::from_micros(50)),
        accept_push: false,
        load: None,
        qpack: None,
    }
}

fn to_value(doc: &json::BenchJson) -> serde_json::Value {
    serde_json::from_str(&json::to_string(doc).unwrap()).unwrap()
}

#[test]
fn tls_run_validates() {
    assert_valid(&to_value(&json::to_json(&run(true), &options()).unwrap()));
}

#[test]
fn cleartext_and_empty_runs_validate() {
    assert_valid(&to_value(
        &json::to_json(&run(false), &RunOptions::default()).unwrap(),
    ));
    assert_valid(&to_value(
        &json::to_json(&empty_result(), &RunOptions::default()).unwrap(),
    ));
}

#[test]
fn merged_document_validates() {
    let a = json::to_json(&run(true), &options()).unwrap();
    let b = json::to_json(&run(false), &options()).unwrap();
    let m = json::merge(&a, &b, MergeMode::Concurrent).unwrap();
    assert_eq!(m.runs, 2);
    assert_eq!(m.protocol.application, None);
    assert_valid(&to_value(&m));
}

#[test]
fn schema_rejects_drift() {
    let v = validator();
    let good = to_value(&json::to_json(&run(true), &options()).unwrap());
    assert!(v.is_valid(&good));
    let mut extra = good.clone();
    extra["unexpected"] = serde_json::json!(1);
    assert!(!v.is_valid(&extra));
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("histograms");
    assert!(!v.is_valid(&missing));
    let mut negative = good.clone();
    negative["requests"]["done"] = serde_json::json!(-1);
    assert!(!v.is_valid(&negative));
    let mut version = good;
    version["schema_version"] = serde_json::json!(2);
    assert!(!v.is_valid(&version));
}

/// A `--push accept` run that received pushes writes the optional `push` object; it
/// validates, round-trips and merges, and drift in it is rejected.
#[test]
fn push_object_validates() {
    let v = validator();
    let mut r = run(false);
    r.pushed_streams = 3;
    r.pushed_bytes = 4096;
    let doc = json::to_json(&r, &options()).unwrap();
    let val = to_value(&doc);
    assert_valid(&val);
    assert_eq!(val["push"]["streams"], 3);
    assert_eq!(val["push"]["bytes"], 4096);
    let (back, _) = json::from_json(&doc).unwrap();
    assert_eq!((back.pushed_streams, back.pushed_bytes), (3, 4096));
    let m = json::merge(&doc, &doc, MergeMode::Concurrent).unwrap();
    assert_eq!(m.push.map(|p| (p.streams, p.bytes)), Some((6, 8192)));
    let mut bad = val.clone();
    bad["push"]["bytes"] = serde_json::json!(-1);
    assert!(!v.is_valid(&bad));
    let mut extra = val;
    extra["push"]["used"] = serde_json::json!(0);
    assert!(!v.is_valid(&extra));
}

/// An open-model run with a time series and thresholds: the optional v1 fields validate, and
/// the document round-trips.
#[test]
fn open_model_run_with_series_and_thresholds_validates() {
    use h2lab_report::model::{IntervalLatency, IntervalRow, PacingCounts};
    use h2lab_report::threshold::{self, Threshold};
    let mut r = run(false);
    for i in 0..990u64 {
        r.request_time_corrected.record(60_000 + i * 1_500).unwrap();
    }
    r.pacing = Some(PacingCounts {
        scheduled: 1000,
        on_time: 980,
        late: 10,
        dropped: 6,
        unsent: 4,
        queue_limit: 5000,
    });
    r.timeseries = (0..3)
        .map(|i| IntervalRow {
            index: i,
            start: Duration::from_secs(i),
            length: Duration::from_secs(1),
            target: (i > 0).then_some(1000.0),
            completed: 330,
            started: 330,
            succeeded: 330,
            latency: IntervalLatency {
                count: 330,
                p50: 70_000,
                p90: 90_000,
                p99: 1_000_000,
                max: 900_000_000,
            },
            ..Default::default()
        })
        .collect();
    let ts: Vec<Threshold> = ["p99<50ms", "errors<0.1%", "not_sent<1%", "ttfb.p99<1us"]
        .iter()
        .map(|s| Threshold::parse(s).unwrap())
        .collect();
    let outcomes = threshold::evaluate(&ts, &r);
    let mut opts = options();
    opts.load = Some(h2lab_report::model::LoadOptions {
        arrival_rate: Some(0.0),
        stages: vec![
            (Duration::from_secs(30), 100.0),
            (Duration::from_millis(500), 0.0),
        ],
        queue_limit: Some(5000),
        interval: Some(Duration::from_secs(1)),
        ..Default::default()
    });
    let mut doc = json::to_json(&r, &opts).unwrap();
    doc.thresholds = Some(outcomes.iter().map(json::ThresholdJson::from).collect());
    let v = to_value(&doc);
    assert_valid(&v);
    assert!(
        v["latency"]["request_corrected"]["p99_ns"]
            .as_u64()
            .unwrap()
            > 1_000_000
    );
    assert_eq!(v["open_model"]["not_sent"], 10);
    assert_eq!(v["timeseries"].as_array().unwrap().len(), 3);
    assert_eq!(v["timeseries"][0]["target"], serde_json::Value::Null);
    assert_eq!(v["thresholds"][3]["passed"], false);
    // Back from the document: corrected histogram, open-model counts and series survive.
    let (back, back_opts) =
        json::from_json(&json::parse(&json::to_string(&doc).unwrap()).unwrap()).unwrap();
    assert_eq!(back_opts, opts);
    assert_eq!(v["options"]["load"]["stages"][1]["seconds"], 0.5);
    assert_eq!(back.request_time_corrected, r.request_time_corrected);
    assert_eq!(back.pacing, r.pacing);
    assert_eq!(back.timeseries.len(), 3);
    assert_eq!(back.timeseries[2].latency.max, 900_000_000);
    // A closed-model run writes none of the optional fields.
    let closed = to_value(&json::to_json(&run(false), &options()).unwrap());
    for k in ["open_model", "timeseries", "thresholds", "push"] {
        assert!(closed.get(k).is_none(), "{k}");
    }
    assert!(closed["latency"].get("request_corrected").is_none());
}

/// The `shard` object of a shard's result and the `sharded` object of a merged one are part
/// of the schema (additive: other documents are unchanged), and drift in them is rejected.
#[test]
fn shard_and_sharded_objects_validate() {
    use h2lab_report::shard::{merge_shards, ShardJson, SliceJson};
    let v = validator();
    let opts = options();
    let mut doc = json::to_json(&run(false), &opts).unwrap();
    doc.shard = Some(ShardJson {
        index: 0,
        count: 1,
        plan: opts.clone(),
        slice: SliceJson {
            clients: 2,
            lanes: 2,
            requests: 1000,
            threads: 1,
            rate: None,
            queue_limit: None,
            uris: 1,
        },
        start_at_unix: None,
        started_unix: 1_800_000_000.25,
        late_seconds: 0.0,
        interval_histograms: Vec::new(),
    });
    let good = to_value(&doc);
    assert_valid(&good);
    let merged = merge_shards(&[("a".to_string(), doc)], false).unwrap();
    assert_valid(&to_value(&merged.doc));
    assert_eq!(to_value(&merged.doc)["sharded"]["merged"][0], 0);
    let mut no_plan = good.clone();
    no_plan["shard"].as_object_mut().unwrap().remove("plan");
    assert!(!v.is_valid(&no_plan));
    let mut bad_plan = good.clone();
    bad_plan["shard"]["plan"]["clients"] = serde_json::json!("two");
    assert!(!v.is_valid(&bad_plan));
    let mut zero = good;
    zero["shard"]["count"] = serde_json::json!(0);
    assert!(!v.is_valid(&zero));
}

#[test]
fn http3_runs_record_their_qpack_settings() {
    let target = h2lab_engine::Target::parse("https://127.0.0.1:4433/").unwrap();
    let mut cfg = h2lab_engine::BenchConfig::new(vec![target]);
    cfg.alpn_list = vec!["h3".to_owned()];
    let opts = RunOptions::from(&cfg);
    let q = opts.qpack.unwrap();
    assert!(q.dynamic_table);
    assert_eq!((q.max_table_capacity, q.blocked_streams), (4096, 100));
    assert_eq!(q.encoder_max_table_capacity, 4096);
    let doc = to_value(&json::to_json(&run(true), &opts).unwrap());
    assert_eq!(doc["options"]["qpack"]["blocked_streams"], 100);
    assert_valid(&doc);
    cfg.qpack_dynamic_table = false;
    let q = RunOptions::from(&cfg).qpack.unwrap();
    assert_eq!(
        (q.dynamic_table, q.max_table_capacity, q.blocked_streams),
        (false, 0, 0)
    );
    // Not recorded for other protocols.
    cfg.alpn_list = vec!["h2".to_owned()];
    assert_eq!(RunOptions::from(&cfg).qpack, None);
}

/// Interim responses by code: written as `informational`, valid within version 1, read
/// back, added by a merge, and printed on their own line apart from `status codes:`.
#[test]
fn informational_counts_validate_round_trip_and_merge() {
    let mut r = run(true);
    r.status.s1xx = 302;
    r.informational = vec![(100, 2), (103, 300)];
    let doc = json::to_json(&r, &options()).unwrap();
    let value = to_value(&doc);
    assert_valid(&value);
    assert_eq!(value["informational"]["103"], 300);
    assert_eq!(value["informational"]["100"], 2);
    let (back, _) = json::from_json(&doc).unwrap();
    assert_eq!(back.informational, r.informational);
    let m = json::merge(&doc, &doc, MergeMode::Concurrent).unwrap();
    assert_eq!(to_value(&m)["informational"]["103"], 600);
    let mut bad = value.clone();
    bad["informational"]["203"] = serde_json::json!(1);
    assert!(
        !validator().is_valid(&bad),
        "a final status is not informational"
    );
    let text = h2lab_report::text::summary(&r);
    assert!(
        text.contains("\ninformational responses: 2 100 Continue, 300 103 Early Hints\n"),
        "{text}"
    );
    assert!(
        text.contains("status codes: 990 2xx, 0 3xx, 0 4xx, 2 5xx\n"),
        "{text}"
    );
    // None received: no line, no key (the output stays h2load's).
    let plain = run(true);
    assert!(!h2lab_report::text::summary(&plain).contains("informational"));
    assert!(to_value(&json::to_json(&plain, &options()).unwrap())
        .get("informational")
        .is_none());
}

/// Resumption and early data counts: written as `resumption`, valid within version 1, read
/// back, added by a merge, printed on one line; absent (and no line) when nothing counted.
#[test]
fn resumption_counts_validate_round_trip_and_merge() {
    let plain = run(true);
    let value = to_value(&json::to_json(&plain, &options()).unwrap());
    assert!(value.get("resumption").is_none());
    assert!(!h2lab_report::text::summary(&plain).contains("TLS handshakes:"));

    let mut r = run(true);
    r.resume = h2lab_engine::resume::ResumeStats {
        handshakes: 100,
        resumed: 99,
        early_offered: 99,
        early_accepted: 97,
        early_rejected: 2,
        replayed: 4,
        too_early: 3,
    };
    let doc = json::to_json(&r, &options()).unwrap();
    let value = to_value(&doc);
    assert_valid(&value);
    assert_eq!(value["resumption"]["early_data_accepted"], 97);
    assert_eq!(value["resumption"]["too_early"], 3);
    let (back, _) = json::from_json(&doc).unwrap();
    assert_eq!(back.resume, r.resume);
    let m = json::merge(&doc, &doc, MergeMode::Concurrent).unwrap();
    assert_eq!(to_value(&m)["resumption"]["handshakes"], 200);
    let mut bad = value.clone();
    bad["resumption"]["early"] = serde_json::json!(1);
    assert!(!validator().is_valid(&bad), "unknown keys are refused");
    let text = h2lab_report::text::summary(&r);
    assert!(
        text.contains("\nTLS handshakes: 100, 99 resumed; early data: 99 offered, 97 accepted, 2 rejected, 4 requests replayed, 3 answered 425 Too Early\n"),
        "{text}"
    );
}
