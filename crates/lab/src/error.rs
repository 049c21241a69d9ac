//! The lab's one error type: what went wrong when an experiment (`compare`, `page`,
//! `upstream`) or its environment could not run. Callers match on the kind; the CLI formats
//! it (the [`Display`](std::fmt::Display) texts are the messages the commands print).

use std::fmt;
use std::io;

use h2lab_engine::config::{ConfigError, Scheme};
use h2lab_engine::EngineError;
use h2lab_server::ServerError;

use crate::link::LinkProfile;
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
    /// nginx (the anchor proxy of `upstream --proxy nginx`) could not be started.
    Nginx(crate::upstream::nginx::StartError),
    /// A page could not be loaded (or its resources discovered).
    Page(PageError),
    /// A UNIX socket target (`-B unix:PATH`) with an emulated link (links relay TCP only).
    UnixSocketLink(LinkProfile),
    /// A measurement run failed.
    Run {
        /// What was being measured.
        what: String,
        /// Why.
        source: EngineError,
    },
    /// The browser arms (`page --browser`) could not be set up.
    Browser(h2lab_browser::BrowserError),
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
            LabError::Nginx(e) => write!(f, "nginx: {e}"),
            LabError::Page(e) => write!(f, "{e}"),
            LabError::UnixSocketLink(p) => write!(
                f,
                "a UNIX socket target cannot go through the {p} link (use --link loopback)"
            ),
            LabError::Run { what, source } => write!(f, "{what}: {source}"),
            LabError::Browser(e) => write!(f, "{e}"),
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
            LabError::Page(e) => Some(e),
            LabError::Browser(e) => Some(e),
            LabError::Nginx(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for LabError {
    fn from(e: ConfigError) -> Self {
        LabError::Config(e)
    }
}

impl From<PageError> for LabError {
    fn from(e: PageError) -> Self {
        LabError::Page(e)
    }
}

/// Why a page (or one load of it) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum PageError {
    /// The fetcher could not be set up or a fetch failed.
    Fetch {
        /// The protocol whose pool failed.
        proto: LabProtocol,
        /// Why.
        source: EngineError,
    },
    /// The page HTML came back with a status other than 2xx (0: no response).
    Status {
        /// The HTML path.
        path: String,
        /// The status.
        status: u16,
    },
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageError::Fetch { proto, source } => write!(f, "{}: {source}", proto.label()),
            PageError::Status { path, status } => write!(f, "{path}: status {status}"),
        }
    }
}

impl std::error::Error for PageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PageError::Fetch { source, .. } => Some(source),
            PageError::Status { .. } => None,
        }
    }
}

/// A value of a lab flag that does not parse (protocols, payloads, header sets, counts,
/// link profiles, durations, CPU lists). The command line's value parsers report it after
/// the flag's name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// An unknown protocol name.
    UnknownProtocol(String),
    /// A protocol listed more than twice (twice is an A/A control).
    ListedTooOften,
    /// An empty list of `what` (`protocol`, `payload`, `CPU`).
    EmptyList(&'static str),
    /// A payload that is not `ping`, `json`, `compute`, `info`, a size, a path or
    /// `NAME=/path`.
    UnknownPayload(String),
    /// `NAME=/path` without a name or a path, or with spaces.
    PayloadPath(String),
    /// A header set that is not `none` or a size `1k`..`12k`.
    HeaderSet(String),
    /// A count that is not a positive number.
    NotPositive(String),
    /// An unknown link profile (the link crate's words).
    Link(String),
    /// A duration the workspace's syntax rejects.
    Duration(h2lab_engine::syntax::DurationError),
    /// A duration over 24 hours.
    TooLong(String),
    /// A CPU number that does not parse.
    CpuNumber(String),
    /// A CPU range that is reversed or beyond CPU 1023.
    CpuRange(String),
    /// A load-test stage (`--stages`, `DURATION:USERS`) that does not parse.
    Stage {
        /// The stage as given.
        stage: String,
        /// What is wrong with it.
        why: StageProblem,
    },
    /// A `--stages` list without stages.
    NoStages,
    /// A `--stages` list whose every stage has 0 users.
    NoUsers,
}

/// What is wrong with a load-test stage.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StageProblem {
    /// Not `DURATION:USERS`.
    Shape,
    /// The duration is not one.
    Duration(h2lab_engine::syntax::DurationError),
    /// The users are not a whole number (the text given).
    Users(String),
    /// Longer than 24 hours.
    TooLong,
    /// More than 1000 users.
    TooManyUsers,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::UnknownProtocol(s) => write!(
                f,
                "unknown protocol {s:?} (expected h1, h1.0, h1-tls, h2, h2c or h3)"
            ),
            ParseError::ListedTooOften => {
                f.write_str("a protocol can be listed at most twice (an A/A control)")
            }
            ParseError::EmptyList(what) => write!(f, "empty {what} list"),
            ParseError::UnknownPayload(s) => write!(
                f,
                "unknown payload {s:?} (expected ping, json, compute, info, a size like 10k, \
                 a /path or NAME=/path)"
            ),
            ParseError::PayloadPath(s) if s.contains('=') => {
                write!(f, "payload {s:?}: expected NAME=/path")
            }
            ParseError::PayloadPath(s) => write!(f, "payload {s:?}: paths cannot contain spaces"),
            ParseError::HeaderSet(s) => write!(
                f,
                "header set {s:?}: expected none or a size 1k..12k (e.g. 4k)"
            ),
            ParseError::NotPositive(s) => write!(f, "{s:?} is not a positive number"),
            ParseError::Link(why) => f.write_str(why),
            ParseError::Duration(e) => write!(f, "{e}"),
            ParseError::TooLong(s) => write!(f, "{s:?}: at most 24h"),
            ParseError::CpuNumber(s) => write!(f, "bad CPU number {s:?}"),
            ParseError::CpuRange(s) => write!(f, "bad CPU range {s:?}"),
            ParseError::Stage { stage, why } => match why {
                StageProblem::Shape => {
                    write!(f, "stage {stage:?}: expected DURATION:USERS, e.g. 30s:10")
                }
                StageProblem::Duration(d) => write!(f, "stage {stage:?}: {d}"),
                StageProblem::Users(u) => {
                    write!(f, "stage {stage:?}: {u:?} is not a number of users")
                }
                StageProblem::TooLong => write!(f, "stage {stage:?}: at most 24h"),
                StageProblem::TooManyUsers => write!(f, "stage {stage:?}: at most 1000 users"),
            },
            ParseError::NoStages => f.write_str("no stages"),
            ParseError::NoUsers => f.write_str("every stage has 0 users"),
        }
    }
}

impl std::error::Error for ParseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParseError::Duration(e) => Some(e),
            _ => None,
        }
    }
}
