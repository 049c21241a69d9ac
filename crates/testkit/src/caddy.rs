//! Caddy (HTTP/3 by quic-go, HTTP/2 and HTTP/1.1 over TLS) on loopback, on a port chosen at run
//! time, serving deterministic files: the independent HTTP/3 server of the `--h3` tests.

use std::fs::{self, File};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cert::{self, CertFiles};
use crate::files::{Files, TempDir};
use crate::net::{bound_by, free_port_tcp_udp, Bound, Listener};
use crate::{which, Error};

/// How many times a start is tried (a fresh port each time) when Caddy exits or does not come
/// up.
const START_ATTEMPTS: u32 = 3;
/// Default deadline of one attempt: TCP listening and accepting, UDP socket bound.
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Options for starting Caddy; see [`Caddy::builder`].
#[derive(Debug, Clone)]
#[must_use = "call .start() to start Caddy"]
pub struct CaddyBuilder {
    files: Files,
    gomaxprocs: Option<u32>,
    ready_timeout: Duration,
}

impl CaddyBuilder {
    /// The files to serve (replaces any set before).
    pub fn files(mut self, files: Files) -> Self {
        self.files = files;
        self
    }

    /// Adds one file of `len` deterministic bytes ([`crate::pattern_bytes`]).
    pub fn file_size(mut self, name: impl Into<String>, len: usize) -> Self {
        self.files = self.files.size(name, len);
        self
    }

    /// Runs Caddy with `GOMAXPROCS=n` (default: Go's, one per CPU).
    pub fn gomaxprocs(mut self, n: u32) -> Self {
        self.gomaxprocs = Some(n.max(1));
        self
    }

    /// Deadline of one start attempt (default 20 s); an attempt that misses it is retried on a
    /// fresh port like one whose Caddy exited.
    pub fn ready_timeout(mut self, d: Duration) -> Self {
        self.ready_timeout = d;
        self
    }

    /// Starts Caddy and waits until it listens on TCP (accepting) and has bound its UDP
    /// (QUIC) socket on the same port number.
    ///
    /// The port is free for TCP and UDP when chosen, but another process may take it before
    /// Caddy binds it (an outgoing connection's ephemeral port, typically): Caddy then exits,
    /// and the start is retried on a fresh port, up to 3 times.
    pub fn start(self) -> Result<Caddy, Error> {
        self.start_with_ports(free_port_tcp_udp)
    }

    /// [`CaddyBuilder::start`] with the port of each attempt from `next_port`.
    fn start_with_ports(
        self,
        mut next_port: impl FnMut() -> Result<u16, Error>,
    ) -> Result<Caddy, Error> {
        let binary = which("caddy").ok_or(Error::MissingBinary("caddy"))?;
        let dir = TempDir::new("caddy")?;
        let www = dir.path().join("www");
        let home = dir.path().join("home");
        for d in [&www, &home] {
            fs::create_dir(d).map_err(|e| Error::io(format!("create {}", d.display()), e))?;
        }
        self.files.write_to(&www)?;
        let cert = cert::self_signed()?.write_to(dir.path())?;
        let log_path = dir.path().join("caddy.log");
        let mut last = None;
        for attempt in 1..=START_ATTEMPTS {
            let port = next_port()?;
            let caddyfile = dir.path().join("Caddyfile");
            fs::write(&caddyfile, caddyfile_text(port, &cert, &www))
                .map_err(|e| Error::io("write Caddyfile", e))?;
            let log = File::create(&log_path).map_err(|e| Error::io("create caddy.log", e))?;
            let log2 = log.try_clone().map_err(|e| Error::io("dup caddy.log", e))?;
            let mut cmd = Command::new(&binary);
            cmd.args(["run", "--adapter", "caddyfile", "--config"])
                .arg(&caddyfile)
                .env("HOME", &home)
                .env("XDG_DATA_HOME", home.join("data"))
                .env("XDG_CONFIG_HOME", home.join("config"))
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2);
            if let Some(n) = self.gomaxprocs {
                cmd.env("GOMAXPROCS", n.to_string());
            }
            let mut child = cmd
                .spawn()
                .map_err(|e| Error::io(format!("spawn {}", binary.display()), e))?;
            match wait_ready(&mut child, port, self.ready_timeout) {
                Ok(()) => {
                    return Ok(Caddy {
                        child: Some(child),
                        port,
                        attempts: attempt,
                        cert,
                        dir,
                    })
                }
                Err(not_ready) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log_tail = tail(&log_path);
                    last = Some(match not_ready {
                        NotReady::Exited => Error::StartFailed {
                            binary: "caddy",
                            attempts: attempt,
                            log_tail,
                        },
                        NotReady::Timeout(listener) => Error::NotReady {
                            binary: "caddy",
                            listener,
                            log_tail,
                        },
                    });
                }
            }
        }
        Err(last.unwrap_or(Error::StartFailed {
            binary: "caddy",
            attempts: START_ATTEMPTS,
            log_tail: String::new(),
        }))
    }
}

/// The Caddyfile of one attempt: admin off (no second port), TLS with the testkit certificate
/// (addressed by IP, Caddy needs `default_sni`), HTTP/1.1, HTTP/2 and HTTP/3 on `port`.
fn caddyfile_text(port: u16, cert: &CertFiles, www: &Path) -> String {
    format!(
        "{{\n\tadmin off\n\tdefault_sni localhost\n\tauto_https disable_redirects\n\
         \tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
         https://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\ttls {} {}\n\troot * {}\n\
         \tfile_server\n}}\n",
        cert.cert.display(),
        cert.key.display(),
        www.display()
    )
}

/// The last 20 lines of the log at `path`.
fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Polls until `child` holds a listening TCP socket and a UDP socket on `port` and the TCP one
/// accepts a connection, until it exits, or until `timeout`.
fn wait_ready(child: &mut Child, port: u16, timeout: Duration) -> Result<(), NotReady> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let pid = [child.id()];
    let end = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return Err(NotReady::Exited);
        }
        let tcp = bound_by(&pid, Bound::TcpListen, port) && Listener::Tcp(addr).accepts();
        let udp = bound_by(&pid, Bound::Udp, port);
        if tcp && udp {
            return Ok(());
        }
        if Instant::now() >= end {
            let missing = if tcp { "udp" } else { "tcp" };
            return Err(NotReady::Timeout(format!("{missing} {addr}")));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Why one attempt did not come up.
enum NotReady {
    /// Caddy exited (typically: the port was taken).
    Exited,
    /// What was still missing at the deadline.
    Timeout(String),
}

/// A running Caddy serving files over HTTPS on 127.0.0.1: HTTP/3 on the UDP port, HTTP/2 and
/// HTTP/1.1 on the TCP port of the same number. Dropping it kills Caddy and removes its temp
/// dir (Caddyfile, HOME, certificate, files, log).
#[derive(Debug)]
pub struct Caddy {
    child: Option<Child>,
    port: u16,
    attempts: u32,
    cert: CertFiles,
    dir: TempDir,
}

impl Caddy {
    /// A builder: no files, Go's default GOMAXPROCS, 20 s per attempt.
    pub fn builder() -> CaddyBuilder {
        CaddyBuilder {
            files: Files::new(),
            gomaxprocs: None,
            ready_timeout: DEFAULT_READY_TIMEOUT,
        }
    }

    /// Caddy serving `files` with the default options.
    pub fn start(files: Files) -> Result<Caddy, Error> {
        Caddy::builder().files(files).start()
    }

    /// The port number (TCP and UDP).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `https://127.0.0.1:PORT/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}/{}", self.addr(), path.trim_start_matches('/'))
    }

    /// How many start attempts it took (1 unless a port was taken).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The certificate and key files Caddy serves with (self-signed, see [`crate::CertPair`]).
    pub fn cert(&self) -> &CertFiles {
        &self.cert
    }

    /// Caddy's PID (while running).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The last lines of Caddy's log (for failure messages).
    pub fn log_tail(&self) -> String {
        tail(&self.dir.path().join("caddy.log"))
    }

    /// Kills and reaps Caddy (it forks no workers).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        self.kill();
        // `self.dir` is dropped after this, removing the temp dir.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn caddyfile_binds_loopback_on_one_port_for_three_protocols() {
        let cert = CertFiles {
            cert: "/c/cert.pem".into(),
            key: "/c/key.pem".into(),
        };
        let t = caddyfile_text(4433, &cert, Path::new("/w"));
        for want in [
            "admin off",
            "default_sni localhost",
            "protocols h1 h2 h3",
            "https://127.0.0.1:4433 {",
            "bind 127.0.0.1",
            "tls /c/cert.pem /c/key.pem",
            "root * /w",
        ] {
            assert!(t.contains(want), "{want:?} in {t}");
        }
    }

    /// The first port offered is taken (a listener holds it): Caddy exits, and the start is
    /// retried on a fresh port; the files are served over TCP on it.
    #[test]
    fn a_taken_port_is_retried_on_a_fresh_one() {
        if which("caddy").is_none() {
            crate::note_skip("caddy");
            return;
        }
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let mut offered = Vec::new();
        let caddy = Caddy::builder()
            .file_size("f", 10)
            .start_with_ports(|| {
                let p = if offered.is_empty() {
                    taken_port
                } else {
                    free_port_tcp_udp()?
                };
                offered.push(p);
                Ok(p)
            })
            .unwrap();
        assert_eq!(caddy.attempts(), 2);
        assert_eq!(offered.len(), 2);
        assert_ne!(caddy.port(), taken_port);
        assert_eq!(caddy.port(), offered[1]);
        let pid = [caddy.pid().unwrap()];
        assert!(bound_by(&pid, Bound::TcpListen, caddy.port()));
        assert!(bound_by(&pid, Bound::Udp, caddy.port()));
        let dir = caddy.dir.path().to_path_buf();
        assert!(dir.join("www/f").is_file());
        drop(caddy);
        assert!(!dir.exists());
    }

    /// Every attempt on a taken port: the error says so, with Caddy's own log.
    #[test]
    fn a_port_taken_every_time_is_an_error_with_the_log() {
        if which("caddy").is_none() {
            crate::note_skip("caddy");
            return;
        }
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let mut calls = 0;
        let err = Caddy::builder()
            .start_with_ports(|| {
                calls += 1;
                Ok(port)
            })
            .unwrap_err();
        assert_eq!(calls, START_ATTEMPTS);
        match err {
            Error::StartFailed {
                binary, log_tail, ..
            } => {
                assert_eq!(binary, "caddy");
                assert!(log_tail.contains("address already in use"), "{log_tail}");
            }
            other => panic!("unexpected: {other}"),
        }
    }
}
