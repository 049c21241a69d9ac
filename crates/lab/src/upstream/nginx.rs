//! nginx as the proxy of the upstream experiment: the seed's server blocks (one per arm, on
//! ports chosen at run time) in one configuration, one worker, started in the foreground
//! and stopped when dropped.

use std::fmt::Write as _;
use std::net::SocketAddr;
#[cfg(unix)]
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use h2lab_proxy::UpstreamProtocol;

use crate::host::{NotReady, StartFailed};

/// `nginx -v` as `nginx/1.22.1`, if nginx is installed.
pub fn version() -> Option<String> {
    let out = Command::new("nginx").arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.split_whitespace()
        .find(|w| w.starts_with("nginx/"))
        .map(str::to_string)
}

/// Whether this nginx has `proxy_http_version 2` (1.29.4 and later).
pub fn has_h2_upstream(v: &str) -> bool {
    let nums: Vec<u32> = v
        .trim_start_matches("nginx/")
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    nums.as_slice() >= [1, 29, 4].as_slice()
}

/// Why nginx cannot run an arm (the arm is reported as skipped, with this reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// No nginx binary.
    NotInstalled,
    /// This nginx (its version line) has no HTTP/2 upstream (before 1.29.4).
    NoH2Upstream(String),
    /// No nginx multiplexes requests over an upstream connection.
    NoMultiplexing(String),
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsupported::NotInstalled => f.write_str("nginx is not installed"),
            Unsupported::NoH2Upstream(v) => {
                write!(f, "not supported by {v} (no HTTP/2 upstream before 1.29.4)")
            }
            Unsupported::NoMultiplexing(v) => {
                write!(
                    f,
                    "not supported by {v} (no upstream multiplexing in any nginx)"
                )
            }
        }
    }
}

impl std::error::Error for Unsupported {}

/// The `upstream` and `server` blocks of one arm (`{PORT}` is filled in later), or why
/// nginx cannot run it.
pub fn arm_block(
    arm: UpstreamProtocol,
    backends: &[SocketAddr],
    keepalive: usize,
) -> Result<String, Unsupported> {
    let v = version().ok_or(Unsupported::NotInstalled)?;
    let name = arm.name().replace(['.', '-'], "_");
    let mut up = format!("    upstream backend_{name} {{\n");
    for b in backends {
        let _ = writeln!(up, "        server {b};");
    }
    let (version, extra, ka) = match arm {
        UpstreamProtocol::H1 => (
            "1.1",
            "            proxy_set_header Connection \"\";\n",
            true,
        ),
        UpstreamProtocol::H10 => ("1.0", "", false),
        UpstreamProtocol::H2c if has_h2_upstream(&v) => ("2", "", true),
        UpstreamProtocol::H2c => return Err(Unsupported::NoH2Upstream(v)),
        UpstreamProtocol::H2cMux => return Err(Unsupported::NoMultiplexing(v)),
    };
    if ka {
        let _ = writeln!(up, "        keepalive {keepalive};\n        keepalive_requests 100000;\n        keepalive_timeout 60s;");
    }
    up.push_str("    }\n");
    let _ = write!(
        up,
        "    server {{\n        listen 127.0.0.1:{{PORT}};\n        location / {{\n            proxy_pass http://backend_{name};\n            proxy_http_version {version};\n{extra}            proxy_set_header Host $host;\n            proxy_set_header X-Real-IP $remote_addr;\n            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n            proxy_set_header X-Forwarded-Proto $scheme;\n            proxy_buffering on;\n            proxy_buffer_size 16k;\n            proxy_buffers 8 32k;\n        }}\n    }}\n"
    );
    Ok(up)
}

/// How many times nginx is started, fresh ports each time, when it exits during start-up or
/// does not come up in time (typically: another process took a port between the choice and
/// nginx's bind).
const START_ATTEMPTS: u32 = 3;
/// Deadline of one attempt: nginx's own process (the master) listens on every port (a
/// listener of another program does not count, [`crate::host::held_listeners`]). nginx
/// itself retries a taken port for 2.5 s before exiting.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why nginx could not be started.
#[derive(Debug)]
pub enum StartError {
    /// Preparing its directory or configuration, or spawning it, failed.
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Every attempt failed (a fresh set of ports each time).
    Failed {
        /// How many attempts were made.
        attempts: u32,
        /// How the last attempt failed: nginx exited, or was not ready by the deadline.
        last: Failure,
        /// The end of nginx's error log (and standard error) of the last attempt.
        log: String,
    },
}

/// How one start attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// nginx exited (typically: a port was taken).
    Exited,
    /// nginx did not listen on every port by the deadline; the first one missing.
    TimedOut(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Io { context, source } => write!(f, "{context}: {source}"),
            StartError::Failed {
                attempts,
                last,
                log,
            } => {
                match last {
                    Failure::Exited => write!(f, "nginx exited during start-up")?,
                    Failure::TimedOut(what) => write!(
                        f,
                        "nginx was not ready within {} s ({what})",
                        READY_TIMEOUT.as_secs()
                    )?,
                }
                write!(
                    f,
                    " ({attempts} attempts, fresh ports each); its error log:\n{log}"
                )
            }
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Io { source, .. } => Some(source),
            StartError::Failed { .. } => None,
        }
    }
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> StartError {
    let context = context.into();
    move |source| StartError::Io { context, source }
}

/// The configuration being assembled: each arm's blocks, their ports chosen when nginx starts.
#[derive(Default)]
pub struct Config {
    blocks: Vec<String>,
}

impl Config {
    /// Adds an arm's blocks (with `{PORT}`); returns its index for [`Nginx::addr`].
    pub fn add(&mut self, block: String) -> usize {
        self.blocks.push(block);
        self.blocks.len() - 1
    }

    /// Writes the configuration and starts nginx, each block on a free port; waits (polling,
    /// 10 s at most) until nginx's own process listens on every port
    /// (`host::start_listening`, shared with the `page --render` anchors). When nginx
    /// exits first (a port was taken) or misses the deadline, starts it again on fresh ports,
    /// up to 3 times.
    pub fn start(self) -> Result<Nginx, StartError> {
        self.start_with_ports(crate::host::free_ports)
    }

    /// [`Config::start`] with the ports of each attempt from `next_ports` (one per block).
    fn start_with_ports(
        self,
        mut next_ports: impl FnMut(usize) -> std::io::Result<Vec<u16>>,
    ) -> Result<Nginx, StartError> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "h2lab-upstream-nginx-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut dir = Dir(dir);
        std::fs::create_dir_all(dir.0.join("logs")).map_err(io("nginx directory"))?;
        let n = self.blocks.len();
        let started = crate::host::start_listening(
            START_ATTEMPTS,
            READY_TIMEOUT,
            || next_ports(n).map_err(io("nginx: no free port")),
            |ports| self.spawn(&dir.0, ports),
            kill_group,
        );
        match started {
            Ok(l) => Ok(Nginx {
                child: l.child,
                dir: std::mem::take(&mut dir.0),
                ports: l.ports,
                attempts: l.attempts,
            }),
            Err(StartFailed::Setup(e)) => Err(e),
            Err(StartFailed::NotReady(last)) => Err(StartError::Failed {
                attempts: START_ATTEMPTS,
                last: match last {
                    NotReady::Exited => Failure::Exited,
                    NotReady::TimedOut(p) => {
                        Failure::TimedOut(format!("not listening on 127.0.0.1:{p}"))
                    }
                },
                // The last attempt's: each attempt starts with fresh log files.
                log: log_tail(&dir.0),
            }),
        }
    }

    /// Writes the configuration of one attempt (block `i` on `ports[i]`) and spawns nginx in
    /// the foreground, in its own process group (master and worker are stopped together).
    fn spawn(&self, dir: &Path, ports: &[u16]) -> Result<Child, StartError> {
        let blocks: String = self
            .blocks
            .iter()
            .zip(ports)
            .map(|(b, p)| b.replace("{PORT}", &p.to_string()))
            .collect();
        let conf = format!(
            "worker_processes 1;\nerror_log {d}/logs/error.log warn;\npid {d}/nginx.pid;\nevents {{ worker_connections 4096; }}\nhttp {{\n    access_log off;\n    keepalive_timeout 65;\n    keepalive_requests 100000;\n    gzip off;\n    client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n    fastcgi_temp_path {d}/fastcgi;\n    uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;\n{blocks}}}\n",
            d = dir.display()
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).map_err(io("writing nginx.conf"))?;
        // A previous attempt's files: the pid file says when this one has bound its ports.
        let _ = std::fs::remove_file(dir.join("nginx.pid"));
        let error_log = dir.join("logs/error.log");
        let _ = std::fs::remove_file(&error_log);
        let stderr = std::fs::File::create(dir.join("logs/stderr.log"))
            .map_err(io("creating nginx's stderr log"))?;
        let mut cmd = Command::new("nginx");
        cmd.args([
            "-p",
            &dir.display().to_string(),
            "-c",
            &path.display().to_string(),
            "-g",
            "daemon off;",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
        #[cfg(unix)]
        cmd.process_group(0);
        cmd.spawn().map_err(io("starting nginx"))
    }
}

/// The last 20 lines of nginx's error log and standard error in `dir`.
fn log_tail(dir: &Path) -> String {
    let mut out = String::new();
    for name in ["logs/error.log", "logs/stderr.log"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for l in &lines[lines.len().saturating_sub(20)..] {
            let _ = writeln!(out, "{l}");
        }
    }
    out
}

/// Kills nginx's process group (master and worker) and reaps the master.
fn kill_group(child: &mut Child) {
    crate::os::kill_process_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// A directory removed when dropped (unless emptied with `mem::take`).
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A running nginx; dropping it stops it (master and worker) and removes its directory.
pub struct Nginx {
    child: Child,
    dir: PathBuf,
    ports: Vec<u16>,
    attempts: u32,
}

impl Nginx {
    /// The address of the blocks added `i`-th ([`Config::add`]).
    pub fn addr(&self, i: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports[i]))
    }

    /// How many start attempts it took (1 unless a port was taken).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        kill_group(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::free_ports;
    use std::net::{TcpListener, TcpStream};
    use std::time::Instant;

    /// A server block answering `ok` on `{PORT}`.
    const OK_BLOCK: &str = "    server {\n        listen 127.0.0.1:{PORT};\n        location / { return 200 \"ok\\n\"; }\n    }\n";

    /// The live processes whose process group is `pgid` (from /proc).
    fn group_members(pgid: u32) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // pid (comm) state ppid pgrp ...: fields after the comm's closing parenthesis;
                // a zombie (state Z) is dead.
                let f: Vec<&str> = stat
                    .rsplit_once(')')
                    .map(|(_, rest)| rest.split_whitespace().collect())
                    .unwrap_or_default();
                f.first() != Some(&"Z") && f.get(2).and_then(|g| g.parse().ok()) == Some(pgid)
            })
            .collect()
    }

    /// GET / on `addr`: the response, as text.
    fn get(addr: SocketAddr) -> String {
        use std::io::{Read as _, Write as _};
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// The first port offered is taken (a listener of this test holds it, so a connection
    /// to it succeeds): nginx exits, the start is retried on fresh ports, and the blocks are
    /// served by nginx on them; dropping it stops master and worker.
    #[test]
    fn a_taken_port_is_retried_on_fresh_ones() {
        h2lab_testkit::require_anchor!("nginx");
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let mut offered = Vec::new();
        let mut c = Config::default();
        assert_eq!(c.add(OK_BLOCK.into()), 0);
        assert_eq!(c.add(OK_BLOCK.into()), 1);
        let n = c
            .start_with_ports(|k| {
                let mut p = free_ports(k)?;
                if offered.is_empty() {
                    p[1] = taken_port;
                }
                offered.push(p.clone());
                Ok(p)
            })
            .unwrap();
        assert_eq!(n.attempts(), 2);
        assert_eq!(offered.len(), 2);
        assert_eq!(n.addr(0).port(), offered[1][0]);
        assert_eq!(n.addr(1).port(), offered[1][1]);
        assert!(!offered[1].contains(&taken_port));
        for i in 0..2 {
            let r = get(n.addr(i));
            assert!(
                r.starts_with("HTTP/1.1 200") && r.ends_with("\nok\n"),
                "{r}"
            );
        }
        let pgid = n.child.id();
        assert!(group_members(pgid).len() >= 2, "master and worker");
        let dir = n.dir.clone();
        drop(n);
        // SIGKILL is delivered at once; the worker may take a moment to be gone.
        let end = Instant::now() + Duration::from_secs(10);
        while !group_members(pgid).is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(group_members(pgid), Vec::<u32>::new());
        assert!(!dir.exists());
    }

    /// Every attempt on a taken port: a typed error after 3 attempts, with nginx's log.
    #[test]
    fn a_port_taken_every_time_is_an_error_with_the_log() {
        h2lab_testkit::require_anchor!("nginx");
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let mut calls = 0;
        let mut c = Config::default();
        c.add(OK_BLOCK.into());
        let err = c
            .start_with_ports(|_| {
                calls += 1;
                Ok(vec![port])
            })
            .err()
            .unwrap();
        assert_eq!(calls, START_ATTEMPTS);
        match &err {
            StartError::Failed {
                attempts,
                last,
                log,
            } => {
                assert_eq!(*attempts, START_ATTEMPTS);
                assert_eq!(*last, Failure::Exited);
                assert!(log.contains("Address already in use"), "{log}");
            }
            other => panic!("unexpected: {other}"),
        }
        assert!(err.to_string().contains("3 attempts"), "{err}");
    }

    #[test]
    fn versions() {
        assert!(!has_h2_upstream("nginx/1.22.1"));
        assert!(has_h2_upstream("nginx/1.29.4"));
        assert!(has_h2_upstream("nginx/1.30.0"));
    }
}
