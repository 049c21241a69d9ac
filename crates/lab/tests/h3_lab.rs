//! HTTP/3 in the lab: `compare` with an `h3` arm (and the HTTP/3-vs-HTTP/2 decision), page
//! loads over HTTP/3, and HTTP/3 across a lossy link. All on the built-in server, port 0.

use h2lab_engine::StopFlag;
use h2lab_lab::compare::{output, run, CompareConfig, Preset};
use h2lab_lab::link::LinkProfile;
use h2lab_lab::proto::LabProtocol;

fn tiny_h3() -> CompareConfig {
    let mut cfg = CompareConfig::preset(Preset::Tiny);
    cfg.axes.protocols = vec![LabProtocol::H2, LabProtocol::H3];
    cfg.axes.payloads = vec!["1k".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg
}

#[test]
fn compare_measures_an_h3_arm_and_decides_h3_against_h2() {
    let cfg = tiny_h3();
    let mut env_line = String::new();
    let r = run(
        &cfg,
        &StopFlag::new(),
        &mut |_, _, env| env_line = env.to_owned(),
        &mut |_| {},
    )
    .unwrap();
    assert!(env_line.contains("HTTP/3"), "{env_line}");
    assert_eq!(r.cells.len(), 2);
    let h3 = r
        .cells
        .iter()
        .find(|c| c.key.proto == LabProtocol::H3)
        .expect("an h3 cell");
    assert!(h3.error.is_none(), "{:?}", h3.error);
    assert_eq!(h3.runs.len(), 2);
    for s in &h3.runs {
        assert!(s.completed > 0 && s.failed == 0, "{s:?}");
        assert!(s.server_cpu_us.unwrap() > 0.0);
        assert!(s.client_cpu_us.unwrap() > 0.0);
        // 1 KiB bodies: more than 1 KiB of UDP payload received per request.
        assert!(s.bytes_in_per_req > 1024.0, "{}", s.bytes_in_per_req);
        assert!(s.bytes_out_per_req.unwrap() > 10.0);
    }
    let row = &r.decisions[0];
    assert!(row.h2_vs_h1.is_empty(), "no HTTP/1.1 arm");
    assert_eq!(row.h3_vs_h2.len(), 1);
    let pair = &row.h3_vs_h2[0];
    assert_eq!((pair.h3, pair.h2), (LabProtocol::H3, LabProtocol::H2));
    assert_eq!(pair.decisions.len(), 3, "req/s, p99 and server cost");
    for d in &pair.decisions {
        assert_eq!(d.a.proto, LabProtocol::H3);
        assert_eq!(d.ratio.unwrap().n, 2, "paired by round");
        assert_eq!(
            d.winner.is_some(),
            d.outcome == h2lab_lab::stats::ci::Outcome::Win
        );
    }
    let text = output::render_text(&r);
    assert!(text.contains("HTTP/3 vs HTTP/2, like for like"), "{text}");
    assert!(text.contains("h3 / h2"), "{text}");
    let csv = output::csv(&r);
    assert!(csv.lines().any(|l| l.starts_with("h3,")), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    let j = &json["decisions"][0]["h3_vs_h2"][0];
    assert_eq!(j["h3"], "h3");
    assert_eq!(j["h2"], "h2");
    assert_eq!(j["decisions"].as_array().unwrap().len(), 3);
    assert!(json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["proto"] == "h3"));
    let html = h2lab_lab::html::compare::render(&r);
    assert!(
        html.contains("forest-h3-throughput"),
        "forest plot rows for h3/h2"
    );
    assert!(html.contains("HTTP/3 (QUIC)"));
}
