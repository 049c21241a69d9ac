//! Real servers from Debian packages (nghttpd, nginx) started by the tests on
//! ports chosen at run time, plus h2load for cross-checking numbers. Every
//! helper returns `None` when the program is not installed, so the tests
//! skip (with a note on stderr) instead of failing on machines without them.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Size of the small test file (the anchors' 653-byte response).
pub const SMALL: usize = 653;
/// Size of the large test file (≥ 10 MB).
pub const BIG: usize = 12 * 1024 * 1024 + 3;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

/// A fresh scratch directory for this test process.
pub fn scratch(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!(
        "h2lab-engine-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A document root with `file` (653 bytes) and `big` (12 MiB + 3).
pub fn docroot() -> Scratch {
    let d = scratch("www");
    let small: Vec<u8> = (0..SMALL).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(d.join("file"), small).unwrap();
    std::fs::write(d.join("big"), vec![b'z'; BIG]).unwrap();
    d
}

/// Full path of `prog` if it is installed.
pub fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (bounded) until something accepts connections on `port`.
fn wait_ready(port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    /// Ports it listens on (meaning depends on the server).
    pub ports: Vec<u16>,
    /// UNIX socket path, if any.
    pub sock: Option<PathBuf>,
    /// Working directory (config, pid, sockets), removed after the process.
    _dir: Option<Scratch>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cert_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// nghttpd serving `root`: h2c prior knowledge (`tls = false`) or TLS with
/// ALPN h2. `extra` are more nghttpd options (e.g. `--max-concurrent-streams=3`).
pub fn nghttpd(root: &Path, tls: bool, extra: &[&str]) -> Option<Server> {
    let Some(bin) = which("nghttpd") else {
        eprintln!("nghttpd not installed: test skipped");
        return None;
    };
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.arg("--address=127.0.0.1")
        .arg("-d")
        .arg(root)
        .args(extra);
    if tls {
        cmd.arg(port.to_string())
            .arg(cert_dir().join("key.pem"))
            .arg(cert_dir().join("cert.pem"));
    } else {
        cmd.arg("--no-tls").arg(port.to_string());
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let s = Server {
        child,
        ports: vec![port],
        sock: None,
        _dir: None,
    };
    wait_ready(port).then_some(s)
}

/// nginx from the anchors' template: ports[0] HTTP/1.1, ports[1] h2c prior
/// knowledge, ports[2] TLS (ALPN h2 + http/1.1); `sock` HTTP/1.1 on a UNIX
/// socket (`sock` + ".h2c" for h2c).
pub fn nginx(root: &Path) -> Option<Server> {
    let Some(bin) = which("nginx") else {
        eprintln!("nginx not installed: test skipped");
        return None;
    };
    let template = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/anchors/configs/nginx.conf.template");
    let Ok(t) = std::fs::read_to_string(&template) else {
        eprintln!("{} missing: test skipped", template.display());
        return None;
    };
    let dir = scratch("nginx");
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    let sock = dir.join("s.sock");
    let conf = t
        .replace("@PREFIX@", &dir.display().to_string())
        .replace("@DOCROOT@", &root.display().to_string())
        .replace("@PORT_H1@", &p1.to_string())
        .replace("@PORT_H2C@", &p2.to_string())
        .replace("@PORT_TLS@", &p3.to_string())
        .replace("@CERT@", &cert_dir().join("cert.pem").display().to_string())
        .replace("@KEY@", &cert_dir().join("key.pem").display().to_string())
        .replace("@SOCK@", &sock.display().to_string());
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(bin)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-p")
        .arg(&dir.0)
        .arg("-e")
        .arg("stderr")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let s = Server {
        child,
        ports: vec![p1, p2, p3],
        sock: Some(sock),
        _dir: Some(dir),
    };
    (wait_ready(p1) && wait_ready(p2) && wait_ready(p3)).then_some(s)
}

/// h2load's traffic numbers `(total, headers, data)` and succeeded count for
/// the same run, if h2load is installed.
pub fn h2load(args: &[&str]) -> Option<(u64, u64, u64, u64)> {
    let bin = which("h2load")?;
    let out = Command::new(bin).args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let num_in_parens = |line: &str, nth: usize| -> Option<u64> {
        line.split('(')
            .nth(nth)?
            .split(')')
            .next()?
            .trim()
            .parse()
            .ok()
    };
    let traffic = text.lines().find(|l| l.starts_with("traffic:"))?;
    let requests = text.lines().find(|l| l.starts_with("requests:"))?;
    let succeeded = requests
        .split(',')
        .find(|p| p.contains("succeeded"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((
        num_in_parens(traffic, 1)?,
        num_in_parens(traffic, 2)?,
        // "(space savings ...)" is the third parenthesis; data is the fourth.
        num_in_parens(traffic, 4)?,
        succeeded,
    ))
}
