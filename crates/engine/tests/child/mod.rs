//! The test server in a child process — this test binary run again, serving until its stdin
//! closes — so that a test can stop it with SIGSTOP (a server thread in the test process could
//! not be frozen on its own).

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::{kill_process, Pid, Signal};

/// Set in the child's environment.
const ENV: &str = "H2LAB_TEST_CHILD_SERVER";
/// The directory an HTTP/3 child makes its certificate in (the parent's, removed by it).
const CERTS: &str = "H2LAB_TEST_CHILD_CERTS";
/// The line the child prints with its address.
const ADDR_LINE: &str = "H2LAB-CHILD-ADDR ";

/// Not a test: the body of the child process (returns at once in a normal test run).
#[test]
fn child_server_entry() {
    if std::env::var_os(ENV).is_none() {
        return;
    }
    // "h3": `serve --h3` (TLS with a certificate made in a temporary directory), its UDP
    // address printed; otherwise cleartext HTTP/1.1 and h2c.
    let h3 = std::env::var_os(ENV).is_some_and(|v| v == "h3");
    let dir = std::env::var_os(CERTS).map(std::path::PathBuf::from);
    let srv = h2lab_server::spawn(if h3 {
        h2lab_server::ServerConfig {
            tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            cert_dir: dir,
            h3: true,
            ..h2lab_server::ServerConfig::local()
        }
    } else {
        h2lab_server::ServerConfig::local()
    })
    .unwrap();
    let addr = if h3 { srv.h3_addr() } else { srv.addr() };
    println!("{ADDR_LINE}{}", addr.unwrap());
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    std::process::exit(0);
}

/// A running child server; stopped, continued and killed by pid.
pub struct ChildServer {
    child: Child,
    /// The HTTP/3 child's certificate directory (removed when the child is gone).
    _certs: tempfile::TempDir,
    /// Where it listens (HTTP/1.1 and h2c).
    pub addr: SocketAddr,
    stopped: AtomicBool,
}

impl ChildServer {
    /// Starts the child and waits for its address.
    pub fn start() -> ChildServer {
        ChildServer::start_as("1")
    }

    /// Starts a child serving HTTP/3 (`serve --h3`); `addr` is its UDP address.
    pub fn start_h3() -> ChildServer {
        ChildServer::start_as("h3")
    }

    fn start_as(kind: &str) -> ChildServer {
        let certs = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "child::child_server_entry",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(ENV, kind)
            .env(CERTS, certs.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("the child server exited before printing its address")
                .unwrap();
            // libtest may have printed "test ... " on the same line.
            if let Some(i) = line.find(ADDR_LINE) {
                break line[i + ADDR_LINE.len()..].trim().parse().unwrap();
            }
        };
        ChildServer {
            child,
            _certs: certs,
            addr,
            stopped: AtomicBool::new(false),
        }
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap()
    }

    /// The child's pid (for a thread that stops and continues it).
    pub fn raw_pid(&self) -> i32 {
        self.pid().as_raw_nonzero().get()
    }

    /// SIGSTOP: the whole server process freezes.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        kill_process(self.pid(), Signal::STOP).unwrap();
    }

    /// SIGCONT.
    pub fn cont(&self) {
        kill_process(self.pid(), Signal::CONT).unwrap();
        self.stopped.store(false, Ordering::SeqCst);
    }
}

/// SIGSTOP, then SIGCONT after `d`, for the process `pid`.
pub fn stall(pid: i32, d: std::time::Duration) {
    let pid = Pid::from_raw(pid).unwrap();
    kill_process(pid, Signal::STOP).unwrap();
    std::thread::sleep(d);
    kill_process(pid, Signal::CONT).unwrap();
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = kill_process(self.pid(), Signal::CONT);
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
