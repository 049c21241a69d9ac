//! The one error type of the testkit.

use std::fmt;
use std::io;

/// Why an anchor server or an anchor client could not be started or run.
#[derive(Debug)]
pub enum Error {
    /// The named binary is not installed (not found on `PATH`, `/usr/sbin` or `/sbin`).
    MissingBinary(&'static str),
    /// An I/O operation failed; `context` says which one.
    Io {
        /// What the testkit was doing.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The server exited during start-up on every attempt (typically: a port was taken).
    StartFailed {
        /// Which server.
        binary: &'static str,
        /// How many times the whole start (fresh ports, fresh config) was tried.
        attempts: u32,
        /// The tail of the server's own log from the last attempt.
        log_tail: String,
    },
    /// The server did not accept connections on all its listeners before the deadline.
    NotReady {
        /// Which server.
        binary: &'static str,
        /// The listener that never accepted, e.g. `127.0.0.1:41234` or a socket path.
        listener: String,
        /// The tail of the server's own log.
        log_tail: String,
    },
    /// A builder option the chosen server does not support.
    Unsupported(String),
    /// A helper command (e.g. `openssl`) failed.
    Command {
        /// The command line, for the message.
        command: String,
        /// Its stderr (trimmed).
        stderr: String,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::MissingBinary(b) => write!(
                f,
                "anchor binary `{b}` is not installed (run .ci/install-anchors.sh)"
            ),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::StartFailed {
                binary,
                attempts,
                log_tail,
            } => write!(
                f,
                "{binary} exited during start-up ({attempts} attempts); last log:\n{log_tail}"
            ),
            Error::NotReady {
                binary,
                listener,
                log_tail,
            } => write!(
                f,
                "{binary} did not accept connections on {listener} in time; log:\n{log_tail}"
            ),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::Command { command, stderr } => write!(f, "`{command}` failed: {stderr}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
