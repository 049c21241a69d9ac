//! `h2lab upstream` end to end on a tiny matrix: every arm is measured through the proxy and
//! the links, the decision table and the connection lines are rendered, and the multiplexed
//! arm uses far fewer upstream connections than HTTP/1.0.

mod common;

use std::time::Duration;

use h2lab_engine::StopFlag;
use h2lab_lab::env::Isolation;
use h2lab_lab::upstream::{self, ArmResult, Cell, UpstreamConfig, UpstreamReport};
use h2lab_proxy::UpstreamProtocol;

#[test]
fn tiny_upstream_experiment() {
    let mut cfg = UpstreamConfig::quick();
    cfg.payloads = ["ping", "100k"]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    cfg.concurrency = vec![8];
    cfg.runs = 2;
    cfg.warm_up = Duration::from_millis(100);
    cfg.duration = Duration::from_millis(300);
    cfg.rtt = Duration::from_millis(2);
    let mut lines = Vec::new();
    let r = upstream::run(&cfg, &StopFlag::new(), &mut |l| lines.push(l.to_string())).unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(r.cells.len(), 2);
    for c in &r.cells {
        for a in &c.arms {
            let rps = a.rps.expect("measured");
            assert!(rps.median > 0.0, "{:?} {}", a.arm, c.payload.name);
            assert_eq!(rps.n, 2);
            assert_eq!(a.failed, 0, "{:?}", a.arm);
            // The client workers' own CPU clocks over each run's measured period.
            let cpu = a.client_cpu_us.expect("client CPU per request");
            assert!(cpu.median > 0.0, "{:?}: {cpu:?}", a.arm);
            assert_eq!(a.client_cpu_runs.iter().flatten().count(), 2);
            // Two rounds are too few to judge slow spells.
            assert_eq!(a.spell_runs, 0);
        }
    }
    let conns = |arm| {
        r.connections
            .iter()
            .find(|c| c.0 == arm)
            .and_then(|c| c.1)
            .unwrap()
    };
    // 4 links per arm; h2c-mux: one connection per backend carries everything.
    assert!(conns(UpstreamProtocol::H2cMux) <= 8, "{:?}", r.connections);
    assert!(
        conns(UpstreamProtocol::H10) > conns(UpstreamProtocol::H2cMux) * 10,
        "{:?}",
        r.connections
    );
    let text = upstream::render(&r);
    assert!(text.contains("Decision framework"));
    assert!(text.contains("h2c-mux vs h1"));
    assert!(text.contains(">= 100KB"));
    assert!(text.contains("Upstream connections used"));
    // The lab's statistics: CIs per arm, paired ratios against h1 for the HTTP/2 arms; two
    // runs never decide (fewer than 5 paired runs are undecided).
    for c in &r.cells {
        for a in &c.arms {
            let ci = a.rps_ci.expect("CI");
            assert!(ci.lo <= ci.median && ci.median <= ci.hi);
            assert_eq!(a.rps_runs.iter().flatten().count(), 2);
            match a.arm {
                UpstreamProtocol::H1 => assert!(a.versus.is_none()),
                _ => {
                    let v = a.versus.expect("compared with h1");
                    let ratio = v.throughput.ratio.expect("paired runs");
                    assert_eq!(ratio.n, 2);
                    assert_eq!(v.throughput.word(), "undecided");
                }
            }
        }
    }
    let csv = upstream::csv(&r);
    assert_eq!(csv.lines().count(), 1 + 2 * 4, "{csv}");
    for line in csv.lines().skip(1) {
        // Every HTTP/2 arm's row names its baseline and the outcome of both metrics.
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 26, "{line}");
        if f[4] == "h2c" || f[4] == "h2c-mux" {
            assert_eq!(
                (f[14], f[18], f[22]),
                ("h1", "undecided", "undecided"),
                "{line}"
            );
        }
        // Nothing was left out; busy runs are whatever the machine did.
        assert_eq!(f[24], "0", "{line}");
        assert!(f[25].parse::<usize>().is_ok(), "{line}");
    }
    let json: serde_json::Value = serde_json::from_str(&upstream::json(&r)).unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), 2);
    assert_eq!(json["decision_framework"].as_array().unwrap().len(), 2);
    // Isolated as compare and page: the servers (backends, links, proxy) and the client on
    // disjoint CPUs when there are two or more; the split and the machine's load are printed
    // and recorded.
    common::isolation::assert_split(&r.isolation);
    assert_eq!(r.busy_runs.1, 2 * 2 * 4, "every run probed");
    assert!(
        text.contains(&format!("cpus: {}", r.isolation.note)),
        "{text}"
    );
    assert!(text.contains("machine: "), "{text}");
    assert!(json["isolation"]["server_cpus"].is_array());
    assert!(json["isolation"]["note"].is_string());
    assert_eq!(json["machine"]["runs"], 16);
    assert_eq!(json["cells"][0]["arms"][0]["empty_runs"], 0);
    assert_eq!(json["cells"][0]["arms"][0]["spell_runs"], 0);
    assert_eq!(
        json["cells"][0]["arms"][0]["client_cpu_us_runs"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let html = upstream::html(&r);
    assert!(html.contains("cpus: "));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Decision framework"));
}

/// An arm of a made-up cell: three runs, the second left out (completed nothing twice).
fn arm(arm: UpstreamProtocol, retried: usize, empty: usize, busy: usize) -> ArmResult {
    ArmResult {
        arm,
        rps: None,
        p99_ms: None,
        failed: 0,
        skipped: None,
        rps_runs: vec![Some(1000.0), None, Some(1100.0)],
        p99_runs: vec![Some(2.0), None, Some(2.5)],
        rps_ci: None,
        p99_ci: None,
        versus: None,
        retried_runs: retried,
        empty_runs: empty,
        busy_runs: busy,
        informational: 0,
        path: None,
        client_cpu_us: None,
        client_cpu_runs: vec![None; 3],
        spell_runs: 0,
    }
}

#[test]
fn csv_has_the_retried_empty_and_busy_columns_at_the_end() {
    let r = UpstreamReport {
        config: UpstreamConfig::quick(),
        proxy: "h2lab proxy".into(),
        cells: vec![Cell {
            payload: "ping".parse().unwrap(),
            concurrency: 10,
            arms: vec![
                arm(UpstreamProtocol::H1, 2, 1, 3),
                arm(UpstreamProtocol::H2c, 0, 0, 1),
            ],
        }],
        connections: Vec::new(),
        isolation: Isolation::default(),
        busy_runs: (4, 6),
        remeasured: 0,
        path: h2lab_lab::netpath::ModeChoice::fixed(h2lab_lab::netpath::PathMode::Relay),
        path_sides: None,
    };
    let csv = upstream::csv(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header.len(), 26, "{}", lines[0]);
    // The earlier columns keep their positions; the new ones are appended.
    assert_eq!(
        (header[4], header[14], header[22]),
        ("arm", "baseline", "p99_outcome")
    );
    assert_eq!(&header[23..], &["retried_runs", "empty_runs", "busy_runs"]);
    let row = |i: usize| lines[i].split(',').collect::<Vec<_>>();
    let (h1, h2c) = (row(1), row(2));
    assert_eq!(h1.len(), 26, "{}", lines[1]);
    assert_eq!((h1[4], h1[5]), ("h1", "2"), "{}", lines[1]);
    assert_eq!(&h1[23..], &["2", "1", "3"], "{}", lines[1]);
    assert_eq!(h2c[4], "h2c", "{}", lines[2]);
    assert_eq!(&h2c[23..], &["0", "0", "1"], "{}", lines[2]);
    // The JSON says the same.
    let json: serde_json::Value = serde_json::from_str(&upstream::json(&r)).unwrap();
    let a = &json["cells"][0]["arms"][0];
    assert_eq!(
        (&a["retried_runs"], &a["empty_runs"], &a["busy_runs"]),
        (&2.into(), &1.into(), &3.into())
    );
}
