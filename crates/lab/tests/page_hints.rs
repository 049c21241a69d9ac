//! `page --render --early-hints` on loopback with a small page and a short think time:
//! every protocol loads the page from a server sending `103 Early Hints` and from one that
//! does not; with hints the page's CSS and JS are requested before the HTML is complete
//! (the preloads), without none is; each arm has its floor (at least the think time) and
//! each protocol a render and a page verdict.

use std::time::Duration;

use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::hints::{self, HintsConfig};
use h2lab_lab::page::render::RenderLink;
use h2lab_lab::proto::LabProtocol;

#[test]
fn hints_preload_the_css_and_js_on_every_protocol() {
    let cfg = HintsConfig {
        page_query: "n=4&min=1k&max=2k&seed=2&css=1&css_size=4k&js=2&js_size=8k&think=60ms".into(),
        links: vec![RenderLink {
            name: "loopback".into(),
            profile: LinkProfile::Loopback,
            loss: 0.0,
        }],
        repeat: 2,
        timeout: Duration::from_secs(60),
        ..HintsConfig::default()
    };
    let r = hints::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.links.len(), 1);
    let l = &r.links[0];
    assert_eq!((l.resources, l.render_blocking, l.think_ms), (7, 3, 60.0));
    assert_eq!(l.arms.len(), 6);
    for a in &l.arms {
        assert!(
            a.error.is_none(),
            "{:?} {}: {:?}",
            a.proto,
            a.hints,
            a.error
        );
        assert_eq!(a.loads.len(), 2, "{:?}", a.proto);
        assert_eq!(
            a.preloaded,
            Some(if a.hints { 3 } else { 0 }),
            "{:?} {}",
            a.proto,
            a.hints
        );
        let f = a.floor.unwrap();
        assert!(f.render_ms >= 60.0 && f.page_ms >= f.render_ms, "{f:?}");
        for &(render, page) in &a.loads {
            // The server thinks before the HTML: nothing renders earlier.
            assert!(
                render >= 60.0 && page >= render,
                "{:?}: {render} {page}",
                a.proto
            );
        }
    }
    let protos: Vec<LabProtocol> = l.verdicts.iter().map(|v| v.proto).collect();
    assert_eq!(protos.len(), 6, "render and page per protocol");
    let text = hints::render_text(&r);
    assert!(text.contains("early hints experiment"), "{text}");
    assert!(hints::json(&r).contains("\"preloaded\""));
}

/// `--browser`: Chromium arms over HTTP/2 with and without hints beside the simulated ones,
/// each with its loads and a verdict. Needs Chromium (skipped with a recorded line when
/// missing, a failure when `CI=true`).
#[test]
fn chromium_arms_load_the_page_from_both_servers() {
    if !h2lab_testkit::anchors_available(&["chromium"]) {
        return;
    }
    let cfg = HintsConfig {
        page_query: "n=2&min=1k&max=2k&seed=2&css=1&css_size=4k&js=1&js_size=8k&think=60ms".into(),
        links: vec![RenderLink {
            name: "loopback".into(),
            profile: LinkProfile::Loopback,
            loss: 0.0,
        }],
        protocols: vec![LabProtocol::H2],
        repeat: 1,
        timeout: Duration::from_secs(60),
        browser: Some(h2lab_lab::page::browser::find_browser("chromium").unwrap()),
        ..HintsConfig::default()
    };
    let r = hints::run(&cfg, &mut |_| {}).unwrap();
    let l = &r.links[0];
    let chrome: Vec<_> = l.arms.iter().filter(|a| a.browser).collect();
    assert_eq!(chrome.len(), 2, "with and without hints");
    for a in chrome {
        assert!(a.error.is_none(), "{:?}", a.error);
        let (render, page) = a.loads[0];
        assert!(render >= 60.0 && page >= render, "{render} {page}");
    }
    assert!(l.verdicts.iter().any(|v| v.browser));
    assert!(hints::render_text(&r).contains("chromium HTTP/2 (TLS)"));
}
