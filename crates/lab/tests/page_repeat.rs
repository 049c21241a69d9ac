//! `page --repeat-view` on the built-in server (loopback link, a small page): every round
//! is a first view and a returning view per protocol; the returning view's connections are
//! new and resume the first view's TLS sessions (HTTP/1.1 and HTTP/2 over TLS: accepted;
//! HTTP/3: offered), it re-fetches every object (the built-in server's objects are
//! `no-store`), and the report pairs the two views and states their round-trip floors.

use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::{output, run, PageConfig};
use h2lab_lab::proto::LabProtocol;

/// `page --repeat-view` (with `--0rtt` when `zero_rtt`) on the built-in server's small page
/// (8 images, CSS and JS), two rounds, HTTP/1.1 over TLS, HTTP/2 and HTTP/3, on loopback.
fn small_page_repeat_view(zero_rtt: bool) -> PageConfig {
    PageConfig {
        repeat: 2,
        link: LinkProfile::Loopback,
        page_query: "n=8&min=1k&max=2k&seed=3&css=1&js=1".into(),
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]),
        repeat_view: true,
        zero_rtt,
        ..PageConfig::default()
    }
}

#[test]
fn the_repeat_view_resumes_tls_on_new_connections_and_refetches_no_store_objects() {
    let cfg = small_page_repeat_view(false);
    let r = run(&cfg, &mut |_| {}).unwrap();
    let v = r.repeat_view.as_ref().expect("a repeat-view report");
    assert_eq!(v.protocols.len(), 3);
    for p in &v.protocols {
        let first = r.protocols.iter().find(|f| f.proto == p.proto).unwrap();
        assert_eq!(p.repeat.loads.len(), 2, "{:?}", p.repeat.error);
        // Everything fetched again: the same requests as the first view.
        for (a, b) in first.loads.iter().zip(&p.repeat.loads) {
            assert_eq!((a.requests, a.failed), (b.requests, 0), "{:?}", p.proto);
            assert_eq!(a.round, b.round);
        }
        // The store starts empty each round: the first view's first connection is a full
        // handshake; HTTP/1.1's later connections (opened once the HTML is in) already
        // resume it, as a browser's do.
        let first_conns: u64 = first.loads.iter().map(|l| u64::from(l.connections)).sum();
        if p.proto.multiplexes() {
            assert_eq!(p.first_offered, 0, "{:?}", p.proto);
        } else {
            assert!(p.first_offered < first_conns, "{:?}", p.proto);
        }
        let conns = p.repeat_connections;
        assert!(
            conns >= 2,
            "{:?}: new connections each repeat view",
            p.proto
        );
        if p.proto.is_h3() {
            assert_eq!(p.repeat_offered, conns, "{:?}", p.proto);
        } else {
            assert_eq!(p.repeat_resumed, conns, "{:?}", p.proto);
        }
        let (f, z) = (p.repeat_floor.unwrap(), p.zero_rtt_floor.unwrap());
        assert_eq!(f.first_byte_rtts, if p.proto.is_h3() { 2 } else { 3 });
        assert_eq!(z.first_byte_rtts, f.first_byte_rtts - 1);
        assert!(p.verdict.is_some());
    }
    let text = output::render_text(&r);
    assert!(text.contains("Repeat view:"), "{text}");
    assert!(text.contains("cache-control: no-store"), "{text}");
    let json = output::json(&r);
    assert!(json.contains("\"repeat_view\""));
}

/// With `--browser`, Chromium makes the returning visit too: both views in one process, the
/// repeat view over new connections. Needs Chromium (skipped with a recorded line when
/// missing, a failure when `CI=true`).
#[test]
fn the_browser_arms_repeat_view_runs_over_new_connections() {
    use h2lab_lab::page::browser::{find_browser, BrowserConfig};
    if !h2lab_testkit::anchors_available(&["chromium"]) {
        return;
    }
    let cfg = PageConfig {
        repeat: 1,
        link: LinkProfile::Loopback,
        page_query: "n=10&min=1k&max=2k&seed=3".into(),
        protocols: Some(vec![LabProtocol::H2]),
        repeat_view: true,
        browser: Some(BrowserConfig {
            binary: find_browser("chromium").unwrap(),
            only: true,
        }),
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    let v = r.repeat_view.as_ref().expect("a repeat-view report");
    assert!(v.protocols.is_empty(), "--browser-only: no simulated views");
    assert_eq!(v.browser.len(), 1);
    let b = &v.browser[0];
    assert_eq!(b.proto, LabProtocol::H2);
    assert_eq!((b.repeats, b.new_connections), (1, 1), "{b:?}");
    assert!(b.first_ms[0].is_some() && b.repeat_ms[0].is_some(), "{b:?}");
    assert!(output::render_text(&r).contains("chromium HTTP/2 (TLS)"));
}

/// `--repeat-view --0rtt` on the built-in server (which then accepts early data): every
/// protocol's repeat view sends its first requests in TLS 1.3 early data or QUIC 0-RTT on
/// every connection, the server accepts all of it, and the first view sends none.
#[test]
fn with_0rtt_every_repeat_view_connection_sends_early_data_and_it_is_accepted() {
    let cfg = small_page_repeat_view(true);
    let r = run(&cfg, &mut |_| {}).unwrap();
    let v = r.repeat_view.as_ref().expect("a repeat-view report");
    assert!(v.zero_rtt);
    assert_eq!(v.protocols.len(), 3);
    for p in &v.protocols {
        assert_eq!(p.repeat.loads.len(), 2, "{:?}", p.repeat.error);
        assert!(
            p.repeat.loads.iter().all(|l| l.failed == 0),
            "{:?}",
            p.proto
        );
        let conns = p.repeat_connections;
        assert!(conns >= 2, "{:?}", p.proto);
        assert_eq!(
            p.repeat_early_offered, conns,
            "{:?}: 0-RTT on each",
            p.proto
        );
        assert_eq!(
            p.repeat_early_accepted, conns,
            "{:?}: all accepted",
            p.proto
        );
        assert_eq!(p.repeat_resumed, conns, "{:?}", p.proto);
        let first = r.protocols.iter().find(|f| f.proto == p.proto).unwrap();
        let early_in_first = first
            .median_load
            .as_ref()
            .unwrap()
            .conns
            .iter()
            .filter(|c| c.early_data.is_some())
            .count();
        assert_eq!(
            early_in_first, 0,
            "{:?}: the first view sends none",
            p.proto
        );
        assert!(p.repeat_html_first_byte_ms.is_some());
    }
    let text = output::render_text(&r);
    assert!(text.contains("0-RTT: accepted / sent"), "{text}");
    assert!(text.contains("--0rtt"), "{text}");
    let json = output::json(&r);
    assert!(json.contains("\"zero_rtt\": true") || json.contains("\"zero_rtt\":true"));
    assert!(
        json.contains("\"early_data\""),
        "connection timelines say so"
    );
}

/// `--repeat-view --0rtt` against a server that does not accept early data (an external
/// `serve` without `--0rtt`): its tickets allow none, so nothing is sent early, the repeat
/// views resume and every page loads.
#[test]
fn with_0rtt_against_a_server_that_refuses_it_the_page_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let s = h2lab_server::spawn(h2lab_server::ServerConfig {
        tls_listen: Some("127.0.0.1:0".parse().unwrap()),
        cert_dir: Some(dir.path().to_path_buf()),
        h3: true,
        ..h2lab_server::ServerConfig::local()
    })
    .unwrap();
    let cfg = PageConfig {
        url: Some(format!(
            "https://127.0.0.1:{}/page?n=8&min=1k&max=2k&seed=3",
            s.tls_addr().unwrap().port()
        )),
        repeat: 2,
        link: LinkProfile::Loopback,
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]),
        repeat_view: true,
        zero_rtt: true,
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    let v = r.repeat_view.as_ref().expect("a repeat-view report");
    assert_eq!(v.protocols.len(), 3);
    for p in &v.protocols {
        assert_eq!(p.repeat.loads.len(), 2, "{:?}", p.repeat.error);
        assert!(
            p.repeat.loads.iter().all(|l| l.failed == 0),
            "{:?}",
            p.proto
        );
        assert_eq!(p.repeat_early_offered, 0, "{:?}", p.proto);
        if !p.proto.is_h3() {
            assert_eq!(p.repeat_resumed, p.repeat_connections, "{:?}", p.proto);
        }
    }
    assert_eq!(s.early_stats().snapshot()[3], 0);
    s.shutdown();
}
