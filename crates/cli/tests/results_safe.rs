//! No lost results: the `--json` result replaces the target atomically (a temporary file in
//! the same directory, then a rename: readers never see a partial document, and nothing is
//! left behind), also when the run is interrupted by SIGTERM (SIGINT is covered in cli.rs);
//! a result that cannot be written is a one-line error with exit status 1 after the report;
//! `--timeseries` rows are on disk as soon as their interval ends, so a run killed with
//! SIGKILL keeps every finished interval.

mod common;

use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::time::Duration;

fn h2lab() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin!("h2lab"))
}

/// Names in `dir`, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn json_replaces_the_previous_result_by_rename() {
    let (addr, _) = common::tcp_server(10);
    let dir = common::scratch_dir("atomic");
    let path = dir.join("r.json");
    std::fs::write(&path, b"previous result").unwrap();
    let before = std::fs::metadata(&path).unwrap().ino();
    // Another name for the old file: an in-place rewrite would change what it shows.
    std::fs::hard_link(&path, dir.join("old.json")).unwrap();
    let out = h2lab()
        .args(["bench", "-n", "20", "-c", "2", "--h1", "--json"])
        .arg(&path)
        .arg(format!("http://{addr}/"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // A new inode under the name, the old one untouched: written elsewhere, then renamed.
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), before);
    assert_eq!(
        std::fs::read(dir.join("old.json")).unwrap(),
        b"previous result"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["requests"]["succeeded"], 20);
    // No temporary file left behind.
    assert_eq!(names(&dir), vec!["old.json", "r.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_still_writes_the_json() {
    let (addr, _) = common::tcp_server(10);
    let dir = common::scratch_dir("sigterm");
    let path = dir.join("r.json");
    let (status, all) = common::interrupt_bench(addr, &path, "-TERM");
    assert_eq!(status.code(), Some(130), "{all}");
    assert!(all.contains("\ninterrupted: "), "{all}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["options"]["duration_seconds"], 600.0);
    assert_eq!(names(&dir), vec!["r.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_result_is_an_error_after_the_report() {
    let (addr, _) = common::tcp_server(10);
    let dir = common::scratch_dir("unwritable");
    let path = dir.join("missing-dir/r.json");
    let out = h2lab()
        .args(["bench", "-n", "4", "--h1", "--json"])
        .arg(&path)
        .arg(format!("http://{addr}/"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("\nrequests: 4 total"), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--json"), "{stderr}");
    assert_eq!(names(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigkill_keeps_every_finished_interval_of_the_timeseries() {
    let server = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let dir = common::scratch_dir("sigkill-series");
    let path = dir.join("series.jsonl");
    let mut child = h2lab()
        .args([
            "bench",
            "--arrival-rate",
            "200",
            "-D",
            "10m",
            "-c",
            "2",
            "-m",
            "4",
        ])
        .args(["--interval", "100ms", "--timeseries"])
        .arg(&path)
        .arg(format!("http://{}/", server.addr().unwrap()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (on the file's state, polled) until five intervals are on disk.
    let complete_rows = |text: &str| text.matches('\n').count();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let seen = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let n = complete_rows(&text);
        if n >= 5 {
            break n;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("only {n} rows after 60 s: {text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL: no handler, no final flush
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'), "a torn last row: {text:?}");
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        rows.len() >= seen,
        "{} rows after the kill, {seen} before",
        rows.len()
    );
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["index"], i as u64, "{text}");
        assert_eq!(r["target"], 200.0);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
