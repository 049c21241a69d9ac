//! End-to-end tests of `h2lab serve`: it starts on port 0 and prints the real ports and the
//! certificate, answers raw HTTP/1.1, curl (HTTP/1.1, h2c, TLS h2) and h2load, stops with
//! exit 0 on SIGTERM and SIGINT, and fails with one line and exit 1 on bad input (a port in
//! use, bad flags, a missing certificate).
//!
//! curl and h2load are skipped (with a message) when not installed, except under `CI=true`,
//! where a missing tool fails the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Upper bound for anything to happen (start, a request, shutdown); never reached normally.
const DEADLINE: Duration = Duration::from_secs(30);

fn h2lab_path() -> &'static Path {
    Path::new(assert_cmd::cargo::cargo_bin!("h2lab"))
}

/// `path` if installed; otherwise a skip message, or a failure under `CI=true`.
fn tool(path: &str) -> Option<&str> {
    h2lab_testkit::anchors_available(&[path]).then_some(path)
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h2lab-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A running `h2lab serve` and what it printed.
struct Served {
    child: Child,
    /// The server's stderr, when started with [`Served::start_capturing_stderr`].
    stderr: Option<std::process::ChildStderr>,
    lines: mpsc::Receiver<String>,
    stdout: Vec<String>,
    plain: Option<SocketAddr>,
    tls: Option<SocketAddr>,
    cert: Option<PathBuf>,
}

impl Served {
    /// Starts `h2lab serve ARGS` and waits until it printed its addresses (and certificate,
    /// when TLS is on).
    fn start(args: &[&str]) -> Served {
        Served::spawn(args, Stdio::inherit())
    }

    /// As [`Served::start`], with the server's stderr kept in [`Served::stderr`].
    fn start_capturing_stderr(args: &[&str]) -> Served {
        Served::spawn(args, Stdio::piped())
    }

    fn spawn(args: &[&str], stderr: Stdio) -> Served {
        let mut child = Command::new(h2lab_path())
            .arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stderr = child.stderr.take();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut s = Served {
            child,
            stderr,
            lines,
            stdout: Vec::new(),
            plain: None,
            tls: None,
            cert: None,
        };
        let want_tls = args.iter().any(|a| a.starts_with("--tls"));
        let want_plain = !args.contains(&"--tls");
        let end = Instant::now() + DEADLINE;
        while (want_plain && s.plain.is_none())
            || (want_tls && (s.tls.is_none() || s.cert.is_none()))
        {
            let left = end.saturating_duration_since(Instant::now());
            let line = match s.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(_) => {
                    let _ = s.child.kill();
                    panic!("no addresses printed: {:?}", s.stdout);
                }
            };
            if let Some(rest) = line.strip_prefix("h2lab serve: listening on http://") {
                s.plain = Some(rest.split('/').next().unwrap().parse().unwrap());
            } else if let Some(rest) = line.strip_prefix("h2lab serve: listening on https://") {
                s.tls = Some(rest.split('/').next().unwrap().parse().unwrap());
            } else if line.contains("certificate ") {
                let path = line
                    .split("certificate ")
                    .nth(1)
                    .and_then(|r| r.split(" (key").next())
                    .unwrap();
                s.cert = Some(PathBuf::from(path));
            }
            s.stdout.push(line);
        }
        s
    }

    fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Waits (bounded) for the process to exit; returns its status code.
    fn wait_exit(mut self) -> Option<i32> {
        let end = Instant::now() + DEADLINE;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code();
            }
            if Instant::now() >= end {
                let _ = self.child.kill();
                panic!("h2lab serve did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 GET over a fresh connection; returns the raw response (the server closes
/// after `connection: close`).
fn http11_get(addr: SocketAddr, target: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn port_zero_prints_the_bound_ports_serves_clients_and_stops_on_sigterm() {
    let dir = scratch_dir("main");
    let cert_dir = dir.join("certs");
    let s = Served::start(&[
        "--listen",
        "127.0.0.1:0",
        "--tls-listen",
        "127.0.0.1:0",
        "--cert-dir",
        cert_dir.to_str().unwrap(),
        "--threads",
        "2",
    ]);
    let plain = s.plain.unwrap();
    let tls = s.tls.unwrap();
    assert_ne!(plain.port(), 0, "{:?}", s.stdout);
    assert_ne!(tls.port(), 0, "{:?}", s.stdout);
    let cert = s.cert.clone().unwrap();
    assert_eq!(cert, cert_dir.join("cert.pem"));
    assert!(std::fs::read_to_string(&cert)
        .unwrap()
        .starts_with("-----BEGIN CERTIFICATE-----"));

    let r = http11_get(plain, "/ping");
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
    assert!(r.ends_with("pong"), "{r}");

    if let Some(curl) = tool("/usr/bin/curl") {
        let fmt = "%{http_code} %{size_download} %{http_version}";
        let url = format!("http://{plain}/data?size=100k");
        let o = run(curl, &["-s", "-o", "/dev/null", "-w", fmt, &url]);
        assert_eq!(text(&o), "200 102400 1.1");
        let o = run(
            curl,
            &[
                "-s",
                "--http2-prior-knowledge",
                "-o",
                "/dev/null",
                "-w",
                fmt,
                &url,
            ],
        );
        assert_eq!(text(&o), "200 102400 2");
        let o = run(curl, &["-s", "--http2", "-o", "/dev/null", "-w", fmt, &url]);
        assert_eq!(text(&o), "200 102400 2", "Upgrade: h2c");
        // The printed certificate is what a client needs to trust the TLS port.
        let url = format!("https://localhost:{}/data?size=653", tls.port());
        let o = run(
            curl,
            &[
                "-s",
                "--cacert",
                cert.to_str().unwrap(),
                "-o",
                "/dev/null",
                "-w",
                fmt,
                &url,
            ],
        );
        assert_eq!(text(&o), "200 653 2");
    }
    if let Some(h2load) = tool("/usr/bin/h2load") {
        for url in [
            format!("http://{plain}/data?size=653"),
            format!("https://{tls}/data?size=100k"),
        ] {
            let o = run(h2load, &["-n", "400", "-c", "4", "-m", "10", &url]);
            let out = text(&o);
            assert!(out.contains("400 succeeded"), "{url}: {out}");
        }
        let o = run(
            h2load,
            &[
                "--h1",
                "-n",
                "400",
                "-c",
                "4",
                &format!("http://{plain}/json"),
            ],
        );
        assert!(text(&o).contains("400 succeeded"), "{}", text(&o));
    }

    s.signal("-TERM");
    assert_eq!(s.wait_exit(), Some(0));
    assert!(
        TcpStream::connect(plain).is_err(),
        "the port is closed after exit"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tls_flag_serves_tls_on_the_listen_port_and_sigint_stops_it() {
    let dir = scratch_dir("tls");
    let s = Served::start(&[
        "--tls",
        "--listen",
        "127.0.0.1:0",
        "--cert-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(s.plain.is_none());
    let tls = s.tls.unwrap();
    if let Some(curl) = tool("/usr/bin/curl") {
        let url = format!("https://localhost:{}/json", tls.port());
        let cert = s.cert.clone().unwrap();
        let o = run(
            curl,
            &[
                "-s",
                "--cacert",
                cert.to_str().unwrap(),
                "-w",
                "\n%{http_code} %{http_version}",
                &url,
            ],
        );
        let out = text(&o);
        assert!(out.starts_with('{') && out.ends_with("\n200 2"), "{out}");
    }
    s.signal("-INT");
    assert_eq!(s.wait_exit(), Some(0));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn keep_alive_off_closes_after_each_response() {
    let s = Served::start(&["--listen", "127.0.0.1:0", "--keep-alive", "off", "-q"]);
    let mut c = TcpStream::connect(s.plain.unwrap()).unwrap();
    c.set_read_timeout(Some(DEADLINE)).unwrap();
    c.write_all(b"GET /ping HTTP/1.1\r\nhost: t\r\n\r\n")
        .unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    let r = String::from_utf8_lossy(&buf);
    assert!(r.starts_with("HTTP/1.1 200 ") && r.ends_with("pong"), "{r}");
    assert!(r.to_ascii_lowercase().contains("connection: close"), "{r}");
    s.signal("-TERM");
    assert_eq!(s.wait_exit(), Some(0));
}

/// Runs `h2lab serve ARGS`, which must fail at once with exit 1 and one stderr line
/// containing `want`.
fn expect_start_error(args: &[&str], want: &str) {
    let mut child = Command::new(h2lab_path())
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + DEADLINE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= end {
            let _ = child.kill();
            panic!("{args:?}: still running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
    assert!(
        err.contains(want),
        "{args:?}: {err:?} should contain {want:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    expect_start_error(
        &["--listen", &addr],
        &format!("h2lab serve: cannot listen on {addr}: address in use"),
    );
    let dir = scratch_dir("bad");
    let missing = dir.join("missing.pem");
    let m = missing.to_str().unwrap();
    expect_start_error(
        &["--tls", "--listen", "127.0.0.1:0", "--cert", m, "--key", m],
        "missing.pem",
    );
    expect_start_error(
        &["--listen", "127.0.0.1:0", "--root", m],
        "h2lab serve: --root",
    );
    expect_start_error(
        &["--listen", "127.0.0.1:0", "--max-frame-size", "1K"],
        "max frame size",
    );
    expect_start_error(&["--listen", "somewhere"], "invalid address");
    expect_start_error(&["--threads", "0"], "--threads");
    expect_start_error(&["--keep-alive", "sometimes"], "on or off");
    expect_start_error(&["--cert", "c.pem"], "--key");
    expect_start_error(&["--no-such-flag"], "--no-such-flag");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn h3_flag_prints_the_quic_listener_and_needs_a_tls_port() {
    let dir = scratch_dir("h3");
    let s = Served::start(&[
        "--tls",
        "--listen",
        "127.0.0.1:0",
        "--h3",
        "--cert-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    let tls = s.tls.unwrap();
    let want = format!("h2lab serve: listening on https://{tls}/ (HTTP/3 over QUIC, UDP)");
    assert!(s.stdout.contains(&want), "{:?}", s.stdout);
    if h2lab_testkit::anchors_available(&["quic-go-client"]) {
        let c = h2lab_testkit::which("quic-go-client").unwrap();
        let o = run(
            c.to_str().unwrap(),
            &["-insecure", &format!("https://{tls}/ping")],
        );
        let out = text(&o);
        assert!(o.status.success() && out.contains("pong"), "{out}");
    }
    s.signal("-TERM");
    assert_eq!(s.wait_exit(), Some(0));
    std::fs::remove_dir_all(&dir).unwrap();
    expect_start_error(
        &["--listen", "127.0.0.1:0", "--h3"],
        "HTTP/3 (--h3) needs a TLS port",
    );
}

/// A client that gives up mid-handshake with close_notify (a load generator stopping while
/// connections are still opening) ends its connection in order: the server does not log it as
/// a read error (it used to print "read error: TLS: received fatal alert: CloseNotify" once per
/// such connection, 140 lines in one `compare` run).
#[test]
fn close_notify_during_the_handshake_is_not_a_read_error() {
    use std::sync::Arc;
    let dir = scratch_dir("close-notify");
    let mut s = Served::start_capturing_stderr(&[
        "--tls",
        "--listen",
        "127.0.0.1:0",
        "--cert-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    let addr = s.tls.unwrap();
    let mut stderr = s.stderr.take().unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    for _ in 0..3 {
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(DEADLINE)).unwrap();
        let mut tls = rustls::ClientConnection::new(
            Arc::new(config.clone()),
            "localhost".try_into().unwrap(),
        )
        .unwrap();
        // The ClientHello, then close_notify before anything of the server's is read.
        tls.write_tls(&mut sock).unwrap();
        tls.send_close_notify();
        while tls.wants_write() {
            tls.write_tls(&mut sock).unwrap();
        }
        // The server ends the connection (EOF or reset), it does not keep it open.
        let mut buf = [0u8; 4096];
        while matches!(sock.read(&mut buf), Ok(n) if n > 0) {}
    }
    // The server stops cleanly, having logged nothing about them.
    s.signal("-TERM");
    assert_eq!(s.wait_exit(), Some(0));
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert!(!err.contains("read error"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn early_hints_are_announced_and_sent_before_the_page() {
    let s = Served::start(&["--listen", "127.0.0.1:0", "--early-hints", "-q"]);
    let mut banner = s.stdout.clone();
    while !banner.iter().any(|l| l.contains("early hints: on")) {
        banner.push(
            s.lines
                .recv_timeout(DEADLINE)
                .expect("the setting is printed"),
        );
    }
    let mut c = TcpStream::connect(s.plain.unwrap()).unwrap();
    c.set_read_timeout(Some(DEADLINE)).unwrap();
    c.write_all(b"GET /page?n=1&css=1&think=5ms HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).unwrap();
    let r = String::from_utf8_lossy(&buf);
    let hints = "HTTP/1.1 103 Early Hints\r\nlink: </asset/1/1-";
    assert!(r.starts_with(hints), "{r}");
    assert!(
        r.contains(".css>; rel=preload; as=style\r\n\r\nHTTP/1.1 200 OK\r\n"),
        "{r}"
    );
    s.signal("-TERM");
    assert_eq!(s.wait_exit(), Some(0));
}

/// `--0rtt` is printed even with `-q`; without it, the full banner says it is off.
#[test]
fn the_0rtt_setting_is_printed() {
    let dir = scratch_dir("zero-rtt");
    let cert_dir = dir.join("certs");
    let args = |extra: &'static [&'static str]| {
        let mut a = vec![
            "--listen",
            "127.0.0.1:0",
            "--tls-listen",
            "127.0.0.1:0",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        a
    };
    for (extra, want) in [
        (
            &["--0rtt", "-q"][..],
            "0-RTT: on (TLS 1.3 early data up to 16 KiB",
        ),
        (&[][..], "0-RTT: off (sessions resume"),
    ] {
        let s = Served::start(&args(extra));
        let mut banner = s.stdout.clone();
        while !banner.iter().any(|l| l.contains(want)) {
            banner.push(
                s.lines
                    .recv_timeout(DEADLINE)
                    .expect("the setting is printed"),
            );
        }
        s.signal("-TERM");
        assert_eq!(s.wait_exit(), Some(0));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
