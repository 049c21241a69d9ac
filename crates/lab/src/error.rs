//! The lab's one error type: what went wrong when an experiment (`compare`, `page`,
//! `upstream`) or its environment could not run. Callers match on the kind; the CLI formats
//! it (the [`Display`](std::fmt::Display) texts are the messages the commands print).

use std::fmt;
use std::io;

use h2lab_engine::config::{ConfigError, Scheme};
use h2lab_engine::EngineError;
use h2lab_server::ServerError;

use crate::proto::LabProtocol;

/// Why a lab experiment could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum LabError {
    /// A target URL (or a cell's request settings) the engine rejects.
    Config(ConfigError),
    /// A target URL whose scheme does not fit the protocol it is given for.
    SchemeMismatch {
        /// The protocol the URL was given for.
        proto: LabProtocol,
        /// The scheme that protocol needs.
        want: Scheme,
        /// The URL as given.
        url: String,
    },
    /// No target for this protocol.
    NoTarget(LabProtocol),
    /// None of the requested protocols can be measured against the target(s).
    NothingToMeasure(&'static str),
    /// A target host could not be resolved (no source: it resolved to no address).
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        source: Option<io::Error>,
    },
    /// An in-process server (the built-in target, a backend) could not start.
    Server {
        /// Which server (`built-in server`, `backend`).
        role: &'static str,
        /// Why.
        source: ServerError,
    },
    /// An in-process server started without the address the experiment needs.
    NoAddress(&'static str),
    /// An in-process link could not start.
    Link {
        /// The link's name (its profile), if it has one.
        name: Option<String>,
        /// Why.
        source: io::Error,
    },
    /// An anchor server (nginx, nghttpd, h2o) or the proxy could not be set up.
    Anchor(String),
    /// A page could not be loaded (or its resources discovered).
    Page(String),
    /// A measurement run failed.
    Run {
        /// What was being measured.
        what: String,
        /// Why.
        source: EngineError,
    },
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Config(e) => write!(f, "{e}"),
            LabError::SchemeMismatch { proto, want, url } => {
                write!(f, "{} needs an {want}:// URL, got {url}", proto.label())
            }
            LabError::NoTarget(p) => write!(f, "no target for {}", p.label()),
            LabError::NothingToMeasure(why) => f.write_str(why),
            LabError::Resolve {
                host,
                source: Some(e),
            } => write!(f, "cannot resolve {host}: {e}"),
            LabError::Resolve { host, source: None } => {
                write!(f, "{host} resolves to no address")
            }
            LabError::Server { role, source } => write!(f, "{role}: {source}"),
            LabError::NoAddress(what) => f.write_str(what),
            LabError::Link {
                name: Some(n),
                source,
            } => write!(f, "link {n}: {source}"),
            LabError::Link { name: None, source } => write!(f, "link: {source}"),
            LabError::Anchor(why) | LabError::Page(why) => f.write_str(why),
            LabError::Run { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for LabError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LabError::Config(e) => Some(e),
            LabError::Resolve {
                source: Some(e), ..
            }
            | LabError::Link { source: e, .. } => Some(e),
            LabError::Server { source, .. } => Some(source),
            LabError::Run { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<ConfigError> for LabError {
    fn from(e: ConfigError) -> Self {
        LabError::Config(e)
    }
}
