//! `h2lab bench --h3` (through the real binary) against an independent HTTP/3 server, Caddy
//! (HTTP/3 by quic-go, started by `h2lab-testkit`; skipped locally when `caddy` is not
//! installed, a failure in CI): exact request counts, statuses and body bytes for small and
//! 10 MB responses. (GOAWAY on a server stop is tested at the session level,
//! crates/engine/tests/h3.rs.)

mod common;

use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = cargo_bin_cmd!("h2lab")
        .arg("bench")
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn caddy_small_and_ten_megabyte_responses() {
    let big = 10 * 1024 * 1024;
    h2lab_testkit::require_anchor!("caddy");
    let caddy = h2lab_testkit::Caddy::builder()
        .file_size("file653", 653)
        .file_size("file10m", big)
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let url = caddy.url("/file653");
    let (code, stdout, stderr) = bench(&["--h3", "-n", "300", "-c", "3", "-m", "10", &url]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    common::assert_h2load_shape(&stdout, "h3", 300, 653);
    assert!(
        stdout.contains("status codes: 300 2xx, 0 3xx, 0 4xx, 0 5xx"),
        "{stdout}"
    );
    let url = caddy.url("/file10m");
    let (code, stdout, stderr) = bench(&["--h3", "-n", "4", "-c", "2", "-m", "2", &url]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("requests: 4 total, 4 started, 4 done, 4 succeeded, 0 failed"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("({}) data", 4 * big)), "{stdout}");
}
