//! `h2lab bench` and `h2load` run with the *same arguments* against nginx (started by
//! `h2lab-testkit`): over its UNIX sockets with `-B unix:PATH` (HTTP/1.1 and h2c) and over TLS.
//! h2lab's report is parsed with the testkit's h2load parser, and the lines must agree:
//! `Application protocol:`, the TLS lines, `requests:`, `status codes:`, and the `traffic:`
//! bytes (all three for HTTP/1.1; body bytes for HTTP/2, whose HPACK-compressed `date` may
//! differ by a literal when the second changes between the two runs).
//!
//! A missing anchor skips the test locally and fails it in CI (`CI=true`).

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_testkit::{
    h2load, require_anchor, AnchorServer, Files, H2loadOutput, FILE_653, SIZE_653,
};

/// Runs `h2lab bench ARGS` and `h2load ARGS`; both must exit 0 with a report.
fn both(args: &[String]) -> (H2loadOutput, H2loadOutput) {
    let out = cargo_bin_cmd!("h2lab")
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    let ours = H2loadOutput::parse(
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        out.status.code(),
    );
    assert!(
        ours.ran(),
        "h2lab bench {args:?}:\n{}{}",
        ours.stdout,
        ours.stderr
    );
    let theirs = h2load(args).unwrap();
    assert!(
        theirs.ran(),
        "h2load {args:?}:\n{}{}",
        theirs.stdout,
        theirs.stderr
    );
    (ours, theirs)
}

/// The two reports agree; every request succeeded with `n × SIZE_653` body bytes.
fn assert_same(args: &[String], n: u64, proto: &str, ours: &H2loadOutput, theirs: &H2loadOutput) {
    let ctx = format!(
        "{args:?}\n--- h2lab:\n{}\n--- h2load:\n{}",
        ours.stdout, theirs.stdout
    );
    assert_eq!(ours.application_protocol.as_deref(), Some(proto), "{ctx}");
    assert_eq!(
        ours.application_protocol, theirs.application_protocol,
        "{ctx}"
    );
    assert_eq!(ours.tls_protocol, theirs.tls_protocol, "{ctx}");
    assert_eq!(ours.cipher, theirs.cipher, "{ctx}");
    assert_eq!(ours.server_temp_key, theirs.server_temp_key, "{ctx}");
    let (a, b) = (
        ours.summary.as_ref().unwrap(),
        theirs.summary.as_ref().unwrap(),
    );
    assert_eq!(a.requests.succeeded, n, "{ctx}");
    assert_eq!(a.requests, b.requests, "{ctx}");
    assert_eq!(a.status_codes, b.status_codes, "{ctx}");
    assert_eq!(a.traffic.data, n * SIZE_653 as u64, "{ctx}");
    assert_eq!(a.traffic.data, b.traffic.data, "{ctx}");
    if proto == "http/1.1" {
        assert_eq!(a.traffic.headers, b.traffic.headers, "{ctx}");
        assert_eq!(a.traffic.total, b.traffic.total, "{ctx}");
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn unix_socket_h1_and_h2c_match_h2load() {
    require_anchor!("nginx", "h2load");
    let s = AnchorServer::nginx(Files::small()).unwrap();
    let url = format!("http://localhost/{FILE_653}");
    let h1 = format!("-Bunix:{}", s.unix_socket().unwrap().display());
    let h2c = format!("-Bunix:{}", s.unix_socket_h2c().unwrap().display());

    let a = args(&["--h1", "-n500", "-c4", "-m2", &h1, &url]);
    let (ours, theirs) = both(&a);
    assert_same(&a, 500, "http/1.1", &ours, &theirs);

    let a = args(&["-n500", "-c4", "-m10", &h2c, &url]);
    let (ours, theirs) = both(&a);
    assert_same(&a, 500, "h2c", &ours, &theirs);
}

#[test]
fn tls_h2_and_h1_match_h2load() {
    require_anchor!("nginx", "h2load");
    let s = AnchorServer::nginx(Files::small()).unwrap();
    let url = s.url_tls(FILE_653).unwrap();

    let a = args(&["-n500", "-c4", "-m10", &url]);
    let (ours, theirs) = both(&a);
    assert_same(&a, 500, "h2", &ours, &theirs);
    assert!(ours.tls_protocol.is_some() && ours.cipher.is_some());

    let a = args(&["-n200", "-c2", "--h1", &url]);
    let (ours, theirs) = both(&a);
    assert_same(&a, 200, "http/1.1", &ours, &theirs);
}

/// `-D` runs print h2load's phase lines (`Warm-up started for thread #0.`, `progress: 50% of
/// clients started`, ...) in h2load's order.
#[test]
fn duration_run_prints_the_phase_lines_of_h2load() {
    require_anchor!("nginx", "h2load");
    let s = AnchorServer::nginx(Files::small()).unwrap();
    let url = s.url_h2c(FILE_653).unwrap();
    let a = args(&["-D", "300ms", "--warm-up-time", "200ms", "-c2", "-t1", &url]);
    let (ours, theirs) = both(&a);
    let phase_lines = |o: &H2loadOutput| -> Vec<String> {
        o.stdout
            .lines()
            .skip_while(|l| !l.starts_with("Warm-up started"))
            .take_while(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let want = [
        "Warm-up started for thread #0.",
        "progress: 50% of clients started",
        "progress: 100% of clients started",
        "Application protocol: h2c",
        "Warm-up phase is over for thread #0.",
        "Main benchmark duration is started for thread #0.",
        "Main benchmark duration is over for thread #0. Stopping all clients.",
        "Stopped all clients for thread #0",
    ];
    assert_eq!(phase_lines(&theirs), want, "h2load:\n{}", theirs.stdout);
    assert_eq!(phase_lines(&ours), want, "h2lab:\n{}", ours.stdout);
    let (a, b) = (ours.summary.unwrap(), theirs.summary.unwrap());
    assert!(a.requests.succeeded > 0 && b.requests.succeeded > 0);
    assert_eq!(a.requests.total, a.requests.succeeded);
}
