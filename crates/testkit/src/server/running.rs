//! A running anchor server: its addresses, files and certificate, and its process group,
//! stopped when dropped.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use super::builder::AnchorBuilder;
use super::kind::AnchorKind;
use super::layout::Layout;
use crate::cert::CertFiles;
use crate::files::{Files, TempDir};
use crate::process::{group_members, stop_group};
use crate::Error;

/// How long a stopping server gets after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running anchor server. Dropping it stops the server's whole process group (SIGTERM, then
/// SIGKILL after 5 s) and removes its temp dir (config, logs, certificate, docroot).
#[derive(Debug)]
pub struct AnchorServer {
    pub(super) kind: AnchorKind,
    pub(super) child: Option<Child>,
    pub(super) layout: Layout,
    pub(super) docroot: PathBuf,
    pub(super) cert: Option<CertFiles>,
    pub(super) files: Files,
    pub(super) max_concurrent_streams: Option<u32>,
    pub(super) attempts: u32,
    pub(super) dir: Option<TempDir>,
    pub(super) dir_path: PathBuf,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let a = SocketAddr::from(([127, 0, 0, 1], 8080));
        assert_eq!(url("http", a, "/f"), "http://127.0.0.1:8080/f");
        assert_eq!(url("https", a, "f"), "https://127.0.0.1:8080/f");
    }
}
