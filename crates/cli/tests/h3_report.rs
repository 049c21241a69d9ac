//! `h2lab bench --h3` against `h2lab serve --h3` (in process, loopback, port 0): the QUIC
//! figures h2load 1.69+ reports — the `UDP datagram:` line, the six QUIC rows of the 1.70
//! table, `udp_datagram` and the QUIC entries of `--output-file`, the `quic` object of
//! `--json` — are there and agree with each other.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_server::ServerConfig;
use serde_json::Value;

/// `h2lab serve --h3` in process on 127.0.0.1 (TLS and QUIC on port 0, certificates in
/// `dir/certs`) with the rest of `base`, and the `https://` URL of `path` on it.
fn h3_server(
    dir: &std::path::Path,
    base: ServerConfig,
    path: &str,
) -> (h2lab_server::RunningServer, String) {
    let server = h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir.join("certs")),
        h3: true,
        ..base
    })
    .unwrap();
    let url = format!(
        "https://127.0.0.1:{}{path}",
        server.tls_addr().unwrap().port()
    );
    (server, url)
}

/// Runs `cmd` (an `h2lab bench`, at most 120 s), asserts it exited 0 and returns its stdout.
fn bench_ok(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.timeout(Duration::from_secs(120)).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}{:?}", out.stderr);
    stdout
}

#[test]
fn quic_rows_text_output_file_and_json_agree() {
    let dir = common::scratch_dir("h3-report");
    let (server, url) = h3_server(&dir, ServerConfig::local(), "/data?size=653");
    let (out_file, json_file) = (dir.join("h2load.json"), dir.join("bench.json"));
    let stdout = bench_ok(
        cargo_bin_cmd!("h2lab")
            .args(["bench", "--h3", "-n", "300", "-c", "3", "-m", "10"])
            .args(["--output-format", "h2load-1.70"])
            .arg(format!("--output-file={}", out_file.display()))
            .arg(format!("--json={}", json_file.display()))
            .arg(&url),
    );
    assert!(
        stdout.contains("requests: 300 total, 300 started, 300 done, 300 succeeded, 0 failed"),
        "{stdout}"
    );
    assert!(stdout.contains("(195900) data\n"), "{stdout}");

    // The datagram line after `traffic:`, the six rows after `req/s`.
    let lines: Vec<&str> = stdout.lines().collect();
    let t = lines
        .iter()
        .position(|l| l.starts_with("traffic:"))
        .unwrap();
    let udp: Vec<u64> = lines[t + 1]
        .strip_prefix("UDP datagram: ")
        .unwrap_or_else(|| panic!("no datagram line in\n{stdout}"))
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(udp.len() == 2 && udp[0] > 0 && udp[1] > 0, "{stdout}");
    let r = lines.iter().position(|l| l.starts_with("req/s")).unwrap();
    let titles = [
        "min RTT     : ",
        "smoothed RTT: ",
        "packets sent: ",
        "packets recv: ",
        "packets lost: ",
        "GRO packets : ",
    ];
    for (i, title) in titles.iter().enumerate() {
        let l = lines[r + 1 + i];
        assert!(l.starts_with(title) && l.ends_with('%'), "{l:?}\n{stdout}");
    }

    // --output-file: h2load's keys, the same datagram counts, one sample per client.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let m = &doc["measurements"];
    // Header bytes as h2load counts them for HTTP/3: the QPACK-encoded sections (HEADERS
    // payloads) and the decoded names and values.
    let (head, decomp) = (
        m["traffic"]["headers"].as_u64().unwrap(),
        m["traffic"]["headers_decompressed"].as_u64().unwrap(),
    );
    assert!(head > 0 && head < decomp, "{head} {decomp}");
    // The text's "space savings" is computed from the same encoded bytes: QPACK's
    // compression shows (a decoded size counted as wire bytes would make it 0%).
    let savings = 1.0 - head as f64 / decomp as f64;
    assert!(savings > 0.5, "{savings}");
    let shown = format!("headers (space savings {:.2}%)", savings * 100.0);
    assert!(stdout.contains(&shown), "{shown} not in\n{stdout}");
    assert_eq!(m["udp_datagram"]["sent"], udp[0]);
    assert_eq!(m["udp_datagram"]["recv"], udp[1]);
    let p = &m["performance"];
    for k in [
        "min_rtt",
        "smoothed_rtt",
        "packets_sent",
        "packets_recv",
        "packets_lost",
    ] {
        assert_eq!(p[k]["samples"].as_array().unwrap().len(), 3, "{k}");
    }
    let min_rtt = p["min_rtt"]["min"].as_f64().unwrap();
    assert!(min_rtt > 0.0 && min_rtt < 1.0, "{min_rtt}");
    assert!(p["smoothed_rtt"]["min"].as_f64().unwrap() >= min_rtt);
    assert!(p["packets_sent"]["min"].as_f64().unwrap() > 0.0);

    // --json: the same figures; the GRO counts add up to the datagrams received.
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json_file).unwrap()).unwrap();
    let js = j["traffic"]["header_space_savings"].as_f64().unwrap();
    assert!((js - savings).abs() < 1e-9, "{js} {savings}");
    let q = &j["quic"];
    assert_eq!(q["datagrams_sent"], udp[0]);
    assert_eq!(q["datagrams_received"], udp[1]);
    let by_read: u64 = q["gro_counts"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(k, c)| k as u64 * c.as_u64().unwrap())
        .sum();
    assert_eq!(by_read, udp[1], "{q}");
    // Each connection processed at most what its socket received.
    let recv: f64 = q["packets_received"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!(recv > 0.0 && recv <= udp[1] as f64, "{recv} of {}", udp[1]);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn qlog_file_per_connection() {
    let dir = common::scratch_dir("h3-qlog");
    let (server, url) = h3_server(&dir, ServerConfig::local(), "/data?size=653");
    let base = dir.join("run");
    let stdout = bench_ok(
        cargo_bin_cmd!("h2lab")
            .args(["bench", "--h3", "-n", "40", "-c", "3", "-t", "2", "-m", "4"])
            .arg(format!("--qlog-file-base={}", base.display()))
            .arg(&url),
    );
    assert!(stdout.contains("40 succeeded, 0 failed"), "{stdout}");
    // h2load's naming: BASE.<worker>.<client>.sqlog (-c 3 -t 2: two clients on thread 0).
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sqlog"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["run.0.0.sqlog", "run.0.1.sqlog", "run.1.0.sqlog"],
        "{stdout}"
    );
    for n in &names {
        let text = std::fs::read_to_string(dir.join(n)).unwrap();
        // JSON-SEQ (RFC 7464): each record is RS, a JSON text, LF.
        let records: Vec<Value> = text
            .split('\u{1e}')
            .filter(|r| !r.trim().is_empty())
            .map(|r| serde_json::from_str(r.trim()).unwrap_or_else(|e| panic!("{n}: {e}: {r}")))
            .collect();
        assert!(
            records[0].get("qlog_version").is_some(),
            "{n}: {}",
            records[0]
        );
        let events: Vec<&str> = records[1..]
            .iter()
            .map(|e| {
                assert!(e["time"].is_number(), "{n}: {e}");
                e["name"].as_str().unwrap_or_default()
            })
            .collect();
        for want in ["transport:packet_sent", "transport:packet_received"] {
            assert!(events.contains(&want), "{n}: no {want} in {events:?}");
        }
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that stops in the middle of a run: the client's reconnections meet a closed UDP
/// port, which the kernel reports (ICMP port unreachable → ECONNREFUSED on the connected
/// socket) at once, or a draining server that refuses them; the run ends with the failures
/// counted instead of waiting out QUIC's idle timeout on every connection.
#[test]
fn a_stopped_server_ends_the_run_with_failed_connections() {
    use std::process::Command;
    let dir = common::scratch_dir("h3-stopped");
    let (server, url) = h3_server(&dir, ServerConfig::local(), "/data?size=653");
    let log = dir.join("requests.log");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("h2lab"));
    cmd.args([
        "bench",
        "--h3",
        "-n",
        "100000000",
        "-c",
        "2",
        "-m",
        "4",
        &url,
    ])
    .arg(format!("--log-file={}", log.display()));
    let (mut child, reader) = common::spawn_until_protocol(&mut cmd);
    // Responses are arriving (the per-request log grows) before the server stops.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&log).map_or(0, |m| m.len()) < 4096 {
        assert!(std::time::Instant::now() < deadline, "no responses logged");
        std::thread::sleep(Duration::from_millis(10));
    }
    let errors = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
            s
        })
    });
    server.shutdown();
    server.join().unwrap();
    // Waits for the run to end (no deadline): a client that missed the ICMP error would
    // end only at QUIC's idle timeout, and the cause asserted below would say so.
    let status = child.wait().unwrap();
    let errors = errors.map(|t| t.join().unwrap()).unwrap_or_default();
    let out = reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{out}");
    let requests = out
        .lines()
        .find(|l| l.starts_with("requests: 100000000 total"))
        .unwrap_or_else(|| panic!("no requests line in\n{out}"));
    let n: Vec<u64> = requests
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    // total, started, done, succeeded, failed, errored, timeout: every request accounted
    // for, the ones never sent failed.
    assert_eq!(n[3] + n[4], 100_000_000, "{requests}");
    assert!(n[4] > 0 && n[5] > 0, "{requests}");
    // Ended by a refusal, not by a timeout: either the kernel's ICMP error (the server's
    // socket already closed) or, when a reconnection reaches the server while it is still
    // draining after its GOAWAY, the server closing the new connection's handshake. Which
    // of the two a run meets depends on the scheduler; both end the run at once.
    assert!(
        out.contains("connection refused (ICMP port unreachable)")
            || out.contains("QUIC handshake failed (connection closed)"),
        "{out}{errors}"
    );
    assert!(!out.contains("timed out"), "{out}{errors}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The body bytes counted over HTTP/3 are the response contents, exactly as over HTTP/2 over
/// TLS, for every endpoint (a frame header or a varint counted as body would show here).
#[test]
fn body_bytes_over_h3_equal_those_over_h2() {
    let dir = common::scratch_dir("h3-bodies");
    let (server, _) = h3_server(&dir, ServerConfig::local(), "/");
    let port = server.tls_addr().unwrap().port();
    let data = |flags: &[&str], path: &str| -> u64 {
        let out = cargo_bin_cmd!("h2lab")
            .arg("bench")
            .args(flags)
            .args(["-n", "20", "-c", "2", "-m", "5"])
            .arg(format!("https://127.0.0.1:{port}{path}"))
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        common::traffic_data_bytes(&String::from_utf8_lossy(&out.stdout))
    };
    for path in ["/", "/ping", "/json", "/data?size=1", "/data?size=70000"] {
        let h3 = data(&["--h3"], path);
        assert_eq!(h3, data(&[], path), "{path}");
        assert!(h3 > 0, "{path}");
    }
    // /ping answers "pong": 4 bytes per response, over every protocol.
    assert_eq!(data(&["--h3"], "/ping"), 20 * 4);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's MAX_STREAMS (4) below `-m 16`: no request stream beyond the limit is ever
/// opened. quinn-proto on the server closes a connection that opens one (STREAM_LIMIT_ERROR),
/// which would show as failed requests, errors and reconnections; none do, and the counts are
/// exact.
#[test]
fn no_stream_beyond_the_servers_max_streams() {
    let dir = common::scratch_dir("h3-max-streams");
    let limited = ServerConfig {
        max_concurrent_streams: 4,
        ..ServerConfig::local()
    };
    let (server, url) = h3_server(&dir, limited, "/data?size=653");
    let stdout = bench_ok(
        cargo_bin_cmd!("h2lab").args(["bench", "--h3", "-n", "400", "-c", "2", "-m", "16", &url]),
    );
    assert!(
        stdout.contains(
            "requests: 400 total, 400 started, 400 done, 400 succeeded, 0 failed, 0 errored, \
             0 timeout"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("(261200) data"), "{stdout}");
    assert!(
        !stdout.contains("errors:") && !stdout.contains("connections:"),
        "{stdout}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-d FILE` over HTTP/3: each request carries the body in a DATA frame after its HEADERS
/// (with its content-length), written as QUIC flow control allows. The server checks the
/// content-length against the DATA it receives (a mismatch resets the stream: the request
/// would fail) and `/info` echoes the count; small and 10 MiB bodies.
#[test]
fn request_bodies_small_and_ten_megabytes() {
    let dir = common::scratch_dir("h3-bodies-up");
    let (server, url) = h3_server(&dir, ServerConfig::local(), "/info");
    let small = dir.join("small.bin");
    std::fs::write(&small, b"hello").unwrap();
    let big = dir.join("big.bin");
    std::fs::write(&big, vec![b'x'; 10 << 20]).unwrap();
    let run = |flags: &[&str], body: &std::path::Path| -> (String, u64) {
        let stdout = bench_ok(
            cargo_bin_cmd!("h2lab")
                .arg("bench")
                .args(flags)
                .args(["-n", "6", "-c", "2", "-m", "2", "-d"])
                .arg(body)
                .arg(&url),
        );
        assert!(
            stdout.contains(
                "requests: 6 total, 6 started, 6 done, 6 succeeded, 0 failed, 0 errored, \
                 0 timeout"
            ) && stdout.contains("status codes: 6 2xx"),
            "{stdout}"
        );
        let data = common::traffic_data_bytes(&stdout);
        (stdout, data)
    };
    for body in [&small, &big] {
        let (h3, h3_data) = run(&["--h3"], body);
        assert!(h3.contains("Application protocol: h3"), "{h3}");
        // /info's answer (it echoes the body length and the content-length) is as long as
        // over HTTP/2 over TLS.
        let (_, h2_data) = run(&[], body);
        assert_eq!(h3_data, h2_data, "{}", body.display());
    }
    // The echoed count has 8 digits for 10 MiB, 1 for "hello" (body_length and
    // content-length): 2 × 7 more octets per response.
    let (_, s) = run(&["--h3"], &small);
    let (_, b) = run(&["--h3"], &big);
    assert_eq!(b - s, 6 * 2 * 7);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--qlog-file-base` without HTTP/3: h2load's warning on stderr, the run goes on.
#[test]
fn qlog_file_base_without_h3_warns_like_h2load() {
    let port = common::closed_port();
    let out = cargo_bin_cmd!("h2lab")
        .args(["bench", "-n", "1", "--qlog-file-base=/nonexistent/q"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("Warning: --qlog-file-base: only effective in quic, ignoring.\n"),
        "{stderr}"
    );
}

/// `--max-udp-payload-size` above what h2lab serve advertises (1,472 bytes), above
/// quinn-proto's default initial congestion window (14,720 bytes) and above what an IPv4
/// datagram holds (65,507 bytes): each run completes with exact counts instead of hanging in
/// the handshake (the size is lowered to what the path carries, the initial window follows
/// RFC 9002 for the size, and the server's transport parameter caps it after the handshake).
#[test]
fn max_udp_payload_size_beyond_what_the_path_and_server_allow() {
    let dir = common::scratch_dir("h3-max-udp");
    let (server, url) = h3_server(&dir, ServerConfig::local(), "/data?size=20000");
    for size in ["1472", "1500", "16384", "65527"] {
        let stdout = bench_ok(cargo_bin_cmd!("h2lab").args([
            "bench",
            "--h3",
            "-n",
            "40",
            "-c",
            "2",
            "-m",
            "4",
            "--max-udp-payload-size",
            size,
            &url,
        ]));
        assert!(
            stdout.contains(
                "requests: 40 total, 40 started, 40 done, 40 succeeded, 0 failed, 0 errored, \
                 0 timeout"
            ),
            "--max-udp-payload-size {size}: {stdout}"
        );
        assert!(stdout.contains("(800000) data"), "{size}: {stdout}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
