//! The typed values of the lab's flags (`compare`, and the CPU flags `page` and `upstream`
//! share): clap parses each flag's text into its type with these value parsers, so that a
//! bad value is a usage error naming the flag, and the commands see typed values only.

use std::time::Duration;

use h2lab_engine::Target;
use h2lab_lab::compare::axes::{parse_count, parse_list, parse_profile, HeaderSet, Payload};
use h2lab_lab::env::Targets;
use h2lab_lab::error::{LabError, ParseError};
use h2lab_lab::fmt::{dur, parse_dur};
use h2lab_lab::link::{ConfigError, LinkProfile};
use h2lab_lab::proto::{self, LabProtocol};

/// A comma-separated list of values, parsed whole (order kept; what a duplicate means is the
/// list's: protocols keep one listed twice as an A/A control, the others drop it).
#[derive(Debug, Clone, PartialEq)]
pub struct List<T>(pub Vec<T>);

/// `--protocols`: arms, a protocol listed twice being an A/A control.
pub fn protocols(s: &str) -> Result<List<LabProtocol>, ParseError> {
    proto::parse_arms(s).map(List)
}

/// `--payloads`, `--sweep-payloads`.
pub fn payloads(s: &str) -> Result<List<Payload>, ParseError> {
    parse_list(s, "payload", str::parse).map(List)
}

/// `--headers`.
pub fn header_sets(s: &str) -> Result<List<HeaderSet>, ParseError> {
    parse_list(s, "header set", str::parse).map(List)
}

/// `--concurrency`, `--streams`: positive counts.
pub fn counts(s: &str) -> Result<List<u32>, ParseError> {
    parse_list(s, "count", parse_count).map(List)
}

/// `--links`: link profiles.
pub fn links(s: &str) -> Result<List<LinkProfile>, ParseError> {
    parse_list(s, "link", parse_profile).map(List)
}

/// `--loss`: the WAN at these loss percentages.
pub fn loss_levels(s: &str) -> Result<List<LinkProfile>, ConfigError> {
    h2lab_lab::link::parse_loss_levels(s).map(List)
}

/// `--server-cpus`, `--client-cpus`: a CPU list (`0`, `0-1`, `0,2`).
pub fn cpus(s: &str) -> Result<List<usize>, ParseError> {
    h2lab_lab::host::parse_cpu_list(s).map(List)
}

/// A lab duration (`250ms`, `1.5s`, `5m`, `0`).
pub fn duration(s: &str) -> Result<Duration, ParseError> {
    parse_dur(s)
}

/// Why a measured window is refused.
#[derive(Debug)]
pub enum WindowError {
    /// Not a duration.
    Syntax(ParseError),
    /// Shorter than the shortest window that completes requests.
    TooShort(Duration),
}

impl std::fmt::Display for WindowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowError::Syntax(e) => write!(f, "{e}"),
            WindowError::TooShort(min) => write!(
                f,
                "at least {} (shorter windows completed no request in a third of their runs: \
                 the first responses of a window come a whole cycle of the closed loop after \
                 it starts)",
                dur(*min)
            ),
        }
    }
}

impl std::error::Error for WindowError {}

/// `--duration` of `compare`: a measured window, at least the lab's
/// [`RunPolicy::min_window`](h2lab_lab::kernel::RunPolicy::min_window).
pub fn window(s: &str) -> Result<Duration, WindowError> {
    let d = parse_dur(s).map_err(WindowError::Syntax)?;
    let min = h2lab_lab::kernel::RunPolicy::LAB.min_window;
    if d < min {
        return Err(WindowError::TooShort(min));
    }
    Ok(d)
}

/// `--target`: one URL for the protocols its scheme serves.
pub fn targets(s: &str) -> Result<Targets, LabError> {
    Targets::from_url(s)
}

/// `--h1-url` and the other per-protocol URLs (their scheme is checked against the protocol
/// when the configuration is built).
pub fn target(s: &str) -> Result<Target, h2lab_engine::ConfigError> {
    Target::parse(s)
}

/// Why an equivalence band or a target width is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum BandError {
    /// Not a number.
    NotANumber(String),
    /// Outside (0%, 50%).
    OutOfRange(String),
}

impl std::fmt::Display for BandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BandError::NotANumber(s) => write!(f, "expected a percentage, got {s:?}"),
            BandError::OutOfRange(s) => {
                write!(f, "expected a band between 0% and 50%, got {s:?}")
            }
        }
    }
}

impl std::error::Error for BandError {}

/// `3%`, `3` or `0.03` as a fraction between 0 and 0.5 (`--equivalence`, the bands,
/// `--target-width`).
pub fn fraction(s: &str) -> Result<f64, BandError> {
    let t = s.trim();
    let v: f64 = t
        .trim_end_matches('%')
        .parse()
        .map_err(|_| BandError::NotANumber(s.to_owned()))?;
    let f = if t.ends_with('%') || v >= 1.0 {
        v / 100.0
    } else {
        v
    };
    if !(f > 0.0 && f < 0.5) {
        return Err(BandError::OutOfRange(s.to_owned()));
    }
    Ok(f)
}
