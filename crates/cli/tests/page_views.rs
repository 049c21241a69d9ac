//! `h2lab page --repeat-view` and `h2lab page --render --early-hints` from the command line,
//! on loopback with small pages: the sections they add to the report, their JSON keys, and
//! the flags' rules (`--early-hints` needs `--render`; `--early-hints` takes TLS protocols
//! only; `--repeat-view` does not combine with `--slow`; `--render` takes `--browser` only
//! with `--early-hints`).

use assert_cmd::cargo::cargo_bin_cmd;

#[test]
fn repeat_view_prints_both_views_and_writes_them_to_the_json() {
    let json = std::env::temp_dir().join(format!("h2lab-page-views-{}.json", std::process::id()));
    let out = cargo_bin_cmd!("h2lab")
        .args(["page", "--repeat-view", "--link", "loopback", "-n", "1"])
        .args([
            "--protocols",
            "h2,h3",
            "--page-query",
            "n=3&min=100&max=200&seed=1",
        ])
        .args(["--no-report", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Repeat view:"), "{text}");
    assert!(text.contains("floor RTTs (0-RTT)"), "{text}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["repeat_view"]["protocols"].as_array().unwrap().len(), 2);
    let _ = std::fs::remove_file(&json);
}

#[test]
fn early_hints_runs_the_hints_experiment_with_render() {
    let out = cargo_bin_cmd!("h2lab")
        .args([
            "page",
            "--render",
            "--early-hints",
            "--link",
            "loopback",
            "-n",
            "1",
        ])
        .args(["--protocols", "h2"])
        .args(["--page-query", "n=2&min=100&max=200&css=1&js=1&think=20ms"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("early hints experiment"), "{text}");
    assert!(text.contains("HTTP/2 (TLS)  103"), "{text}");
}

#[test]
fn the_new_flags_refuse_what_they_cannot_do() {
    for args in [
        vec!["page", "--early-hints"],
        vec!["page", "--render", "--early-hints", "--protocols", "h2c"],
        vec!["page", "--repeat-view", "--slow"],
        vec!["page", "--render", "--browser", "/nonexistent/chromium"],
    ] {
        let out = cargo_bin_cmd!("h2lab").args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
    }
}
