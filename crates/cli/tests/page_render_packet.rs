//! `h2lab page --render` over the packet link, ended by SIGTERM in the middle of its loads:
//! nothing it started is left in the server namespace (nghttpd and h2o, children started
//! there, die with it), and the namespace itself is gone.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Processes of the machine whose network namespace is `ns` (`net:[N]`).
fn processes_in(ns: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if std::fs::read_link(e.path().join("ns/net")).is_ok_and(|l| l.to_string_lossy() == ns) {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push(format!(
                "{} {}",
                e.file_name().to_string_lossy(),
                comm.trim()
            ));
        }
    }
    out
}

#[test]
fn page_render_leaves_nothing_in_the_server_namespace_after_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_h2lab"))
        .args([
            "page",
            "--render",
            "--page-query",
            "n=20&seed=3&css=2&css_size=4k&js=2&js_size=4k",
            "-n",
            "6",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut server_ns = None;
    // The progress lines wrap at 120 columns: the words of all of them, in order.
    let mut words: Vec<String> = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("using the relay") {
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "packet mode unavailable in CI: {line}"
            );
            eprintln!("skipped: {line}");
            return;
        }
        words.extend(line.split_whitespace().map(str::to_owned));
        // `... server 198.18.0.2 (TCP congestion control X, netns net:[N])`.
        let at = words
            .windows(2)
            .position(|w| w[0] == "server" && w[1] == "198.18.0.2");
        if let Some(ns) = at.and_then(|i| words[i..].iter().find(|w| w.starts_with("net:["))) {
            server_ns.get_or_insert_with(|| ns.trim_end_matches([')', ',']).to_owned());
        }
        // The anchors have started and the loads are under way.
        if server_ns.is_some() && line.contains(" load 2/") {
            break;
        }
    }
    let ns = server_ns.expect("a packet path's server namespace in the progress lines");
    // nghttpd and h2o, when installed, run there (h2lab's own threads are not processes).
    let path = std::env::var_os("PATH").unwrap_or_default();
    let installed = |name: &str| {
        std::env::split_paths(&path)
            .chain([std::path::PathBuf::from("/usr/sbin")])
            .any(|d| d.join(name).is_file())
    };
    if installed("nghttpd") || installed("h2o") {
        assert!(!processes_in(&ns).is_empty(), "no anchor runs in {ns}");
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert!(!status.success());
    // Children killed by the kernel (parent-death signal) are reaped by init: wait for it.
    let end = Instant::now() + Duration::from_secs(10);
    while !processes_in(&ns).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_in(&ns), Vec::<String>::new(), "left in {ns}");
}
