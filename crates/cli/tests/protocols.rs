//! One protocol matrix for `h2lab bench` (in the style of hyper's `tests/support`): every
//! behaviour test below runs over each row of [`PROTOCOLS`] — HTTP/1.1, h2c, h2 over TLS and
//! HTTP/3 —
//! against the in-process `h2lab serve`, through the real binary. A new protocol is one more
//! row.
//!
//! The behaviours: exact request counts and h2load's report lines, statuses, body bytes
//! (small and large bodies), a server whose stream limit is below `-m`, connections the server
//! ends (idle timeout: GOAWAY for HTTP/2, a close for HTTP/1.1) and the reconnects that follow,
//! the load shapes (open model, stages, thresholds, time series) and the report printed on
//! SIGINT.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_server::{RunningServer, ServerConfig};

/// One way of running `h2lab bench` against the server.
struct Protocol {
    /// Short name, for messages.
    name: &'static str,
    /// `h2lab bench` flags selecting it.
    flags: &'static [&'static str],
    /// Over TLS (the server's TLS port) or cleartext.
    tls: bool,
    /// What the report's `Application protocol:` line says.
    application: &'static str,
    /// Whether the server ends a connection with a GOAWAY (HTTP/2, HTTP/3) rather than a bare
    /// close.
    goaway: bool,
    /// Whether an idle connection ends with a GOAWAY: HTTP/2's server sends one before its idle
    /// close; an idle QUIC connection is closed silently by both ends' idle timers (RFC 9000
    /// §10.1, RFC 9114 §5.1), so an HTTP/3 client just opens a new connection.
    idle_goaway: bool,
}

/// The table: one row per protocol.
const PROTOCOLS: &[Protocol] = &[
    Protocol {
        name: "HTTP/1.1",
        flags: &["--h1"],
        tls: false,
        application: "http/1.1",
        goaway: false,
        idle_goaway: false,
    },
    Protocol {
        name: "h2c",
        flags: &[],
        tls: false,
        application: "h2c",
        goaway: true,
        idle_goaway: true,
    },
    Protocol {
        name: "h2 over TLS",
        flags: &[],
        tls: true,
        application: "h2",
        goaway: true,
        idle_goaway: true,
    },
    Protocol {
        name: "HTTP/3",
        flags: &["--h3"],
        tls: true,
        application: "h3",
        goaway: true,
        idle_goaway: false,
    },
];

/// The in-process server a test runs against, cleartext and TLS.
struct Target {
    server: RunningServer,
    _certs: tempdir::Dir,
}

impl Target {
    fn start(name: &str, tweak: impl FnOnce(&mut ServerConfig)) -> Target {
        let certs = tempdir::Dir::new(name);
        let mut cfg = ServerConfig {
            tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            cert_dir: Some(certs.0.clone()),
            // HTTP/3 on the TLS port number (UDP), for the h3 row.
            h3: true,
            ..ServerConfig::local()
        };
        tweak(&mut cfg);
        Target {
            server: h2lab_server::spawn(cfg).unwrap(),
            _certs: certs,
        }
    }

    /// The URL of `path` for `p`.
    fn url(&self, p: &Protocol, path: &str) -> String {
        if p.tls {
            let a = self.server.tls_addr().unwrap();
            format!("https://127.0.0.1:{}{path}", a.port())
        } else {
            format!("http://{}{path}", self.server.addr().unwrap())
        }
    }
}

/// A scratch directory removed on drop.
mod tempdir {
    pub struct Dir(pub std::path::PathBuf);

    impl Dir {
        pub fn new(name: &str) -> Dir {
            Dir(super::common::scratch_dir(name))
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs `h2lab bench` with `p`'s flags, `args`, then `url`.
fn bench(p: &Protocol, args: &[&str], url: &str) -> Output {
    cargo_bin_cmd!("h2lab")
        .arg("bench")
        .args(p.flags)
        .args(args)
        .arg(url)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

/// stdout, checking the run exited 0 with nothing on stderr.
fn ok_stdout(p: &Protocol, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}: {stdout}\n{stderr}", p.name);
    assert_eq!(stderr, "", "{}", p.name);
    assert!(
        stdout.contains(&format!("Application protocol: {}\n", p.application)),
        "{}: {stdout}",
        p.name
    );
    stdout
}

/// The `requests:` line h2load prints when all `n` requests succeeded.
fn all_succeeded(n: u64) -> String {
    format!(
        "requests: {n} total, {n} started, {n} done, {n} succeeded, 0 failed, 0 errored, 0 timeout"
    )
}

/// `(GOAWAYs received, reconnects)` from the `connections:` line (absent: none of either).
fn connections_line(stdout: &str) -> (u64, u64) {
    let Some(line) = stdout.lines().find(|l| l.starts_with("connections: ")) else {
        return (0, 0);
    };
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

#[test]
fn exact_counts_and_the_h2load_report() {
    let t = Target::start("proto-counts", |_| {});
    for p in PROTOCOLS {
        let url = t.url(p, "/data?size=653");
        let out = bench(p, &["-n", "200", "-c", "4", "-m", "4", "-N", "20s"], &url);
        let stdout = ok_stdout(p, &out);
        common::assert_h2load_shape(&stdout, p.application, 200, 653);
        assert_eq!(common::traffic_data_bytes(&stdout), 200 * 653, "{}", p.name);
    }
}

#[test]
fn statuses_are_counted_by_class() {
    let t = Target::start("proto-status", |_| {});
    for p in PROTOCOLS {
        for (path, line) in [
            ("/status/404", "status codes: 0 2xx, 0 3xx, 30 4xx, 0 5xx"),
            ("/status/503", "status codes: 0 2xx, 0 3xx, 0 4xx, 30 5xx"),
            ("/status/301", "status codes: 0 2xx, 30 3xx, 0 4xx, 0 5xx"),
        ] {
            let out = bench(p, &["-n", "30", "-c", "2", "-m", "3"], &t.url(p, path));
            let stdout = ok_or_failed_stdout(p, &out);
            assert!(
                stdout.contains(&format!("\n{line}\n")),
                "{} {path}: {stdout}",
                p.name
            );
            // Every request was answered: done, none errored or timed out.
            assert!(
                stdout.contains("requests: 30 total, 30 started, 30 done, "),
                "{} {path}: {stdout}",
                p.name
            );
            assert!(
                stdout.contains(" 0 errored, 0 timeout\n"),
                "{} {path}: {stdout}",
                p.name
            );
        }
    }
}

/// stdout of a run whose requests all got a response, successful or not (h2load counts 4xx
/// and 5xx as failed, and exits 1 when nothing succeeded).
fn ok_or_failed_stdout(p: &Protocol, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: {stdout}\n{}",
        p.name,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("Application protocol: {}\n", p.application)),
        "{}: {stdout}",
        p.name
    );
    stdout
}

#[test]
fn large_bodies_arrive_whole() {
    let t = Target::start("proto-large", |_| {});
    for p in PROTOCOLS {
        let out = bench(
            p,
            &["-n", "8", "-c", "2", "-m", "2"],
            &t.url(p, "/data?size=1M"),
        );
        let stdout = ok_stdout(p, &out);
        assert!(stdout.contains(&all_succeeded(8)), "{}: {stdout}", p.name);
        assert_eq!(common::traffic_data_bytes(&stdout), 8 << 20, "{}", p.name);
    }
}

#[test]
fn a_server_stream_limit_below_m_is_respected() {
    // SETTINGS_MAX_CONCURRENT_STREAMS 2 against -m 10: HTTP/2 never opens more than 2 streams
    // (none refused, all succeed); HTTP/1.1 pipelines up to 10 regardless.
    let t = Target::start("proto-streams", |c| c.max_concurrent_streams = 2);
    for p in PROTOCOLS {
        let out = bench(p, &["-n", "100", "-c", "2", "-m", "10"], &t.url(p, "/ping"));
        let stdout = ok_stdout(p, &out);
        assert!(stdout.contains(&all_succeeded(100)), "{}: {stdout}", p.name);
    }
}

#[test]
fn connections_the_server_ends_are_reopened() {
    // The server closes connections idle for 50 ms (HTTP/2: GOAWAY, then close; HTTP/1.1: a
    // close; HTTP/3: QUIC's idle timeout, silently); the timing script waits a second between requests (twenty times the idle
    // timeout), so every request after the first finds its connection ended and reconnects.
    // Nothing is lost.
    let t = Target::start("proto-reconnect", |c| {
        c.idle_timeout = Duration::from_millis(50)
    });
    let dir = tempdir::Dir::new("proto-reconnect-script");
    for p in PROTOCOLS {
        let script = dir
            .0
            .join(format!("{}.tsv", p.application.replace('/', "")));
        let u = t.url(p, "/ping");
        std::fs::write(&script, format!("0\t{u}\n1000\t{u}\n2000\t{u}\n")).unwrap();
        // The URIs come from the script (no URI argument, as with h2load).
        let out = cargo_bin_cmd!("h2lab")
            .arg("bench")
            .args(p.flags)
            .args(["-c", "1", "--timing-script-file", script.to_str().unwrap()])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let stdout = ok_stdout(p, &out);
        assert!(stdout.contains(&all_succeeded(3)), "{}: {stdout}", p.name);
        // Each of the two later requests found its connection ended: at least two
        // reconnects, and over HTTP/2 at least one GOAWAY per ended connection (the server
        // may send two: a graceful one, then the final one); none over HTTP/1.1.
        let (goaways, reconnects) = connections_line(&stdout);
        assert!(reconnects >= 2, "{}: {stdout}", p.name);
        if p.idle_goaway {
            assert!(goaways >= 2, "{}: {stdout}", p.name);
        } else {
            assert_eq!(goaways, 0, "{}: {stdout}", p.name);
        }
    }
}

#[test]
fn connections_ended_after_n_requests_are_reopened() {
    // The server ends each connection after 10 requests (HTTP/2: GOAWAY, then close once the
    // accepted streams are answered; HTTP/1.1: `connection: close` on the 10th response):
    // 30 requests take three connections, and every request succeeds.
    let t = Target::start("proto-max-requests", |c| {
        c.max_requests_per_connection = Some(10)
    });
    for p in PROTOCOLS {
        let out = bench(p, &["-n", "30", "-c", "1", "-m", "1"], &t.url(p, "/ping"));
        let stdout = ok_stdout(p, &out);
        assert!(stdout.contains(&all_succeeded(30)), "{}: {stdout}", p.name);
        let (goaways, reconnects) = connections_line(&stdout);
        assert_eq!(reconnects, 2, "{}: {stdout}", p.name);
        if p.goaway {
            assert!(goaways >= 2, "{}: {stdout}", p.name);
        } else {
            assert_eq!(goaways, 0, "{}: {stdout}", p.name);
        }
    }
}

/// The open model (`--arrival-rate`) and `--timeseries`: the schedule decides the counts
/// (400 req/s for 2 s: 800 scheduled, four 0.5 s rows at a target of 400), and both latency
/// rows are printed, corrected first.
#[test]
fn the_open_model_and_its_time_series() {
    let t = Target::start("proto-open", |_| {});
    let dir = tempdir::Dir::new("proto-open-out");
    for p in PROTOCOLS {
        let csv = dir
            .0
            .join(format!("{}.csv", p.application.replace('/', "")));
        let args = ["--arrival-rate", "400", "-D", "2", "-c", "2", "-m", "4"];
        let series = ["--interval", "500ms", "--timeseries", csv.to_str().unwrap()];
        let out = bench(p, &[&args[..], &series[..]].concat(), &t.url(p, "/ping"));
        let stdout = ok_stdout(p, &out);
        assert!(
            stdout.contains("open model: 800 scheduled, "),
            "{}: {stdout}",
            p.name
        );
        let at = |l: &str| stdout.find(l).unwrap_or_else(|| panic!("{}: {l}", p.name));
        assert!(
            at("time for request: ") < at("time from send  : "),
            "{}",
            p.name
        );
        let rows: Vec<Vec<String>> = std::fs::read_to_string(&csv)
            .unwrap()
            .lines()
            .map(|l| l.split(',').map(str::to_owned).collect())
            .collect();
        assert_eq!(rows.len(), 5, "{}: {rows:?}", p.name);
        for r in &rows[1..] {
            assert_eq!((r[2].as_str(), r[3].as_str()), ("0.5", "400"), "{}", p.name);
        }
    }
}

/// `--stages` ramps the open model's rate: the time series' targets are each interval's mean
/// level (75, 225, 300 req/s for `1s:300,500ms:300` in 0.5 s intervals).
#[test]
fn stages_ramp_the_rate() {
    let t = Target::start("proto-stages", |_| {});
    let dir = tempdir::Dir::new("proto-stages-out");
    for p in PROTOCOLS {
        let jsonl = dir
            .0
            .join(format!("{}.jsonl", p.application.replace('/', "")));
        let args = ["--arrival-rate", "0", "--stages", "1s:300,500ms:300"];
        let series = [
            "--interval",
            "500ms",
            "--timeseries",
            jsonl.to_str().unwrap(),
        ];
        let out = bench(p, &[&args[..], &series[..]].concat(), &t.url(p, "/ping"));
        ok_stdout(p, &out);
        let targets: Vec<f64> = std::fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["target"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        assert_eq!(targets, vec![75.0, 225.0, 300.0], "{}", p.name);
    }
}

/// Thresholds decide the exit status the same way over every protocol: 0 when they hold,
/// 99 when one fails (and the report says which).
#[test]
fn thresholds_decide_the_exit_status() {
    let t = Target::start("proto-thresholds", |_| {});
    for p in PROTOCOLS {
        let url = t.url(p, "/ping");
        let hold = [
            "-n",
            "200",
            "-c",
            "2",
            "-m",
            "4",
            "--threshold",
            "errors<1%",
        ];
        let out = bench(
            p,
            &[&hold[..], &["--threshold", "rps>1"][..]].concat(),
            &url,
        );
        let stdout = ok_stdout(p, &out);
        assert!(
            stdout.contains("thresholds: 2 passed, 0 failed\n"),
            "{}: {stdout}",
            p.name
        );
        let fail = ["-n", "100", "-c", "2", "--threshold", "p99<1ns"];
        let out = bench(p, &fail, &url);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(99), "{}: {stdout}", p.name);
        assert!(
            stdout.contains("  FAILED  p99<1ns  (p99 = "),
            "{}: {stdout}",
            p.name
        );
        assert!(stdout.contains(&all_succeeded(100)), "{}: {stdout}", p.name);
    }
}

#[test]
fn sigint_prints_the_report_and_writes_the_json() {
    let t = Target::start("proto-sigint", |_| {});
    let dir = tempdir::Dir::new("proto-sigint-json");
    for p in PROTOCOLS {
        let json_path = dir
            .0
            .join(format!("{}.json", p.application.replace('/', "")));
        // Once the first connection is up, interrupt the run.
        let (status, all) =
            common::interrupt_bench_with(p.flags, &t.url(p, "/"), &json_path, "-INT");
        check_interrupted(p, status, &all, &json_path);
    }
}

fn check_interrupted(p: &Protocol, status: std::process::ExitStatus, all: &str, json: &Path) {
    assert_eq!(status.code(), Some(130), "{}: {all}", p.name);
    assert!(all.contains("\nfinished in "), "{}: {all}", p.name);
    assert!(all.contains("\ninterrupted: "), "{}: {all}", p.name);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true, "{}", p.name);
    assert_eq!(doc["options"]["duration_seconds"], 600.0, "{}", p.name);
}
