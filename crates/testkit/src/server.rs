//! Real anchor servers (nghttpd, nginx, h2o, apache2) on loopback, on ports chosen at run time.

use std::fs::{self, File};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cert::{self, CertFiles};
use crate::files::{Files, TempDir};
use crate::net::{bound_by, free_ports, Bound, Listener};
use crate::process::{group_members, stop_group};
use crate::{which, Error};

const NGINX_TEMPLATE: &str = include_str!("../../../testdata/anchors/configs/nginx.conf.template");
const H2O_TEMPLATE: &str = include_str!("../../../testdata/anchors/configs/h2o.conf.template");
const APACHE2_TEMPLATE: &str =
    include_str!("../../../testdata/anchors/configs/apache2.conf.template");

/// How many times a start is tried (fresh ports each time) when the server exits early or does
/// not come up in time.
const START_ATTEMPTS: u32 = 3;
/// Default deadline for all listeners to accept connections.
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stopping server gets after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Which anchor server (and, for nghttpd, which of its two modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnchorKind {
    /// `nghttpd --no-tls`: h2c with prior knowledge only (no HTTP/1.1, no Upgrade).
    NghttpdH2c,
    /// `nghttpd` with a certificate: TLS, ALPN `h2` only.
    NghttpdTls,
    /// nginx 1.22: HTTP/1.1 port, h2c-only port, TLS port (ALPN h2 + http/1.1),
    /// UNIX sockets (HTTP/1.1 and h2c).
    Nginx,
    /// h2o 2.2: one plain port (HTTP/1.1 + h2c prior knowledge + Upgrade), one TLS port.
    H2o,
    /// Apache 2.4 with mod_http2: one plain port (HTTP/1.1 + h2c direct + Upgrade), one TLS port
    /// (ALPN h2 + http/1.1).
    Apache2,
}

impl AnchorKind {
    /// The binary this kind runs.
    pub fn binary(self) -> &'static str {
        match self {
            AnchorKind::NghttpdH2c | AnchorKind::NghttpdTls => "nghttpd",
            AnchorKind::Nginx => "nginx",
            AnchorKind::H2o => "h2o",
            AnchorKind::Apache2 => "apache2",
        }
    }

    /// Whether this kind has a TLS listener (and therefore needs a certificate).
    pub fn has_tls(self) -> bool {
        !matches!(self, AnchorKind::NghttpdH2c)
    }
}

/// Options for starting one anchor server; see the `AnchorServer` constructors.
#[derive(Debug, Clone)]
#[must_use = "call .start() to start the server"]
pub struct AnchorBuilder {
    kind: AnchorKind,
    files: Files,
    max_concurrent_streams: Option<u32>,
    workers: u32,
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

    fn command(
        &self,
        binary: &Path,
        prefix: &Path,
        docroot: &Path,
        l: &Layout,
        cert: Option<&CertFiles>,
    ) -> Result<Command, Error> {
        let mut cmd = Command::new(binary);
        let p = prefix.display().to_string();
        let www = docroot.display().to_string();
        let (cert_s, key_s) = match cert {
            Some(c) => (c.cert.display().to_string(), c.key.display().to_string()),
            None => (String::new(), String::new()),
        };
        match self.kind {
            AnchorKind::NghttpdH2c | AnchorKind::NghttpdTls => {
                cmd.arg("--address=127.0.0.1").arg("-d").arg(docroot);
                if let Some(n) = self.max_concurrent_streams {
                    cmd.arg(format!("--max-concurrent-streams={n}"));
                }
                cmd.arg(format!("--workers={}", self.workers));
                if self.kind == AnchorKind::NghttpdH2c {
                    cmd.arg("--no-tls").arg(port_of(l.h2c).to_string());
                } else {
                    cmd.arg(port_of(l.tls).to_string()).arg(&key_s).arg(&cert_s);
                }
            }
            AnchorKind::Nginx => {
                let sock = l.unix_h1.as_ref().map(|s| s.display().to_string());
                let sock = sock.unwrap_or_default();
                let mut conf = NGINX_TEMPLATE
                    .replace("@PREFIX@", &p)
                    .replace("@DOCROOT@", &www)
                    .replace("@PORT_H1@", &port_of(l.h1).to_string())
                    .replace("@PORT_H2C@", &port_of(l.h2c).to_string())
                    .replace("@PORT_TLS@", &port_of(l.tls).to_string())
                    .replace("@CERT@", &cert_s)
                    .replace("@KEY@", &key_s)
                    .replace("@SOCK@", &sock);
                if self.workers > 1 {
                    conf = replace_once(&conf, "master_process off;", "master_process on;")?;
                    conf = replace_once(
                        &conf,
                        "worker_processes 1;",
                        &format!("worker_processes {};", self.workers),
                    )?;
                }
                if let Some(n) = self.max_concurrent_streams {
                    conf = replace_once(
                        &conf,
                        "access_log off;",
                        &format!("access_log off;\n    http2_max_concurrent_streams {n};"),
                    )?;
                }
                fs::create_dir_all(prefix.join("tmp"))
                    .map_err(|e| Error::io("create nginx tmp dir", e))?;
                for s in [&l.unix_h1, &l.unix_h2c].into_iter().flatten() {
                    let _ = fs::remove_file(s); // nginx does not unlink stale sockets
                }
                let conf_path = write_conf(prefix, "nginx.conf", &conf)?;
                cmd.arg("-c").arg(conf_path).arg("-p").arg(prefix);
                cmd.args(["-e", "stderr"]);
            }
            AnchorKind::H2o => {
                let mut conf = H2O_TEMPLATE
                    .replace("@USER@", &current_user())
                    .replace("@PREFIX@", &p)
                    .replace("@DOCROOT@", &www)
                    .replace("@PORT_PLAIN@", &port_of(l.h1).to_string())
                    .replace("@PORT_TLS@", &port_of(l.tls).to_string())
                    .replace("@CERT@", &cert_s)
                    .replace("@KEY@", &key_s);
                conf = replace_once(
                    &conf,
                    "num-threads: 1",
                    &format!("num-threads: {}", self.workers),
                )?;
                if self.max_concurrent_streams.is_some() {
                    // h2o 2.2 always announces SETTINGS_MAX_CONCURRENT_STREAMS 100;
                    // `http2-max-concurrent-requests-per-connection` only limits how many
                    // streams it processes at once, which is not what callers ask for.
                    return Err(Error::Unsupported(
                        "h2o 2.2 cannot change the SETTINGS_MAX_CONCURRENT_STREAMS it announces"
                            .to_string(),
                    ));
                }
                let conf_path = write_conf(prefix, "h2o.conf", &conf)?;
                cmd.arg("-c").arg(conf_path);
            }
            AnchorKind::Apache2 => {
                let mut conf = APACHE2_TEMPLATE
                    .replace("@PREFIX@", &p)
                    .replace("@DOCROOT@", &www)
                    .replace("@PORT_PLAIN@", &port_of(l.h1).to_string())
                    .replace("@PORT_TLS@", &port_of(l.tls).to_string())
                    .replace("@CERT@", &cert_s)
                    .replace("@KEY@", &key_s);
                if self.workers > 1 {
                    let w = self.workers;
                    conf = replace_once(&conf, "StartServers 1", &format!("StartServers {w}"))?;
                    conf = replace_once(&conf, "ServerLimit 1", &format!("ServerLimit {w}"))?;
                    conf = replace_once(
                        &conf,
                        "MaxRequestWorkers 25",
                        &format!("MaxRequestWorkers {}", 25 * w),
                    )?;
                }
                if let Some(n) = self.max_concurrent_streams {
                    conf = replace_once(
                        &conf,
                        "H2MaxSessionStreams 100",
                        &format!("H2MaxSessionStreams {n}"),
                    )?;
                }
                let conf_path = write_conf(prefix, "apache2.conf", &conf)?;
                cmd.arg("-f").arg(conf_path).arg("-DFOREGROUND");
            }
        }
        Ok(cmd)
    }
}

/// The listeners of one start attempt.
#[derive(Debug, Clone, Default)]
struct Layout {
    h1: Option<SocketAddr>,
    h2c: Option<SocketAddr>,
    tls: Option<SocketAddr>,
    unix_h1: Option<PathBuf>,
    unix_h2c: Option<PathBuf>,
}

impl Layout {
    fn new(
        kind: AnchorKind,
        prefix: &Path,
        ports: impl FnOnce(usize) -> Result<Vec<u16>, Error>,
    ) -> Result<Self, Error> {
        let addr = |p: u16| Some(SocketAddr::from(([127, 0, 0, 1], p)));
        Ok(match kind {
            AnchorKind::NghttpdH2c => {
                let p = ports(1)?;
                Layout {
                    h2c: addr(p[0]),
                    ..Layout::default()
                }
            }
            AnchorKind::NghttpdTls => {
                let p = ports(1)?;
                Layout {
                    tls: addr(p[0]),
                    ..Layout::default()
                }
            }
            AnchorKind::Nginx => {
                let p = ports(3)?;
                Layout {
                    h1: addr(p[0]),
                    h2c: addr(p[1]),
                    tls: addr(p[2]),
                    unix_h1: Some(prefix.join("nginx.sock")),
                    unix_h2c: Some(prefix.join("nginx.sock.h2c")),
                }
            }
            AnchorKind::H2o | AnchorKind::Apache2 => {
                // One plain port serves HTTP/1.1 and h2c.
                let p = ports(2)?;
                Layout {
                    h1: addr(p[0]),
                    h2c: addr(p[0]),
                    tls: addr(p[1]),
                    ..Layout::default()
                }
            }
        })
    }

    fn listeners(&self) -> Vec<Listener> {
        let mut v: Vec<Listener> = Vec::new();
        for a in [self.h1, self.h2c, self.tls].into_iter().flatten() {
            let l = Listener::Tcp(a);
            if !v.contains(&l) {
                v.push(l);
            }
        }
        for p in [&self.unix_h1, &self.unix_h2c].into_iter().flatten() {
            v.push(Listener::Unix(p.clone()));
        }
        v
    }
}

enum Ready {
    Exited,
    Timeout(Listener),
}

/// A running anchor server. Dropping it stops the server's whole process group (SIGTERM, then
/// SIGKILL after 5 s) and removes its temp dir (config, logs, certificate, docroot).
#[derive(Debug)]
pub struct AnchorServer {
    kind: AnchorKind,
    child: Option<Child>,
    layout: Layout,
    docroot: PathBuf,
    cert: Option<CertFiles>,
    files: Files,
    max_concurrent_streams: Option<u32>,
    attempts: u32,
    dir: Option<TempDir>,
    dir_path: PathBuf,
}

impl AnchorServer {
    /// A builder for any kind.
    pub fn builder(kind: AnchorKind) -> AnchorBuilder {
        AnchorBuilder::new(kind)
    }

    /// nghttpd, h2c with prior knowledge only, serving `files`, one worker.
    pub fn nghttpd_h2c(files: Files) -> Result<Self, Error> {
        AnchorBuilder::new(AnchorKind::NghttpdH2c)
            .files(files)
            .start()
    }

    /// nghttpd over TLS (ALPN `h2` only), serving `files`, one worker.
    pub fn nghttpd_tls(files: Files) -> Result<Self, Error> {
        AnchorBuilder::new(AnchorKind::NghttpdTls)
            .files(files)
            .start()
    }

    /// nginx (one process): HTTP/1.1, h2c, TLS (h2 + http/1.1) and UNIX sockets.
    pub fn nginx(files: Files) -> Result<Self, Error> {
        AnchorBuilder::new(AnchorKind::Nginx).files(files).start()
    }

    /// h2o (one thread): plain (HTTP/1.1 + h2c) and TLS (h2 + http/1.1).
    pub fn h2o(files: Files) -> Result<Self, Error> {
        AnchorBuilder::new(AnchorKind::H2o).files(files).start()
    }

    /// Apache with mod_http2 (one child): plain (HTTP/1.1 + h2c) and TLS (h2 + http/1.1).
    /// Workers run as `www-data`; the docroot is world-readable.
    pub fn apache2(files: Files) -> Result<Self, Error> {
        AnchorBuilder::new(AnchorKind::Apache2).files(files).start()
    }

    /// Which server this is.
    pub fn kind(&self) -> AnchorKind {
        self.kind
    }

    /// Cleartext address accepting HTTP/2 with prior knowledge, if any.
    pub fn addr_h2c(&self) -> Option<SocketAddr> {
        self.layout.h2c
    }

    /// TLS address (nghttpd: ALPN h2 only; others: h2 and http/1.1), if any.
    pub fn addr_tls(&self) -> Option<SocketAddr> {
        self.layout.tls
    }

    /// Cleartext address accepting HTTP/1.1, if any (h2o and Apache: same as `addr_h2c`).
    pub fn addr_h1(&self) -> Option<SocketAddr> {
        self.layout.h1
    }

    /// UNIX socket accepting HTTP/1.1 (nginx only).
    pub fn unix_socket(&self) -> Option<&Path> {
        self.layout.unix_h1.as_deref()
    }

    /// UNIX socket accepting h2c with prior knowledge (nginx only).
    pub fn unix_socket_h2c(&self) -> Option<&Path> {
        self.layout.unix_h2c.as_deref()
    }

    /// The document root (inside the temp dir).
    pub fn docroot(&self) -> &Path {
        &self.docroot
    }

    /// The files served.
    pub fn files(&self) -> &Files {
        &self.files
    }

    /// The certificate and key files of the TLS listener (self-signed, see [`crate::CertPair`]).
    pub fn cert(&self) -> Option<&CertFiles> {
        self.cert.as_ref()
    }

    /// The MAX_CONCURRENT_STREAMS configured with the builder (None: the server's default).
    pub fn max_concurrent_streams(&self) -> Option<u32> {
        self.max_concurrent_streams
    }

    /// `http://127.0.0.1:PORT/<path>` on the h2c address.
    pub fn url_h2c(&self, path: &str) -> Option<String> {
        self.layout.h2c.map(|a| url("http", a, path))
    }

    /// `https://127.0.0.1:PORT/<path>` on the TLS address.
    pub fn url_tls(&self, path: &str) -> Option<String> {
        self.layout.tls.map(|a| url("https", a, path))
    }

    /// `http://127.0.0.1:PORT/<path>` on the HTTP/1.1 address.
    pub fn url_h1(&self, path: &str) -> Option<String> {
        self.layout.h1.map(|a| url("http", a, path))
    }

    /// How many start attempts it took (1 unless a port was taken or an attempt timed out).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// PID of the server's main process, which is also its process-group id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Live processes of the server's process group (main process and its workers).
    pub fn processes(&self) -> Vec<u32> {
        self.pid().map(group_members).unwrap_or_default()
    }

    /// The last lines of the server's output and error log (for failure messages).
    pub fn log_tail(&self) -> String {
        let mut out = String::new();
        for name in ["server.log", "error.log"] {
            if let Ok(text) = fs::read_to_string(self.dir_path.join(name)) {
                let lines: Vec<&str> = text.lines().collect();
                let from = lines.len().saturating_sub(20);
                for l in lines.get(from..).unwrap_or_default() {
                    out.push_str(name);
                    out.push_str(": ");
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// Stops the server now (as `Drop` does) and returns the PIDs of its process group still
    /// alive afterwards — empty unless something could not be killed.
    pub fn stop(mut self) -> Vec<u32> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Vec<u32> {
        match self.child.take() {
            Some(mut child) => stop_group(&mut child, STOP_GRACE),
            None => Vec::new(),
        }
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), Ready> {
        let end = Instant::now() + timeout;
        let mut pending = self.layout.listeners();
        let mut pause = Duration::from_millis(2);
        loop {
            if let Some(child) = self.child.as_mut() {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    return Err(Ready::Exited);
                }
            }
            let group = self.processes();
            pending.retain(|l| !serves(l, &group));
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= end {
                return Err(Ready::Timeout(pending.swap_remove(0)));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

/// Whether listener `l` is the server's (`group`: its processes) and accepts a connection: a
/// TCP port must be held in LISTEN state by one of them ([`bound_by`]); a UNIX socket is in
/// the server's own temp dir, so a connection suffices.
fn serves(l: &Listener, group: &[u32]) -> bool {
    match l {
        Listener::Tcp(a) => bound_by(group, Bound::TcpListen, a.port()) && l.accepts(),
        Listener::Unix(_) => l.accepts(),
    }
}

impl Drop for AnchorServer {
    fn drop(&mut self) {
        self.stop_inner();
        // `self.dir` (if set) is dropped after this, removing the temp dir.
    }
}

fn url(scheme: &str, addr: SocketAddr, path: &str) -> String {
    format!("{scheme}://{addr}/{}", path.trim_start_matches('/'))
}

fn port_of(a: Option<SocketAddr>) -> u16 {
    a.map(|a| a.port()).unwrap_or(0)
}

fn replace_once(text: &str, needle: &str, with: &str) -> Result<String, Error> {
    match text.matches(needle).count() {
        1 => Ok(text.replacen(needle, with, 1)),
        n => Err(Error::Unsupported(format!(
            "config template changed: expected `{needle}` once, found it {n} times"
        ))),
    }
}

fn write_conf(prefix: &Path, name: &str, text: &str) -> Result<PathBuf, Error> {
    let path = prefix.join(name);
    fs::write(&path, text).map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    Ok(path)
}

fn current_user() -> String {
    if let Ok(out) = Command::new("id").arg("-un").output() {
        let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !name.is_empty() {
            return name;
        }
    }
    std::env::var("USER").unwrap_or_else(|_| "root".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_the_lines_the_builder_edits() {
        for (t, needles) in [
            (
                NGINX_TEMPLATE,
                &[
                    "master_process off;",
                    "worker_processes 1;",
                    "access_log off;",
                ][..],
            ),
            (H2O_TEMPLATE, &["num-threads: 1"][..]),
            (
                APACHE2_TEMPLATE,
                &[
                    "StartServers 1",
                    "ServerLimit 1",
                    "MaxRequestWorkers 25",
                    "H2MaxSessionStreams 100",
                ][..],
            ),
        ] {
            for n in needles {
                assert!(replace_once(t, n, "x").is_ok(), "{n:?}");
            }
        }
    }

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

    #[test]
    fn urls() {
        let a = SocketAddr::from(([127, 0, 0, 1], 8080));
        assert_eq!(url("http", a, "/f"), "http://127.0.0.1:8080/f");
        assert_eq!(url("https", a, "f"), "https://127.0.0.1:8080/f");
    }
}
