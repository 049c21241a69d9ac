//! `h2lab proxy` from the command line: prints its address, forwards to an in-process
//! `h2lab serve`, prints the counters on SIGUSR1 (stderr) and on exit with `--stats`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

fn kill(pid: u32, sig: &str) {
    assert!(Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

#[test]
fn proxy_forwards_and_prints_counters() {
    let backend = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let up = backend.addr().unwrap().to_string();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("h2lab"))
        .args([
            "proxy",
            "-l",
            "127.0.0.1:0",
            "-u",
            &up,
            "--upstream-protocol",
            "h2c-mux",
            "--stats",
            "-q",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("h2lab proxy: listening on http://")
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();

    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    assert!(
        resp.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&resp)
    );
    assert!(
        resp.ends_with(b"pong"),
        "{}",
        String::from_utf8_lossy(&resp)
    );

    kill(child.id(), "-USR1");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("open:") {
        let mut l = String::new();
        if err.read_line(&mut l).unwrap() == 0 {
            break;
        }
        seen.push_str(&l);
    }
    assert!(seen.contains("h2lab proxy: counters"), "{seen}");
    assert!(seen.contains("requests: 1"), "{seen}");

    kill(child.id(), "-TERM");
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("requests: 1\n"), "{rest}");
    assert!(rest.contains("upstream connections: 1 opened"), "{rest}");
}
