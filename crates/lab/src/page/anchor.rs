//! nghttpd as an anchor of the render experiment: the same page written to files and served
//! by nghttpd with RFC 9218 priorities (`--no-rfc7540-pri`), when nghttpd is installed;
//! with `push`, nghttpd pushes the page's CSS and JS (`-p /page.html=<css>,<js>,...`).
//! h2o, when installed, serves the same files from a configuration the lab writes
//! ([`start_h2o`]). Each runs in its own process group, ended as a whole; on a packet path
//! it runs on the server side ([`Site`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use h2lab_server::endpoints::PageParams;

use crate::host::{NotReady, StartFailed};

/// Where an anchor runs: the address it listens on, and what its command needs before it
/// starts (a packet path's server side: [`h2lab_link::packet::PacketLink::command`]). The
/// free port is chosen in the calling thread's namespace.
pub struct Site<'a> {
    /// The address it listens on.
    pub ip: IpAddr,
    /// Applied to the command before it is spawned.
    pub prepare: Option<&'a dyn Fn(&mut Command)>,
}

impl Site<'_> {
    /// 127.0.0.1, nothing to prepare (behind a relay).
    pub fn loopback() -> Site<'static> {
        Site {
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            prepare: None,
        }
    }

    /// `cmd` in its own process group (ended as a whole), prepared for the site.
    fn prepared<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(cmd, 0);
        if let Some(p) = self.prepare {
            p(cmd);
        }
        cmd
    }
}

/// Ends an anchor's process group (the server and whatever it started) and reaps it.
fn end(child: &mut Child) {
    crate::os::kill_process_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// A running anchor server (nghttpd or h2o) serving one page's files; stopped (its whole
/// process group), and its files removed, when dropped.
pub struct Anchor {
    child: Child,
    /// Its TLS address.
    pub addr: SocketAddr,
    /// Removed on drop (the docroot, and h2o's configuration).
    dir: PathBuf,
    /// The server's standard error (beside `dir`), removed on drop.
    log: PathBuf,
}

impl Drop for Anchor {
    fn drop(&mut self) {
        end(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Why an anchor server could not be started.
#[derive(Debug)]
pub enum StartError {
    /// Writing its files, choosing a port or spawning it failed.
    Setup(SetupError),
    /// Every attempt failed, a fresh port each.
    Failed {
        /// Which server.
        what: &'static str,
        /// How many attempts were made.
        attempts: u32,
        /// Whether the last attempt missed its deadline (else: the server exited).
        timed_out: bool,
        /// The end of the server's standard error in the last attempt.
        log: String,
    },
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Setup(why) => write!(f, "{why}"),
            StartError::Failed {
                what,
                attempts,
                timed_out,
                log,
            } => {
                if *timed_out {
                    write!(
                        f,
                        "{what} did not start listening within {} s",
                        READY_TIMEOUT.as_secs()
                    )?;
                } else {
                    write!(f, "{what} exited during start-up")?;
                }
                write!(f, " ({attempts} attempts, a fresh port each)")?;
                if !log.trim().is_empty() {
                    write!(f, "; its log:\n{}", log.trim_end())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Setup(e) => Some(e),
            StartError::Failed { .. } => None,
        }
    }
}

/// Why an anchor's files, port or process could not be set up (not retried).
#[derive(Debug)]
pub enum SetupError {
    /// An I/O step failed.
    Io {
        /// The step (`nghttpd docroot`, `h2o config`, `nghttpd: no free port`, ...).
        context: String,
        /// Why.
        source: std::io::Error,
    },
    /// The page's query does not parse.
    InvalidQuery,
    /// A sub-resource path with `..` or a query.
    UnexpectedPath(String),
    /// A sub-resource path without its size (`/asset/S/I-N.ext`).
    NoSize(String),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Io { context, source } => write!(f, "{context}: {source}"),
            SetupError::InvalidQuery => f.write_str("invalid page query"),
            SetupError::UnexpectedPath(p) => write!(f, "nghttpd docroot: unexpected path {p}"),
            SetupError::NoSize(p) => write!(f, "nghttpd docroot: no size in {p}"),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetupError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An I/O error of the step `context`, as a [`SetupError`].
fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SetupError {
    let context = context.into();
    move |source| SetupError::Io { context, source }
}

/// `name` on PATH, or in /usr/sbin or /usr/local/sbin.
fn find_bin(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The nghttpd binary, if installed (also looked for in /usr/sbin).
pub fn nghttpd_path() -> Option<PathBuf> {
    find_bin("nghttpd")
}

/// The h2o binary, if installed (also looked for in /usr/sbin).
pub fn h2o_path() -> Option<PathBuf> {
    find_bin("h2o")
}

/// A free port on 127.0.0.1 (for a server started right after).
fn free_port(what: &str) -> Result<u16, SetupError> {
    crate::host::free_ports(1)
        .map(|p| p[0])
        .map_err(io(format!("{what}: no free port")))
}

/// How many times an anchor start is tried, a fresh port each time, when the server exits
/// before it listens (typically: another process took the port between the choice and the
/// server's bind) or does not listen within the deadline.
const START_ATTEMPTS: u32 = 3;

/// Deadline of one start attempt: the server's own process listens on its port.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts the server `spawn` runs on a free port (its standard error to the file given) and
/// waits (polling, 10 s at most) until the server's own process listens on it (a listener of
/// another program on the port does not count: [`crate::host::start_listening`]); when it
/// exits first or misses the deadline, retries on a fresh port. `dir` (removed when the
/// anchor is dropped, or at once on failure) holds its files.
fn start_on_free_port(
    what: &'static str,
    dir: PathBuf,
    ip: IpAddr,
    spawn: impl FnMut(u16, std::fs::File) -> Result<Child, SetupError>,
) -> Result<Anchor, StartError> {
    start_on_ports(what, dir, ip, READY_TIMEOUT, || free_port(what), spawn)
}

/// [`start_on_free_port`] with the port of each attempt from `next_port` and the deadline
/// `timeout`.
fn start_on_ports(
    what: &'static str,
    dir: PathBuf,
    ip: IpAddr,
    timeout: Duration,
    mut next_port: impl FnMut() -> Result<u16, SetupError>,
    mut spawn: impl FnMut(u16, std::fs::File) -> Result<Child, SetupError>,
) -> Result<Anchor, StartError> {
    let log_path = PathBuf::from(format!("{}.log", dir.display()));
    let fail = |why: StartError| {
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(&log_path);
        Err(why)
    };
    let started = crate::host::start_listening(
        START_ATTEMPTS,
        timeout,
        || next_port().map(|p| vec![p]),
        |ports| {
            let log = std::fs::File::create(&log_path).map_err(io(format!("{what} log")))?;
            spawn(ports[0], log)
        },
        end,
    );
    match started {
        Ok(l) => Ok(Anchor {
            child: l.child,
            addr: SocketAddr::new(ip, l.ports[0]),
            dir,
            log: log_path,
        }),
        Err(StartFailed::Setup(e)) => fail(StartError::Setup(e)),
        Err(StartFailed::NotReady(last)) => {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let log = lines[lines.len().saturating_sub(20)..].join("\n");
            fail(StartError::Failed {
                what,
                attempts: START_ATTEMPTS,
                timed_out: matches!(last, NotReady::TimedOut(_)),
                log,
            })
        }
    }
}

/// The path the page has on nghttpd (a file; nghttpd does not serve `/page?query`).
pub const PAGE_FILE: &str = "/page.html";

/// Writes the page of `query` and its sub-resources (`paths`, as discovered: `/asset/S/I-N.ext`)
/// under `docroot`.
fn write_docroot(docroot: &Path, query: &str, paths: &[String]) -> Result<(), SetupError> {
    let params = PageParams::parse(query.as_bytes()).ok_or(SetupError::InvalidQuery)?;
    let mut html = Vec::new();
    params.write_html(&mut html);
    let io = || io("nghttpd docroot");
    std::fs::create_dir_all(docroot).map_err(io())?;
    std::fs::write(docroot.join(&PAGE_FILE[1..]), &html).map_err(io())?;
    for p in paths {
        let rel = p.trim_start_matches('/');
        if rel.contains("..") || rel.contains('?') {
            return Err(SetupError::UnexpectedPath(p.clone()));
        }
        // `/asset/<seed>/<i>-<size>.<ext>`: the size is the number after the last '-'.
        let stem = rel.rsplit_once('.').map_or(rel, |(s, _)| s);
        let size: usize = stem
            .rsplit_once('-')
            .and_then(|(_, n)| n.parse().ok())
            .ok_or_else(|| SetupError::NoSize(p.clone()))?;
        let file = docroot.join(rel);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(io())?;
        }
        std::fs::write(&file, vec![b'x'; size]).map_err(io())?;
    }
    Ok(())
}

/// nghttpd's push configuration for the page: `/page.html=<CSS and JS paths, in order>`
/// (`None` when the page has none).
pub fn push_config(paths: &[String]) -> Option<String> {
    let blocking: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .filter(|p| h2lab_engine::priority::render_blocking(p))
        .collect();
    (!blocking.is_empty()).then(|| format!("{PAGE_FILE}={}", blocking.join(",")))
}

/// Starts nghttpd on `site` (a free port; a fresh one if it exits during start-up) with
/// the certificate in `cert_dir` (`cert.pem`, `key.pem`), serving the page of `query` whose
/// sub-resources are `paths`; with `push`, the page pushes its CSS and JS ([`push_config`]).
pub fn start(
    bin: &Path,
    cert_dir: &Path,
    query: &str,
    paths: &[String],
    tag: &str,
    push: bool,
    site: &Site<'_>,
) -> Result<Anchor, StartError> {
    let docroot =
        std::env::temp_dir().join(format!("h2lab-render-nghttpd-{}-{tag}", std::process::id()));
    write_docroot(&docroot, query, paths).map_err(StartError::Setup)?;
    start_on_free_port("nghttpd", docroot.clone(), site.ip, |port, log| {
        let mut cmd = Command::new(bin);
        if let Some(p) = push.then(|| push_config(paths)).flatten() {
            cmd.arg("-p").arg(p);
        }
        site.prepared(&mut cmd)
            .arg(format!("--address={}", site.ip))
            .arg("--no-rfc7540-pri")
            .arg("--max-concurrent-streams=1000")
            .arg("-d")
            .arg(&docroot)
            .arg(port.to_string())
            .arg(cert_dir.join("key.pem"))
            .arg(cert_dir.join("cert.pem"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(io("nghttpd"))
    })
}

/// h2o's configuration: one TLS listener on `ip`:`port` (h2 and http/1.1), one thread,
/// the files of `docroot`; `user` so that h2o started as root does not switch to `nobody`
/// before writing its pid file and log in `dir`.
fn h2o_config(
    dir: &Path,
    docroot: &Path,
    (ip, port): (IpAddr, u16),
    cert_dir: &Path,
    user: &str,
) -> String {
    let d = dir.display();
    format!(
        "user: {user}\nnum-threads: 1\npid-file: {d}/h2o.pid\nerror-log: {d}/error.log\n\
         listen:\n  host: {ip}\n  port: {port}\n  ssl:\n    certificate-file: {}\n\
         \x20   key-file: {}\n    minimum-version: TLSv1.2\n    ocsp-update-interval: 0\n\
         hosts:\n  default:\n    paths:\n      /:\n        file.dir: {}\n",
        cert_dir.join("cert.pem").display(),
        cert_dir.join("key.pem").display(),
        docroot.display()
    )
}

/// The user running the lab (for h2o's `user:`).
fn current_user() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "root".into())
}

/// Starts h2o on `site` (a free port, a fresh one if it exits during start-up; TLS with
/// the certificate in `cert_dir`), serving the same files as [`start`] from a configuration
/// written by the lab (no push: h2o 2.2 pushes only on `link: rel=preload` headers, which
/// static files do not carry).
pub fn start_h2o(
    bin: &Path,
    cert_dir: &Path,
    query: &str,
    paths: &[String],
    tag: &str,
    site: &Site<'_>,
) -> Result<Anchor, StartError> {
    let dir = std::env::temp_dir().join(format!("h2lab-render-h2o-{}-{tag}", std::process::id()));
    let docroot = dir.join("www");
    write_docroot(&docroot, query, paths).map_err(StartError::Setup)?;
    let conf = dir.join("h2o.conf");
    let user = current_user();
    start_on_free_port("h2o", dir.clone(), site.ip, |port, log| {
        let listen = (site.ip, port);
        std::fs::write(&conf, h2o_config(&dir, &docroot, listen, cert_dir, &user))
            .map_err(io("h2o config"))?;
        site.prepared(&mut Command::new(bin))
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(io("h2o"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tests::listener_child;
    use std::net::TcpListener;

    const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// A server that exits at once (as one whose port was taken does) is started again on a
    /// fresh port; one that exits every time is an error, and its files are removed.
    #[test]
    fn an_anchor_that_exits_during_start_up_is_retried_on_a_fresh_port() {
        let dir = std::env::temp_dir().join(format!("h2lab-anchor-retry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ports = Vec::new();
        let a = start_on_free_port("t", dir.clone(), LOCAL, |port, _log| {
            ports.push(port);
            if ports.len() == 1 {
                return Command::new("true").spawn().map_err(io("t"));
            }
            // The second attempt listens (a child process on the port).
            listener_child(Some(port)).spawn().map_err(io("t"))
        })
        .unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(a.addr.port(), ports[1]);
        drop(a);
        assert!(!dir.exists());

        std::fs::create_dir_all(&dir).unwrap();
        let mut calls = 0;
        let err = start_on_free_port("t", dir.clone(), LOCAL, |_, log| {
            calls += 1;
            Command::new("sh")
                .args(["-c", "echo cannot bind >&2"])
                .stderr(log)
                .spawn()
                .map_err(io("t"))
        })
        .err()
        .unwrap()
        .to_string();
        assert_eq!(calls, START_ATTEMPTS);
        assert!(err.contains("exited during start-up (3 attempts"), "{err}");
        assert!(err.contains("its log:\ncannot bind"), "{err}");
        assert!(!dir.exists());
        assert!(!PathBuf::from(format!("{}.log", dir.display())).exists());
    }

    /// A port held by another program (a listener of this test, which accepts connections) is
    /// not taken for the anchor: a server that cannot bind it and exits is started again on a
    /// fresh port, where it is ready; a server that stays up without listening while the
    /// stand-in holds its port times out on every attempt, an error.
    #[test]
    fn a_stand_in_listener_on_the_port_is_not_taken_for_the_anchor() {
        if !crate::host::has_proc() {
            return; // the ownership check needs Linux
        }
        let stand_in = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = stand_in.local_addr().unwrap().port();
        let dir =
            std::env::temp_dir().join(format!("h2lab-anchor-stand-in-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut offered = Vec::new();
        let a = start_on_ports(
            "t",
            dir.clone(),
            LOCAL,
            READY_TIMEOUT,
            || {
                let p = if offered.is_empty() {
                    taken
                } else {
                    free_port("t")?
                };
                offered.push(p);
                Ok(p)
            },
            |port, _log| listener_child(Some(port)).spawn().map_err(io("t")),
        )
        .unwrap();
        assert_eq!(offered.len(), 2);
        assert_eq!(offered[0], taken);
        assert_eq!(a.addr.port(), offered[1]);
        assert!(crate::host::tests::holds_listener(a.child.id(), offered[1]));
        drop(a);
        assert!(!dir.exists());

        std::fs::create_dir_all(&dir).unwrap();
        let mut calls = 0;
        let err = start_on_ports(
            "t",
            dir.clone(),
            LOCAL,
            Duration::from_millis(100),
            || Ok(taken),
            |_, _log| {
                calls += 1;
                listener_child(None).spawn().map_err(io("t"))
            },
        )
        .err()
        .unwrap();
        assert_eq!(calls, START_ATTEMPTS);
        assert!(
            matches!(
                err,
                StartError::Failed {
                    timed_out: true,
                    attempts: 3,
                    ..
                }
            ),
            "{err}"
        );
        assert!(!dir.exists());
    }

    #[test]
    fn docroot_holds_the_page_and_assets_of_their_sizes() {
        let dir = std::env::temp_dir().join(format!("h2lab-anchor-test-{}", std::process::id()));
        let paths = vec![
            "/asset/3/0-1500.png".to_owned(),
            "/asset/3/2-9000.css".to_owned(),
        ];
        write_docroot(&dir, "n=1&seed=3&css=1", &paths).unwrap();
        let html = std::fs::read_to_string(dir.join("page.html")).unwrap();
        assert!(html.contains("<img") && html.contains("rel=\"stylesheet\""));
        assert_eq!(
            std::fs::metadata(dir.join("asset/3/0-1500.png"))
                .unwrap()
                .len(),
            1500
        );
        assert_eq!(
            std::fs::metadata(dir.join("asset/3/2-9000.css"))
                .unwrap()
                .len(),
            9000
        );
        assert_eq!(
            push_config(&paths).as_deref(),
            Some("/page.html=/asset/3/2-9000.css")
        );
        assert_eq!(push_config(&paths[..1]), None);
        let bad = write_docroot(&dir, "n=1", &["/../x-1.png".to_owned()]).unwrap_err();
        assert!(matches!(bad, SetupError::UnexpectedPath(ref p) if p == "/../x-1.png"));
        assert_eq!(
            bad.to_string(),
            "nghttpd docroot: unexpected path /../x-1.png"
        );
        let bad = write_docroot(&dir, "n=1", &["/asset/nosize.png".to_owned()]).unwrap_err();
        assert!(matches!(bad, SetupError::NoSize(_)), "{bad}");
        assert!(matches!(
            write_docroot(&dir, "js_at=x", &[]),
            Err(SetupError::InvalidQuery)
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
