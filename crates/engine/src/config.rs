//! Benchmark configuration: what the CLI fills in from h2load-style flags.
//!
//! URI handling follows h2load: every URI contributes its path and query
//! (used round-robin), while the scheme, host and port come from the *first*
//! URI — or from `-B` when a base URI is given. `-B unix:/path` keeps the
//! scheme and authority of the first URI but connects to a UNIX socket;
//! `--connect-to host:port` changes only where the TCP connection goes.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::plan::LoadShape;

/// The URI scheme, which decides between cleartext and TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http://`: cleartext (h2c with prior knowledge, or HTTP/1.1).
    Http,
    /// `https://`: TLS with ALPN.
    Https,
}

impl Scheme {
    /// The port implied when a URI has none (80 / 443).
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    /// The scheme as written in URIs and in the `:scheme` pseudo-header.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One parsed request URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host as written, without IPv6 brackets (`::1`, `example.com`).
    pub host: String,
    /// Explicit port, or the scheme's default.
    pub port: u16,
    /// Request target: path plus `?query` (never empty; `/` when the URI has no path).
    pub path: String,
}

impl Target {
    /// Parses an absolute `http://` or `https://` URI. The fragment is dropped.
    pub fn parse(uri: &str) -> Result<Target, ConfigError> {
        let bad = |reason: &'static str| ConfigError::InvalidUri {
            uri: uri.to_owned(),
            reason,
        };
        let (scheme, rest) = match uri.split_once("://") {
            Some((s, rest)) if s.eq_ignore_ascii_case("http") => (Scheme::Http, rest),
            Some((s, rest)) if s.eq_ignore_ascii_case("https") => (Scheme::Https, rest),
            Some(_) => return Err(bad("scheme must be http or https")),
            None => return Err(bad("expected an absolute URI like http://host[:port]/path")),
        };
        let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(auth_end);
        // userinfo is not sent by h2load; accept and ignore it like a browser.
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = parse_host_port(authority).map_err(bad)?;
        let port = port.unwrap_or(scheme.default_port());
        let path = parse_path(tail).map_err(bad)?;
        Ok(Target {
            scheme,
            host,
            port,
            path,
        })
    }

    /// The `:authority` / `Host` value h2load would send: the host (bracketed
    /// if IPv6) plus `:port` when the port is not the scheme's default.
    pub fn authority(&self) -> String {
        let mut s = String::with_capacity(self.host.len() + 8);
        if self.host.contains(':') {
            s.push('[');
            s.push_str(&self.host);
            s.push(']');
        } else {
            s.push_str(&self.host);
        }
        if self.port != self.scheme.default_port() {
            s.push(':');
            s.push_str(&self.port.to_string());
        }
        s
    }
}

/// Splits `host[:port]` / `[v6][:port]`.
fn parse_host_port(authority: &str) -> Result<(String, Option<u16>), &'static str> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or("unterminated '[' in IPv6 host")?;
        if h.is_empty() || h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err("invalid IPv6 address");
        }
        match after {
            "" => (h, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None => return Err("unexpected characters after IPv6 address"),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("missing host");
    }
    if host
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control() || b"/?#@[]\\\"<>".contains(&b))
    {
        return Err("invalid character in host");
    }
    let port = match port {
        None => None,
        Some("") => None, // "host:" means the default port (RFC 3986 §3.2.3)
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err("port must be a number in 1..=65535"),
            Ok(n) => Some(n),
        },
    };
    Ok((host.to_owned(), port))
}

/// Validates a request target (`/path?query#frag` or empty), drops the fragment.
fn parse_path(tail: &str) -> Result<String, &'static str> {
    let tail = tail.split_once('#').map_or(tail, |(p, _)| p);
    // RFC 9112 §3.2: the request-target cannot contain whitespace or controls;
    // h2 :path has the same constraint (RFC 9113 §8.3.1).
    if tail
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control() || b >= 0x80)
    {
        return Err("path contains whitespace, control or non-ASCII characters");
    }
    Ok(match tail.as_bytes().first() {
        None => "/".to_owned(),
        Some(b'?') => format!("/{tail}"),
        Some(_) => tail.to_owned(),
    })
}

/// `-B`: where to connect instead of the first URI's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseUri {
    /// `-B unix:/path`: connect to a UNIX domain socket; scheme and authority
    /// still come from the first URI.
    Unix(PathBuf),
    /// `-B http://host:port` (or `host:port`): scheme (if given), host and port
    /// for connecting *and* for `:authority`, like h2load's base URI.
    Tcp {
        /// Scheme from the base URI; `None` for bare `host:port` (first URI's scheme).
        scheme: Option<Scheme>,
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
}

impl BaseUri {
    /// Parses `unix:/path`, an absolute URI or `host:port`.
    pub fn parse(s: &str) -> Result<BaseUri, ConfigError> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(ConfigError::InvalidBaseUri {
                    value: s.to_owned(),
                    reason: "empty UNIX socket path",
                });
            }
            return Ok(BaseUri::Unix(PathBuf::from(path)));
        }
        if s.contains("://") {
            let t = Target::parse(s).map_err(|e| ConfigError::InvalidBaseUri {
                value: s.to_owned(),
                reason: match e {
                    ConfigError::InvalidUri { reason, .. } => reason,
                    _ => "invalid URI",
                },
            })?;
            return Ok(BaseUri::Tcp {
                scheme: Some(t.scheme),
                host: t.host,
                port: t.port,
            });
        }
        match parse_host_port(s) {
            Ok((host, Some(port))) => Ok(BaseUri::Tcp {
                scheme: None,
                host,
                port,
            }),
            Ok((_, None)) => Err(ConfigError::InvalidBaseUri {
                value: s.to_owned(),
                reason: "expected unix:/path, host:port or an absolute URI",
            }),
            Err(reason) => Err(ConfigError::InvalidBaseUri {
                value: s.to_owned(),
                reason,
            }),
        }
    }
}

/// Parses `--connect-to host[:port]` (port defaults to the URI's port: 0 here).
pub fn parse_connect_to(s: &str) -> Result<(String, u16), ConfigError> {
    match parse_host_port(s) {
        Ok((host, port)) => Ok((host, port.unwrap_or(0))),
        Err(reason) => Err(ConfigError::InvalidConnectTo {
            value: s.to_owned(),
            reason,
        }),
    }
}

/// An application protocol that can be negotiated or chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppProtocol {
    /// HTTP/2 over TLS (ALPN `h2`).
    H2,
    /// HTTP/2 over cleartext TCP/UNIX with prior knowledge (`h2c`).
    H2c,
    /// HTTP/1.1 (ALPN `http/1.1`, or cleartext).
    Http11,
}

impl AppProtocol {
    /// The name h2load prints after `Application protocol:`.
    pub fn as_str(self) -> &'static str {
        match self {
            AppProtocol::H2 => "h2",
            AppProtocol::H2c => "h2c",
            AppProtocol::Http11 => "http/1.1",
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

/// Parses h2load-style URI arguments. With a base URI, path-only entries
/// (`/index.html`) are allowed.
pub fn parse_uris<S: AsRef<str>>(
    uris: &[S],
    base: Option<&BaseUri>,
) -> Result<Vec<Target>, ConfigError> {
    if uris.is_empty() {
        return Err(ConfigError::Invalid("no URI given".to_owned()));
    }
    let mut out = Vec::with_capacity(uris.len());
    for u in uris {
        let u = u.as_ref();
        if u.starts_with('/') {
            let Some(BaseUri::Tcp { scheme, host, port }) = base else {
                return Err(ConfigError::InvalidUri {
                    uri: u.to_owned(),
                    reason: "a path-only URI needs -B with a host",
                });
            };
            let path = parse_path(u).map_err(|reason| ConfigError::InvalidUri {
                uri: u.to_owned(),
                reason,
            })?;
            out.push(Target {
                scheme: scheme.unwrap_or(Scheme::Http),
                host: host.clone(),
                port: *port,
                path,
            });
        } else {
            out.push(Target::parse(u)?);
        }
    }
    Ok(out)
}

/// A configuration problem, reported before any connection is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A URI could not be parsed.
    InvalidUri {
        /// The URI as given.
        uri: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `-B` could not be parsed.
    InvalidBaseUri {
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `--connect-to` could not be parsed.
    InvalidConnectTo {
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A `-H` header is not valid in HTTP/1.1 or HTTP/2.
    InvalidHeader(String),
    /// An invalid option combination (message in h2load's wording).
    Invalid(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::InvalidUri { uri, reason } => write!(f, "invalid URI: {uri}: {reason}"),
            ConfigError::InvalidBaseUri { value, reason } => {
                write!(f, "-B: invalid base URI {value:?}: {reason}")
            }
            ConfigError::InvalidConnectTo { value, reason } => {
                write!(f, "--connect-to: invalid value {value:?}: {reason}")
            }
            ConfigError::InvalidHeader(m) | ConfigError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_uris_like_h2load() {
        let t = Target::parse("https://example.com/a/b?x=1#frag").unwrap();
        assert_eq!(t.scheme, Scheme::Https);
        assert_eq!(t.host, "example.com");
        assert_eq!(t.port, 443);
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.authority(), "example.com");

        let t = Target::parse("http://[::1]:8080").unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!(t.port, 8080);
        assert_eq!(t.path, "/");
        assert_eq!(t.authority(), "[::1]:8080");

        let t = Target::parse("HTTP://h:80?q").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.path.as_str()),
            (Scheme::Http, 80, "/?q")
        );
        assert_eq!(t.authority(), "h");
    }

    #[test]
    fn rejects_bad_uris() {
        for bad in [
            "example.com/",
            "ftp://x/",
            "http://",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://h:x/",
            "http://[::1/",
            "http://[zz]/",
            "http://h/a b",
            "http://h/\r\n",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad} should be rejected");
        }
        let e = Target::parse("ftp://x/").unwrap_err().to_string();
        assert!(e.contains("ftp://x/") && e.contains("scheme"), "{e}");
    }

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
