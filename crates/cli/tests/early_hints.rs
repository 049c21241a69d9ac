//! `h2lab serve --early-hints` and `h2lab bench` over HTTP/1.1, HTTP/2 and HTTP/3 (in
//! process, loopback, port 0): `/page` answers `103 Early Hints` before its final response,
//! the benchmark counts it on its own line and in `--json`, and never as the response.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_server::ServerConfig;
use serde_json::Value;

#[test]
fn page_early_hints_are_counted_apart_on_every_protocol() {
    let dir = common::scratch_dir("early-hints");
    let server = h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.join("certs")),
        h3: true,
        early_hints: true,
        ..ServerConfig::local()
    })
    .unwrap();
    let port = server.tls_addr().unwrap().port();
    let page = format!("https://127.0.0.1:{port}/page?n=4&css=2&js=1&think=20ms");
    let plain = format!("https://127.0.0.1:{port}/page?n=4&think=20ms");
    for (flag, alpn) in [
        ("--h1", "http/1.1"),
        ("--alpn-list=h2", "h2"),
        ("--h3", "h3"),
    ] {
        let json = dir.join(format!("{alpn}.json").replace('/', "_"));
        let out = cargo_bin_cmd!("h2lab")
            .args(["bench", flag, "-n", "12", "-c", "2", "-m", "3"])
            .arg(format!("--json={}", json.display()))
            .arg(&page)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{:?}", out.stderr);
        assert!(
            stdout.contains(&format!("Application protocol: {alpn}\n")),
            "{stdout}"
        );
        // Every request succeeded with its final 200; the 103s are on their own line.
        assert!(
            stdout.contains("requests: 12 total, 12 started, 12 done, 12 succeeded, 0 failed"),
            "{alpn}: {stdout}"
        );
        assert!(
            stdout.contains("status codes: 12 2xx, 0 3xx, 0 4xx, 0 5xx\n"),
            "{alpn}: {stdout}"
        );
        assert!(
            stdout.contains("\ninformational responses: 12 103 Early Hints\n"),
            "{alpn}: {stdout}"
        );
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j["informational"]["103"], 12, "{alpn}");
        assert_eq!(j["status_codes"]["1xx"], 12, "{alpn}");
        assert_eq!(j["status_codes"]["2xx"], 12, "{alpn}");

        // A page without render-blocking assets gets no hints.
        let out = cargo_bin_cmd!("h2lab")
            .args(["bench", flag, "-n", "4", "-c", "1"])
            .arg(&plain)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("status codes: 4 2xx"), "{alpn}: {stdout}");
        assert!(!stdout.contains("informational"), "{alpn}: {stdout}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
