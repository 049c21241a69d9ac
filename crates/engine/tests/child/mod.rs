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
/// The line the child prints with its address.
const ADDR_LINE: &str = "H2LAB-CHILD-ADDR ";

/// Not a test: the body of the child process (returns at once in a normal test run).
#[test]
fn child_server_entry() {
    if std::env::var_os(ENV).is_none() {
        return;
    }
    let srv = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    println!("{ADDR_LINE}{}", srv.addr().unwrap());
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    std::process::exit(0);
}

/// A running child server; stopped, continued and killed by pid.
pub struct ChildServer {
    child: Child,
    /// Where it listens (HTTP/1.1 and h2c).
    pub addr: SocketAddr,
    stopped: AtomicBool,
}

impl ChildServer {
    /// Starts the child and waits for its address.
    pub fn start() -> ChildServer {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "child::child_server_entry",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(ENV, "1")
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
