//! `page --browser` end to end: headless Chromium arms beside the simulated ones on the
//! built-in server. Needs Chromium (`apt-get install chromium`): skipped with a recorded line
//! when missing, a failure when `CI=true`. No assertion on elapsed time except the lower
//! bound the server's delay sets.

use std::time::Duration;

use h2lab_lab::link::LinkProfile;
use h2lab_lab::page::browser::{find_browser, BrowserConfig};
use h2lab_lab::page::{output, run, PageConfig, SlowConfig};
use h2lab_lab::proto::LabProtocol;

fn browser(only: bool) -> Option<BrowserConfig> {
    if !h2lab_testkit::anchors_available(&["chromium"]) {
        return None;
    }
    Some(BrowserConfig {
        binary: find_browser("chromium").unwrap(),
        only,
    })
}

#[test]
fn browser_arms_load_over_each_protocol_beside_the_simulated_ones() {
    let Some(b) = browser(false) else { return };
    let cfg = PageConfig {
        link: LinkProfile::Loopback,
        repeat: 1,
        page_query: "n=30&min=1k&max=2k&seed=1".into(),
        browser: Some(b),
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.protocols.len(), 3, "the simulated arms ran too");
    assert_eq!(r.browser.len(), 1);
    let br = &r.browser[0];
    let protos: Vec<LabProtocol> = br.arms.iter().map(|a| a.page.proto).collect();
    assert_eq!(
        protos,
        vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]
    );
    for (a, conns) in br.arms.iter().zip([6.0, 1.0, 1.0]) {
        assert!(a.page.error.is_none(), "{:?}", a.page.error);
        assert_eq!(
            a.fallbacks, 0,
            "{:?}: {:?}",
            a.page.proto, a.fallback_example
        );
        assert!(a.page.page_ms.is_some());
        assert_eq!(a.resources, Some(30.0));
        assert_eq!(a.connections, Some(conns), "{:?}", a.page.proto);
        // Counted on the check load; the measured load left DevTools' Network domain off.
        assert!(a.connections_from_check, "{:?}", a.page.proto);
        // The browser's own cost and the machine's load are reported for every load.
        assert!(a.cpu_ms.is_some_and(|c| c.median > 0.0), "{:?}", a.cpu_ms);
        assert!(a.process_cpu_ms.unwrap().median >= a.cpu_ms.unwrap().median);
        assert!(a.cores.is_some() && a.last_request_ms.is_some());
        assert_eq!(a.machine.len(), 1);
        let m = a.machine[0].expect("/proc/stat read");
        assert!((0.0..=1.0).contains(&m.other_cpu), "{m:?}");
        assert_eq!(a.busy_loads, u32::from(m.busy()));
    }
    assert_eq!(br.versus.len(), 3, "simulated / browser per protocol");
    assert!(br.versus.iter().all(|v| v.ratio.is_some_and(|e| e.n == 1)));
    let text = output::render_text(&r);
    assert!(text.contains("simulated vs browser"), "{text}");
    assert!(
        text.contains("browser cost") && text.contains("CPU/load"),
        "{text}"
    );
    assert!(text.contains("of 3 browser loads measured while"), "{text}");
    let json = output::json(&r);
    assert!(json.contains("\"versus\""));
    for key in [
        "\"cpu_ms\"",
        "\"busy_loads\"",
        "\"machine\"",
        "\"other_cpu\"",
    ] {
        assert!(json.contains(key), "{key} in the JSON");
    }
    let html = h2lab_lab::html::page::render(&r);
    assert!(html.contains("id=\"browser\""));
    assert!(html.contains("browser CPU per load") && html.contains("browser loads measured"));
}

#[test]
fn browser_only_slow_fetches_take_at_least_the_delay() {
    let Some(b) = browser(true) else { return };
    let delay = Duration::from_millis(300);
    let cfg = PageConfig {
        link: LinkProfile::Loopback,
        repeat: 1,
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2, LabProtocol::H3]),
        slow: Some(SlowConfig {
            requests: 12,
            delay,
        }),
        browser: Some(b),
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    let slow = r.slow.as_ref().unwrap();
    assert!(
        slow.results.iter().all(|p| p.loads.is_empty()),
        "--browser-only: no simulated load"
    );
    let br = &r.browser[0];
    assert_eq!(br.arms.len(), 3);
    assert!(br.versus.is_empty());
    for a in &br.arms {
        assert_eq!(a.fallbacks, 0, "{:?}", a.fallback_example);
        let ms = a.page.page_ms.unwrap().median;
        assert!(ms >= 300.0, "{:?}: {ms} ms", a.page.proto);
        assert_eq!(a.resources, Some(12.0));
    }
    // 12 fetches over at most 6 HTTP/1.1 connections: two rounds of the delay at least.
    assert!(br.arms[0].page.page_ms.unwrap().median >= 600.0);
}

#[test]
fn an_http1_only_target_on_the_h2_arm_is_a_protocol_fallback_left_out() {
    let Some(b) = browser(true) else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut sc = h2lab_server::ServerConfig::local();
    sc.listen = None;
    sc.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    sc.cert_dir = Some(dir.path().to_path_buf());
    sc.alpn = vec![b"http/1.1".to_vec()];
    sc.quiet = true;
    let server = h2lab_server::spawn(sc).unwrap();
    let url = format!(
        "https://127.0.0.1:{}/page?n=5&min=1k&max=1k&seed=1",
        server.tls_addr().unwrap().port()
    );
    let cfg = PageConfig {
        url: Some(url),
        link: LinkProfile::Loopback,
        repeat: 1,
        protocols: Some(vec![LabProtocol::H1Tls, LabProtocol::H2]),
        browser: Some(b),
        ..PageConfig::default()
    };
    let r = run(&cfg, &mut |_| {}).unwrap();
    let br = &r.browser[0];
    let h1 = &br.arms[0];
    let h2 = &br.arms[1];
    assert_eq!(h1.fallbacks, 0, "{:?}", h1.fallback_example);
    assert!(h1.page.page_ms.is_some());
    assert_eq!(h2.fallbacks, 1, "the h2 arm fell back to HTTP/1.1");
    assert!(
        h2.page.page_ms.is_none(),
        "the fallback is not measured as HTTP/2"
    );
    assert!(h2
        .fallback_example
        .as_deref()
        .is_some_and(|e| e.contains("http/1.1")));
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("--ignore-certificate-errors")));
    let text = output::render_text(&r);
    assert!(text.contains("protocol fallback"), "{text}");
}
