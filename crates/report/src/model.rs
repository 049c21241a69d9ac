//! The result data model the formatters take.
//!
//! These structs follow the engine ↔ report contract (`spec-bench.md`): a `RunResult` is what one
//! `h2lab bench` run measured, with the latency distributions kept as HdrHistograms (nanoseconds,
//! 3 significant figures) so that nothing is lost before formatting or serialisation. The report
//! crate owns this representation so that its output formats (text, JSON, CSV) stay stable even
//! when the engine's internal types grow; the engine's result converts into it.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Significant figures used by every latency histogram of a run.
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// Creates an empty, auto-resizing latency histogram (nanoseconds, [`HISTOGRAM_SIGFIG`]).
pub fn new_histogram() -> Histogram<u64> {
    // Reason: sigfig 3 is always within the accepted range 0..=5, so creation cannot fail.
    #[allow(clippy::expect_used)]
    Histogram::new(HISTOGRAM_SIGFIG).expect("sigfig 3 is valid")
}

/// The application protocol a run actually used on its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppProtocol {
    /// HTTP/2 over TLS, selected by ALPN.
    H2,
    /// HTTP/2 over cleartext TCP with prior knowledge.
    H2c,
    /// HTTP/1.1 (cleartext, or selected by ALPN).
    Http11,
}

impl AppProtocol {
    /// The identifier h2load prints on its `Application protocol:` line (the ALPN id).
    pub fn as_str(self) -> &'static str {
        match self {
            AppProtocol::H2 => "h2",
            AppProtocol::H2c => "h2c",
            AppProtocol::Http11 => "http/1.1",
        }
    }

    /// Parses an identifier as printed by [`AppProtocol::as_str`].
    pub fn parse(s: &str) -> Option<AppProtocol> {
        match s {
            "h2" => Some(AppProtocol::H2),
            "h2c" => Some(AppProtocol::H2c),
            "http/1.1" => Some(AppProtocol::Http11),
            _ => None,
        }
    }

    /// Whether this is one of the HTTP/2 flavours (`h2` or `h2c`).
    pub fn is_h2(self) -> bool {
        matches!(self, AppProtocol::H2 | AppProtocol::H2c)
    }
}

impl fmt::Display for AppProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the TLS handshake negotiated (reported once, from the first connection).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsInfo {
    /// Protocol version as OpenSSL names it, e.g. `TLSv1.3`.
    pub protocol: String,
    /// Cipher suite in OpenSSL naming, e.g. `TLS_AES_128_GCM_SHA256`.
    pub cipher: String,
    /// Key exchange as h2load's `Server Temp Key:` line shows it (`X25519 253 bits`).
    pub server_temp_key: Option<String>,
    /// Protocol selected by ALPN, if any.
    pub alpn: Option<String>,
}

/// Request counters with h2load's meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestCounts {
    /// Requests the run intended to make (`-n`; in duration mode, the number started).
    pub total: u64,
    /// Requests sent.
    pub started: u64,
    /// Requests completed, successfully or not.
    pub done: u64,
    /// Requests that completed with a 2xx or 3xx response.
    pub succeeded: u64,
    /// Requests that did not succeed.
    pub failed: u64,
    /// Failed requests that got no response (connection errors, stream resets).
    pub errored: u64,
    /// Failed requests abandoned because of `-T`/`-N` timeouts.
    pub timeout: u64,
    /// Requests that completed with a response of any status (h2load's internal `req_success`):
    /// the numerator of `req/s` in the `finished in` line.
    pub completed: u64,
}

/// Final response status codes, bucketed by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusCounts {
    /// 1xx final responses (h2load does not print this bucket).
    pub s1xx: u64,
    /// 2xx responses.
    pub s2xx: u64,
    /// 3xx responses.
    pub s3xx: u64,
    /// 4xx responses.
    pub s4xx: u64,
    /// 5xx responses.
    pub s5xx: u64,
}

/// Byte counts, h2load's meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traffic {
    /// All bytes read from the transport (after TLS decryption).
    pub bytes_total: u64,
    /// Header bytes as received on the wire (HPACK-compressed for HTTP/2).
    pub bytes_head: u64,
    /// Header bytes after decompression.
    pub bytes_head_decomp: u64,
    /// Response body bytes (DATA payload for HTTP/2).
    pub bytes_body: u64,
}

impl Traffic {
    /// h2load's "space savings": `1 - headers / decompressed headers`, as a fraction (0 when no
    /// header was decompressed).
    pub fn header_space_savings(&self) -> f64 {
        if self.bytes_head_decomp == 0 {
            return 0.0;
        }
        1.0 - self.bytes_head as f64 / self.bytes_head_decomp as f64
    }
}

/// Errors by kind, counted per event (a connection, a stream), not per request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Connection attempts that failed (refused, unreachable, no usable address).
    pub connect: u64,
    /// TLS handshake or record-layer failures.
    pub tls: u64,
    /// Connections dropped by `-T`/`-N`.
    pub timeout: u64,
    /// Protocol violations by the peer.
    pub protocol: u64,
    /// Connections lost with requests in flight.
    pub io: u64,
    /// HTTP/2 streams reset by the peer, by error code.
    pub stream_resets: BTreeMap<u32, u64>,
    /// GOAWAY frames received with an error code other than NO_ERROR, by code.
    pub goaway_errors: BTreeMap<u32, u64>,
    /// Server pushes refused.
    pub push_refused: u64,
    /// The first message of each kind seen, for humans (a few at most).
    pub messages: Vec<String>,
}

impl ErrorCounts {
    /// Sum of all counted error events.
    pub fn total(&self) -> u64 {
        let maps = self
            .stream_resets
            .values()
            .chain(self.goaway_errors.values());
        [self.connect, self.tls, self.timeout, self.protocol, self.io]
            .iter()
            .chain(maps)
            .fold(0u64, |a, b| a.saturating_add(*b))
    }

    /// Adds `other` into `self` (messages: the union, at most [`MAX_ERROR_MESSAGES`]).
    pub fn merge(&mut self, other: &ErrorCounts) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.connect, other.connect);
        add(&mut self.tls, other.tls);
        add(&mut self.timeout, other.timeout);
        add(&mut self.protocol, other.protocol);
        add(&mut self.io, other.io);
        add(&mut self.push_refused, other.push_refused);
        for (k, v) in &other.stream_resets {
            add(self.stream_resets.entry(*k).or_default(), *v);
        }
        for (k, v) in &other.goaway_errors {
            add(self.goaway_errors.entry(*k).or_default(), *v);
        }
        for m in &other.messages {
            if self.messages.len() < MAX_ERROR_MESSAGES && !self.messages.contains(m) {
                self.messages.push(m.clone());
            }
        }
    }
}

/// How many distinct error messages a result keeps.
pub const MAX_ERROR_MESSAGES: usize = 8;

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

/// Everything one bench run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Measurement period (after warm-up).
    pub elapsed: Duration,
    /// Request counters.
    pub requests: RequestCounts,
    /// Status code buckets.
    pub status: StatusCounts,
    /// Byte counters.
    pub traffic: Traffic,
    /// Request time: first byte of the request sent to last byte of the response (ns).
    pub request_time: Histogram<u64>,
    /// Connect time: connection start to connection ready, TLS included (ns).
    pub connect_time: Histogram<u64>,
    /// Time to first byte: connection start to the first byte read (ns).
    pub ttfb: Histogram<u64>,
    /// Requests per second of each client (one value per client, never per request).
    pub client_rps: Vec<f64>,
    /// Negotiated application protocol, if any connection got that far.
    pub app_protocol: Option<AppProtocol>,
    /// `h2` was offered by ALPN but the server selected `http/1.1`.
    pub protocol_fallback: bool,
    /// TLS details of the first connection, for TLS runs.
    pub tls: Option<TlsInfo>,
    /// Errors by kind.
    pub errors: ErrorCounts,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Connections re-established after a GOAWAY or a close.
    pub reconnects: u64,
    /// The run was stopped early by SIGINT/SIGTERM.
    pub interrupted: bool,
}

/// A result with nothing recorded: zero counters, empty histograms.
pub fn empty_result() -> RunResult {
    RunResult {
        elapsed: Duration::ZERO,
        requests: RequestCounts::default(),
        status: StatusCounts::default(),
        traffic: Traffic::default(),
        request_time: new_histogram(),
        connect_time: new_histogram(),
        ttfb: new_histogram(),
        client_rps: Vec::new(),
        app_protocol: None,
        protocol_fallback: false,
        tls: None,
        errors: ErrorCounts::default(),
        goaways: 0,
        reconnects: 0,
        interrupted: false,
    }
}

/// The options a run used, as recorded in the JSON result (`options` object) and by the CLI.
///
/// Durations are kept as [`Duration`]; absent options are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
}
