//! The options of an anchor start, and the start itself: retried on fresh ports when the
//! server exits early or is not ready in time.

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use super::kind::AnchorKind;
use super::layout::Layout;
use super::ready::Ready;
use super::running::AnchorServer;
use crate::cert;
use crate::files::{Files, TempDir};
use crate::net::free_ports;
use crate::{which, Error};

/// How many times a start is tried (fresh ports each time) when the server exits early or does
/// not come up in time.
const START_ATTEMPTS: u32 = 3;
/// Default deadline for all listeners to accept connections.
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for starting one anchor server; see the `AnchorServer` constructors.
#[derive(Debug, Clone)]
#[must_use = "call .start() to start the server"]
pub struct AnchorBuilder {
    pub(super) kind: AnchorKind,
    files: Files,
    pub(super) max_concurrent_streams: Option<u32>,
    pub(super) workers: u32,
    ready_timeout: Duration,
}

impl AnchorBuilder {
    /// A builder for `kind`, serving no files, one worker, default limits.
    pub fn new(kind: AnchorKind) -> Self {
        AnchorBuilder {
            kind,
            files: Files::new(),
            max_concurrent_streams: None,
            workers: 1,
            ready_timeout: DEFAULT_READY_TIMEOUT,
        }
    }

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

    /// Adds one file with exactly `data`.
    pub fn file_bytes(mut self, name: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        self.files = self.files.bytes(name, data);
        self
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS the server announces: nghttpd `-m`, nginx
    /// `http2_max_concurrent_streams`, Apache `H2MaxSessionStreams`. h2o 2.2 always announces
    /// 100, so `start()` returns [`Error::Unsupported`] for h2o with this option.
    pub fn max_concurrent_streams(mut self, n: u32) -> Self {
        self.max_concurrent_streams = Some(n);
        self
    }

    /// Worker count (default 1): nghttpd `-n`, nginx `worker_processes` (with a master process
    /// when > 1), h2o `num-threads`, Apache child processes (25 threads each).
    pub fn workers(mut self, n: u32) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Deadline of one start attempt for all listeners to accept a connection (default 10 s);
    /// an attempt that misses it is retried on fresh ports like one whose server exited.
    pub fn ready_timeout(mut self, d: Duration) -> Self {
        self.ready_timeout = d;
        self
    }

    /// Starts the server and waits until every listener accepts connections, each TCP one
    /// held by the server's own processes (so that another process that took a port cannot
    /// pass for the server).
    ///
    /// Ports are chosen by binding port 0 and releasing; if the server exits during start-up
    /// (e.g. a port was taken meanwhile) or misses the deadline, the whole start is retried
    /// with fresh ports, up to 3 times.
    pub fn start(self) -> Result<AnchorServer, Error> {
        self.start_with_ports(free_ports)
    }

    /// [`AnchorBuilder::start`] with the ports of each attempt from `next_ports(n)`.
    fn start_with_ports(
        self,
        mut next_ports: impl FnMut(usize) -> Result<Vec<u16>, Error>,
    ) -> Result<AnchorServer, Error> {
        let binary = which(self.kind.binary()).ok_or(Error::MissingBinary(self.kind.binary()))?;
        let dir = TempDir::new(self.kind.binary())?;
        let docroot = dir.path().join("www");
        fs::create_dir(&docroot).map_err(|e| Error::io("create docroot", e))?;
        crate::files::set_mode(&docroot, 0o755)?;
        self.files.write_to(&docroot)?;
        let cert = if self.kind.has_tls() {
            Some(cert::self_signed()?.write_to(dir.path())?)
        } else {
            None
        };
        let mut last = None;
        for attempt in 1..=START_ATTEMPTS {
            let layout = Layout::new(self.kind, dir.path(), &mut next_ports)?;
            let mut cmd = self.command(&binary, dir.path(), &docroot, &layout, cert.as_ref())?;
            let log_path = dir.path().join("server.log");
            let log = File::create(&log_path).map_err(|e| Error::io("create server.log", e))?;
            let log2 = log
                .try_clone()
                .map_err(|e| Error::io("dup server.log", e))?;
            cmd.stdin(Stdio::null())
                .stdout(log)
                .stderr(log2)
                .process_group(0);
            let child = cmd
                .spawn()
                .map_err(|e| Error::io(format!("spawn {}", binary.display()), e))?;
            let mut server = AnchorServer {
                kind: self.kind,
                child: Some(child),
                layout,
                docroot: docroot.clone(),
                cert: cert.clone(),
                files: self.files.clone(),
                max_concurrent_streams: self.max_concurrent_streams,
                attempts: attempt,
                dir: None,
                dir_path: dir.path().to_path_buf(),
            };
            match server.wait_ready(self.ready_timeout) {
                Ok(()) => {
                    server.dir = Some(dir);
                    return Ok(server);
                }
                Err(not_ready) => {
                    let log_tail = server.log_tail();
                    drop(server); // stops it; the temp dir is still owned by `dir`
                    last = Some(match not_ready {
                        Ready::Exited => Error::StartFailed {
                            binary: self.kind.binary(),
                            attempts: attempt,
                            log_tail,
                        },
                        Ready::Timeout(listener) => Error::NotReady {
                            binary: self.kind.binary(),
                            listener: listener.to_string(),
                            log_tail,
                        },
                    });
                }
            }
        }
        Err(last.unwrap_or(Error::StartFailed {
            binary: self.kind.binary(),
            attempts: START_ATTEMPTS,
            log_tail: String::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{bound_by, Bound};

    /// The port offered first is taken by a listener of this test, which accepts connections:
    /// that must not pass for nghttpd. nghttpd cannot bind it, and the start is retried on a
    /// fresh port, which nghttpd itself holds.
    #[test]
    fn a_port_held_by_another_listener_is_not_taken_for_the_server() {
        if which("nghttpd").is_none() {
            crate::note_skip("nghttpd");
            return;
        }
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let mut offered = Vec::new();
        let server = AnchorBuilder::new(AnchorKind::NghttpdH2c)
            .file_size("f", 10)
            .start_with_ports(|n| {
                let p = if offered.is_empty() {
                    vec![taken_port]
                } else {
                    free_ports(n)?
                };
                offered.push(p[0]);
                Ok(p)
            })
            .unwrap();
        assert_eq!(server.attempts(), 2);
        assert_eq!(offered.len(), 2);
        let port = server.addr_h2c().unwrap().port();
        assert_eq!(port, offered[1]);
        assert_ne!(port, taken_port);
        assert!(bound_by(&server.processes(), Bound::TcpListen, port));
    }

    /// An attempt that misses its deadline is retried too. nginx retries a taken port for 2 s
    /// (500 ms pauses) before it exits, so with a 300 ms deadline and the HTTP/1.1 port taken
    /// every time, each attempt times out: the error names that listener after 3 attempts.
    #[test]
    fn an_attempt_that_times_out_is_retried() {
        if which("nginx").is_none() {
            crate::note_skip("nginx");
            return;
        }
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        let mut calls = 0;
        let err = AnchorBuilder::new(AnchorKind::Nginx)
            .ready_timeout(Duration::from_millis(300))
            .start_with_ports(|n| {
                calls += 1;
                let mut p = free_ports(n)?;
                p[0] = taken_port;
                Ok(p)
            })
            .unwrap_err();
        assert_eq!(calls, START_ATTEMPTS);
        match err {
            Error::NotReady {
                binary, listener, ..
            } => {
                assert_eq!(binary, "nginx");
                assert_eq!(listener, format!("127.0.0.1:{taken_port}"));
            }
            other => panic!("unexpected: {other}"),
        }
    }
}
