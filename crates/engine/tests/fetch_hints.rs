//! `103 Early Hints` with the page fetcher against `h2lab serve --early-hints` (TLS, and
//! QUIC for HTTP/3; loopback, port 0): the hinted CSS and JS are requested on the 103,
//! before the page's final response comes, and the later requests for them (the HTML
//! referencing them) use the preloads instead of sending anything; the 103 is never the
//! page's response. Over HTTP/1.1, HTTP/2 and HTTP/3.

use std::net::SocketAddr;

use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher, HintStats};
use h2lab_engine::Target;
use h2lab_server::ServerConfig;

/// A page whose 200 comes 100 ms after its 103.
const PAGE: &str = "/page?n=2&seed=5&css=2&js=1&css_size=4k&js_size=8k&think=100ms";

#[test]
fn hinted_assets_are_preloaded_and_used_on_every_protocol() {
    let dir = std::env::temp_dir().join(format!("h2lab-fetch-hints-{}", std::process::id()));
    let s = h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.clone()),
        h3: true,
        early_hints: true,
        ..ServerConfig::local()
    })
    .unwrap();
    let origin = Target::parse(&format!(
        "https://127.0.0.1:{}/",
        s.tls_addr().unwrap().port()
    ))
    .unwrap();
    for proto in [FetchProtocol::Http11, FetchProtocol::H2, FetchProtocol::H3] {
        // The HTML first (it names the assets), as the page loader does.
        let cfg = FetchConfig::browser(origin.clone(), proto);
        let html = {
            let mut f = Fetcher::new(cfg.clone(), &[PAGE.to_owned()]).unwrap();
            let b = f.fetch(&[0], true).unwrap();
            String::from_utf8(b.bodies[0].clone()).unwrap()
        };
        let mut paths = vec![PAGE.to_owned()];
        for part in html.split('"') {
            if part.starts_with("/asset/") && (part.ends_with(".css") || part.ends_with(".js")) {
                paths.push(part.to_owned());
            }
        }
        assert_eq!(paths.len(), 4, "{proto:?}: {paths:?}");
        let mut f = Fetcher::new(cfg, &paths).unwrap();
        let page = f.fetch(&[0], true).unwrap();
        assert_eq!(
            page.records.len(),
            1,
            "preloads are not the batch's records"
        );
        let p = &page.records[0];
        assert_eq!(p.status, 200, "{proto:?}: the 103 is not the response");
        assert_eq!(page.bodies[0], html.as_bytes(), "{proto:?}");
        assert_eq!(
            f.hint_stats(),
            HintStats {
                links: 1,
                preloads: 3,
                used: 0
            },
            "{proto:?}"
        );
        let sent_before = f.traffic().request_header_bytes;
        let assets = f.fetch(&[1, 2, 3], false).unwrap();
        assert_eq!(f.hint_stats().used, 3, "{proto:?}");
        assert_eq!(
            f.traffic().request_header_bytes,
            sent_before,
            "{proto:?}: nothing requested again"
        );
        for r in &assets.records {
            assert_eq!(r.status, 200, "{proto:?}: {r:?}");
            assert!(r.body_bytes > 0);
            // Requested on the 103, before the page's final response began.
            assert!(r.queued < p.first_byte, "{proto:?}: {r:?} vs page {p:?}");
        }
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
