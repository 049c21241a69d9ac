//! The QUIC figures of HTTP/3 runs as h2load 1.69 and 1.70 print and write them (nghttp2
//! tags v1.69.0 and v1.70.0, `src/h2load.cc`: `main()` prints `UDP datagram: {} sent, {}
//! received` after `traffic:` and, after the req/s row, `output_sd_stat_duration` for
//! "min RTT" and "smoothed RTT" and `output_sd_stat` for "packets sent", "packets recv",
//! "packets lost" and "GRO packets"; `write_result()` adds `udp_datagram` and six entries to
//! `performance`). Values computed by hand from the samples below.

use std::time::Duration;

use h2lab_engine::QuicStats;
use h2lab_report::layout::OutputFormat;
use h2lab_report::model::{empty_result, RequestCounts};
use h2lab_report::{h2load_json, json, text, RunOptions, RunResult};

fn result() -> RunResult {
    let mut r = RunResult {
        elapsed: Duration::from_millis(500),
        requests: RequestCounts {
            total: 3,
            started: 3,
            done: 3,
            succeeded: 3,
            completed: 3,
            ..Default::default()
        },
        client_rps: vec![2.0, 2.0, 2.0],
        ..empty_result()
    };
    r.quic = Some(QuicStats {
        datagrams_sent: 63,
        datagrams_recv: 70,
        // 3 clients.
        min_rtt: vec![0.0001005, 0.0002005, 0.0006005],
        smoothed_rtt: vec![0.0012005, 0.0012005, 0.0012005],
        packets_sent: vec![10, 13, 40],
        packets_recv: vec![20, 20, 30],
        packets_lost: vec![0, 0, 0],
        // Six receive calls of 1 datagram, two of 2.
        gro_counts: vec![0, 6, 2],
    });
    r
}

/// The lines of `out` from the `UDP datagram` line on, without the latency table.
fn quic_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| {
            l.starts_with("UDP datagram")
                || ["min RTT", "smoothed RTT", "packets ", "GRO packets"]
                    .iter()
                    .any(|t| l.starts_with(t))
        })
        .collect()
}

#[test]
fn h2load_170_quic_rows() {
    let out = text::summary_as(&result(), OutputFormat::H2load170, false);
    let lines: Vec<&str> = out.lines().collect();
    // Right after the traffic line, before the table.
    let at = lines
        .iter()
        .position(|l| l.starts_with("traffic:"))
        .unwrap();
    assert_eq!(lines[at + 1], "UDP datagram: 63 sent, 70 received", "{out}");
    assert!(lines[at + 2].starts_with("                 min"), "{out}");
    // And right after the req/s row.
    let rps = lines.iter().position(|l| l.starts_with("req/s")).unwrap();
    assert!(lines[rps + 1].starts_with("min RTT"), "{out}");
    assert_eq!(
        quic_lines(&out),
        [
            "UDP datagram: 63 sent, 70 received",
            "min RTT     :      100us       600us       200us       600us       600us       300us       216us    66.67%",
            "smoothed RTT:     1.20ms      1.20ms      1.20ms      1.20ms      1.20ms      1.20ms         0us   100.00%",
            "packets sent:         10          40          13          40          40       21.00       13.49    66.67%",
            "packets recv:         20          30          20          30          30       23.33        4.71    66.67%",
            "packets lost:          0           0           0           0           0        0.00        0.00   100.00%",
            "GRO packets :          1           2           1           2           2        1.25        0.43    75.00%",
        ],
        "{out}"
    );
}

#[test]
fn h2load_169_quic_rows() {
    let out = text::summary_as(&result(), OutputFormat::H2load169, false);
    assert_eq!(
        quic_lines(&out),
        [
            "UDP datagram: 63 sent, 70 received",
            "min RTT     :      100us       600us       200us      600us      600us      300us       216us    66.67%",
            "smoothed RTT:     1.20ms      1.20ms      1.20ms     1.20ms     1.20ms     1.20ms         0us   100.00%",
            "packets sent:         10          40          13         40         40         21     13.4907    66.67%",
            "packets recv:         20          30          20         30         30    23.3333     4.71405    66.67%",
            "packets lost:          0           0           0          0          0          0           0   100.00%",
            "GRO packets :          1           2           1          2          2       1.25    0.433013    75.00%",
        ],
        "{out}"
    );
}

#[test]
fn h2load_152_prints_the_datagram_line_and_h2lab_summarises() {
    let out = text::summary(&result());
    let q = quic_lines(&out);
    assert_eq!(q, ["UDP datagram: 63 sent, 70 received"], "{out}");
    assert!(
        out.contains(
            "QUIC: min RTT 200us (median of clients), smoothed RTT 1.20ms, packets 63 sent, \
             70 received, 0 lost; 1.25 datagrams per receive call (mean)"
        ),
        "{out}"
    );
    // TCP runs: none of it.
    let mut tcp = result();
    tcp.quic = None;
    for f in [
        OutputFormat::H2load152,
        OutputFormat::H2load169,
        OutputFormat::H2load170,
    ] {
        let out = text::summary_as(&tcp, f, true);
        assert!(
            quic_lines(&out).is_empty() && !out.contains("QUIC"),
            "{out}"
        );
    }
}

#[test]
fn histograms_under_the_quic_rows() {
    let out = text::summary_as(&result(), OutputFormat::H2load170, true);
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("min RTT")).unwrap();
    // Ten bucket lines, durations as bounds.
    assert!(
        lines[at + 1].starts_with("     100us-     150us ["),
        "{out}"
    );
    assert!(lines[at + 11].starts_with("smoothed RTT"), "{out}");
    // All smoothed RTTs equal: no histogram (as h2load).
    assert!(lines[at + 12].starts_with("packets sent"), "{out}");
    let gro = lines.iter().position(|l| l.starts_with("GRO")).unwrap();
    assert_eq!(
        lines[gro + 1],
        "      1.00-      1.10 [////////////////////////////////////////]( 75.00/ 75.00%)"
    );
}

#[test]
fn output_file_has_h2loads_quic_keys_in_order() {
    let doc = serde_json::to_value(h2load_json::document(&result())).unwrap();
    let m = &doc["measurements"];
    assert_eq!(
        m["udp_datagram"],
        serde_json::json!({"sent": 63, "recv": 70})
    );
    let p = m["performance"].as_object().unwrap();
    let keys = [
        "request",
        "connect",
        "ttfb",
        "request_per_second",
        "min_rtt",
        "smoothed_rtt",
        "packets_sent",
        "packets_recv",
        "packets_lost",
        "gro_packets",
    ];
    assert_eq!(p.len(), keys.len(), "{p:?}");
    for k in &keys[4..] {
        let st = p[*k].as_object().unwrap();
        let names = [
            "min",
            "max",
            "median",
            "p95",
            "p99",
            "mean",
            "sd",
            "within_sd",
            "samples",
        ];
        assert_eq!(st.len(), names.len(), "{k}");
        assert!(names.iter().all(|n| st.contains_key(*n)), "{k}");
    }
    // h2load's order (serde writes the fields in declaration order).
    let text = serde_json::to_string(&h2load_json::document(&result())).unwrap();
    let perf = text.find("\"performance\"").unwrap();
    let mut last = perf;
    for k in keys {
        let at = text[last..]
            .find(&format!("\"{k}\":{{"))
            .unwrap_or_else(|| panic!("{k} out of order in {text}"));
        last += at;
    }
    assert_eq!(p["min_rtt"]["median"], 0.0002005);
    assert_eq!(
        p["packets_sent"]["samples"],
        serde_json::json!([10.0, 13.0, 40.0])
    );
    assert_eq!(
        p["gro_packets"]["samples"],
        serde_json::json!([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    );
    // Order in the text: udp_datagram between traffic and performance.
    let text = serde_json::to_string(&h2load_json::document(&result())).unwrap();
    let (t, u, pf) = (
        text.find("\"traffic\"").unwrap(),
        text.find("\"udp_datagram\"").unwrap(),
        text.find("\"performance\"").unwrap(),
    );
    assert!(t < u && u < pf, "{text}");
    // TCP runs: none of it.
    let mut tcp = result();
    tcp.quic = None;
    let text = serde_json::to_string(&h2load_json::document(&tcp)).unwrap();
    assert!(
        !text.contains("udp_datagram") && !text.contains("min_rtt"),
        "{text}"
    );
}

#[test]
fn bench_json_carries_and_round_trips_the_quic_figures() {
    let r = result();
    let doc = json::to_json(&r, &RunOptions::default()).unwrap();
    let v = serde_json::to_value(&doc).unwrap();
    let q = &v["quic"];
    assert_eq!(q["datagrams_sent"], 63);
    assert_eq!(q["datagrams_received"], 70);
    assert_eq!(q["packets_sent"]["median"], 13.0);
    assert_eq!(
        q["packets_sent"]["values"],
        serde_json::json!([10.0, 13.0, 40.0])
    );
    assert_eq!(q["gro_packets"]["mean"], 1.25);
    assert_eq!(q["gro_counts"], serde_json::json!([0, 6, 2]));
    let (back, _) = json::from_json(&doc).unwrap();
    assert_eq!(back.quic, r.quic);
}

#[test]
fn bench_json_with_quic_validates_against_the_schema() {
    let schema: serde_json::Value = serde_json::from_str(json::SCHEMA).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let doc =
        serde_json::to_value(json::to_json(&result(), &RunOptions::default()).unwrap()).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // A stray key in the quic object is drift.
    let mut bad = doc.clone();
    bad["quic"]["rtt"] = 1.into();
    assert!(!v.is_valid(&bad));
}
