//! The `--json` document is byte-for-byte stable: documents built from fixed runs and options
//! are compared with the files in `tests/data/` (`*.golden.json`). Set `H2LAB_BLESS=1` to
//! rewrite them after a deliberate change of the output (which needs a new schema version).

use std::path::PathBuf;
use std::time::Duration;

use h2lab_report::json::{self, BenchJson, ThresholdJson};
use h2lab_report::model::{
    empty_result, AppProtocol, IntervalLatency, IntervalRow, LoadOptions, PacingCounts,
    RequestCounts, StatusCounts, TlsInfo, Traffic,
};
use h2lab_report::shard::{ShardJson, SliceJson};
use h2lab_report::threshold::{self, Threshold};
use h2lab_report::{RunOptions, RunResult};

fn run() -> RunResult {
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
            s1xx: 1,
            s2xx: 990,
            s3xx: 3,
            s4xx: 4,
            s5xx: 2,
        },
        traffic: Traffic {
            bytes_total: 700_000,
            bytes_head: 12_000,
            bytes_head_decomp: 150_000,
            bytes_body: 653_000,
        },
        client_rps: vec![800.5, 802.25, 790.125],
        app_protocol: Some(AppProtocol::H2),
        protocol_fallback: true,
        tls: Some(TlsInfo {
            protocol: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            server_temp_key: Some("X25519 253 bits".into()),
            alpn: Some("h2".into()),
        }),
        goaways: 1,
        reconnects: 2,
        read_waits: 7,
        interrupted: true,
        pushed_streams: 3,
        pushed_bytes: 4096,
        pushed_frame_bytes: 4500,
        pacing: Some(PacingCounts {
            scheduled: 1000,
            on_time: 980,
            late: 10,
            dropped: 6,
            unsent: 4,
            queue_limit: 5000,
        }),
        ..empty_result()
    };
    for i in 0..990u64 {
        r.request_time.record(50_000 + i * 997).unwrap();
        r.request_time_corrected.record(60_000 + i * 1_500).unwrap();
    }
    r.connect_time.record(120_000).unwrap();
    r.connect_time.record(180_000).unwrap();
    r.ttfb.record(400_000).unwrap();
    r.ttfb.record(410_000).unwrap();
    r.errors.connect = 8;
    r.errors.tls = 1;
    r.errors.timeout = 2;
    r.errors.protocol = 3;
    r.errors.io = 4;
    r.errors.push_refused = 5;
    r.errors.stream_resets.insert(7, 1);
    r.errors.stream_resets.insert(0x2, 2);
    r.errors.goaway_errors.insert(0xff, 1);
    r.errors
        .messages
        .push("connect to 127.0.0.1:1: Connection refused".into());
    r.timeseries = (0..3)
        .map(|i| IntervalRow {
            index: i,
            start: Duration::from_secs(i),
            length: Duration::from_secs(1),
            target: (i > 0).then_some(1000.0),
            completed: 330,
            started: 331,
            succeeded: 329,
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
    r
}

fn options() -> RunOptions {
    RunOptions {
        uris: vec![
            "https://127.0.0.1:8443/index.html".into(),
            "https://127.0.0.1:8443/a?b=c".into(),
        ],
        requests: 1000,
        clients: 3,
        max_concurrent_streams: 10,
        threads: 2,
        duration: Some(Duration::from_millis(2500)),
        warm_up: Some(Duration::from_millis(250)),
        headers: vec![
            ("user-agent".into(), "h2lab".into()),
            ("x-quote".into(), "a \"b\" \\ é".into()),
        ],
        body_bytes: Some(12),
        protocol: "h2".into(),
        alpn_list: vec!["h2".into(), "http/1.1".into()],
        base_uri: Some("https://[::1]:8443".into()),
        connect_to: Some("localhost:8443".into()),
        sni: Some("example.test".into()),
        window_bits: 30,
        connection_window_bits: 16,
        header_table_size: 4096,
        encoder_header_table_size: 8192,
        connection_active_timeout: Some(Duration::from_secs(5)),
        connection_inactivity_timeout: Some(Duration::from_micros(1500)),
        require_protocol: Some("h2".into()),
        coalesce_hold: Some(Duration::from_millis(1)),
        read_wait: Some(Duration::from_micros(50)),
        accept_push: true,
        load: Some(LoadOptions {
            arrival_rate: Some(1000.0),
            stages: vec![
                (Duration::from_secs(30), 100.0),
                (Duration::from_millis(500), 0.0),
            ],
            queue_limit: Some(5000),
            rps: Some(12.5),
            connection_rate: Some((4, Duration::from_millis(100))),
            timing_script_lines: Some(42),
            interval: Some(Duration::from_secs(1)),
        }),
        qpack: None,
    }
}

fn full_doc() -> BenchJson {
    let r = run();
    let opts = options();
    let mut doc = json::to_json(&r, &opts).unwrap();
    let ts: Vec<Threshold> = ["p99<50ms", "errors<0.1%", "not_sent<1%", "ttfb.p99<1us"]
        .iter()
        .map(|s| Threshold::parse(s).unwrap())
        .collect();
    doc.thresholds = Some(
        threshold::evaluate(&ts, &r)
            .iter()
            .map(ThresholdJson::from)
            .collect(),
    );
    let mut plan = opts.clone();
    plan.load = None;
    doc.shard = Some(ShardJson {
        index: 1,
        count: 2,
        plan,
        slice: SliceJson {
            clients: 2,
            lanes: 3,
            requests: 500,
            threads: 1,
            rate: Some(5),
            queue_limit: Some(2500),
            uris: 2,
        },
        start_at_unix: Some(1_800_000_000.0),
        started_unix: 1_800_000_000.25,
        late_seconds: 0.25,
        interval_histograms: Vec::new(),
    });
    doc
}

/// Compares `doc` (with a fixed tool version) with `tests/data/<name>`.
fn check(name: &str, mut doc: BenchJson) {
    doc.tool.version = "0.0.0-golden".into();
    let text = json::to_string(&doc).unwrap();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    if std::env::var_os("H2LAB_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert!(text == want, "{name} changed:\n{text}");
    // Reading the document back and writing it again gives the same bytes.
    let back = json::parse(&text).unwrap();
    assert_eq!(json::to_string(&back).unwrap(), want);
}

#[test]
fn full_document_is_unchanged() {
    check("bench-result-full.golden.json", full_doc());
}

#[test]
fn empty_document_is_unchanged() {
    check(
        "bench-result-empty.golden.json",
        json::to_json(&empty_result(), &RunOptions::default()).unwrap(),
    );
}

#[test]
fn merged_document_is_unchanged() {
    let a = full_doc();
    let mut b = json::to_json(&run(), &RunOptions::default()).unwrap();
    b.shard = None;
    let m = json::merge(&a, &b, json::MergeMode::Sequential).unwrap();
    check("bench-result-merged.golden.json", m);
}
