//! Each anchor starts, serves the 653-byte file over each of its protocols (checked with h2load
//! and curl), and stops without leaving a process or its temp dir behind.

use std::process::Command;

use h2lab_testkit::{
    h2load, pattern_bytes, require_anchor, AnchorKind, AnchorServer, Files, FILE_653, SIZE_653,
};

/// `h2load -n 10 -c 2 -m 5 <extra> <url>` must complete 10 × 200 with 6530 body bytes.
fn check_h2load(server: &AnchorServer, extra: &[&str], url: &str, proto: &str) {
    let mut args = vec!["-n", "10", "-c", "2", "-m", "5"];
    args.extend_from_slice(extra);
    args.push(url);
    let out = h2load(&args).unwrap();
    let s = out.summary.as_ref().unwrap_or_else(|| {
        panic!(
            "{:?}: h2load {args:?} printed no summary:\n{}{}\nserver log:\n{}",
            server.kind(),
            out.stdout,
            out.stderr,
            server.log_tail()
        )
    });
    let ctx = format!("{:?} h2load {args:?}:\n{}", server.kind(), out.stdout);
    assert_eq!(out.application_protocol.as_deref(), Some(proto), "{ctx}");
    assert_eq!(s.requests.succeeded, 10, "{ctx}");
    assert_eq!(s.status_codes.s2xx, 10, "{ctx}");
    assert_eq!(s.traffic.data, 10 * SIZE_653 as u64, "{ctx}");
}

/// curl must fetch the exact deterministic body with the expected HTTP version.
fn check_curl(server: &AnchorServer, extra: &[&str], url: &str, version: &str) {
    let out = Command::new("curl")
        .args([
            "-sS",
            "-k",
            "--max-time",
            "10",
            "-w",
            "\n%{http_version} %{http_code}",
        ])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let body = out.stdout;
    let ctx = format!(
        "{:?} curl {extra:?} {url}: {}",
        server.kind(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{ctx}");
    let split = body.iter().rposition(|&b| b == b'\n').unwrap();
    assert_eq!(&body[..split], &pattern_bytes(SIZE_653)[..], "{ctx}");
    assert_eq!(
        String::from_utf8_lossy(&body[split + 1..]),
        format!("{version} 200"),
        "{ctx}"
    );
}

fn assert_stops_cleanly(server: AnchorServer, file: &str) {
    let pid = server.pid().unwrap();
    assert!(!server.processes().is_empty());
    let docroot = server.docroot().to_path_buf();
    assert!(docroot.join(file).exists());
    let left = server.stop();
    assert!(left.is_empty(), "processes left behind: {left:?}");
    assert!(h2lab_testkit::group_members(pid).is_empty());
    assert!(!docroot.exists(), "temp dir not removed");
}

#[test]
fn nghttpd_h2c() {
    require_anchor!("nghttpd", "h2load", "curl");
    let s = AnchorServer::nghttpd_h2c(Files::small()).unwrap();
    assert_eq!(s.kind(), AnchorKind::NghttpdH2c);
    assert!(s.addr_tls().is_none() && s.addr_h1().is_none() && s.unix_socket().is_none());
    let url = s.url_h2c(FILE_653).unwrap();
    check_h2load(&s, &[], &url, "h2c");
    check_curl(&s, &["--http2-prior-knowledge"], &url, "2");
    assert_stops_cleanly(s, FILE_653);
}

#[test]
fn nghttpd_tls() {
    require_anchor!("nghttpd", "h2load", "curl");
    let s = AnchorServer::nghttpd_tls(Files::small()).unwrap();
    assert!(s.addr_h2c().is_none() && s.cert().is_some());
    let url = s.url_tls(FILE_653).unwrap();
    check_h2load(&s, &[], &url, "h2");
    check_curl(&s, &["--http2"], &url, "2");
    assert_stops_cleanly(s, FILE_653);
}

#[test]
fn nginx_all_protocols() {
    require_anchor!("nginx", "h2load", "curl");
    let s = AnchorServer::nginx(Files::small()).unwrap();
    let h2c = s.url_h2c(FILE_653).unwrap();
    let tls = s.url_tls(FILE_653).unwrap();
    let h1 = s.url_h1(FILE_653).unwrap();
    check_h2load(&s, &[], &h2c, "h2c");
    check_h2load(&s, &[], &tls, "h2");
    check_h2load(&s, &["--h1"], &h1, "http/1.1");
    check_h2load(&s, &["--h1"], &tls, "http/1.1");
    check_curl(&s, &["--http2-prior-knowledge"], &h2c, "2");
    check_curl(&s, &["--http2"], &tls, "2");
    check_curl(&s, &["--http1.1"], &tls, "1.1");
    check_curl(&s, &["--http1.1"], &h1, "1.1");
    let sock = s.unix_socket().unwrap().display().to_string();
    let sock_h2c = s.unix_socket_h2c().unwrap().display().to_string();
    let local = format!("http://localhost/{FILE_653}");
    check_h2load(
        &s,
        &["--h1", "-B", &format!("unix:{sock}")],
        &local,
        "http/1.1",
    );
    check_h2load(&s, &["-B", &format!("unix:{sock_h2c}")], &local, "h2c");
    check_curl(&s, &["--unix-socket", &sock], &local, "1.1");
    check_curl(
        &s,
        &["--http2-prior-knowledge", "--unix-socket", &sock_h2c],
        &local,
        "2",
    );
    assert_stops_cleanly(s, FILE_653);
}

#[test]
fn h2o_all_protocols() {
    require_anchor!("h2o", "h2load", "curl");
    let s = AnchorServer::h2o(Files::small()).unwrap();
    assert_eq!(s.addr_h1(), s.addr_h2c());
    let plain = s.url_h2c(FILE_653).unwrap();
    let tls = s.url_tls(FILE_653).unwrap();
    check_h2load(&s, &[], &plain, "h2c");
    check_h2load(&s, &["--h1"], &plain, "http/1.1");
    check_h2load(&s, &[], &tls, "h2");
    check_curl(&s, &["--http2-prior-knowledge"], &plain, "2");
    check_curl(&s, &["--http2"], &plain, "2"); // Upgrade: h2c
    check_curl(&s, &["--http1.1"], &plain, "1.1");
    check_curl(&s, &["--http2"], &tls, "2");
    assert_stops_cleanly(s, FILE_653);
}

#[test]
fn apache2_all_protocols() {
    require_anchor!("apache2", "h2load", "curl");
    let s = AnchorServer::apache2(Files::small()).unwrap();
    let plain = s.url_h2c(FILE_653).unwrap();
    let tls = s.url_tls(FILE_653).unwrap();
    check_h2load(&s, &[], &plain, "h2c");
    check_h2load(&s, &["--h1"], &plain, "http/1.1");
    check_h2load(&s, &[], &tls, "h2");
    check_curl(&s, &["--http2-prior-knowledge"], &plain, "2");
    check_curl(&s, &["--http1.1"], &plain, "1.1");
    check_curl(&s, &["--http2"], &tls, "2");
    check_curl(&s, &["--http1.1"], &tls, "1.1");
    // The master runs as root, the child as www-data: both are in the group and both must go.
    assert!(s.processes().len() >= 2, "{:?}", s.processes());
    assert_stops_cleanly(s, FILE_653);
}

/// The SETTINGS frame the server sends, as `nghttp -v` prints it.
fn announced_max_streams(url: &str) -> Option<u32> {
    let out = Command::new("nghttp").args(["-nv", url]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let marker = "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):";
    // The first SETTINGS received is the server's (nghttp prints "recv SETTINGS frame").
    let recv = text.find("recv SETTINGS frame")?;
    let at = text[recv..].find(marker)? + recv + marker.len();
    let end = text[at..].find(']')? + at;
    text[at..end].parse().ok()
}

#[test]
fn max_concurrent_streams_is_announced() {
    require_anchor!("nghttpd", "nginx", "apache2", "h2o", "nghttp");
    for kind in [
        AnchorKind::NghttpdH2c,
        AnchorKind::Nginx,
        AnchorKind::Apache2,
    ] {
        let s = AnchorServer::builder(kind)
            .files(Files::small())
            .max_concurrent_streams(3)
            .start()
            .unwrap();
        let url = s.url_h2c(FILE_653).unwrap();
        assert_eq!(announced_max_streams(&url), Some(3), "{kind:?}");
        assert_eq!(s.max_concurrent_streams(), Some(3));
    }
    // h2o 2.2 always announces 100; the builder refuses rather than pretend.
    let e = AnchorServer::builder(AnchorKind::H2o)
        .max_concurrent_streams(3)
        .start()
        .unwrap_err();
    assert!(matches!(e, h2lab_testkit::Error::Unsupported(_)), "{e}");
}

#[test]
fn nginx_with_two_workers_stops_them_all() {
    require_anchor!("nginx", "h2load");
    let s = AnchorServer::builder(AnchorKind::Nginx)
        .file_bytes("hello.txt", "hello")
        .workers(2)
        .start()
        .unwrap();
    let url = s.url_h1("hello.txt").unwrap();
    let out = h2load(["--h1", "-n", "4", "-c", "2", &url]).unwrap();
    assert_eq!(out.summary.unwrap().traffic.data, 20);
    assert!(s.processes().len() >= 3, "{:?}", s.processes()); // master + 2 workers
    assert_stops_cleanly(s, "hello.txt");
}
