//! `h2lab bench --h3` and QPACK's dynamic table against `h2lab serve --h3` (in process,
//! loopback, port 0): by default the client announces h2load's table (4096 octets, 100
//! blocked streams) and the server answers with references to it; `--no-qpack-dynamic-table`
//! turns it off both ways. Exact counts and body bytes either way, the settings recorded in
//! `--json`, and the `headers` of `traffic:` stay the QPACK-encoded sizes (smaller with
//! the table).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_server::ServerConfig;
use serde_json::Value;

fn bench_json(url: &str, json: &std::path::Path, extra: &[&str]) -> (String, Value) {
    let out = cargo_bin_cmd!("h2lab")
        .args(["bench", "--h3", "-n", "200", "-c", "2", "-m", "10"])
        .args(extra)
        .arg(format!("--json={}", json.display()))
        .arg(url)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}{:?}", out.stderr);
    let doc = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    (stdout, doc)
}

#[test]
fn table_on_by_default_off_with_the_flag_exact_counts_and_recorded() {
    let dir = common::scratch_dir("h3-qpack");
    let server = h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.join("certs")),
        h3: true,
        ..ServerConfig::local()
    })
    .unwrap();
    let url = format!(
        "https://127.0.0.1:{}/data?size=653",
        server.tls_addr().unwrap().port()
    );
    let (on_text, on) = bench_json(&url, &dir.join("on.json"), &[]);
    let (off_text, off) = bench_json(&url, &dir.join("off.json"), &["--no-qpack-dynamic-table"]);
    for (text, doc) in [(&on_text, &on), (&off_text, &off)] {
        assert!(
            text.contains("requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed"),
            "{text}"
        );
        assert_eq!(doc["traffic"]["data_bytes"], 200 * 653, "{text}");
        assert_eq!(doc["status_codes"]["2xx"], 200, "{text}");
        assert_eq!(doc["errors"]["total"], 0, "{text}");
    }
    let q = &on["options"]["qpack"];
    assert_eq!(q["dynamic_table"], true, "{q}");
    assert_eq!(q["max_table_capacity"], 4096);
    assert_eq!(q["blocked_streams"], 100);
    assert_eq!(q["encoder_max_table_capacity"], 4096);
    let q = &off["options"]["qpack"];
    assert_eq!(q["dynamic_table"], false, "{q}");
    assert_eq!(q["max_table_capacity"], 0);
    assert_eq!(q["blocked_streams"], 0);
    assert_eq!(q["encoder_max_table_capacity"], 0);
    // h2load's definition: QPACK-encoded section sizes. The server's references to our table
    // (after the first responses of each connection) are far shorter than its literals.
    let headers = |d: &Value| d["traffic"]["header_bytes"].as_u64().unwrap();
    assert!(headers(&on) > 0);
    assert!(
        headers(&on) * 2 < headers(&off),
        "on {} off {}",
        headers(&on),
        headers(&off)
    );
    // The decompressed size does not depend on the encoding.
    assert_eq!(
        on["traffic"]["header_bytes_decompressed"],
        off["traffic"]["header_bytes_decompressed"]
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_names_the_flag() {
    let out = cargo_bin_cmd!("h2lab")
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--no-qpack-dynamic-table"), "{help}");
}
