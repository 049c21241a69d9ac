//! Every tunable of `h2lab serve`, with the defaults the CLI shows.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// Server configuration. `Default` gives a loopback server on port 8080 (cleartext) with
/// conservative protocol limits; the CLI overrides fields from its flags.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Cleartext listener (HTTP/1.1 and h2c on one port). `None`: no cleartext port.
    /// Used by [`crate::spawn`]; [`crate::run`] takes already bound listeners.
    pub listen: Option<SocketAddr>,
    /// TLS listener (HTTP/2 and HTTP/1.1 chosen by ALPN). `None`: no TLS port.
    /// Used by [`crate::spawn`].
    pub tls_listen: Option<SocketAddr>,
    /// Certificate chain (PEM). With `key`; when both are `None` a self-signed certificate for
    /// localhost, 127.0.0.1 and ::1 is generated (or reused) in `cert_dir`.
    pub cert: Option<PathBuf>,
    /// Private key (PEM, PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// Where a generated certificate is written (`cert.pem`, `key.pem`).
    /// `None`: `$TMPDIR/h2lab/` for root, `$TMPDIR/h2lab-UID/` for other users.
    pub cert_dir: Option<PathBuf>,
    /// ALPN protocols offered on the TLS port, in preference order (`h2`, `http/1.1`).
    pub alpn: Vec<Vec<u8>>,
    /// Number of worker threads (each with its own event loop); at least 1.
    pub threads: usize,

    /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS we advertise and enforce.
    pub max_concurrent_streams: u32,
    /// HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE we advertise (per-stream receive window).
    pub initial_stream_window: u32,
    /// HTTP/2 connection receive window (raised with a WINDOW_UPDATE after the preface).
    pub initial_connection_window: u32,
    /// HTTP/2 SETTINGS_MAX_FRAME_SIZE we advertise (16384..=16777215).
    pub max_frame_size: u32,
    /// HTTP/2 SETTINGS_HEADER_TABLE_SIZE we advertise (HPACK decoder table).
    pub header_table_size: u32,
    /// Largest request header list (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE; for HTTP/1.1 the
    /// largest request head in bytes). Larger requests get 431 or a stream/connection error.
    pub max_header_list_size: u32,
    /// Most CONTINUATION frames accepted for one header block (CONTINUATION flood defence).
    pub max_continuation_frames: u32,
    /// Rapid-reset budget: most streams the peer may reset (or that we must refuse) per
    /// `rapid_reset_window` opened streams before the connection gets GOAWAY ENHANCE_YOUR_CALM.
    pub max_rapid_resets: u32,
    /// The window (in opened streams) over which `max_rapid_resets` is counted.
    pub rapid_reset_window: u32,

    /// HTTP/1.1 persistent connections. `false`: `connection: close` after every response
    /// (HTTP/1.0 style).
    pub keep_alive: bool,
    /// Requests served on one connection before the server ends it (`None`: no limit), like
    /// nginx's `keepalive_requests`: HTTP/1.1 answers the last one with `connection: close`;
    /// HTTP/2 sends GOAWAY once it has that many requests, answers those it accepted, then
    /// closes.
    pub max_requests_per_connection: Option<u32>,
    /// Close a connection with nothing in flight after this long without input, and a request
    /// head (HTTP/1.1) or TLS handshake that takes longer than this (slowloris).
    pub idle_timeout: Duration,
    /// Largest request body accepted (bytes); larger gets 413 (HTTP/1.1) or
    /// RST_STREAM/413 (HTTP/2).
    pub max_request_body: u64,

    /// Serve static files from this directory for paths the built-in endpoints do not claim.
    pub root: Option<PathBuf>,
    /// Largest `/delay?ms=` honoured (larger values are clamped).
    pub max_delay: Duration,
    /// Largest `/compute?work=` honoured (larger values are clamped).
    pub max_compute_work: u64,
    /// How HTTP/2 response data is ordered across streams: RFC 9218 priorities (default)
    /// or plain round-robin (`--priorities off`).
    pub priorities: crate::sched::PriorityMode,
    /// HTTP/2 server push (`--push`, off by default): a `/page` response pushes its
    /// render-blocking CSS and JS (RFC 9113 §8.4) when the client allows push, and says
    /// `link: <...>; rel=preload` for them.
    pub push: bool,
    /// `103 Early Hints` (`--early-hints`, off by default; RFC 8297): a `/page` response is
    /// preceded by an interim response whose `link` field names its render-blocking CSS
    /// and JS (`rel=preload`), on HTTP/1.1, HTTP/2 and HTTP/3, sent before the page's
    /// think time (`/page?think=200ms`).
    pub early_hints: bool,
    /// TLS 1.3 early data and QUIC 0-RTT (`--0rtt`, off by default): resumed clients may
    /// send requests in their first flight. Only requests that are safe to replay are
    /// answered from early data (RFC 8470); the others get `425 Too Early`. Session tickets
    /// are single-use ([`crate::early::SingleUseTickets`]), so early data cannot be replayed.
    pub zero_rtt: bool,
    /// Where the early-data counters of `zero_rtt` go (shared by the TLS and QUIC ports).
    pub early_stats: std::sync::Arc<crate::early::EarlyStats>,
    /// TCP_NOTSENT_LOWAT on accepted connections when `priorities` is on (bytes; 0 leaves
    /// the kernel default): keeps the unsent part of the socket buffer small so that the
    /// scheduler, not the kernel queue, decides what goes out next on a slow link.
    pub notsent_lowat: u32,
    /// `notsent_lowat` is applied only to connections whose round-trip time (from our
    /// SETTINGS to its acknowledgement) is at least this: on a fast path (loopback) the
    /// kernel's queue drains at once and a low-water mark would only cost system calls.
    /// h2o gates its latency optimisation the same way (`http2-latency-optimization-min-rtt`).
    pub notsent_lowat_min_rtt: Duration,
    /// HTTP/3 (`--h3`, off by default): QUIC on UDP on the TLS port number, same certificate,
    /// ALPN `h3`, and `alt-svc: h3=":PORT"` on the TLS port's responses. Needs a TLS port.
    pub h3: bool,
    /// HTTP/3: send with UDP GSO when the kernel supports it (`--no-udp-gso` turns it off).
    pub h3_gso: bool,
    /// HTTP/3: let the QPACK encoder use the dynamic table the client allows (`false`:
    /// static table and literals only).
    pub h3_qpack_dynamic_table: bool,
    /// Suppress the informational lines on stderr (certificate location); protocol-violation
    /// logging stays (rate-limited).
    pub quiet: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))),
            tls_listen: None,
            cert: None,
            key: None,
            cert_dir: None,
            alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            threads: 1,
            max_concurrent_streams: 100,
            initial_stream_window: 65_535,
            initial_connection_window: 65_535,
            max_frame_size: 16_384,
            header_table_size: 4_096,
            max_header_list_size: 16 * 1024,
            max_continuation_frames: 16,
            max_rapid_resets: 200,
            rapid_reset_window: 1_000,
            keep_alive: true,
            idle_timeout: Duration::from_secs(60),
            max_requests_per_connection: None,
            max_request_body: 16 * 1024 * 1024,
            root: None,
            max_delay: Duration::from_secs(300),
            max_compute_work: 1_000_000_000,
            priorities: crate::sched::PriorityMode::Rfc9218,
            push: false,
            early_hints: false,
            zero_rtt: false,
            early_stats: Default::default(),
            notsent_lowat: 16 * 1024,
            notsent_lowat_min_rtt: Duration::from_millis(10),
            h3: false,
            h3_gso: true,
            h3_qpack_dynamic_table: true,
            quiet: false,
        }
    }
}

impl ServerConfig {
    /// A configuration for tests and in-process use: cleartext on `127.0.0.1:0`, no TLS,
    /// quiet.
    pub fn local() -> Self {
        ServerConfig {
            listen: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
            quiet: true,
            ..ServerConfig::default()
        }
    }

    /// Checks ranges the protocols impose; returns a message naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.threads == 0 {
            return Err("threads must be at least 1".into());
        }
        // RFC 9113 §6.5.2: SETTINGS_MAX_FRAME_SIZE "The initial value is 2^14 (16,384) octets.
        // The value advertised by an endpoint MUST be between this initial value and the
        // maximum allowed frame size (2^24-1 or 16,777,215 octets), inclusive."
        if !(16_384..=16_777_215).contains(&self.max_frame_size) {
            return Err("max frame size must be within 16384..=16777215".into());
        }
        // RFC 9113 §6.5.2: SETTINGS_INITIAL_WINDOW_SIZE "Values above the maximum flow-control
        // window size of 2^31-1 MUST be treated as a connection error".
        if self.initial_stream_window > 0x7fff_ffff {
            return Err("initial stream window must be at most 2^31-1".into());
        }
        if self.initial_connection_window > 0x7fff_ffff || self.initial_connection_window < 65_535 {
            return Err("initial connection window must be within 65535..=2^31-1".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("idle timeout must be positive".into());
        }
        if self.alpn.is_empty() {
            return Err("at least one ALPN protocol is needed".into());
        }
        if self.cert.is_some() != self.key.is_some() {
            return Err("--cert and --key go together".into());
        }
        Ok(())
    }
}
