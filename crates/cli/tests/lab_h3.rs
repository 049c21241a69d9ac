//! HTTP/3 in the lab commands, end to end through the binary: `compare --protocols` with
//! `h3` (the HTTP/3-vs-HTTP/2 table), `page --loss` (HTTP/1.1 vs HTTP/2 vs HTTP/3 per loss
//! level), and the flags' one-line errors. Built-in server and links in-process, port 0.

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_lab::proto::LabProtocol;
use h2lab_testkit::render_check as check;

fn h2lab() -> assert_cmd::Command {
    cargo_bin_cmd!("h2lab")
}

/// Runs `cmd`, asserts it succeeded and printed every line of `wants`.
fn succeeds_with(cmd: &mut assert_cmd::Command, wants: &[&str]) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");
    for want in wants {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
}

#[test]
fn compare_with_h3_prints_the_http3_vs_http2_table() {
    succeeds_with(
        h2lab().args([
            "compare",
            "--tiny",
            "--protocols",
            "h1-tls,h2,h3",
            "--payloads",
            "1k",
            "--warm-up",
            "600ms",
            "--no-report",
        ]),
        &[
            "HTTP/2 vs HTTP/1.1, like for like",
            "h2/h1-tls",
            "HTTP/3 vs HTTP/2, like for like",
            "h3/h2",
            "UDP: HTTP/3 over QUIC",
        ],
    );
}

#[test]
fn page_loss_experiment_compares_three_protocols_per_level() {
    let dir = std::env::temp_dir().join(format!("h2lab-cli-lab-h3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    succeeds_with(
        h2lab().current_dir(&dir).args([
            "page",
            "--loss",
            "0,3",
            "-n",
            "1",
            "--page-query",
            "n=30&min=1k&max=4k&seed=1",
        ]),
        &[
            "Page load under loss",
            "link wan: rtt 40ms",
            "link lossy3: rtt 40ms, down 50mbit, up 50mbit, loss 3%",
            // compare's pair names and verdict words.
            "h2/h1-tls",
            "h3/h2",
            "HTTP/3 (QUIC)",
        ],
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("h2lab-page-report").join("results.json")).unwrap(),
    )
    .unwrap();
    let levels = json["loss"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    for l in levels {
        let protos: Vec<&str> = l["protocols"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["proto"].as_str().unwrap())
            .collect();
        assert_eq!(protos, vec!["h1-tls", "h2", "h3"]);
        for p in l["protocols"].as_array().unwrap() {
            assert_eq!(p["loads"][0]["requests"], 31, "{p}");
            assert_eq!(p["loads"][0]["failed"], 0, "{p}");
        }
    }
    // The report renders in headless Chromium: every chart laid out, HTTP/3's colour visible.
    let index = dir.join("h2lab-page-report").join("index.html");
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.contains("page-time-by-loss"), "the loss chart");
    if check::find_chromium().is_some() {
        let c = check::check(
            &index,
            &[
                LabProtocol::H1Tls.color(),
                LabProtocol::H2.color(),
                LabProtocol::H3.color(),
            ],
            2400,
        )
        .unwrap();
        eprintln!("{c:?}");
        assert_eq!(c.sized_charts, c.charts, "{c:?}");
        for (color, n) in [LabProtocol::H3.color()].iter().zip(&c.color_pixels[2..]) {
            assert!(*n > 300, "{color} barely visible: {c:?}");
        }
    } else if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true but chromium is not installed");
    } else {
        h2lab_testkit::note_skip("chromium");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_loss_levels_are_one_line_errors() {
    for cmd in ["compare", "page"] {
        let out = h2lab()
            .args([cmd, "--loss", "2", "--no-report"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0));
        // `page` words it `--loss: …`; `compare` parses the flag into its type (clap: `invalid
        // value '2' for '--loss <LIST>': …`).
        assert!(
            stderr.contains("--loss") && stderr.contains("loss level \"2\" has no link profile"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
