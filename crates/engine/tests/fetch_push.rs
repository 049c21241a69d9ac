//! Server push end to end with the page fetcher against `h2lab serve --push`: pushed CSS
//! and JS are used instead of requested, and counted; a refusing client never receives a
//! pushed byte; pushes nobody asks for are counted as wasted.

use std::net::SocketAddr;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, FetchRecord, Fetcher, PushStats};
use h2lab_engine::Target;
use h2lab_server::{RunningServer, ServerConfig};

fn server(push: bool) -> RunningServer {
    h2lab_server::spawn(ServerConfig {
        push,
        ..ServerConfig::local()
    })
    .unwrap()
}

fn origin(a: SocketAddr) -> Target {
    Target::parse(&format!("http://127.0.0.1:{}/", a.port())).unwrap()
}

const PAGE: &str = "/page?n=2&seed=3&css=2&js=1&css_size=4k&js_size=8k";

/// The page, then its CSS and JS (from the HTML, as the page loader reads them).
fn paths(f_html: &str) -> Vec<String> {
    let mut p = vec![PAGE.to_owned()];
    for part in f_html.split('"') {
        if part.starts_with("/asset/") && (part.ends_with(".css") || part.ends_with(".js")) {
            p.push(part.to_owned());
        }
    }
    p
}

/// Fetches the page over h2c with push `accept`, then its CSS and JS.
fn load(push_server: bool, accept: bool) -> (Vec<FetchRecord>, PushStats, u64) {
    let s = server(push_server);
    let html = {
        let cfg = FetchConfig::browser(origin(s.addr().unwrap()), FetchProtocol::H2);
        let mut f = Fetcher::new(cfg, &[PAGE.to_owned()]).unwrap();
        let b = f.fetch(&[0], true).unwrap();
        String::from_utf8(b.bodies[0].clone()).unwrap()
    };
    let p = paths(&html);
    assert_eq!(p.len(), 4, "{p:?}");
    let mut cfg = FetchConfig::browser(origin(s.addr().unwrap()), FetchProtocol::H2);
    cfg.h2.enable_push = accept;
    let mut f = Fetcher::new(cfg, &p).unwrap();
    let page = f.fetch(&[0], false).unwrap();
    assert_eq!(page.records[0].status, 200);
    let assets = f.fetch(&[1, 2, 3], false).unwrap();
    (
        assets.records,
        f.push_stats(),
        f.traffic().request_header_bytes,
    )
}

fn asset_size(path: &str) -> u64 {
    path.rsplit('-')
        .next()
        .and_then(|t| t.split('.').next())
        .and_then(|n| n.parse().ok())
        .unwrap()
}

#[test]
fn pushed_css_and_js_are_used_not_requested_again_and_counted() {
    let (recs, push, _) = load(true, true);
    let mut total = 0;
    for r in &recs {
        assert_eq!(r.status, 200);
        assert_eq!(
            r.request_bytes, 0,
            "served from the push cache, not requested"
        );
        assert_eq!(r.attempts, 0);
        total += r.body_bytes;
    }
    assert_eq!(push.streams, 3);
    assert_eq!(push.bytes, total);
    assert_eq!(push.bytes_used, total);
    assert_eq!(push.bytes_wasted, 0);
}

#[test]
fn refusing_client_requests_everything_and_gets_no_pushed_byte() {
    let (recs, push, _) = load(true, false);
    for r in &recs {
        assert_eq!(r.status, 200);
        assert!(r.request_bytes > 0, "requested");
        assert_eq!(r.attempts, 1);
    }
    assert_eq!(push, PushStats::default());
}

#[test]
fn accepting_client_without_a_pushing_server_requests_everything() {
    let (recs, push, _) = load(false, true);
    assert!(recs.iter().all(|r| r.request_bytes > 0 && r.status == 200));
    assert_eq!(push, PushStats::default());
}

#[test]
fn pushes_of_assets_already_used_are_wasted() {
    let s = server(true);
    let html = {
        let cfg = FetchConfig::browser(origin(s.addr().unwrap()), FetchProtocol::H2);
        let mut f = Fetcher::new(cfg, &[PAGE.to_owned()]).unwrap();
        String::from_utf8(f.fetch(&[0], true).unwrap().bodies.remove(0)).unwrap()
    };
    let p = paths(&html);
    let mut cfg = FetchConfig::browser(origin(s.addr().unwrap()), FetchProtocol::H2);
    cfg.h2.enable_push = true;
    let mut f = Fetcher::new(cfg, &p).unwrap();
    f.fetch(&[0], false).unwrap();
    f.fetch(&[1, 2, 3], false).unwrap();
    let first = f.push_stats();
    let sizes: u64 = p.iter().skip(1).map(|x| asset_size(x)).sum();
    assert_eq!(
        (first.streams, first.bytes_used, first.bytes_wasted),
        (3, sizes, 0)
    );
    // The page again: the server pushes the same assets again (PUSH_PROMISE before the
    // page's DATA, so they are known once the page is complete); nobody uses them.
    f.fetch(&[0], false).unwrap();
    let again = f.push_stats();
    assert_eq!(again.streams, 6);
    assert_eq!(again.bytes_used, sizes);
    assert_eq!(again.bytes_wasted, again.bytes - sizes);
}
