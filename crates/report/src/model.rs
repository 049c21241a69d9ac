//! The result data model the formatters take.
//!
//! The types are the engine's (`h2lab-engine`, see `spec-bench.md`): a [`RunResult`] is what one
//! `h2lab bench` run measured, with the latency distributions kept as HdrHistograms (nanoseconds,
//! 3 significant figures) so that nothing is lost before formatting or serialisation. This module
//! adds what the formatters need around them: HTTP/2 error code names and constructors, and
//! re-exports [`RunOptions`] (the options recorded in the JSON result, module
//! [`options`](crate::options)).

use h2lab_wire::frame::ErrorCode;
use hdrhistogram::Histogram;

pub use crate::options::{LoadOptions, RunOptions};
pub use h2lab_engine::{
    AppProtocol, ErrorCounts, IntervalErrors, IntervalHistograms, IntervalLatency, IntervalRow,
    PacingCounts, RequestCounts, RunResult, StatusCounts, TlsInfo, Traffic,
};

/// Significant figures used by every latency histogram of a run.
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// Creates an empty latency histogram of the kind the engine records (nanoseconds, 1 ns to
/// 1 hour, [`HISTOGRAM_SIGFIG`]).
pub fn new_histogram() -> Histogram<u64> {
    h2lab_engine::new_duration_histogram()
}

/// Parses an application protocol identifier as printed by `AppProtocol::as_str`.
pub fn parse_app_protocol(s: &str) -> Option<AppProtocol> {
    match s {
        "h2" => Some(AppProtocol::H2),
        "h2c" => Some(AppProtocol::H2c),
        "http/1.1" => Some(AppProtocol::Http11),
        "h3" => Some(AppProtocol::H3),
        _ => None,
    }
}

/// The name of an HTTP/2 error code (RFC 9113 §7, wire's table), or `0x..` for unknown codes.
pub fn h2_error_name(code: u32) -> String {
    match ErrorCode(code).name() {
        Some(name) => name.to_string(),
        None => format!("0x{code:x}"),
    }
}

/// The code of an HTTP/2 error name as printed by [`h2_error_name`].
pub fn h2_error_code(name: &str) -> Option<u32> {
    if let Some(hex) = name.strip_prefix("0x") {
        return u32::from_str_radix(hex, 16).ok();
    }
    // The registered codes are small; wire's table names them.
    (0..=0xffu32).find(|c| ErrorCode(*c).name() == Some(name))
}

/// A result with nothing recorded: zero counters, empty histograms
/// ([`RunResult::empty`]).
pub fn empty_result() -> RunResult {
    RunResult::empty()
}

/// Whether the run paced its requests (open model, `--rps`, timing script): its request
/// latency was then also measured from each request's intended start.
pub fn is_paced(r: &RunResult) -> bool {
    r.pacing.is_some() || !r.request_time_corrected.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2_error_names_round_trip() {
        for code in [0u32, 1, 7, 0xd, 0xe, 0xdead] {
            assert_eq!(h2_error_code(&h2_error_name(code)), Some(code));
        }
        assert_eq!(h2_error_name(7), "REFUSED_STREAM");
        assert_eq!(h2_error_name(0x42), "0x42");
        assert_eq!(h2_error_code("NOPE"), None);
    }
}
