//! `compare` end to end on the built-in server, with a tiny matrix.

mod common;

use std::time::Duration;

use h2lab_engine::StopFlag;
use h2lab_lab::compare::axes::HeaderSet;
use h2lab_lab::compare::decision::{CONTROL, H2_VS_H1};
use h2lab_lab::compare::matrix::Section;
use h2lab_lab::compare::{output, run, CompareConfig, Preset};
use h2lab_lab::link::LinkProfile;
use h2lab_lab::proto::LabProtocol;

fn tiny() -> CompareConfig {
    CompareConfig::preset(Preset::Tiny)
}

#[test]
fn tiny_matrix_measures_every_cell_and_decides() {
    let cfg = tiny();
    let mut cells_seen = 0;
    let r = run(
        &cfg,
        &StopFlag::new(),
        &mut |plan, eta, env| {
            assert_eq!(plan.cells.len(), 4);
            assert!(eta < Duration::from_secs(10));
            assert!(env.contains("built-in"));
        },
        &mut |_| cells_seen += 1,
    )
    .unwrap();
    assert_eq!(cells_seen, 4);
    assert_eq!(r.cells.len(), 4);
    for c in &r.cells {
        assert!(c.error.is_none(), "{:?}", c.error);
        assert_eq!(c.runs.len(), 2);
        let rps = c.rps.unwrap();
        assert!(rps.median > 0.0 && rps.min <= rps.median && rps.median <= rps.max);
        assert!(c.p99_ms.unwrap().median > 0.0);
        assert_eq!(c.percentiles.len(), 9);
        assert!(c.percentiles.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!(c.runs.iter().all(|s| s.failed == 0 && s.completed > 0));
    }
    assert_eq!(r.decisions.len(), 2);
    assert!(r.decisions.iter().all(|d| d.section == Section::Base));
    let text = output::render_text(&r);
    assert!(text.contains("Decision table"), "{text}");
    assert!(text.contains("By payload (base conditions)"), "{text}");
    let csv = output::csv(&r);
    assert_eq!(csv.lines().count(), 5);
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), 4);
    assert_eq!(json["decisions"][0]["condition"]["link"], "loopback");
}

#[test]
fn protocols_behave_as_labelled() {
    // HTTP/1.0 style opens a connection per request; h2 runs over TLS; 4 KiB headers are
    // accepted; multiplexed cells use fewer connections; the WAN link slows requests down.
    let mut cfg = tiny();
    cfg.axes.protocols = vec![LabProtocol::H1Close, LabProtocol::H2, LabProtocol::H2c];
    cfg.axes.payloads = vec!["1k".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg.axes.headers = vec![HeaderSet::None, HeaderSet::Large(4)];
    cfg.axes.streams = vec![1, 5];
    cfg.axes.links = vec![LinkProfile::Loopback, LinkProfile::Wan];
    cfg.timing.runs = 1;
    cfg.timing.duration = Duration::from_millis(300);
    cfg.timing.warm_up = Duration::from_millis(150);
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let find = |proto: LabProtocol, f: &dyn Fn(&h2lab_lab::compare::matrix::Condition) -> bool| {
        r.cells
            .iter()
            .find(|c| c.key.proto == proto && f(&c.key.cond))
            .unwrap()
    };
    let base = |c: &h2lab_lab::compare::matrix::Condition| {
        c.headers == HeaderSet::None && c.streams == 1 && c.link == LinkProfile::Loopback
    };
    let close = find(LabProtocol::H1Close, &base);
    let s = &close.runs[0];
    assert!(
        s.reconnects + 10 >= s.completed,
        "no keep-alive: {} reconnects for {} responses",
        s.reconnects,
        s.completed
    );
    let h2 = find(LabProtocol::H2, &base);
    assert_eq!(h2.runs[0].reconnects, 0);
    let big = find(LabProtocol::H2c, &|c| c.headers == HeaderSet::Large(4));
    assert!(big.runs[0].completed > 0 && big.runs[0].failed == 0);
    let mux = find(LabProtocol::H2c, &|c| c.streams == 5);
    assert_eq!(mux.connections, 2);
    let wan = find(LabProtocol::H2c, &|c| c.link == LinkProfile::Wan);
    // 40 ms RTT: no request completes faster than a round trip.
    assert!(wan.p50_ms.unwrap().median >= 38.0, "{:?}", wan.p50_ms);
    let sections: Vec<Section> = r.decisions.iter().map(|d| d.section).collect();
    for s in [
        Section::Base,
        Section::Headers,
        Section::Streams,
        Section::Link,
    ] {
        assert!(sections.contains(&s), "{sections:?}");
    }
}

#[test]
fn unreachable_target_reports_failed_cells() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let mut cfg = tiny();
    cfg.targets =
        Some(h2lab_lab::env::Targets::from_url(&format!("http://127.0.0.1:{port}/")).unwrap());
    cfg.axes.protocols = vec![LabProtocol::H1, LabProtocol::H2c, LabProtocol::H2];
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert!(r.cells.iter().all(|c| c.rps.is_none() && c.error.is_some()));
    assert!(r.notes.iter().any(|n| n.contains("HTTP/2 (TLS) skipped")));
    assert!(r.decisions.is_empty());
}

#[test]
fn external_targets_by_url() {
    let dir = tempfile::tempdir().unwrap();
    let server = h2lab_server::spawn(h2lab_server::ServerConfig {
        tls_listen: Some("127.0.0.1:0".parse().unwrap()),
        cert_dir: Some(dir.path().to_path_buf()),
        ..h2lab_server::ServerConfig::local()
    })
    .unwrap();
    for (url, want) in [
        (
            format!("http://127.0.0.1:{}/", server.addr().unwrap().port()),
            vec![LabProtocol::H1, LabProtocol::H2c],
        ),
        (
            format!("https://127.0.0.1:{}/", server.tls_addr().unwrap().port()),
            vec![LabProtocol::H1Tls, LabProtocol::H2],
        ),
    ] {
        let mut cfg = tiny();
        cfg.targets = Some(h2lab_lab::env::Targets::from_url(&url).unwrap());
        cfg.axes.protocols = want.clone();
        cfg.axes.payloads = vec!["ping".parse().unwrap()];
        let r = run(
            &cfg,
            &StopFlag::new(),
            &mut |_, _, env| {
                assert!(env.starts_with("external target"), "{env}");
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.protocols(), want);
        assert!(
            r.cells.iter().all(|c| c.rps.is_some() && c.error.is_none()),
            "{url}: {:?}",
            r.notes
        );
    }
}

#[test]
fn a_a_control_is_two_arms_and_never_a_winner() {
    // `--protocols h2c,h2c`: the same protocol measured as two arms, in the same rounds.
    let mut cfg = tiny();
    cfg.axes.protocols = vec![LabProtocol::H2c, LabProtocol::H2c];
    cfg.axes.payloads = vec!["ping".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg.timing.runs = 3;
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert_eq!(r.cells.len(), 2, "two arms, two cells");
    let arms: Vec<u32> = r.cells.iter().map(|c| c.key.arm).collect();
    assert_eq!(arms, vec![0, 1]);
    for c in &r.cells {
        assert!(c.error.is_none(), "{:?}", c.error);
        assert_eq!(c.runs.len(), 3);
        let rounds: Vec<u32> = c.runs.iter().map(|s| s.round).collect();
        assert_eq!(rounds, vec![0, 1, 2]);
    }
    assert_eq!(r.decisions.len(), 1);
    let row = &r.decisions[0];
    assert_eq!(row.family(CONTROL).count(), 1);
    for d in row.all() {
        assert!(d.control, "{d:?}");
        assert!(d.winner.is_none(), "an A/A control names no winner: {d:?}");
        assert_eq!(d.ratio.unwrap().n, 3, "paired by round");
    }
    assert_eq!(row.family(H2_VS_H1).count(), 0);
    let text = output::render_text(&r);
    assert!(text.contains("A/A controls"), "{text}");
    assert!(text.contains("h2c#2"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    let c = &json["decisions"][0]["comparisons"][0];
    assert_eq!(c["family"], "A/A control");
    assert_eq!(c["control"], true);
    let c = &c["decisions"][0];
    assert_eq!(c["winner"], serde_json::Value::Null);
    assert_ne!(c["outcome"], "win", "an A/A control never wins");
    assert!(["slight", "parity", "undecided"].contains(&c["outcome"].as_str().unwrap()));
    assert!(c["ratio"]["lo"].as_f64().unwrap() <= c["ratio"]["hi"].as_f64().unwrap());
    assert_eq!(json["cells"][1]["arm"], 1);
}

#[test]
fn cells_carry_cost_and_like_for_like_pairs_are_decided() {
    let mut cfg = tiny();
    cfg.axes.protocols = vec![
        LabProtocol::H1,
        LabProtocol::H1Tls,
        LabProtocol::H2,
        LabProtocol::H2c,
    ];
    cfg.axes.payloads = vec!["1k".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    for c in &r.cells {
        let s = &c.runs[0];
        // The built-in server's threads used some CPU for every request, and so did the
        // client; 1 KiB bodies mean more than 1 KiB received per request.
        assert!(s.server_cpu_us.unwrap() > 0.0, "{:?}", c.key);
        assert!(s.client_cpu_us.unwrap() > 0.0, "{:?}", c.key);
        assert!(s.bytes_in_per_req > 1024.0, "{}", s.bytes_in_per_req);
        // A request is at least its request line / HEADERS frame, far less than 1 KiB.
        let out = s.bytes_out_per_req.unwrap();
        assert!(out > 10.0 && out < 1024.0, "{out}");
        assert!(s.load.is_some());
        let e = c.server_cpu_us.unwrap();
        assert!(e.lo <= e.median && e.median <= e.hi);
        assert!(c.rps_ci.is_some() && c.p99_ci.is_some());
    }
    let row = &r.decisions[0];
    let pairs: Vec<(LabProtocol, LabProtocol)> = row
        .family(H2_VS_H1)
        .map(|p| (p.a.proto, p.b.proto))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (LabProtocol::H2, LabProtocol::H1Tls),
            (LabProtocol::H2c, LabProtocol::H1)
        ]
    );
    assert_eq!(row.verdicts.len(), 3, "throughput, p99 and server cost");
    for d in row.all() {
        assert!(!d.control);
        let ratio = d.ratio.unwrap();
        assert!(ratio.lo <= ratio.median && ratio.median <= ratio.hi);
        // A winner is named exactly when the outcome is a win.
        assert_eq!(
            d.winner.is_some(),
            d.outcome == h2lab_lab::stats::ci::Outcome::Win
        );
    }
    common::isolation::assert_split(&r.isolation);
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    assert!(json["isolation"]["server_cpus"].is_array());
    assert_eq!(json["cells"][0]["link"], "loopback");
    assert!(
        json["cells"][0]["server_cpu_us"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let html = h2lab_lab::html::compare::render(&r);
    assert!(html.contains("forest-throughput") && html.contains("forest-server-cost"));
}

#[test]
fn until_decided_adds_paired_rounds_to_undecided_conditions() {
    // Two rounds can never decide (fewer than MIN_ROUNDS): --until-decided must add rounds,
    // to every arm of the condition alike, so that they stay paired.
    let mut cfg = tiny();
    cfg.axes.payloads = vec!["ping".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg.until_decided = Some(Duration::from_secs(2));
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert!(r.extra_rounds >= 1, "{}", r.extra_rounds);
    let n = r.cells[0].runs.len();
    assert_eq!(n, 2 + r.extra_rounds as usize);
    for c in &r.cells {
        let mut rounds: Vec<u32> = c.runs.iter().map(|s| s.round).collect();
        rounds.sort_unstable();
        assert_eq!(rounds, (0..n as u32).collect::<Vec<_>>());
    }
    // Prose wraps at 120 columns: compare the words.
    let text = output::render_text(&r);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("rounds on undecided conditions"), "{text}");
}

#[test]
fn the_budget_adds_paired_rounds_until_every_condition_can_decide() {
    // Two first rounds can never decide (fewer than MIN_ROUNDS: an infinitely wide interval),
    // so the budget adds rounds to every condition, all its arms alike; with a target width
    // no interval misses, each condition stops as soon as it has enough paired rounds.
    let mut cfg = tiny();
    cfg.budget = Some(Duration::from_secs(120));
    cfg.target_width = 1e9;
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    let min = h2lab_lab::stats::ci::MIN_ROUNDS as u32;
    let conditions = r.plan.conditions.len() as u32;
    assert!(
        r.sequential_rounds >= conditions * (min - 2),
        "{}",
        r.sequential_rounds
    );
    for pc in &r.plan.conditions {
        let rounds: Vec<Vec<u32>> = pc
            .cells
            .iter()
            .map(|&(_, i)| {
                let mut v: Vec<u32> = r.cells[i].runs.iter().map(|s| s.round).collect();
                v.sort_unstable();
                v
            })
            .collect();
        let n = rounds[0].len() as u32;
        assert!(n >= min, "{n}");
        for v in &rounds {
            assert_eq!(v, &(0..n).collect::<Vec<_>>(), "paired rounds");
        }
    }
    assert!(r.elapsed_secs < 120.0);
    let text = output::render_text(&r);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("budget 120 s"), "{text}");
}

#[test]
fn arms_keep_their_connections_between_rounds_and_say_where_the_time_went() {
    // Standing connections (the default): each arm connects once; its later runs reuse the
    // connections (no reconnect over HTTP/1.1 or h2c, every run completes requests).
    let mut cfg = tiny();
    cfg.timing.runs = 4;
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert!(!r.fresh_connections);
    assert_eq!(r.wall.opened, 4, "one opening per cell: {:?}", r.wall);
    assert_eq!(r.wall.runs, 16 + r.wall.retries, "{:?}", r.wall);
    for c in &r.cells {
        assert!(c.error.is_none(), "{:?}", c.error);
        assert_eq!(c.runs.len(), 4);
        for s in &c.runs {
            assert!(s.completed > 0 && s.failed == 0, "{s:?}");
            assert_eq!(s.reconnects, 0, "{s:?}");
            assert!(s.server_cpu_us.is_some_and(|v| v > 0.0), "{s:?}");
            assert!(s.client_cpu_us.is_some_and(|v| v > 0.0), "{s:?}");
        }
    }
    let w = &r.wall;
    assert!(w.measured_secs > 0.0 && w.warm_up_secs > 0.0, "{w:?}");
    let phases: Vec<&str> = w.phases.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(phases, vec!["start", "first rounds", "decisions"], "{w:?}");
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    assert_eq!(json["wall"]["opened"], 4);

    // Fresh connections per run (the old way) measure the same cells and open no arm.
    cfg.fresh_connections = true;
    cfg.timing.runs = 2;
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert!(r.fresh_connections);
    assert_eq!(r.wall.opened, 0);
    assert!(r
        .cells
        .iter()
        .all(|c| c.error.is_none() && c.runs.iter().all(|s| s.completed > 0)));
}

#[test]
fn results_record_each_links_shape_and_tcp_model() {
    // One payload over loopback (no relay, no model) and the LAN (relayed, CUBIC's model),
    // in relay mode.
    let mut cfg = tiny();
    cfg.axes.payloads = vec!["ping".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg.axes.links = vec![LinkProfile::Loopback, LinkProfile::Lan];
    // The relay's model of TCP (the packet link's TCP is the kernel's: tests/packet_lab.rs).
    cfg.mode = h2lab_lab::netpath::PathMode::Relay;
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    let json: serde_json::Value = serde_json::from_str(&output::json(&r)).unwrap();
    let models = json["link_models"].as_array().unwrap();
    assert_eq!(models.len(), 2, "{models:?}");
    assert_eq!(models[0]["profile"], "loopback");
    assert_eq!(models[0]["relayed"], false);
    assert!(models[0]["tcp_model"].is_null());
    assert_eq!(models[1]["profile"], "lan");
    assert_eq!(models[1]["rtt_ms"], 1.0);
    assert_eq!(models[1]["tcp_model"]["model"], "cubic");
    assert_eq!(models[1]["tcp_model"]["beta"], 0.7);
    assert_eq!(models[1]["tcp_model"]["initial_window_segments"], 10);
    // The links' descriptions (terminal, report conditions) name the model too.
    assert!(
        r.links[1].ends_with("TCP model cubic (beta 0.7, IW 10 segments)"),
        "{:?}",
        r.links
    );
    assert!(!r.links[0].contains("TCP model"), "{:?}", r.links);
}

#[test]
fn bytes_per_request_on_a_lossy_link_are_one_response() {
    // 10 KiB responses over the emulated lossy link (1% loss; in process), c = 10, one
    // stream per connection: bytes received per request are one response (body, head and
    // framing), not the window's bytes over its completions (which also counted the
    // responses in flight at both edges: 16.6 KB per request for a 10.4 KB response).
    let mut cfg = tiny();
    cfg.axes.payloads = vec!["10k".parse().unwrap()];
    cfg.axes.sweep_payloads = cfg.axes.payloads.clone();
    cfg.axes.links = vec![LinkProfile::Lossy];
    let body = 10.0 * 1024.0;
    let r = run(&cfg, &StopFlag::new(), &mut |_, _, _| {}, &mut |_| {}).unwrap();
    assert_eq!(r.cells.len(), 2);
    for c in &r.cells {
        let runs: Vec<_> = c.runs.iter().filter(|s| s.completed > 0).collect();
        assert!(!runs.is_empty(), "{:?} {:?}", c.key, c.error);
        for s in runs {
            // A response head (HTTP/1.1 status line and fields, or HTTP/2 HEADERS and DATA
            // frame headers) is a few hundred bytes at most.
            let b = s.bytes_in_per_req;
            assert!(b >= body && b <= body + 400.0, "{:?}: {b}", c.key.proto);
            // A request (its line and fields, or its HEADERS frame) for every one started.
            let out = s.bytes_out_per_req.unwrap();
            assert!(out > 10.0 && out < 400.0, "{:?}: {out}", c.key.proto);
        }
    }
}
