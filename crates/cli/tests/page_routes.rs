//! `h2lab page` connecting somewhere other than the URL's host, as `bench` can: a UNIX
//! domain socket (`-B unix:PATH`) and an address list whose first entry refuses
//! (`--connect-to`, like a host resolving to several addresses). The page is the in-process
//! built-in server's `/page`; the URL only names the origin.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use assert_cmd::cargo::cargo_bin_cmd;
use h2lab_server::{RunningServer, ServerConfig};

/// Five images: each load is 6 requests (the HTML and its images).
const QUERY: &str = "n=5&min=100&max=200&seed=1";

fn server() -> RunningServer {
    h2lab_server::spawn(ServerConfig::local()).unwrap()
}

/// Relays every connection accepted on a UNIX socket at `path` to `to` (the built-in server
/// has no UNIX listener): one thread per direction, ended by either side closing.
fn unix_relay(path: &Path, to: SocketAddr) {
    let l = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            let Ok(t) = TcpStream::connect(to) else {
                continue;
            };
            let (c2, t2) = (c.try_clone().unwrap(), t.try_clone().unwrap());
            std::thread::spawn(move || {
                pipe(c, t, |t: &TcpStream| {
                    let _ = t.shutdown(Shutdown::Write);
                })
            });
            std::thread::spawn(move || {
                pipe(t2, c2, |c: &UnixStream| {
                    let _ = c.shutdown(Shutdown::Write);
                })
            });
        }
    });
}

/// Copies `from` into `to` until EOF, then half-closes `to` (`done`).
fn pipe<R: Read, W: Write>(mut from: R, mut to: W, done: impl FnOnce(&W)) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    done(&to);
}

/// Runs `h2lab page ARGS --link loopback -n 1 --no-report --json PATH` and returns the JSON.
fn page(dir: &Path, args: &[&str]) -> serde_json::Value {
    let json = dir.join("page.json");
    let out = cargo_bin_cmd!("h2lab")
        .arg("page")
        .args(args)
        .args(["--link", "loopback", "-n", "1", "--no-report", "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{args:?}: {all}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Every protocol loaded the page once: 6 requests, none failed.
fn assert_loaded(doc: &serde_json::Value, protocols: &[&str]) {
    let got = doc["protocols"].as_array().unwrap();
    assert_eq!(got.len(), protocols.len(), "{doc}");
    for (p, want) in got.iter().zip(protocols) {
        assert_eq!(p["proto"], *want, "{doc}");
        assert!(p["error"].is_null(), "{doc}");
        let loads = p["loads"].as_array().unwrap();
        assert_eq!(loads.len(), 1, "{doc}");
        assert_eq!(loads[0]["requests"], 6, "{doc}");
        assert_eq!(loads[0]["failed"], 0, "{doc}");
    }
    assert_eq!(doc["page"]["resources"], 5, "{doc}");
}

#[test]
fn page_over_a_unix_socket() {
    let s = server();
    let dir = common::scratch_dir("page-unix");
    let sock = dir.join("h2lab.sock");
    unix_relay(&sock, s.addr().unwrap());
    let base = format!("unix:{}", sock.display());
    // The URL names the origin only: its host does not exist.
    let url = format!("http://page.invalid/page?{QUERY}");
    let doc = page(&dir, &["-B", &base, "--protocols", "h1,h2c", &url]);
    assert_loaded(&doc, &["h1", "h2c"]);
    // A UNIX socket cannot go through an emulated link.
    let out = cargo_bin_cmd!("h2lab")
        .args(["page", "-B", &base, "--link", "wan", "--no-report", &url])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UNIX socket"), "{err}");
}

#[test]
fn page_walks_the_address_list() {
    let s = server();
    let dir = common::scratch_dir("page-addrs");
    let live = s.addr().unwrap();
    // The first address refuses, like the first of several addresses a host resolves to.
    let dead = common::closed_port();
    let url = format!("http://page.invalid:{}/page?{QUERY}", live.port());
    let to = format!("127.0.0.1:{dead},127.0.0.1:{}", live.port());
    let doc = page(&dir, &["--connect-to", &to, "--protocols", "h1,h2c", &url]);
    assert_loaded(&doc, &["h1", "h2c"]);
    // Without a port, the URL's port is used.
    let doc = page(
        &dir,
        &["--connect-to", "localhost", "--protocols", "h2c", &url],
    );
    assert_loaded(&doc, &["h2c"]);
}
