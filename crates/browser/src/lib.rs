//! Real-browser page loads for the page experiment: headless Chromium driven over the Chrome
//! DevTools Protocol on `--remote-debugging-pipe` (fd 3 carries our commands, fd 4 the
//! browser's messages, each JSON message ended by a NUL octet — no port, no websocket).
//!
//! One [`load`] = one fresh browser process with a fresh profile directory (no cache, no
//! connection reuse between loads), pinned to the given CPUs, forced onto one protocol:
//! HTTP/1.1 or HTTP/2 over TLS (QUIC off, so an `alt-svc` cannot move it), or HTTP/3
//! (`--origin-to-force-quic-on`). The server's certificate is trusted by its SPKI pin
//! (`--ignore-certificate-errors-spki-list`), on TCP and QUIC alike. What is measured comes
//! from the browser itself ([`metrics`]): Navigation Timing, First Contentful Paint,
//! Resource Timing with every resource's `nextHopProtocol`, and the connections it opened
//! (DevTools `Network` events).
//!
//! - [`launch`]: finding the binary, the command line, the process group and its cleanup.
//! - [`cdp`]: the pipe transport (commands, replies, events).
//! - [`metrics`]: the scripts evaluated in the page and their results.
//! - [`spki`]: the certificate pin.

pub mod cdp;
pub mod launch;
pub mod metrics;
pub mod spki;

mod load;
mod views;

pub use launch::{find_browser, BrowserSpec};
pub use load::{load, LoadOptions, Workload};
pub use metrics::{PageLoad, ResourceEntry};
pub use views::load_views;

use std::fmt;
use std::time::Duration;

/// The protocol a browser load is forced onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// HTTP/1.1 over TLS (the server's listener should offer only `http/1.1` in ALPN).
    H1,
    /// HTTP/2 over TLS (ALPN `h2`).
    H2,
    /// HTTP/3 over QUIC (forced with `--origin-to-force-quic-on`).
    H3,
}

impl Protocol {
    /// The `nextHopProtocol` (Resource Timing) and DevTools `protocol` of this protocol.
    pub fn next_hop(self) -> &'static str {
        match self {
            Protocol::H1 => "http/1.1",
            Protocol::H2 => "h2",
            Protocol::H3 => "h3",
        }
    }

    /// The arm's short name (`h1`, `h2`, `h3`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::H1 => "h1",
            Protocol::H2 => "h2",
            Protocol::H3 => "h3",
        }
    }
}

/// Why a browser load failed.
#[derive(Debug)]
pub enum BrowserError {
    /// No browser binary: the message names the package and how to install it.
    NotFound(String),
    /// Starting the browser or talking to it over the pipe failed.
    Io(std::io::Error),
    /// The browser answered a command with an error (method, message).
    Cdp(String, String),
    /// A message from the browser was not the JSON expected (what was wrong).
    Protocol(String),
    /// The browser did not finish within the deadline (what was awaited).
    Timeout(&'static str, Duration),
    /// The browser's pipe closed (it exited or crashed).
    Closed,
    /// The certificate could not be read or its public key found.
    Certificate(String),
}

impl fmt::Display for BrowserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrowserError::NotFound(m) => f.write_str(m),
            BrowserError::Io(e) => write!(f, "browser: {e}"),
            BrowserError::Cdp(m, e) => write!(f, "browser: {m} failed: {e}"),
            BrowserError::Protocol(m) => write!(f, "browser: unexpected DevTools message: {m}"),
            BrowserError::Timeout(what, d) => {
                write!(f, "browser: no {what} within {} ms", d.as_millis())
            }
            BrowserError::Closed => {
                f.write_str("browser: the DevTools pipe closed (the browser exited)")
            }
            BrowserError::Certificate(m) => write!(f, "browser: certificate pin: {m}"),
        }
    }
}

impl std::error::Error for BrowserError {}

impl From<std::io::Error> for BrowserError {
    fn from(e: std::io::Error) -> Self {
        BrowserError::Io(e)
    }
}
