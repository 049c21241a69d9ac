//! `page` end to end on the built-in server behind emulated links.

use std::time::Duration;

use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::users::{parse_stages, LoadTestConfig};
use h2lab_lab::page::{output, run, PageConfig, SlowConfig};
use h2lab_lab::proto::LabProtocol;

#[test]
fn defaults_use_six_http11_connections_and_one_http2_connection() {
    // The default page (HTML + 300 images) behind the default WAN link; fewer repeats;
    // HTTP/1.1 against HTTP/2 (HTTP/3, also in the defaults: the test after the next).
    let cfg = PageConfig {
        repeat: 2,
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2]),
        ..PageConfig::default()
    };
    assert_eq!(cfg.link, LinkProfile::Wan);
    let r = run(&cfg, &mut |_| {}).unwrap();
    let page = r.page.as_ref().unwrap();
    assert_eq!(page.resources, 300);
    assert_eq!(r.protocols.len(), 2);
    let h1 = &r.protocols[0];
    let h2 = &r.protocols[1];
    assert_eq!((h1.proto, h2.proto), (LabProtocol::H1Tls, LabProtocol::H2));
    for p in [h1, h2] {
        assert!(p.error.is_none(), "{:?}", p.error);
        assert_eq!(p.loads.len(), 2);
        assert!(p.loads.iter().all(|l| l.requests == 301 && l.failed == 0));
    }
    assert!(
        h1.loads.iter().all(|l| l.connections == 6),
        "{:?}",
        h1.loads
    );
    assert!(
        h2.loads.iter().all(|l| l.connections == 1),
        "{:?}",
        h2.loads
    );
    let ratio = r.ratio.as_ref().unwrap();
    // 300 requests over 6 connections need 50 round trips of 40 ms; HTTP/2 a few.
    assert_eq!(
        (ratio.faster, ratio.slower),
        (LabProtocol::H2, LabProtocol::H1Tls)
    );
    assert!(ratio.ratio > 2.0, "{ratio:?}");
    assert!(h1.page_ms.unwrap().median >= 50.0 * 40.0);
    // Header compression is visible: HPACK sends far fewer request header bytes.
    let (b1, b2) = (
        h1.median_load.as_ref().unwrap().bytes,
        h2.median_load.as_ref().unwrap().bytes,
    );
    assert!(b2.request_headers * 4 < b1.request_headers, "{b1:?} {b2:?}");
    assert!(b2.response_headers < b2.response_headers_decoded);
    assert_eq!(b1.response_bodies, b2.response_bodies);
    let text = output::render_text(&r);
    assert!(text.contains("connections opened"), "{text}");
    assert!(
        text.contains("HTTP/2 (TLS) loads the page") && text.contains("faster than HTTP/1.1 (TLS)"),
        "{text}"
    );
}

#[test]
fn slow_endpoint_ratio_is_near_the_seeds_15x() {
    // The seed: 100 requests to a 2 s endpoint, 34.2 s over 6 HTTP/1.1 connections vs 2.27 s
    // over one HTTP/2 connection (15x). Same shape with a 500 ms delay behind the WAN link:
    // 17 rounds vs 1 round plus connection set-up.
    let cfg = PageConfig {
        repeat: 1,
        slow: Some(SlowConfig {
            requests: 100,
            delay: Duration::from_millis(500),
        }),
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    let s = r.slow.as_ref().unwrap();
    let conns: Vec<u32> = s
        .results
        .iter()
        .map(|p| p.median_load.as_ref().unwrap().connections)
        .collect();
    assert_eq!(conns, vec![6, 1]);
    let ratio = s.ratio.as_ref().unwrap();
    assert_eq!(ratio.faster, LabProtocol::H2);
    assert!(
        (10.0..=20.0).contains(&ratio.ratio),
        "ratio {:.1} ({} vs {} ms)",
        ratio.ratio,
        ratio.slower_ms,
        ratio.faster_ms
    );
    assert!(ratio.slower_ms >= 17.0 * 500.0);
    let text = output::render_text(&r);
    assert!(
        text.contains("Seed (Chrome, 6 connections vs HTTP/2)"),
        "{text}"
    );
}

#[test]
fn load_test_records_page_time_and_connections_over_time() {
    let cfg = PageConfig {
        page_query: "n=30&min=1k&max=2k&seed=3".into(),
        link: LinkProfile::Lan,
        repeat: 1,
        load_test: Some(LoadTestConfig {
            stages: parse_stages("1s:3,1s:3,500ms:0").unwrap(),
            think: Duration::from_millis(50),
            sample: Duration::from_millis(250),
            rounds: 2,
        }),
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    let lt = r.load_test.as_ref().unwrap();
    assert_eq!(lt.results.len(), 2);
    // Two rounds, alternated: each protocol has a median page time per round, and two
    // paired rounds are too few to decide.
    for (p, m) in &lt.round_medians_ms {
        assert_eq!(m.len(), 2, "{p}");
        assert!(m.iter().all(Option::is_some), "{p}: {m:?}");
    }
    let v = lt.ratio.as_ref().expect("a verdict line from two rounds");
    assert_eq!(v.round_ratio.unwrap().n, 2);
    assert_eq!(v.outcome, h2lab_lab::stats::ci::Outcome::Undecided);
    assert!(output::render_text(&r).contains("loads the page under load"));
    for (p, t) in &lt.results {
        assert!(t.error.is_none(), "{p}: {:?}", t.error);
        assert!(t.pages.len() >= 3, "{p}: {} pages", t.pages.len());
        assert!(t.samples.len() >= 8, "{p}: {} samples", t.samples.len());
        assert!(t.samples.iter().any(|s| s.users == 3));
        assert!(t.peak_connections >= 1);
        assert!(t.samples.iter().any(|s| s.req_per_sec > 0.0));
    }
    let (_, h1) = &lt.results[0];
    let (_, h2) = &lt.results[1];
    // Three users: up to 18 HTTP/1.1 connections, up to 3 HTTP/2 connections.
    assert!(h2.peak_connections <= 3, "{}", h2.peak_connections);
    assert!(h1.peak_connections <= 18, "{}", h1.peak_connections);
}

#[test]
fn the_default_protocols_are_http11_over_six_connections_http2_and_http3() {
    // A smaller page, once: which protocols run by default and on how many connections.
    let cfg = PageConfig {
        repeat: 1,
        page_query: "n=30&min=1k&max=2k&seed=3".into(),
        ..PageConfig::default()
    };
    assert!(cfg.protocols.is_none());
    let r = run(&cfg, &mut |_| {}).unwrap();
    let protos: Vec<LabProtocol> = r.protocols.iter().map(|p| p.proto).collect();
    assert_eq!(
        protos,
        vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]
    );
    for p in &r.protocols {
        assert!(p.error.is_none(), "{:?}", p.error);
        assert!(
            p.loads.iter().all(|l| l.requests == 31 && l.failed == 0),
            "{:?}",
            p.loads
        );
        let want = if p.proto == LabProtocol::H1Tls { 6 } else { 1 };
        assert!(
            p.loads.iter().all(|l| l.connections == want),
            "{:?}",
            p.loads
        );
    }
    // HTTP/3 against HTTP/2 is stated: by the overall ratio when it is that pair, else apart.
    let pair = [LabProtocol::H2, LabProtocol::H3];
    let overall = r.ratio.as_ref().unwrap();
    let h3_h2 = r.h3_vs_h2.as_ref().unwrap_or(overall);
    assert!(
        pair.contains(&h3_h2.faster) && pair.contains(&h3_h2.slower),
        "{:?} {:?}",
        r.ratio,
        r.h3_vs_h2
    );
    let text = output::render_text(&r);
    assert!(
        text.contains("HTTP/3 (QUIC) loads the page") || text.contains("faster than HTTP/3 (QUIC)"),
        "{text}"
    );
    let json = serde_json::to_value(&r).unwrap();
    let model = &json["link_models"][0];
    assert_eq!(model["profile"], "wan", "{model}");
    let caveat = r
        .notes
        .iter()
        .any(|n| n.contains("HTTP/3 across an emulated link"));
    if r.path.mode == h2lab_lab::netpath::PathMode::Packet {
        // The default path: kernel TCP across the packet link, no model, no caveat.
        assert!(r.link.contains("packet link (kernel TCP)"), "{}", r.link);
        assert_eq!(model["path"], "packet", "{model}");
        assert!(model["tcp_model"].is_null(), "{model}");
        assert!(!caveat, "{:?}", r.notes);
        return;
    }
    // Over the relay (packet mode unavailable here), the report says which TCP model the
    // relayed TCP had.
    assert!(r.link.contains("TCP model cubic"), "{}", r.link);
    assert_eq!(model["tcp_model"]["model"], "cubic", "{model}");
    assert_eq!(model["tcp_model"]["beta"], 0.7, "{model}");
    assert_eq!(model["tcp_model"]["initial_window_segments"], 10, "{model}");
    assert!(caveat);
}

#[test]
fn external_page_url_is_scanned_for_resources() {
    let server = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let a = server.addr().unwrap();
    let cfg = PageConfig {
        url: Some(format!("http://127.0.0.1:{}/page?n=12&seed=9", a.port())),
        link: LinkProfile::Loopback,
        repeat: 1,
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.page.as_ref().unwrap().resources, 12);
    let protos: Vec<LabProtocol> = r.protocols.iter().map(|p| p.proto).collect();
    assert_eq!(protos, vec![LabProtocol::H1, LabProtocol::H2c]);
    assert!(r.protocols.iter().all(|p| p.loads[0].requests == 13));
}
