//! Benchmark configuration: what the CLI fills in from h2load-style flags.
//!
//! The URIs, `-B` and `--connect-to` are parsed in [`target`](crate::target), the load-shape
//! options are [`LoadShape`] (module [`load`](crate::load)); the rules that tie a load shape to
//! the rest of the configuration (`LoadShape::validate`, [`LoadShape::is_timed`],
//! [`LoadShape::clients`]) are here.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::load::LoadShape;
pub use crate::target::{parse_connect_to, parse_uris, BaseUri, ConfigError, Scheme, Target};

/// An application protocol that can be negotiated or chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppProtocol {
    /// HTTP/2 over TLS (ALPN `h2`).
    H2,
    /// HTTP/2 over cleartext TCP/UNIX with prior knowledge (`h2c`).
    H2c,
    /// HTTP/1.1 (ALPN `http/1.1`, or cleartext).
    Http11,
    /// HTTP/3 over QUIC (ALPN `h3`).
    H3,
}

impl AppProtocol {
    /// The name h2load prints after `Application protocol:`.
    pub fn as_str(self) -> &'static str {
        match self {
            AppProtocol::H2 => "h2",
            AppProtocol::H2c => "h2c",
            AppProtocol::Http11 => "http/1.1",
            AppProtocol::H3 => "h3",
        }
    }

    /// Whether this is one of the HTTP/2 variants.
    pub fn is_h2(self) -> bool {
        matches!(self, AppProtocol::H2 | AppProtocol::H2c)
    }
}

impl fmt::Display for AppProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which protocol to speak.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// h2load's default: h2c with prior knowledge for `http://`; for `https://`
    /// ALPN with [`BenchConfig::alpn_list`] (default `h2,http/1.1`), falling
    /// back to HTTP/1.1 when the server picks it (or does not do ALPN).
    #[default]
    H2,
    /// `--h1` / `-p http/1.1`: HTTP/1.1 in cleartext; ALPN `http/1.1` over TLS.
    H1,
    /// Explicit ALPN list for `https://` (overrides `alpn_list`); cleartext
    /// uses HTTP/1.1 if the first entry is `http/1.1`, h2c otherwise.
    Alpn(Vec<String>),
}

/// The full benchmark configuration (see the crate docs for the flag mapping).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Parsed URIs, used round-robin; scheme/host/port from the first (h2load).
    pub uris: Vec<Target>,
    /// `-n`: total requests (ignored with `duration`).
    pub requests: u64,
    /// `-c`: number of concurrent clients (connections).
    pub clients: u32,
    /// `-m`: max concurrent streams per client (HTTP/1.1: pipelining depth).
    pub max_concurrent_streams: u32,
    /// `-t`: worker threads.
    pub threads: u32,
    /// `-D`: run for this long instead of a request count.
    pub duration: Option<Duration>,
    /// `--warm-up-time`: unmeasured period before `duration` starts.
    pub warm_up: Option<Duration>,
    /// `-H`: extra headers; `:authority`, `host`, `:method`, `:scheme` and
    /// `user-agent` replace the defaults instead of being added.
    pub headers: Vec<(String, String)>,
    /// `-d`: request body (the method becomes POST, `content-length` is sent).
    pub body: Option<Arc<[u8]>>,
    /// Protocol selection (`--h1`, `-p`).
    pub protocol: ProtocolChoice,
    /// `--alpn-list` for `https://` with [`ProtocolChoice::H2`] (default `h2,http/1.1`).
    pub alpn_list: Vec<String>,
    /// `-B`: UNIX socket or alternative host:port.
    pub base_uri: Option<BaseUri>,
    /// `--connect-to host:port`: connect here, keep `:authority`/SNI (port 0 = URI's port).
    pub connect_to: Option<(String, u16)>,
    /// `--sni`: TLS server name instead of the URI host.
    pub sni: Option<String>,
    /// `-w`: stream receive window is `2^w - 1` (0..=30, default 30).
    pub window_bits: u8,
    /// `-W`: connection receive window is `2^W - 1` (0..=30, default 30).
    pub connection_window_bits: u8,
    /// `--header-table-size`: our HPACK decoder table size (SETTINGS_HEADER_TABLE_SIZE).
    pub header_table_size: u32,
    /// `--encoder-header-table-size`: max dynamic table size our encoder uses.
    pub encoder_header_table_size: u32,
    /// HTTP/3: use QPACK's dynamic table (default, as h2load: we announce
    /// `header_table_size` and 100 blocked streams, and our requests use the table the
    /// server allows, up to `encoder_header_table_size`). `false`
    /// (`--no-qpack-dynamic-table`): none either way.
    pub qpack_dynamic_table: bool,
    /// `-T`: after a client has submitted its last request, give up on it
    /// (counting its in-flight requests as timed out) after this long.
    pub connection_active_timeout: Option<Duration>,
    /// `-N`: drop a connection (timing out its in-flight requests) after this
    /// long without reading or writing anything.
    pub connection_inactivity_timeout: Option<Duration>,
    /// `--require-protocol`: fail the run if the negotiated protocol differs.
    pub require_protocol: Option<AppProtocol>,
    /// `-v`: debug output on stderr (connection events, frames).
    pub verbose: bool,
    /// `--log-file`: one line per completed request, like h2load
    /// (`start-µs-since-epoch \t status-or--1 \t duration-µs`).
    pub log_file: Option<PathBuf>,
    /// Skip certificate verification (h2load never verifies): default `true`.
    pub insecure: bool,
    /// Pacing, stages and time series (open model; h2load's `--rps`, `-r`,
    /// `--timing-script-file`).
    pub load: LoadShape,
    /// Request coalescing (closed model): a client whose streams complete
    /// while others on the same connection are still in flight waits up to
    /// this long for them before sending the new requests, so they leave in
    /// one write. `None` (the default) sends one request per completed
    /// stream as soon as it completes, like h2load; `--coalesce` sets
    /// [`DEFAULT_COALESCE_HOLD`]. Off by default because it changes the load
    /// shape (fewer than `-m` streams in flight between batches).
    pub coalesce: Option<Duration>,
    /// Read waiting: when a worker finds nothing to do, it sleeps a moment
    /// before polling again, so that responses arriving close together are
    /// read together (fewer wake-ups, reads and ACKs). The wait is 1% of the
    /// worker's recent mean request time, at most this long, and none when
    /// that is under 5 µs or while reads already carry more than four responses
    /// each. `None` (`--read-wait 0`) reads as soon as data arrives. Default
    /// [`DEFAULT_READ_WAIT`].
    pub read_wait: Option<Duration>,
    /// Keep raw samples of request, connect and first-byte times, at most this
    /// many of each across the run (reservoir sampling, as h2load does for its
    /// `--output-file`); `None` (the default) keeps none and allocates nothing
    /// per request. See [`crate::samples`].
    pub max_samples: Option<usize>,
    /// `-f`: SETTINGS_MAX_FRAME_SIZE we advertise, 16384..=16777215
    /// (default 16384, h2load's).
    pub max_frame_size: u32,
    /// `--push accept`: advertise SETTINGS_ENABLE_PUSH = 1 and count pushed streams and
    /// bytes ([`RunResult::pushed_streams`](crate::RunResult::pushed_streams)); the
    /// benchmark never uses them. Off by default (refused, as h2load and browsers do).
    pub accept_push: bool,
    /// TLS options: cipher suites, groups, session resumption.
    pub tls: crate::tls_opts::TlsOptions,
    /// HTTP/3: do not batch sends with UDP GSO (`--no-udp-gso`).
    pub no_udp_gso: bool,
    /// HTTP/3: the UDP payload size to use from the start, without path MTU discovery
    /// (`--max-udp-payload-size`); `None`: quinn-proto's default (1200, then discovery).
    pub max_udp_payload_size: Option<u16>,
    /// HTTP/3: write a qlog (JSON-SEQ) per connection to `BASE.<worker>.<client>.sqlog`
    /// (`--qlog-file-base`, h2load's naming; a reconnection overwrites its client's file).
    pub qlog_file_base: Option<std::path::PathBuf>,
    /// `--reconnect-every N`: each connection carries N requests, then the client closes it
    /// and opens a new one (which resumes with `--tls-resume`/`--0rtt`). `None`: connections
    /// live as long as the server lets them (h2load's behaviour).
    pub reconnect_every: Option<u64>,
}

/// The longest hold of request coalescing when `--coalesce` is given without a
/// value ([`BenchConfig::coalesce`]).
pub const DEFAULT_COALESCE_HOLD: Duration = Duration::from_millis(1);

/// The default longest read wait ([`BenchConfig::read_wait`]).
pub const DEFAULT_READ_WAIT: Duration = Duration::from_micros(50);

impl BenchConfig {
    /// A configuration with h2load's defaults for the given URIs
    /// (`-n1 -c1 -m1 -t1 -w30 -W30`, 4096-byte header tables).
    pub fn new(uris: Vec<Target>) -> BenchConfig {
        BenchConfig {
            uris,
            requests: 1,
            clients: 1,
            max_concurrent_streams: 1,
            threads: 1,
            duration: None,
            warm_up: None,
            headers: Vec::new(),
            body: None,
            protocol: ProtocolChoice::H2,
            alpn_list: vec!["h2".to_owned(), "http/1.1".to_owned()],
            base_uri: None,
            connect_to: None,
            sni: None,
            window_bits: 30,
            connection_window_bits: 30,
            header_table_size: 4096,
            encoder_header_table_size: 4096,
            qpack_dynamic_table: true,
            connection_active_timeout: None,
            connection_inactivity_timeout: None,
            require_protocol: None,
            verbose: false,
            log_file: None,
            insecure: true,
            load: LoadShape::default(),
            coalesce: None,
            read_wait: Some(DEFAULT_READ_WAIT),
            max_samples: None,
            max_frame_size: 16_384,
            accept_push: false,
            tls: crate::tls_opts::TlsOptions::default(),
            no_udp_gso: false,
            reconnect_every: None,
            max_udp_payload_size: None,
            qlog_file_base: None,
        }
    }

    /// Parses URI strings and builds a default configuration: a convenience
    /// for the CLI and tests. Path-only URIs are accepted when `base` is a
    /// `-B` URI/host:port, like h2load.
    pub fn from_uris<S: AsRef<str>>(
        uris: &[S],
        base: Option<&str>,
    ) -> Result<BenchConfig, ConfigError> {
        let base_uri = base.map(BaseUri::parse).transpose()?;
        let targets = parse_uris(uris, base_uri.as_ref())?;
        let mut cfg = BenchConfig::new(targets);
        cfg.base_uri = base_uri;
        Ok(cfg)
    }

    /// Checks the option combinations h2load rejects, with h2load's wording.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: &str| Err(ConfigError::Invalid(m.to_owned()));
        if self.uris.is_empty() {
            return err("no URI given");
        }
        if self.clients == 0 {
            return err("-c: the number of clients must be strictly greater than 0.");
        }
        if self.max_concurrent_streams == 0 {
            return err("-m: the max concurrent streams must be strictly greater than 0.");
        }
        if self.threads == 0 {
            return err("-t: the number of threads must be strictly greater than 0.");
        }
        if self.max_frame_size < 16_384 {
            return err("--max-frame-size: minimum 16384");
        }
        if self.max_frame_size > 16_777_215 {
            return err("--max-frame-size: maximum 16777215");
        }
        if !self.load.is_timed(self) {
            if self.requests == 0 {
                return err("-n: the number of requests must be strictly greater than 0 if timing-based test is not being run.");
            }
            // h2load: "With timing script, we don't distribute config.nreqs"; the open
            // model paces requests, not clients.
            if self.requests < u64::from(self.clients)
                && self.load.timing_script.is_none()
                && !self.load.is_open()
            {
                return err(
                    "-n, -c: the number of requests must be greater than or equal to the clients.",
                );
            }
            if self.warm_up.is_some() {
                return err("--warm-up-time: only valid together with -D/--duration.");
            }
        } else if self.duration == Some(Duration::ZERO) {
            return err("-D: the duration must be strictly greater than 0.");
        }
        if self.load.clients(self) < self.threads {
            return err(
                "-c, -t: the number of clients must be greater than or equal to the number of threads.",
            );
        }
        if self.window_bits > 30 {
            return err("-w: specify the integer in the range [0, 30], inclusive");
        }
        if self.connection_window_bits > 30 {
            return err("-W: specify the integer in the range [0, 30], inclusive");
        }
        let alpn = self.effective_alpn();
        if self.scheme() == Scheme::Https && alpn.is_empty() {
            return err("--alpn-list: at least one protocol is required for https");
        }
        if alpn.iter().any(|p| p.is_empty() || p.len() > 255) {
            return err("--alpn-list: protocol names must be 1..=255 bytes");
        }
        // Checked here, before the run prints anything, as well as where QUIC is set up.
        if alpn.first().map(String::as_str) == Some("h3") && self.scheme() != Scheme::Https {
            return err("h3: HTTP/3 needs an https:// URI");
        }
        for (name, value) in &self.headers {
            if name.is_empty()
                || name
                    .bytes()
                    .any(|b| b <= b' ' || b == b':' && name.as_bytes()[0] != b':')
                || name.bytes().skip(1).any(|b| b == b':')
            {
                return Err(ConfigError::InvalidHeader(format!(
                    "invalid header name: {name:?}"
                )));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(ConfigError::InvalidHeader(format!(
                    "invalid value for header {name}: contains CR, LF or NUL"
                )));
            }
        }
        if let Some(t) = self.connection_active_timeout {
            if t.is_zero() {
                return err("-T: bad value for the conn_active_timeout wait time");
            }
        }
        if let Some(t) = self.connection_inactivity_timeout {
            if t.is_zero() {
                return err("-N: bad value for the conn_inactivity_timeout wait time");
            }
        }
        self.load.validate(self)
    }

    /// The scheme used for every connection (`-B` scheme, else the first URI's).
    pub fn scheme(&self) -> Scheme {
        if let Some(BaseUri::Tcp {
            scheme: Some(s), ..
        }) = &self.base_uri
        {
            return *s;
        }
        self.uris.first().map_or(Scheme::Http, |t| t.scheme)
    }

    /// Host and port that name the server (`:authority`, SNI): from `-B host:port`
    /// if given, else the first URI.
    pub fn origin(&self) -> (String, u16) {
        if let Some(BaseUri::Tcp { host, port, .. }) = &self.base_uri {
            return (host.clone(), *port);
        }
        self.uris
            .first()
            .map_or((String::new(), 80), |t| (t.host.clone(), t.port))
    }

    /// The default `:authority` (before any `-H` override).
    pub fn default_authority(&self) -> String {
        let (host, port) = self.origin();
        Target {
            scheme: self.scheme(),
            host,
            port,
            path: String::new(),
        }
        .authority()
    }

    /// The ALPN list offered for `https://`.
    pub fn effective_alpn(&self) -> Vec<String> {
        match &self.protocol {
            ProtocolChoice::H2 => self.alpn_list.clone(),
            ProtocolChoice::H1 => vec!["http/1.1".to_owned()],
            ProtocolChoice::Alpn(list) => list.clone(),
        }
    }

    /// The protocol spoken over cleartext connections.
    pub fn cleartext_protocol(&self) -> AppProtocol {
        match &self.protocol {
            ProtocolChoice::H2 => AppProtocol::H2c,
            ProtocolChoice::H1 => AppProtocol::Http11,
            ProtocolChoice::Alpn(list) => match list.first().map(String::as_str) {
                Some("http/1.1") => AppProtocol::Http11,
                _ => AppProtocol::H2c,
            },
        }
    }

    /// Where TCP connections go: `--connect-to`, else `-B host:port`, else the
    /// first URI. `None` for `-B unix:`.
    pub fn connect_addr(&self) -> Option<(String, u16)> {
        if let Some(BaseUri::Unix(_)) = &self.base_uri {
            return None;
        }
        let (host, port) = self.origin();
        match &self.connect_to {
            Some((h, p)) => Some((h.clone(), if *p == 0 { port } else { *p })),
            None => Some((host, port)),
        }
    }

    /// The TLS server name: `--sni`, else the origin host.
    pub fn server_name(&self) -> String {
        self.sni.clone().unwrap_or_else(|| self.origin().0)
    }
}

/// The load-shape rules that involve the rest of the configuration.
impl LoadShape {
    /// Checks the combinations (h2load's wording where h2load has the rule).
    pub(crate) fn validate(&self, cfg: &BenchConfig) -> Result<(), ConfigError> {
        let err = |m: &str| Err(ConfigError::Invalid(m.to_owned()));
        if let Some(r) = self.arrival_rate {
            if !r.is_finite() || r < 0.0 || (r == 0.0 && self.stages.is_empty()) {
                return err("--arrival-rate: the rate must be a positive number of requests per second (0 only as the start of --stages).");
            }
            if self.rps.is_some() || self.timing_script.is_some() {
                return err(
                    "--arrival-rate, --rps, --timing-script-file: they are mutually exclusive.",
                );
            }
        }
        if !self.stages.is_empty() {
            if cfg.duration.is_some() {
                return err(
                    "--stages, -D: they are mutually exclusive (the stages set the duration).",
                );
            }
            if cfg.warm_up.is_some() {
                return err("--stages, --warm-up-time: they are mutually exclusive.");
            }
            if self.rps.is_some() || self.timing_script.is_some() {
                return err("--stages, --rps, --timing-script-file: they are mutually exclusive.");
            }
            if self
                .stages
                .iter()
                .any(|s| s.duration.is_zero() || !s.target.is_finite() || s.target < 0.0)
            {
                return err("--stages: every stage needs a positive duration and a level >= 0.");
            }
            if self.arrival_rate.is_none() && self.max_level() < 1.0 {
                return err("--stages: the number of connections never reaches 1.");
            }
        }
        if let Some(r) = self.rps {
            // h2load: "1. / v < 1e-6" is rejected.
            if !r.is_finite() || r <= 0.0 || 1.0 / r < 1e-6 {
                return err("--rps: Invalid value (a positive number up to 1000000).");
            }
            if self.timing_script.is_some() {
                return err("--timing-script-file, --rps: they are mutually exclusive.");
            }
        }
        if let Some((rate, period)) = self.connection_rate {
            if rate == 0 {
                return err("-r: the rate must be a positive integer.");
            }
            if period.is_zero() {
                return err("--rate-period: the period must be a positive duration.");
            }
            if cfg.duration.is_some() {
                return err("-r, -D: they are mutually exclusive.");
            }
            if !self.stages.is_empty() {
                return err("-r, --stages: they are mutually exclusive.");
            }
            if rate < cfg.threads {
                return err("-r, -t: the connection rate must be greater than or equal to the number of threads.");
            }
            if rate > cfg.clients {
                return err("-r, -c: the connection rate must be smaller than or equal to the number of clients.");
            }
        }
        if let Some(s) = &self.timing_script {
            if s.is_empty() {
                return err("--timing-script-file: the script has no lines.");
            }
            if s.len() != cfg.uris.len() {
                return err("--timing-script-file: one URI per script line is expected.");
            }
        }
        if let Some(q) = self.queue_limit {
            if q == 0 {
                return err("--queue-limit: the limit must be at least 1.");
            }
        }
        if let Some(i) = self.interval {
            if i < Duration::from_millis(10) {
                return err("--interval: the interval must be at least 10ms.");
            }
        }
        Ok(())
    }

    /// The run's length is set by time (`-D` or stages), not by a request count.
    pub fn is_timed(&self, cfg: &BenchConfig) -> bool {
        cfg.duration.is_some() || !self.stages.is_empty()
    }

    /// The number of clients a run allocates: `-c`, raised to the highest stage level for
    /// closed-model stages (a shard's `-c` is already its share of the whole run's).
    pub fn clients(&self, cfg: &BenchConfig) -> u32 {
        if self.shard.is_none() && self.arrival_rate.is_none() && !self.stages.is_empty() {
            let top = self.max_level().round().min(f64::from(u32::MAX)) as u32;
            cfg.clients.max(top)
        } else {
            cfg.clients
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn base_uri_forms() {
        assert_eq!(
            BaseUri::parse("unix:/tmp/s.sock").unwrap(),
            BaseUri::Unix("/tmp/s.sock".into())
        );
        assert_eq!(
            BaseUri::parse("127.0.0.1:8443").unwrap(),
            BaseUri::Tcp {
                scheme: None,
                host: "127.0.0.1".into(),
                port: 8443
            }
        );
        assert!(BaseUri::parse("unix:").is_err());
        assert!(BaseUri::parse("hostonly").is_err());
        let cfg = BenchConfig::from_uris(&["/a", "/b?c"], Some("https://srv:9000")).unwrap();
        assert_eq!(cfg.scheme(), Scheme::Https);
        assert_eq!(cfg.default_authority(), "srv:9000");
        assert_eq!(cfg.uris[1].path, "/b?c");
        assert!(BenchConfig::from_uris(&["/a"], None).is_err());
    }

    #[test]
    fn connect_to_and_unix() {
        let mut cfg = BenchConfig::from_uris(&["http://a.example:81/"], None).unwrap();
        assert_eq!(cfg.connect_addr(), Some(("a.example".into(), 81)));
        cfg.connect_to = Some(parse_connect_to("127.0.0.1").unwrap());
        assert_eq!(cfg.connect_addr(), Some(("127.0.0.1".into(), 81)));
        cfg.connect_to = Some(parse_connect_to("127.0.0.1:9").unwrap());
        assert_eq!(cfg.connect_addr(), Some(("127.0.0.1".into(), 9)));
        assert_eq!(cfg.default_authority(), "a.example:81");
        cfg.base_uri = Some(BaseUri::parse("unix:/x").unwrap());
        assert_eq!(cfg.connect_addr(), None);
        assert_eq!(cfg.default_authority(), "a.example:81");
    }

    #[test]
    fn validation_messages() {
        let mut cfg = BenchConfig::from_uris(&["http://h/"], None).unwrap();
        assert!(cfg.validate().is_ok());
        cfg.clients = 2;
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("-n, -c:"));
        cfg.duration = Some(Duration::from_secs(1));
        assert!(cfg.validate().is_ok());
        cfg.threads = 3;
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("-c, -t:"));
        cfg.threads = 1;
        cfg.headers.push(("x-bad".into(), "a\r\nb".into()));
        assert!(cfg.validate().is_err());
        cfg.headers.clear();
        cfg.headers.push(("bad name".into(), "v".into()));
        assert!(cfg.validate().is_err());
        cfg.headers.clear();
        cfg.headers.push((":authority".into(), "v".into()));
        assert!(cfg.validate().is_ok());
    }
}
