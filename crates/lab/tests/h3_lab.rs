//! HTTP/3 in the lab: `compare` with an `h3` arm (and the HTTP/3-vs-HTTP/2 decision), page
//! loads over HTTP/3, and HTTP/3 across a lossy link. All on the built-in server, port 0.

use h2lab_engine::StopFlag;
use h2lab_lab::compare::decision::{H2_VS_H1, H3_VS_H2};
use h2lab_lab::compare::{output, run, CompareConfig, Preset};
use h2lab_lab::link::LinkProfile;
use h2lab_lab::proto::LabProtocol;

fn tiny_h3() -> CompareConfig {
    let mut cfg = CompareConfig::preset(Preset::Tiny);
    cfg.axes.protocols = vec![LabProtocol::H2, LabProtocol::H3];
    cfg.axes.payloads = vec!["1k".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    // Ten QUIC handshakes in a debug build on a loaded machine: a generous warm-up, so that
    // runs do not end before their connections are up.
    cfg.timing.warm_up = std::time::Duration::from_millis(600);
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
    assert_eq!(row.family(H2_VS_H1).count(), 0, "no HTTP/1.1 arm");
    assert_eq!(row.family(H3_VS_H2).count(), 1);
    let pair = row.family(H3_VS_H2).next().unwrap();
    assert_eq!(
        (pair.a.proto, pair.b.proto),
        (LabProtocol::H3, LabProtocol::H2)
    );
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
    assert!(text.contains("h3/h2"), "{text}");
    let csv = output::csv(&r);
    assert!(csv.lines().any(|l| l.starts_with("h3,")), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    let j = &json["decisions"][0]["comparisons"][0];
    assert_eq!(j["family"], "HTTP/3 vs HTTP/2");
    assert_eq!(j["a"]["proto"], "h3");
    assert_eq!(j["b"]["proto"], "h2");
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

#[test]
fn page_loads_every_object_over_http3_on_one_connection() {
    use h2lab_lab::page::{output, run, PageConfig};
    let cfg = PageConfig {
        page_query: "n=40&min=1k&max=8k&seed=1".into(),
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]),
        link: LinkProfile::Loopback,
        repeat: 2,
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    assert!(r.environment.contains("HTTP/3"), "{}", r.environment);
    assert_eq!(r.page.as_ref().unwrap().resources, 40);
    let by = |p: LabProtocol| r.protocols.iter().find(|x| x.proto == p).unwrap();
    let (h1, h2, h3) = (
        by(LabProtocol::H1Tls),
        by(LabProtocol::H2),
        by(LabProtocol::H3),
    );
    for p in [h1, h2, h3] {
        assert!(p.error.is_none(), "{:?}", p.error);
        assert_eq!(p.loads.len(), 2);
        assert!(p.loads.iter().all(|l| l.requests == 41 && l.failed == 0));
    }
    assert!(
        h3.loads.iter().all(|l| l.connections == 1),
        "{:?}",
        h3.loads
    );
    assert_eq!((h3.connections_limit, h3.streams), (1, 100));
    let (b2, b3) = (
        h2.median_load.as_ref().unwrap().bytes,
        h3.median_load.as_ref().unwrap().bytes,
    );
    // The same bodies, byte for byte; QPACK-compressed request heads, far smaller than
    // HTTP/1.1's text.
    assert_eq!(b3.response_bodies, b2.response_bodies);
    let b1 = h1.median_load.as_ref().unwrap().bytes;
    // QPACK with the static table and literals only (the client's request template does not
    // use the dynamic table): smaller than HTTP/1.1's text, but not by HPACK's margin.
    eprintln!(
        "request header bytes: h1 {} h2 {} h3 {}",
        b1.request_headers, b2.request_headers, b3.request_headers
    );
    assert!(b3.request_headers > 0 && b3.request_headers < b1.request_headers);
    let l3 = h3.median_load.as_ref().unwrap();
    assert!(l3.timeline.iter().all(|t| t.status == 200 && t.conn == 0));
    let text = output::render_text(&r);
    assert!(text.contains("HTTP/3 (QUIC)"), "{text}");
    let html = h2lab_lab::html::page::render(&r);
    assert!(html.contains("waterfall-h3"));
}

#[test]
fn the_loss_experiment_loads_over_a_lossy_link_and_the_link_counts_the_loss() {
    use h2lab_lab::page::{output, run, PageConfig};
    // 100 images of 1–8 KiB (~450 KiB, some 400 datagrams down) through the WAN link with
    // 3% loss: HTTP/3's lost datagrams are dropped by the link and resent by QUIC.
    let cfg = PageConfig {
        page_query: "n=100&min=1k&max=8k&seed=1".into(),
        protocols: Some(vec![LabProtocol::H2, LabProtocol::H3]),
        loss_levels: vec![LinkProfile::Lossy3],
        repeat: 1,
        // The relay's counters (TCP chunks, UDP datagrams); the packet link's: packet_lab.rs.
        mode: h2lab_lab::netpath::PathMode::Relay,
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.loss.len(), 1);
    let level = &r.loss[0];
    assert_eq!(level.profile, LinkProfile::Lossy3);
    assert!((level.loss_pct - 3.0).abs() < 1e-9);
    for p in &level.protocols {
        assert!(p.error.is_none(), "{:?} {:?}", p.proto, p.error);
        assert_eq!(p.loads.len(), 1);
        assert_eq!((p.loads[0].requests, p.loads[0].failed), (101, 0), "{p:?}");
    }
    let c = level.link_counts;
    assert!(c.udp_datagrams > 100, "{c:?}");
    assert!(
        c.udp_datagrams_lost > 0,
        "the link dropped datagrams: {c:?}"
    );
    assert!(c.tcp_chunks > 0, "{c:?}");
    // One round cannot decide: undecided, no winner.
    assert_eq!(level.decisions.len(), 1);
    let d = &level.decisions[0];
    assert_eq!((d.a, d.b), (LabProtocol::H3, LabProtocol::H2));
    assert_eq!(d.outcome, h2lab_lab::stats::ci::Outcome::Undecided);
    assert!(d.winner.is_none());
    assert_eq!(d.ratio.unwrap().n, 1);
    // The first level is also the main table.
    assert_eq!(r.protocols.len(), 2);
    let text = output::render_text(&r);
    assert!(text.contains("Page load under loss"), "{text}");
    assert!(text.contains("undecided h3/h2 ("), "{text}");
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    assert_eq!(json["loss"][0]["profile"], "lossy3");
    assert!(
        json["loss"][0]["link_counts"]["udp_datagrams_lost"]
            .as_u64()
            .unwrap()
            > 0
    );
    let html = h2lab_lab::html::page::render(&r);
    assert!(html.contains("page-time-by-loss"));
}
