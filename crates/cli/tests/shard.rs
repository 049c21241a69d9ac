//! The shard contract, locally: N processes of the built `h2lab` with `JOB_COMPLETION_INDEX`
//! set (as a Kubernetes Indexed Job sets it), started together with `--start-at`, their
//! results merged with `h2lab merge`, compared with one process running the whole workload
//! against the deterministic built-in server: the counts are identical.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use assert_cmd::cargo::cargo_bin;

fn bin() -> PathBuf {
    cargo_bin!("h2lab").to_path_buf()
}

fn server() -> (h2lab_server::RunningServer, String) {
    let s = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let uri = format!("http://{}/", s.addr().unwrap());
    (s, uri)
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("h2lab-cli-shard-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(h2lab_report::json::SCHEMA).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    doc
}

/// Runs `n` shard processes together (`--shard auto/n`, `JOB_COMPLETION_INDEX`, a common
/// `--start-at`), each printing its result as one JSON line on stdout; returns their outputs.
fn shards(n: u32, args: &[&str]) -> Vec<Output> {
    let start = SystemTime::now() + Duration::from_secs(2);
    let at = format!(
        "{:.3}",
        start.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    );
    let children: Vec<_> = (0..n)
        .map(|i| {
            Command::new(bin())
                .args(["bench", "--shard", &format!("auto/{n}"), "--start-at", &at])
                .args(["--json", "-"])
                .args(args)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            out
        })
        .collect()
}

fn one(args: &[&str], json_path: &Path) -> serde_json::Value {
    let out = Command::new(bin())
        .arg("bench")
        .args(args)
        .args(["--json", json_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    json(json_path)
}

/// Writes the shards' stdout into one file, as `kubectl logs` of the pods would.
fn logs(outs: &[Output], path: &Path) {
    let all: Vec<u8> = outs.iter().flat_map(|o| o.stdout.clone()).collect();
    std::fs::write(path, all).unwrap();
}

fn merge(args: &[&str]) -> Output {
    Command::new(bin())
        .arg("merge")
        .args(args)
        .output()
        .unwrap()
}

fn assert_same_counts(merged: &serde_json::Value, whole: &serde_json::Value) {
    for k in [
        "total",
        "started",
        "done",
        "succeeded",
        "failed",
        "errored",
        "timeout",
    ] {
        assert_eq!(merged["requests"][k], whole["requests"][k], "requests.{k}");
    }
    assert_eq!(merged["status_codes"], whole["status_codes"]);
    assert_eq!(
        merged["traffic"]["data_bytes"],
        whole["traffic"]["data_bytes"]
    );
    assert_eq!(
        merged["latency"]["request"]["count"],
        whole["latency"]["request"]["count"]
    );
    assert_eq!(merged["options"], whole["options"], "the whole plan");
}

#[test]
fn three_shards_add_up_to_one_process() {
    let (_s, uri) = server();
    let d = dir("closed");
    let args = ["-n", "600", "-c", "6", "-m", "4", "-t", "2", &uri];
    let whole = one(&args, &d.join("one.json"));
    let outs = shards(3, &args);
    for (i, o) in outs.iter().enumerate() {
        let stdout = text(&o.stdout);
        assert!(
            stdout.contains("requests: 200 total"),
            "shard {i}: {stdout}"
        );
    }
    logs(&outs, &d.join("shards.log"));
    let m = merge(&[
        d.join("shards.log").to_str().unwrap(),
        "--json",
        d.join("merged.json").to_str().unwrap(),
        "--timeseries",
        d.join("series.csv").to_str().unwrap(),
        "--threshold",
        "errors<1%",
    ]);
    let stdout = text(&m.stdout);
    assert_eq!(m.status.code(), Some(0), "{stdout}{}", text(&m.stderr));
    assert!(stdout.contains("merged 3 shard(s) of 3"), "{stdout}");
    assert!(
        stdout.contains("requests: 600 total, 600 started, 600 done, 600 succeeded"),
        "{stdout}"
    );
    assert!(
        stdout.contains("thresholds: 1 passed, 0 failed"),
        "{stdout}"
    );
    let merged = json(&d.join("merged.json"));
    assert_same_counts(&merged, &whole);
    assert_eq!(merged["sharded"]["merged"], serde_json::json!([0, 1, 2]));
    let series = std::fs::read_to_string(d.join("series.csv")).unwrap();
    let completed: u64 = series
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(5).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(completed, 600, "{series}");
    // A failing threshold on the merged result exits 99.
    let m = merge(&[
        d.join("shards.log").to_str().unwrap(),
        "--threshold",
        "rps<0.001",
    ]);
    assert_eq!(m.status.code(), Some(99), "{}", text(&m.stdout));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn open_model_shards_take_exactly_the_whole_schedule() {
    let (_s, uri) = server();
    let d = dir("open");
    let args = [
        "--arrival-rate",
        "3000",
        "-n",
        "450",
        "-c",
        "5",
        "-m",
        "8",
        &uri,
    ];
    let whole = one(&args, &d.join("one.json"));
    let outs = shards(2, &args);
    let mut paths = Vec::new();
    for (i, o) in outs.iter().enumerate() {
        let p = d.join(format!("s{i}.json"));
        let line = text(&o.stdout)
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap()
            .to_string();
        std::fs::write(&p, line).unwrap();
        let doc = json(&p);
        assert_eq!(doc["shard"]["index"], i as u64);
        assert_eq!(doc["shard"]["slice"]["lanes"], 5);
        assert!(doc["shard"]["late_seconds"].as_f64().unwrap() >= 0.0);
        paths.push(p);
    }
    let names: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    let mut margs = names.clone();
    let out_json = d.join("merged.json");
    margs.extend(["--json", out_json.to_str().unwrap()]);
    let m = merge(&margs);
    assert_eq!(m.status.code(), Some(0), "{}", text(&m.stderr));
    let merged = json(&out_json);
    assert_same_counts(&merged, &whole);
    assert_eq!(
        merged["open_model"]["scheduled"],
        whole["open_model"]["scheduled"]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn merge_refuses_what_does_not_belong_together_in_one_line() {
    let (_s, uri) = server();
    let d = dir("refuse");
    let run = |shard: &str, n: &str, name: &str| {
        let p = d.join(name);
        let out = Command::new(bin())
            .args(["bench", "--shard", shard, "-n", n, "-c", "3", &uri])
            .args(["--json", p.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        p.to_str().unwrap().to_string()
    };
    let a0 = run("0/3", "30", "a0.json");
    let a1 = run("1/3", "30", "a1.json");
    let b2 = run("2/3", "31", "b2.json");
    let cases: &[(&[&str], &str)] = &[
        (&[&a0, &a1], "missing shard 2 of 3"),
        (&[&a0, &a1, &a1], "shard 1/3 given twice"),
        (&[&a0, &a1, &b2], "different runs"),
    ];
    for (inputs, want) in cases {
        let m = merge(inputs);
        let err = text(&m.stderr);
        assert_eq!(m.status.code(), Some(1), "{inputs:?}: {err}");
        assert!(err.starts_with("h2lab merge: error: "), "{err}");
        assert!(err.contains(want), "{inputs:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let m = merge(&[&a0, &a1, "--allow-partial"]);
    assert_eq!(m.status.code(), Some(0), "{}", text(&m.stderr));
    assert!(text(&m.stderr).contains("merged 2 of 3 shards; missing: 2"));
    assert!(
        text(&m.stdout).contains("requests: 20 total"),
        "{}",
        text(&m.stdout)
    );
    // A start after --start-at is said and recorded.
    let p = d.join("late.json");
    let out = Command::new(bin())
        .args([
            "bench",
            "--shard",
            "0/1",
            "--start-at",
            "2020-01-01T00:00:00Z",
        ])
        .args(["-n", "4", &uri, "--json", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("shard 0/1 started") && text(&out.stderr).contains("late"),
        "{}",
        text(&out.stderr)
    );
    assert!(json(&p)["shard"]["late_seconds"].as_f64().unwrap() > 1e8);
    // auto without the index variable is a one-line error.
    let out = Command::new(bin())
        .args(["bench", "--shard", "auto/2", "-n", "4", &uri])
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("JOB_COMPLETION_INDEX is not set"));
    std::fs::remove_dir_all(&d).unwrap();
}
