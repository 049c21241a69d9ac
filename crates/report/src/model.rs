//! The result data model the formatters take.
//!
//! The types are the engine's (`h2lab-engine`, see `spec-bench.md`): a [`RunResult`] is what one
//! `h2lab bench` run measured, with the latency distributions kept as HdrHistograms (nanoseconds,
//! 3 significant figures) so that nothing is lost before formatting or serialisation. This module
//! adds what the formatters need around them: [`RunOptions`] (the options recorded in the JSON
//! result), HTTP/2 error code names, and constructors.

use std::fmt::Write as _;
use std::time::Duration;

use h2lab_engine::{BaseUri, BenchConfig, ProtocolChoice, Scheme};
use hdrhistogram::Histogram;

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
        _ => None,
    }
}

/// The name of an HTTP/2 error code (RFC 9113 §7), or `0x..` for unknown codes.
pub fn h2_error_name(code: u32) -> String {
    let name = match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => return format!("0x{code:x}"),
    };
    name.to_string()
}

/// The code of an HTTP/2 error name as printed by [`h2_error_name`].
pub fn h2_error_code(name: &str) -> Option<u32> {
    if let Some(hex) = name.strip_prefix("0x") {
        return u32::from_str_radix(hex, 16).ok();
    }
    (0..=0xdu32).find(|c| h2_error_name(*c) == name)
}

/// A result with nothing recorded: zero counters, empty histograms.
pub fn empty_result() -> RunResult {
    RunResult {
        elapsed: Duration::ZERO,
        requests: RequestCounts::default(),
        status: StatusCounts::default(),
        traffic: Traffic::default(),
        bytes_sent: 0,
        request_time: new_histogram(),
        request_time_corrected: new_histogram(),
        connect_time: new_histogram(),
        ttfb: new_histogram(),
        client_rps: Vec::new(),
        app_protocol: None,
        protocol_fallback: false,
        tls: None,
        errors: ErrorCounts::default(),
        goaways: 0,
        reconnects: 0,
        read_waits: 0,
        tls_resumed: 0,
        pushed_streams: 0,
        pushed_bytes: 0,
        interrupted: false,
        pacing: None,
        timeseries: Vec::new(),
        samples: None,
    }
}

/// Whether the run paced its requests (open model, `--rps`, timing script): its request
/// latency was then also measured from each request's intended start.
pub fn is_paced(r: &RunResult) -> bool {
    r.pacing.is_some() || !r.request_time_corrected.is_empty()
}

/// The options a run used, as recorded in the JSON result (`options` object) and by the CLI.
///
/// Durations are kept as [`Duration`]; absent options are `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunOptions {
    /// URIs as given (before parsing), used round-robin.
    pub uris: Vec<String>,
    /// `-n`.
    pub requests: u64,
    /// `-c`.
    pub clients: u32,
    /// `-m`.
    pub max_concurrent_streams: u32,
    /// `-t`.
    pub threads: u32,
    /// `-D`.
    pub duration: Option<Duration>,
    /// `--warm-up-time`.
    pub warm_up: Option<Duration>,
    /// `-H` headers, lower-cased names.
    pub headers: Vec<(String, String)>,
    /// `-d` body length in bytes (the body itself is not recorded).
    pub body_bytes: Option<u64>,
    /// Protocol choice: `h2c` / `http/1.1` for cleartext, or the ALPN list for TLS.
    pub protocol: String,
    /// ALPN identifiers offered for TLS.
    pub alpn_list: Vec<String>,
    /// `-B`.
    pub base_uri: Option<String>,
    /// `--connect-to` as `host:port`.
    pub connect_to: Option<String>,
    /// `--sni`.
    pub sni: Option<String>,
    /// `-w`.
    pub window_bits: u8,
    /// `-W`.
    pub connection_window_bits: u8,
    /// `--header-table-size`.
    pub header_table_size: u32,
    /// `--encoder-header-table-size`.
    pub encoder_header_table_size: u32,
    /// `-T`.
    pub connection_active_timeout: Option<Duration>,
    /// `-N`.
    pub connection_inactivity_timeout: Option<Duration>,
    /// `--require-protocol`.
    pub require_protocol: Option<String>,
    /// Longest hold of request coalescing; `None` unless `--coalesce` was given.
    pub coalesce_hold: Option<Duration>,
    /// Longest read wait; `None` with `--read-wait 0`.
    pub read_wait: Option<Duration>,
    /// Load-shape options, when any was used.
    pub load: Option<LoadOptions>,
}

/// The load-shape options of a run (see `h2lab_engine::LoadShape`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadOptions {
    /// `--arrival-rate`.
    pub arrival_rate: Option<f64>,
    /// `--stages`: (duration, level).
    pub stages: Vec<(Duration, f64)>,
    /// `--queue-limit`.
    pub queue_limit: Option<u64>,
    /// `--rps`.
    pub rps: Option<f64>,
    /// `-r` and `--rate-period`.
    pub connection_rate: Option<(u32, Duration)>,
    /// `--timing-script-file`: number of lines.
    pub timing_script_lines: Option<u64>,
    /// Time-series interval.
    pub interval: Option<Duration>,
}

impl From<&BenchConfig> for RunOptions {
    fn from(c: &BenchConfig) -> Self {
        let uris = c
            .uris
            .iter()
            .map(|t| format!("{}://{}{}", t.scheme, t.authority(), t.path))
            .collect();
        let alpn = c.effective_alpn();
        let protocol = match c.scheme() {
            Scheme::Http => c.cleartext_protocol().as_str().to_string(),
            Scheme::Https => match &c.protocol {
                ProtocolChoice::H1 => "http/1.1".to_string(),
                _ => alpn.first().cloned().unwrap_or_default(),
            },
        };
        let base_uri = c.base_uri.as_ref().map(|b| match b {
            BaseUri::Unix(p) => format!("unix:{}", p.display()),
            BaseUri::Tcp { scheme, host, port } => {
                let mut s = String::new();
                if let Some(sc) = scheme {
                    let _ = write!(s, "{sc}://");
                }
                if host.contains(':') {
                    let _ = write!(s, "[{host}]:{port}");
                } else {
                    let _ = write!(s, "{host}:{port}");
                }
                s
            }
        });
        RunOptions {
            uris,
            requests: c.requests,
            clients: c.clients,
            max_concurrent_streams: c.max_concurrent_streams,
            threads: c.threads,
            duration: c.duration,
            warm_up: c.warm_up,
            headers: c.headers.clone(),
            body_bytes: c.body.as_ref().map(|b| b.len() as u64),
            protocol,
            alpn_list: if c.scheme() == Scheme::Https {
                alpn
            } else {
                Vec::new()
            },
            base_uri,
            connect_to: c.connect_to.as_ref().map(|(h, p)| {
                if *p == 0 {
                    h.clone()
                } else {
                    format!("{h}:{p}")
                }
            }),
            sni: c.sni.clone(),
            window_bits: c.window_bits,
            connection_window_bits: c.connection_window_bits,
            header_table_size: c.header_table_size,
            encoder_header_table_size: c.encoder_header_table_size,
            connection_active_timeout: c.connection_active_timeout,
            connection_inactivity_timeout: c.connection_inactivity_timeout,
            coalesce_hold: c.coalesce,
            read_wait: c.read_wait,
            require_protocol: c.require_protocol.map(|p| p.as_str().to_string()),
            load: (c.load != h2lab_engine::LoadShape::default()).then(|| LoadOptions {
                arrival_rate: c.load.arrival_rate,
                stages: c
                    .load
                    .stages
                    .iter()
                    .map(|s| (s.duration, s.target))
                    .collect(),
                queue_limit: c.load.queue_limit,
                rps: c.load.rps,
                connection_rate: c.load.connection_rate,
                timing_script_lines: c.load.timing_script.as_ref().map(|s| s.len() as u64),
                interval: c.load.interval,
            }),
        }
    }
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

    #[test]
    fn options_from_config() {
        let mut c = BenchConfig::from_uris(
            &["https://[::1]:8443/a?b", "/c"],
            Some("https://[::1]:8443"),
        )
        .unwrap();
        c.requests = 100;
        c.clients = 4;
        c.connect_to = Some(("127.0.0.1".into(), 0));
        c.body = Some(std::sync::Arc::from(&b"hello"[..]));
        c.require_protocol = Some(AppProtocol::H2);
        let o = RunOptions::from(&c);
        assert_eq!(
            o.uris,
            vec!["https://[::1]:8443/a?b", "https://[::1]:8443/c"]
        );
        assert_eq!(o.base_uri.as_deref(), Some("https://[::1]:8443"));
        assert_eq!(o.protocol, "h2");
        assert_eq!(o.alpn_list, vec!["h2", "http/1.1"]);
        assert_eq!(o.connect_to.as_deref(), Some("127.0.0.1"));
        assert_eq!(o.body_bytes, Some(5));
        assert_eq!(o.require_protocol.as_deref(), Some("h2"));
        assert_eq!((o.requests, o.clients), (100, 4));

        let mut c = BenchConfig::from_uris(&["http://h/"], None).unwrap();
        c.protocol = ProtocolChoice::H1;
        c.base_uri = Some(BaseUri::Unix("/tmp/s".into()));
        let o = RunOptions::from(&c);
        assert_eq!(o.protocol, "http/1.1");
        assert!(o.alpn_list.is_empty());
        assert_eq!(o.base_uri.as_deref(), Some("unix:/tmp/s"));
    }
}
