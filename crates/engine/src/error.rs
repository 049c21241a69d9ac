//! The engine's typed errors: [`EngineError`] (why a run or a fetch produced no
//! result), [`TransportError`] (sockets and TLS), [`ProtocolError`] (what the
//! server spoke) and [`TimeoutError`]. They are formatted only where they are
//! shown (the CLI, the run's error list); `Display` keeps h2load's wording.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use rustls::pki_types::pem;
use rustls::pki_types::InvalidDnsNameError;

use crate::config::{AppProtocol, ConfigError};
use crate::session::SessionError;

/// A socket or TLS failure.
#[derive(Debug)]
pub enum TransportError {
    /// rustls refused the configuration or the connection setup.
    Setup(rustls::Error),
    /// The TLS handshake failed (alert, certificate problem, bad message).
    Handshake(rustls::Error),
    /// Writing to the socket failed during the TLS handshake.
    HandshakeWrite(io::Error),
    /// Reading from the socket failed during the TLS handshake.
    HandshakeRead(io::Error),
    /// The peer closed the connection during the TLS handshake.
    HandshakeEof,
    /// Reading from an established connection failed.
    Read(io::Error),
    /// Writing to an established connection failed.
    Write(io::Error),
    /// A TLS record of an established connection was bad.
    Record(rustls::Error),
    /// The TLS layer could not take or give back the bytes read (rustls' buffer
    /// limits, a bad record seen while reading plaintext).
    TlsRead(io::Error),
    /// The CA bundle could not be read.
    CaBundle {
        /// The bundle's path.
        path: PathBuf,
        /// The reader's error.
        source: pem::Error,
    },
    /// A certificate of the CA bundle could not be parsed.
    BadCertificate {
        /// The bundle's path.
        path: PathBuf,
        /// The parser's error.
        source: pem::Error,
    },
    /// The CA bundle holds no certificate webpki can use.
    NoCaCertificates {
        /// The bundle's path.
        path: PathBuf,
    },
    /// The TLS server name (SNI) is not a valid DNS name or IP address.
    InvalidServerName {
        /// The name given.
        name: String,
        /// Why it is invalid.
        source: InvalidDnsNameError,
    },
}

impl TransportError {
    /// A failure of the TLS layer while reading an established connection
    /// counts as a protocol error (h2load's `errored`, not a lost connection).
    pub fn is_tls_record(&self) -> bool {
        matches!(self, TransportError::Record(_) | TransportError::TlsRead(_))
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Setup(e) | TransportError::Handshake(e) => write!(f, "{e}"),
            TransportError::HandshakeWrite(e) => write!(f, "write during handshake: {e}"),
            TransportError::HandshakeRead(e) => write!(f, "read during handshake: {e}"),
            TransportError::HandshakeEof => f.write_str("connection closed during TLS handshake"),
            TransportError::Read(e) => write!(f, "{e}"),
            TransportError::Write(e) => write!(f, "write: {e}"),
            TransportError::Record(e) => write!(f, "TLS error: {e}"),
            TransportError::TlsRead(e) => write!(f, "TLS error: {e}"),
            TransportError::CaBundle { path, source } => {
                write!(f, "cannot read CA bundle {}: {source}", path.display())
            }
            TransportError::BadCertificate { path, source } => {
                write!(f, "bad certificate in {}: {source}", path.display())
            }
            TransportError::NoCaCertificates { path } => {
                write!(f, "no usable CA certificates in {}", path.display())
            }
            TransportError::InvalidServerName { name, source } => {
                write!(f, "invalid TLS server name {name:?}: {source}")
            }
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Setup(e) | TransportError::Handshake(e) | TransportError::Record(e) => {
                Some(e)
            }
            TransportError::HandshakeWrite(e)
            | TransportError::HandshakeRead(e)
            | TransportError::Read(e)
            | TransportError::TlsRead(e)
            | TransportError::Write(e) => Some(e),
            TransportError::CaBundle { source, .. }
            | TransportError::BadCertificate { source, .. } => Some(source),
            TransportError::InvalidServerName { source, .. } => Some(source),
            TransportError::HandshakeEof | TransportError::NoCaCertificates { .. } => None,
        }
    }
}

/// The server spoke something we cannot use.
#[derive(Debug)]
pub enum ProtocolError {
    /// TLS without ALPN, and `http/1.1` was not offered.
    NoAlpn,
    /// The server selected a protocol we did not offer.
    UnsupportedAlpn(Vec<u8>),
    /// `--require-protocol` did not match what was negotiated.
    RequiredProtocol {
        /// What `--require-protocol` asked for.
        required: AppProtocol,
        /// What the server negotiated.
        negotiated: AppProtocol,
        /// `http/1.1` was chosen although `h2` was offered.
        fallback: bool,
    },
    /// The session failed (malformed response, HTTP/2 connection error).
    Session(SessionError),
    /// A bad TLS record on an established connection.
    Tls(TransportError),
    /// There was no address to connect to.
    NoAddress,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::NoAlpn => f.write_str("no protocol was negotiated with ALPN"),
            ProtocolError::UnsupportedAlpn(p) => write!(
                f,
                "server selected an unsupported protocol: {}",
                String::from_utf8_lossy(p)
            ),
            ProtocolError::RequiredProtocol {
                required,
                negotiated,
                fallback,
            } => write!(
                f,
                "--require-protocol {required}: the server negotiated {negotiated}{}",
                if *fallback { " (fallback from h2)" } else { "" }
            ),
            ProtocolError::Session(e) => write!(f, "{e}"),
            ProtocolError::Tls(e) => write!(f, "{e}"),
            ProtocolError::NoAddress => f.write_str("no address to connect to"),
        }
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProtocolError::Session(e) => Some(e),
            ProtocolError::Tls(e) => Some(e),
            _ => None,
        }
    }
}

/// Which time limit ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutError {
    /// `-N`/`-T`: no connection was established before the timeout.
    NoConnection,
    /// A fetch batch took longer than its timeout.
    Fetch {
        /// Responses still missing.
        missing: usize,
        /// Responses asked for.
        total: usize,
        /// The timeout.
        after: Duration,
    },
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeoutError::NoConnection => {
                f.write_str("no connection was established before the -N/-T timeout")
            }
            TimeoutError::Fetch {
                missing,
                total,
                after,
            } => write!(
                f,
                "{missing} of {total} responses still missing after {after:?}"
            ),
        }
    }
}

impl std::error::Error for TimeoutError {}

/// Why a run could not produce a result.
#[derive(Debug)]
pub enum EngineError {
    /// The configuration is invalid (nothing was started).
    Config(ConfigError),
    /// The host name could not be resolved.
    Resolve {
        /// The name that was looked up.
        host: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// No client could connect at all (every attempt failed; the first error is reported).
    Connect {
        /// The address that was tried (`127.0.0.1:80`, `unix:/path`).
        addr: String,
        /// The socket error (connection refused, ...).
        source: io::Error,
    },
    /// Every TLS handshake failed (first reason reported).
    Tls(TransportError),
    /// The server spoke a protocol we cannot use, or `--require-protocol` did not match.
    Protocol(ProtocolError),
    /// Every connection timed out (`-N`/`-T`) before anything completed, or a fetch
    /// took too long.
    Timeout(TimeoutError),
    /// The connections of a fetch kept being closed by the server before any response.
    Closed {
        /// The address that was tried.
        addr: String,
    },
    /// A local I/O problem (log file, thread creation, poller).
    Io {
        /// What we were doing.
        context: String,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Config(e) => write!(f, "{e}"),
            EngineError::Resolve { host, source } => {
                write!(f, "could not resolve host {host}: {source}")
            }
            EngineError::Connect { addr, source } => {
                write!(f, "could not connect to {addr}: {source}")
            }
            EngineError::Tls(e) => write!(f, "TLS handshake failed: {e}"),
            EngineError::Protocol(e) => write!(f, "{e}"),
            EngineError::Timeout(e) => write!(f, "timed out: {e}"),
            EngineError::Closed { addr } => {
                write!(
                    f,
                    "could not connect to {addr}: connection closed before any response"
                )
            }
            EngineError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Config(e) => Some(e),
            EngineError::Resolve { source, .. }
            | EngineError::Connect { source, .. }
            | EngineError::Io { source, .. } => Some(source),
            EngineError::Tls(e) => Some(e),
            EngineError::Protocol(e) => Some(e),
            EngineError::Timeout(e) => Some(e),
            EngineError::Closed { .. } => None,
        }
    }
}

impl From<ConfigError> for EngineError {
    fn from(e: ConfigError) -> Self {
        EngineError::Config(e)
    }
}
