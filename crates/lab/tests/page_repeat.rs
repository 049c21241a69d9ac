//! `page --repeat-view` on the built-in server (loopback link, a small page): every round
//! is a first view and a returning view per protocol; the returning view's connections are
//! new and resume the first view's TLS sessions (HTTP/1.1 and HTTP/2 over TLS: accepted;
//! HTTP/3: offered), it re-fetches every object (the built-in server's objects are
//! `no-store`), and the report pairs the two views and states their round-trip floors.

use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::{output, run, PageConfig};
use h2lab_lab::proto::LabProtocol;

#[test]
fn the_repeat_view_resumes_tls_on_new_connections_and_refetches_no_store_objects() {
    let cfg = PageConfig {
        repeat: 2,
        link: LinkProfile::Loopback,
        page_query: "n=8&min=1k&max=2k&seed=3&css=1&js=1".into(),
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]),
        repeat_view: true,
        ..PageConfig::default()
    };
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
