//! Real Chromium against `h2lab serve` on loopback, over the DevTools pipe: a page of 60
//! images over HTTP/1.1 (a listener offering only `http/1.1` in ALPN), HTTP/2 and HTTP/3
//! completes; every resource reports the arm's protocol; the browser opens 6, 1 and 1
//! connections; a server that offers only HTTP/1.1 on the HTTP/2 arm is reported as a
//! protocol fallback; the parallel-fetch page's time is at least the server's delay.
//!
//! Needs Chromium (`apt-get install chromium`): skipped with a recorded line when missing,
//! a failure when `CI=true`. Nothing here asserts on elapsed time except the lower bound the
//! server's delay sets.

use std::time::Duration;

use h2lab_browser::{find_browser, load, BrowserSpec, LoadOptions, PageLoad, Protocol, Workload};
use h2lab_server::{RunningServer, ServerConfig};

fn browser() -> Option<BrowserSpec> {
    if !h2lab_testkit::anchors_available(&["chromium"]) {
        return None;
    }
    Some(BrowserSpec {
        binary: find_browser("chromium").unwrap(),
        cpus: None,
        extra_args: Vec::new(),
    })
}

/// A TLS server on 127.0.0.1:0 (`alpn` offered), HTTP/3 beside it when `h3`.
fn server(alpn: &[&[u8]], h3: bool) -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ServerConfig::local();
    c.listen = None;
    c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    c.cert_dir = Some(dir.path().to_path_buf());
    c.alpn = alpn.iter().map(|a| a.to_vec()).collect();
    c.h3 = h3;
    c.quiet = true;
    (h2lab_server::spawn(c).unwrap(), dir)
}

fn options(spec: &BrowserSpec, s: &RunningServer, p: Protocol, w: Workload) -> LoadOptions {
    LoadOptions {
        spec: spec.clone(),
        protocol: p,
        host: "localhost".into(),
        addr: if p == Protocol::H3 {
            s.h3_addr().unwrap()
        } else {
            s.tls_addr().unwrap()
        },
        spki_pin: h2lab_browser::spki::pin_of_pem_file(s.cert_path().unwrap()).unwrap(),
        workload: w,
        timeout: Duration::from_secs(60),
        count_connections: true,
    }
}

fn check_page(l: &PageLoad, p: Protocol, images: usize) {
    assert!(
        l.off_protocol(p.next_hop()).is_empty(),
        "{p:?}: resources on another protocol: {:?}",
        l.off_protocol(p.next_hop())
    );
    assert_eq!(l.document_protocol, p.next_hop());
    // Every image has an entry. A browser may add entries of its own beside them (a resource
    // it fetched twice on a busy machine), so distinct image URLs are what is counted.
    let mut urls: Vec<&str> = l
        .resources
        .iter()
        .map(|r| r.url.as_str())
        .filter(|u| u.contains("/asset/") && u.contains(".png"))
        .collect();
    urls.sort_unstable();
    urls.dedup();
    assert_eq!(
        urls.len(),
        images,
        "{p:?}: every image has its entry: {:?}",
        l.resources.iter().map(|r| &r.url).collect::<Vec<_>>()
    );
    assert!(l.load_ms >= l.response_end_ms && l.response_end_ms > 0.0);
    assert!(l.dom_content_loaded_ms > 0.0);
}

#[test]
fn a_page_loads_over_each_protocol_with_the_arms_protocol_and_connections() {
    let Some(spec) = browser() else { return };
    let (h1, _d1) = server(&[b"http/1.1"], false);
    let (h23, _d2) = server(&[b"h2", b"http/1.1"], true);
    let page = Workload::Page("/page?n=60".into());
    let l1 = load(&options(&spec, &h1, Protocol::H1, page.clone())).unwrap();
    check_page(&l1, Protocol::H1, 60);
    assert_eq!(l1.connections, 6, "HTTP/1.1: six connections per origin");
    let l2 = load(&options(&spec, &h23, Protocol::H2, page.clone())).unwrap();
    check_page(&l2, Protocol::H2, 60);
    assert_eq!(l2.connections, 1, "HTTP/2: one connection");
    let l3 = load(&options(&spec, &h23, Protocol::H3, page)).unwrap();
    check_page(&l3, Protocol::H3, 60);
    assert_eq!(l3.connections, 1, "HTTP/3: one QUIC connection");
}

/// A measured load leaves DevTools' `Network` domain off (its events cost the browser a
/// third of its CPU on a page of 300 images): no `Network` event reaches us, the protocol
/// check still holds (Resource Timing), and the browser's own CPU for the load is reported
/// with the wall time it was spent over.
#[test]
fn a_load_without_connection_counting_gets_no_network_events_and_reports_its_cpu() {
    let Some(spec) = browser() else { return };
    let (h23, _d) = server(&[b"h2", b"http/1.1"], true);
    let mut o = options(
        &spec,
        &h23,
        Protocol::H2,
        Workload::Page("/page?n=30".into()),
    );
    o.count_connections = false;
    let quiet = load(&o).unwrap();
    check_page(&quiet, Protocol::H2, 30);
    assert_eq!((quiet.network_events, quiet.connections), (0, 0));
    let cpu = quiet.cpu_ms.expect("the browser's CPU from /proc");
    assert!(cpu > 0.0, "a page load costs the browser CPU");
    assert!(quiet.process_cpu_ms.unwrap() >= cpu);
    assert!(quiet.window_ms > 0.0);
    // Every resource says when it was sent and when its first octet came.
    for r in &quiet.resources {
        assert!(r.request_start_ms >= r.start_ms, "{r:?}");
        assert!(r.response_start_ms >= r.request_start_ms, "{r:?}");
        assert!(r.response_end_ms >= r.response_start_ms, "{r:?}");
    }
    o.count_connections = true;
    let counted = load(&o).unwrap();
    assert!(counted.network_events > 0 && counted.connections == 1);
}

#[test]
fn an_http1_only_server_on_the_h2_arm_is_a_protocol_fallback() {
    let Some(spec) = browser() else { return };
    let (h1, _d) = server(&[b"http/1.1"], false);
    let l = load(&options(
        &spec,
        &h1,
        Protocol::H2,
        Workload::Page("/page?n=8".into()),
    ))
    .unwrap();
    let off = l.off_protocol("h2");
    assert!(!off.is_empty(), "a fallback to HTTP/1.1 must be flagged");
    assert_eq!(off[0], "(document)");
}

#[test]
fn parallel_fetches_take_at_least_the_server_delay_on_each_protocol() {
    let Some(spec) = browser() else { return };
    let (h1, _d1) = server(&[b"http/1.1"], false);
    let (h23, _d2) = server(&[b"h2", b"http/1.1"], true);
    let delay_ms = 200;
    let w = Workload::Fetches {
        path: "/ping".into(),
        n: 12,
        delay_ms,
    };
    for (s, p) in [
        (&h1, Protocol::H1),
        (&h23, Protocol::H2),
        (&h23, Protocol::H3),
    ] {
        let l = load(&options(&spec, s, p, w.clone())).unwrap();
        let all = l.fetch_all_ms.expect("the fetch page reports its time");
        assert!(
            all >= delay_ms as f64,
            "{p:?}: {all} ms < the server's delay"
        );
        assert_eq!(l.resources.len(), 12, "{p:?}: every fetch has its entry");
        assert!(l.off_protocol(p.next_hop()).is_empty(), "{p:?}");
        if p == Protocol::H1 {
            // 12 fetches over at most 6 connections: at least two rounds of the delay.
            assert!(all >= 2.0 * delay_ms as f64, "HTTP/1.1: {all} ms");
        }
    }
}
