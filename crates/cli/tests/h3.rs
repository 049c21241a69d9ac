//! `h2lab bench --h3` (through the real binary) against an independent HTTP/3 server, Caddy
//! (HTTP/3 by quic-go; skipped when `caddy` is not installed): exact request counts,
//! statuses and body bytes for small and 10 MB responses. (GOAWAY on a server stop is tested
//! at the session level, crates/engine/tests/h3.rs.)

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin_cmd;

/// Caddy serving files over HTTP/3 (and TLS over TCP) on one free port number.
struct Caddy {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_caddy(files: &[(&str, usize)]) -> Option<Caddy> {
    let bin = h2lab_testkit::which("caddy")?;
    let dir = common::scratch_dir("h3-caddy");
    let www = dir.join("www");
    let home = dir.join("home");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for (name, len) in files {
        std::fs::write(www.join(name), h2lab_testkit::pattern_bytes(*len)).unwrap();
    }
    let cert = h2lab_testkit::self_signed()
        .unwrap()
        .write_to(&dir)
        .unwrap();
    let port = h2lab_testkit::free_ports(1).unwrap()[0];
    // Addressed by IP, Caddy needs a default SNI (otherwise its handshake fails).
    let caddyfile = format!(
        "{{\n\tadmin off\n\tdefault_sni localhost\n\tauto_https disable_redirects\n\
         \tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
         https://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\ttls {} {}\n\troot * {}\n\
         \tfile_server\n}}\n",
        cert.cert.display(),
        cert.key.display(),
        www.display()
    );
    std::fs::write(dir.join("Caddyfile"), caddyfile).unwrap();
    let child = Command::new(bin)
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("Caddyfile"))
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let caddy = Caddy { child, port, dir };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "caddy did not start on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(caddy)
}

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = cargo_bin_cmd!("h2lab")
        .arg("bench")
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn caddy_small_and_ten_megabyte_responses() {
    let big = 10 * 1024 * 1024;
    let Some(caddy) = start_caddy(&[("file653", 653), ("file10m", big)]) else {
        h2lab_testkit::note_skip("caddy");
        return;
    };
    let url = format!("https://127.0.0.1:{}/file653", caddy.port);
    let (code, stdout, stderr) = bench(&["--h3", "-n", "300", "-c", "3", "-m", "10", &url]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    common::assert_h2load_shape(&stdout, "h3", 300, 653);
    assert!(
        stdout.contains("status codes: 300 2xx, 0 3xx, 0 4xx, 0 5xx"),
        "{stdout}"
    );
    let url = format!("https://127.0.0.1:{}/file10m", caddy.port);
    let (code, stdout, stderr) = bench(&["--h3", "-n", "4", "-c", "2", "-m", "2", &url]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("requests: 4 total, 4 started, 4 done, 4 succeeded, 0 failed"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("({}) data", 4 * big)), "{stdout}");
}
