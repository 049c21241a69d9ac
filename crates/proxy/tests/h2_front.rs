//! HTTP/2 clients through the proxy (h2load as the client, h2c prior knowledge): every
//! request answered with the right body, over every upstream protocol; streams cancelled by
//! the client leave nothing open.

mod common;

use std::process::Command;
use std::time::Duration;

use h2lab_proxy::UpstreamProtocol;

#[test]
fn h2load_through_the_h2c_front() {
    h2lab_testkit::require_anchor!("h2load");
    let b = common::backends(4);
    for proto in [
        UpstreamProtocol::H1,
        UpstreamProtocol::H10,
        UpstreamProtocol::H2c,
        UpstreamProtocol::H2cMux,
    ] {
        let p = common::proxy(&b, proto, |_| {});
        let url = format!("http://{}/data?size=10k", p.addr().unwrap());
        let out = Command::new("h2load")
            .args(["-n", "400", "-c", "4", "-m", "10", &url])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("400 succeeded, 0 failed"),
            "{proto:?}: {text}"
        );
        assert!(text.contains("status codes: 400 2xx"), "{proto:?}: {text}");
        assert!(
            text.contains("Application protocol: h2c"),
            "{proto:?}: {text}"
        );
        // 400 × 10 KiB of body.
        assert!(text.contains("(4096000) data"), "{proto:?}: {text}");
        let settled = common::wait_until(10, || {
            let s = p.stats().snapshot(Duration::from_secs(1));
            s.open_exchanges == 0 && s.open_upstream_streams == 0
        });
        assert!(settled, "{proto:?}");
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.requests, 400, "{proto:?}: {s}");
        assert_eq!(s.responses, 400, "{proto:?}: {s}");
    }
}

#[test]
fn ten_megabyte_uploads_from_http2_clients() {
    h2lab_testkit::require_anchor!("h2load");
    let dir = std::env::temp_dir().join(format!("h2lab-proxy-h2up-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("body");
    std::fs::write(&file, vec![b'u'; 10 * 1024 * 1024]).unwrap();
    let b = common::backends(2);
    for proto in [UpstreamProtocol::H1, UpstreamProtocol::H2cMux] {
        let p = common::proxy(&b, proto, |_| {});
        let url = format!("http://{}/ping", p.addr().unwrap());
        let out = Command::new("h2load")
            .args(["-n", "4", "-c", "1", "-m", "2", "-d"])
            .arg(&file)
            .arg(&url)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("4 succeeded, 0 failed"), "{proto:?}: {text}");
        assert!(text.contains("status codes: 4 2xx"), "{proto:?}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
