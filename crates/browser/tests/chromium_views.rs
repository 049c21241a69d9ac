//! A returning visit in real Chromium against `h2lab serve` on loopback: two views in one
//! browser process, the first view's connections closed in between (socket pools flushed),
//! over HTTP/2 and HTTP/3. The repeat view completes on the arm's protocol, every image
//! included, and its responses come over a connection the first view did not use (the
//! built-in server marks every object `no-store`, so none can come from the cache).
//!
//! Needs Chromium (`apt-get install chromium`): skipped with a recorded line when missing,
//! a failure when `CI=true`.

use std::time::Duration;

use h2lab_browser::{find_browser, load_views, BrowserSpec, LoadOptions, Protocol, Workload};
use h2lab_server::{RunningServer, ServerConfig};

fn server() -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ServerConfig::local();
    c.listen = None;
    c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    c.cert_dir = Some(dir.path().to_path_buf());
    c.h3 = true;
    c.quiet = true;
    (h2lab_server::spawn(c).unwrap(), dir)
}

#[test]
fn the_repeat_view_completes_over_a_new_connection() {
    if !h2lab_testkit::anchors_available(&["chromium"]) {
        return;
    }
    let spec = BrowserSpec {
        binary: find_browser("chromium").unwrap(),
        cpus: None,
        extra_args: Vec::new(),
    };
    let (s, _dir) = server();
    for p in [Protocol::H2, Protocol::H3] {
        let o = LoadOptions {
            spec: spec.clone(),
            protocol: p,
            host: "localhost".into(),
            addr: if p == Protocol::H3 {
                s.h3_addr().unwrap()
            } else {
                s.tls_addr().unwrap()
            },
            spki_pin: h2lab_browser::spki::pin_of_pem_file(s.cert_path().unwrap()).unwrap(),
            workload: Workload::Page("/page?n=10".into()),
            timeout: Duration::from_secs(60),
            count_connections: true,
        };
        let (first, repeat) = load_views(&o).unwrap();
        for v in [&first, &repeat] {
            assert!(v.off_protocol(p.next_hop()).is_empty(), "{p:?}");
            assert_eq!(v.document_protocol, p.next_hop());
            assert_eq!(v.connections, 1, "{p:?}: {:?}", v.connection_ids);
        }
        assert!(
            first.connection_ids.is_disjoint(&repeat.connection_ids),
            "{p:?}: the repeat view reused a connection: {:?} / {:?}",
            first.connection_ids,
            repeat.connection_ids
        );
        let images = |v: &h2lab_browser::PageLoad| {
            v.resources
                .iter()
                .filter(|r| r.url.contains("/asset/") && r.url.contains(".png"))
                .count()
        };
        assert!(images(&repeat) >= 10, "{p:?}: every image loaded");
    }
}
