//! A tiny HTTP/1.1 responder for the CLI tests (blocking sockets, one thread per connection):
//! answers every request with `200 OK` and a fixed-size body, pipelining included, over TCP or
//! TLS (rustls, the engine's test certificate, a chosen ALPN list).

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Requests answered so far.
#[derive(Default)]
pub struct Counters {
    /// Requests answered.
    pub requests: AtomicU64,
}

/// Length of the first complete request head in `buf` (GET requests: no body).
fn head_len(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn serve<S: Read + Write>(mut s: S, body_len: usize, c: &Counters) {
    let mut buf = Vec::new();
    let mut tmp = vec![0u8; 16 * 1024];
    let body = vec![b'x'; body_len];
    loop {
        let mut out = Vec::new();
        while let Some(n) = head_len(&buf) {
            buf.drain(..n);
            c.requests.fetch_add(1, Ordering::SeqCst);
            out.extend_from_slice(
                format!(
                    "HTTP/1.1 200 OK\r\nServer: cli-test\r\nContent-Length: {body_len}\r\n\r\n"
                )
                .as_bytes(),
            );
            out.extend_from_slice(&body);
        }
        if !out.is_empty() && s.write_all(&out).and_then(|_| s.flush()).is_err() {
            return;
        }
        match s.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

/// A cleartext responder on 127.0.0.1:<ephemeral>.
pub fn tcp_server(body_len: usize) -> (SocketAddr, Arc<Counters>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let c = Arc::new(Counters::default());
    let c2 = Arc::clone(&c);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let c = Arc::clone(&c2);
            std::thread::spawn(move || serve(s, body_len, &c));
        }
    });
    (addr, c)
}

/// A TLS responder offering `alpn` (empty: no ALPN).
pub fn tls_server(body_len: usize, alpn: &[&str]) -> (SocketAddr, Arc<Counters>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/data");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    cfg.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let c = Arc::new(Counters::default());
    let c2 = Arc::clone(&c);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let (c, cfg) = (Arc::clone(&c2), Arc::clone(&cfg));
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(cfg).unwrap();
                serve(rustls::StreamOwned::new(conn, s), body_len, &c)
            });
        }
    });
    (addr, c)
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}

/// A fresh scratch directory for one test.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("h2lab-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `h2lab bench -D 10m -c 2 --h1 --json JSON http://ADDR/`, waits until it reports its
/// application protocol (the first connection is up), sends it `signal` (e.g. `-INT`) with
/// kill(1), and returns its exit status and everything it printed on stdout.
pub fn interrupt_bench(
    addr: SocketAddr,
    json: &std::path::Path,
    signal: &str,
) -> (std::process::ExitStatus, String) {
    interrupt_bench_with(&["--h1"], &format!("http://{addr}/"), json, signal)
}

/// [`interrupt_bench`] with the protocol flags `flags` (e.g. `--h1`, or none) against `url`.
pub fn interrupt_bench_with(
    flags: &[&str],
    url: &str,
    json: &std::path::Path,
    signal: &str,
) -> (std::process::ExitStatus, String) {
    use std::process::Command;
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("h2lab"));
    cmd.args(["bench", "-D", "10m", "-c", "2"])
        .args(flags)
        .arg("--json")
        .arg(json)
        .arg(url);
    let (mut child, reader) = spawn_until_protocol(&mut cmd);
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let all = reader.join().unwrap();
    (child.wait().unwrap(), all)
}

/// Spawns `cmd` (an `h2lab bench` run) with its stdout and stderr piped, and waits until it
/// prints its `Application protocol:` line (the first connection is up); returns the child
/// and a thread that collects everything it prints on stdout until it exits. Panics (after
/// killing the child) if the line does not come within 60 s (only a safety net).
pub fn spawn_until_protocol(
    cmd: &mut std::process::Command,
) -> (std::process::Child, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line.starts_with("Application protocol:") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    if rx.recv_timeout(std::time::Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        panic!("the run never reported its protocol");
    }
    (child, reader)
}

/// The `(N) data` count of the `traffic:` line of an h2load-style report.
pub fn traffic_data_bytes(stdout: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("traffic: "))
        .unwrap_or_else(|| panic!("no traffic line in\n{stdout}"));
    line[line.rfind('(').unwrap() + 1..line.rfind(") data").unwrap()]
        .parse()
        .unwrap()
}

/// The lines h2load prints for a `-n` run, in h2load's order and formats.
pub fn assert_h2load_shape(stdout: &str, protocol: &str, n: u64, body: u64) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "starting benchmark...");
    assert!(lines[1].starts_with("spawning thread #0: "), "{stdout}");
    let proto_at = lines
        .iter()
        .position(|l| *l == format!("Application protocol: {protocol}"))
        .unwrap_or_else(|| panic!("no protocol line in {stdout}"));
    let progress: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    let expected: Vec<String> = (1..=10)
        .map(|d| format!("progress: {}% done", d * 10))
        .collect();
    assert_eq!(progress, expected, "{stdout}");
    let fin = lines
        .iter()
        .position(|l| l.starts_with("finished in "))
        .unwrap();
    assert!(fin > proto_at);
    assert_eq!(lines[fin - 1], "");
    assert!(lines[fin].contains(" req/s, ") && lines[fin].ends_with("B/s"));
    assert_eq!(
        lines[fin + 1],
        format!(
            "requests: {n} total, {n} started, {n} done, {n} succeeded, 0 failed, 0 errored, \
             0 timeout"
        )
    );
    assert_eq!(
        lines[fin + 2],
        format!("status codes: {n} 2xx, 0 3xx, 0 4xx, 0 5xx")
    );
    assert!(
        lines[fin + 3].ends_with(&format!("({}) data", n * body)),
        "{}",
        lines[fin + 3]
    );
    // HTTP/3: h2load's `UDP datagram: N sent, M received` line follows the traffic line.
    let fin = if protocol == "h3" {
        assert!(
            lines[fin + 4].starts_with("UDP datagram: ") && lines[fin + 4].ends_with(" received"),
            "{stdout}"
        );
        fin + 1
    } else {
        fin
    };
    assert_eq!(
        lines[fin + 4],
        "                     min         max         mean         sd        +/- sd         p50         p90         p99       p99.9"
    );
    for (i, label) in [
        "time for request: ",
        "time for connect: ",
        "time to 1st byte: ",
        "req/s           : ",
    ]
    .iter()
    .enumerate()
    {
        let row = lines[fin + 5 + i];
        assert!(row.starts_with(label), "{row}");
        assert_eq!(row.len(), lines[fin + 4].len(), "{row}");
        assert_eq!(&row[73..74], "%", "{row}");
    }
}
