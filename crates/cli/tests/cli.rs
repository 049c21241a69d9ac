//! End-to-end tests of the `h2lab` binary: exit statuses and one-line errors for bad input,
//! h2load's output format, the JSON (validated against the schema) and CSV results, the protocol
//! fallback warning and `--require-protocol`. The behaviour tests run over every protocol
//! (counts, statuses, bodies, GOAWAY, reconnect, SIGINT) are in `protocols.rs`.

mod common;

use std::sync::atomic::Ordering;

use assert_cmd::cargo::cargo_bin_cmd;

fn h2lab() -> assert_cmd::Command {
    cargo_bin_cmd!("h2lab")
}

fn stdout_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `h2lab` with `args`, expects exit status `code` and exactly one line on stderr that
/// contains `want`; no panic message.
fn expect_one_line_error(args: &[&str], code: i32, want: &str) {
    let out = h2lab().args(args).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: stderr {err:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: stderr {err:?}");
    assert!(
        err.contains(want),
        "{args:?}: {err:?} should contain {want:?}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err:?}");
}

#[test]
fn usage_errors_exit_1_with_one_line() {
    expect_one_line_error(
        &["bench", "--no-such-flag", "http://127.0.0.1/"],
        1,
        "unexpected argument '--no-such-flag'",
    );
    expect_one_line_error(
        &["bench", "-n", "many", "http://127.0.0.1/"],
        1,
        "--requests",
    );
    // A decimal (`1.5s`) is valid since the one duration syntax (h2lab_engine::syntax).
    expect_one_line_error(&["bench", "-D", "1.5x", "http://127.0.0.1/"], 1, "duration");
    expect_one_line_error(
        &["bench", "-w", "31", "http://127.0.0.1/"],
        1,
        "window-bits",
    );
    expect_one_line_error(&["bench"], 1, "no URI or input file given");
    expect_one_line_error(&["bench", "ftp://127.0.0.1/"], 1, "invalid URI");
    expect_one_line_error(&["bench", "http://[::1/"], 1, "invalid URI");
    expect_one_line_error(&["bench", "localhost/index.html"], 1, "invalid URI");
    expect_one_line_error(
        &["bench", "-n", "5", "-c", "10", "http://127.0.0.1/"],
        1,
        "-n, -c:",
    );
    expect_one_line_error(
        &["bench", "--h1", "-p", "h2c", "http://127.0.0.1/"],
        1,
        "conflict",
    );
    expect_one_line_error(
        &["bench", "--require-protocol", "h3", "http://127.0.0.1/"],
        1,
        "--require-protocol",
    );
    expect_one_line_error(
        &["bench", "-n", "1", "http://nonexistent.invalid/"],
        1,
        "could not resolve host nonexistent.invalid",
    );
    expect_one_line_error(&["no-such-command"], 1, "unrecognized subcommand");
}

#[test]
fn help_and_version_exit_0() {
    let out = h2lab().args(["bench", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = stdout_of(&out);
    for flag in [
        "--requests",
        "--clients",
        "--max-concurrent-streams",
        "--threads",
        "--duration",
        "--warm-up-time",
        "--header",
        "--data",
        "--input-file",
        "--base-uri",
        "--h1",
        "--no-tls-proto",
        "--alpn-list",
        "--connect-to",
        "--sni",
        "--window-bits",
        "--connection-window-bits",
        "--header-table-size",
        "--encoder-header-table-size",
        "--connection-active-timeout",
        "--connection-inactivity-timeout",
        "--log-file",
        "--verbose",
        "--json",
        "--csv",
        "--require-protocol",
        "--coalesce[=<HOLD>]",
        "--output-format",
        "--output-file",
        "--histogram",
        "--max-frame-size",
        "--tls13-ciphers",
        "--groups",
        "--tls-resume",
        "--0rtt",
        "--reconnect-every",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    let out = h2lab().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout_of(&out).starts_with("h2lab "));
}

/// The CPU flags are shared by compare, page and upstream; each command's help says what its
/// server CPUs hold (upstream pins its backends, links and proxy, not a built-in server).
#[test]
fn cpu_flags_help_says_what_each_command_pins() {
    let flag_line = |cmd: &str, flag: &str| -> String {
        let out = h2lab().args([cmd, "--help"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{cmd} --help");
        let help = stdout_of(&out);
        // The flag's entry: its line and the help text under it, up to the next option.
        let lines: Vec<&str> = help.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{cmd} --help lacks {flag}:\n{help}"));
        let next = lines[at + 1..]
            .iter()
            .position(|l| l.trim_start().starts_with('-'))
            .map_or(lines.len(), |n| at + 1 + n);
        lines[at..next].join(" ")
    };
    for cmd in ["compare", "page"] {
        let server = flag_line(cmd, "--server-cpus");
        assert!(server.contains("built-in server"), "{cmd}: {server}");
        let client = flag_line(cmd, "--client-cpus");
        assert!(client.contains("links"), "{cmd}: {client}");
    }
    let server = flag_line("upstream", "--server-cpus");
    for what in ["backends", "links", "proxy"] {
        assert!(server.contains(what), "upstream lacks {what}: {server}");
    }
    assert!(!server.contains("built-in server"), "upstream: {server}");
    let client = flag_line("upstream", "--client-cpus");
    assert!(!client.contains("links"), "upstream: {client}");
    let no_pin = flag_line("upstream", "--no-pin");
    assert!(no_pin.contains("backends"), "upstream: {no_pin}");
}

#[test]
fn refused_connection_exits_1_with_the_reason() {
    let port = common::closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = h2lab()
        .args(["bench", "-n", "10", "-c", "2", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(
        err.contains(&format!("could not connect to 127.0.0.1:{port}")) && err.contains("refused"),
        "{err:?}"
    );
    // h2load's first lines were printed before the run started.
    assert!(stdout_of(&out).starts_with("starting benchmark...\n"));
}

#[test]
fn h1_run_prints_h2load_report_and_writes_json_and_csv() {
    let (addr, counters) = common::tcp_server(653);
    let dir = common::scratch_dir("e2e");
    let json_path = dir.join("result.json");
    let csv_path = dir.join("result.csv");
    let url = format!("http://{addr}/index.html");
    let out = h2lab()
        .args([
            "bench", "-n", "200", "-c", "4", "-m", "4", "--h1", "-N", "20s",
        ])
        .arg("--json")
        .arg(&json_path)
        .arg("--csv")
        .arg(&csv_path)
        .arg(&url)
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "");
    common::assert_h2load_shape(&stdout, "http/1.1", 200, 653);
    assert_eq!(counters.requests.load(Ordering::SeqCst), 200);

    // JSON: valid against the schema, same numbers as the text.
    let text = std::fs::read_to_string(&json_path).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(h2lab_report::json::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["requests"]["succeeded"], 200);
    assert_eq!(doc["status_codes"]["2xx"], 200);
    assert_eq!(doc["traffic"]["data_bytes"], 200 * 653);
    assert_eq!(doc["protocol"]["application"], "http/1.1");
    assert_eq!(doc["options"]["clients"], 4);
    assert_eq!(doc["options"]["uris"][0], url.as_str());
    // Defaults of h2lab's own options: no coalescing (h2load's load shape) and read
    // waiting (50 µs).
    assert!(doc["options"]["coalesce_hold_seconds"].is_null());
    assert_eq!(doc["options"]["read_wait_seconds"], 0.00005);
    assert!(doc["read_waits"].is_u64(), "{}", doc["read_waits"]);
    assert_eq!(doc["latency"]["request"]["count"], 200);
    assert_eq!(doc["client_rps"]["values"].as_array().unwrap().len(), 4);
    assert_eq!(doc["interrupted"], false);
    // The serialised histogram decodes back to the reported count.
    let parsed = h2lab_report::json::parse(&text).unwrap();
    let hist = h2lab_report::json::decode_histogram(&parsed.histograms.request_time).unwrap();
    assert_eq!(hist.len(), 200);
    // Merging the result with itself doubles the counts.
    let merged =
        h2lab_report::json::merge(&parsed, &parsed, h2lab_report::json::MergeMode::Sequential)
            .unwrap();
    assert_eq!(merged.requests.succeeded, 400);
    assert_eq!(merged.latency.request.count, 400);

    // CSV: header + one row; a second run appends a row.
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], h2lab_report::csv::COLUMNS.join(","));
    assert!(rows[1].starts_with(&format!("{url},http/1.1,4,4,1,")));
    h2lab()
        .args(["bench", "-n", "4", "--h1"])
        .arg("--csv")
        .arg(&csv_path)
        .arg(&url)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&csv_path).unwrap().lines().count(),
        3
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tls_fallback_to_http11_is_reported_and_can_be_required_away() {
    let (addr, _) = common::tls_server(100, &["http/1.1"]);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let out = h2lab()
        .args(["bench", "-n", "20", "-c", "2", "-N", "20s", &url])
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr_of(&out));
    assert!(
        stdout.contains("TLS Protocol: TLSv1.3\nCipher: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Application protocol: http/1.1\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nwarning: h2 was offered but the server selected http/1.1"),
        "{stdout}"
    );
    assert!(stdout.contains("requests: 20 total, 20 started, 20 done, 20 succeeded"));

    let out = h2lab()
        .args([
            "bench",
            "-n",
            "20",
            "-c",
            "2",
            "--require-protocol",
            "h2",
            &url,
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.contains("--require-protocol h2"), "{err:?}");
}

#[test]
fn h2load_170_output_histogram_and_output_file() {
    let (addr, _counters) = common::tcp_server(653);
    let dir = common::scratch_dir("output-file");
    let path = dir.join("h2load.json");
    let out = h2lab()
        .args(["bench", "-n", "200", "-c", "4", "--h1", "-N", "20s"])
        .args(["--output-format=h2load-1.70", "--histogram"])
        .arg(format!("--output-file={}", path.display()))
        .arg(format!("http://{addr}/"))
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr_of(&out));
    assert!(
        stdout.contains(h2lab_report::layout::HEADER_170),
        "{stdout}"
    );
    for title in [
        "request     : ",
        "connect     : ",
        "TTFB        : ",
        "req/s       : ",
    ] {
        assert!(stdout.lines().any(|l| l.starts_with(title)), "{stdout}");
    }
    assert!(stdout.contains("%)\n"), "no histogram in {stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["version"], "v1");
    let m = &doc["measurements"];
    assert_eq!(m["requests"]["succeeded"], 200);
    let perf = &m["performance"];
    assert_eq!(perf["request"]["samples"].as_array().unwrap().len(), 200);
    assert_eq!(perf["connect"]["samples"].as_array().unwrap().len(), 4);
    assert_eq!(
        perf["request_per_second"]["samples"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}
