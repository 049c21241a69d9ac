//! End-to-end tests of the load-shape options of `h2lab bench` against the h2lab server:
//! `--threshold` exit statuses both ways (99 on failure), the open model's report lines,
//! `--timeseries` files (CSV and JSON lines), the JSON result's optional fields, h2load's
//! pacing flags, and one-line errors for bad values.

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;

fn h2lab() -> assert_cmd::Command {
    cargo_bin_cmd!("h2lab")
}

fn server() -> (h2lab_server::RunningServer, String) {
    let s = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let uri = format!("http://{}/", s.addr().unwrap());
    (s, uri)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h2lab-cli-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn validate(path: &Path) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(h2lab_report::json::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    doc
}

#[test]
fn thresholds_that_hold_exit_0() {
    let (_s, uri) = server();
    let out = h2lab()
        .args(["bench", "-n", "200", "-c", "2", "-m", "4"])
        .args(["--threshold", "p99<10s", "--threshold", "errors<1%"])
        .args(["--threshold", "rps>1", "--threshold", "ttfb.max<=10s", &uri])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("thresholds: 4 passed, 0 failed\n"),
        "{stdout}"
    );
    assert!(stdout.contains("  passed  p99<10s  (p99 = "), "{stdout}");
}

#[test]
fn a_failed_threshold_exits_99_and_is_recorded() {
    let (_s, uri) = server();
    let json = tmp("thresholds.json");
    let out = h2lab()
        .args(["bench", "-n", "100", "-c", "2"])
        .args(["--threshold", "p99<1ns", "--threshold", "errors<0.1%"])
        .args(["--json", json.to_str().unwrap(), &uri])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(99), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("thresholds: 1 passed, 1 failed\n"),
        "{stdout}"
    );
    assert!(stdout.contains("  FAILED  p99<1ns  (p99 = "), "{stdout}");
    assert!(
        stdout.contains("  passed  errors<0.1%  (errors = 0.000%)"),
        "{stdout}"
    );
    let doc = validate(&json);
    assert_eq!(doc["thresholds"][0]["expression"], "p99<1ns");
    assert_eq!(doc["thresholds"][0]["passed"], false);
    assert_eq!(doc["thresholds"][1]["passed"], true);
    // A closed-model run: no open-model fields.
    assert!(doc.get("open_model").is_none());
}

#[test]
fn open_model_run_reports_both_latencies_and_writes_the_series() {
    let (_s, uri) = server();
    let csv = tmp("series.csv");
    let json = tmp("open.json");
    let out = h2lab()
        .args([
            "bench",
            "--arrival-rate",
            "400",
            "-D",
            "2",
            "-c",
            "2",
            "-m",
            "4",
        ])
        .args(["--interval", "500ms", "--timeseries", csv.to_str().unwrap()])
        .args(["--json", json.to_str().unwrap(), &uri])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    let at = |p: &str| lines.iter().position(|l| l.starts_with(p)).unwrap();
    assert!(
        at("time for request: ") < at("time from send  : "),
        "corrected first"
    );
    assert!(stdout.contains("latency: \"time for request\" is measured from each request's"));
    assert!(
        stdout.contains("open model: 800 scheduled, "),
        "exactly 400 req/s over 2 s: {stdout}"
    );
    // The series: a header and 4 rows of 0.5 s at a target of 400 req/s.
    let series = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = series.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][..4], ["index", "time_s", "seconds", "target"]);
    assert_eq!(rows.len(), 5, "{series}");
    for (i, r) in rows[1..].iter().enumerate() {
        assert_eq!(r[0], i.to_string());
        assert_eq!(r[2], "0.5");
        assert_eq!(r[3], "400");
        assert_eq!(r.len(), rows[0].len());
    }
    let doc = validate(&json);
    assert_eq!(doc["open_model"]["scheduled"], 800);
    assert_eq!(doc["timeseries"].as_array().unwrap().len(), 4);
    assert!(
        doc["latency"]["request_corrected"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(doc["histograms"]["request_time_corrected"].is_string());
}

#[test]
fn stages_and_json_lines_series() {
    let (_s, uri) = server();
    let jsonl = tmp("series.jsonl");
    let out = h2lab()
        .args([
            "bench",
            "--arrival-rate",
            "0",
            "--stages",
            "1s:300,500ms:300",
        ])
        .args([
            "--interval",
            "500ms",
            "--timeseries",
            jsonl.to_str().unwrap(),
            &uri,
        ])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Timing-based test with 0s of warm-up time and 1.5s of main duration"));
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    // The target is the mean level of each interval: 75, 225, 300 req/s.
    let targets: Vec<f64> = rows.iter().map(|r| r["target"].as_f64().unwrap()).collect();
    assert_eq!(targets, vec![75.0, 225.0, 300.0]);
}

#[test]
fn h2load_pacing_flags_from_the_command_line() {
    let (_s, uri) = server();
    let script = tmp("script.tsv");
    std::fs::write(&script, format!("0\t{uri}ping\n20.5\t{uri}json\n")).unwrap();
    let out = h2lab()
        .args([
            "bench",
            "-c",
            "2",
            "--timing-script-file",
            script.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    // -n defaults to the script's lines, per client (h2load).
    assert!(stdout.contains("spawning thread #0: 2 total client(s). 4 total requests"));
    assert!(
        stdout.contains("requests: 4 total, 4 started, 4 done, 4 succeeded"),
        "{stdout}"
    );

    let out = h2lab()
        .args([
            "bench",
            "-n",
            "4",
            "-c",
            "4",
            "-r",
            "2",
            "--rate-period",
            "100ms",
            &uri,
        ])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains(
        "spawning thread #0: 4 total client(s). Up to 2 client(s) will be created every 100ms 4 total requests"
    ), "{stdout}");

    let out = h2lab()
        .args(["bench", "-n", "6", "-c", "2", "--rps", "100", &uri])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("time from send  : "));
}

#[test]
fn bad_load_options_are_one_line_errors() {
    let uri = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&["--threshold", "p99"], "invalid threshold"),
        (&["--threshold", "p99<fast"], "invalid threshold"),
        (&["--stages", "10s"], "invalid stage"),
        (&["--arrival-rate=-5"], "invalid rate"),
        (
            &["--arrival-rate", "100", "--rps", "1"],
            "mutually exclusive",
        ),
        (&["-r", "1", "-D", "1"], "-r, -D"),
        (&["--stages", "1s:5", "-D", "1"], "--stages, -D"),
        (
            &["--timing-script-file", "/nonexistent/h2lab/script"],
            "cannot read",
        ),
        (&["--interval", "1ms", "-D", "1"], "--interval"),
        (&["--h3"], "h3: HTTP/3 needs an https:// URI"),
    ];
    for (args, want) in cases {
        let out = h2lab().arg("bench").args(*args).arg(uri).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(want),
            "{args:?}: {err:?} should contain {want:?}"
        );
        if args == &["--h3"] {
            // Refused before the run starts: no "starting benchmark..." first.
            assert_eq!(text(&out.stdout), "", "{args:?}");
        }
    }
}
