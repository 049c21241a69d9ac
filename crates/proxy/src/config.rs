//! Every tunable of `h2lab proxy`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// Where an upstream listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A UNIX stream socket path.
    Unix(PathBuf),
}

impl UpstreamAddr {
    /// Parses `HOST:PORT`, `[V6]:PORT` or `unix:/path`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err("unix: needs a path".into());
            }
            return Ok(UpstreamAddr::Unix(PathBuf::from(p)));
        }
        use std::net::ToSocketAddrs;
        s.to_socket_addrs()
            .map_err(|e| format!("{s}: {e}"))?
            .next()
            .map(UpstreamAddr::Tcp)
            .ok_or_else(|| format!("{s}: no address"))
    }
}

impl std::fmt::Display for UpstreamAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamAddr::Tcp(a) => write!(f, "{a}"),
            UpstreamAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// The protocol spoken to the upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// HTTP/1.1 with keep-alive connections kept in a pool (nginx `proxy_http_version 1.1`
    /// with `keepalive`).
    H1,
    /// HTTP/1.0: a new connection per request (nginx's default).
    H10,
    /// h2c (prior knowledge) with one stream per connection, pooled (nginx 1.29.4's
    /// `proxy_http_version 2`: HPACK, no multiplexing).
    H2c,
    /// h2c multiplexed: up to `--streams` concurrent streams per connection.
    H2cMux,
}

impl UpstreamProtocol {
    /// Parses `h1`, `h1.0`, `h2c`, `h2c-mux`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "h1" | "h1.1" | "http/1.1" => Ok(UpstreamProtocol::H1),
            "h1.0" | "http/1.0" => Ok(UpstreamProtocol::H10),
            "h2c" => Ok(UpstreamProtocol::H2c),
            "h2c-mux" => Ok(UpstreamProtocol::H2cMux),
            _ => Err(format!(
                "unknown upstream protocol {s:?} (h1, h1.0, h2c, h2c-mux)"
            )),
        }
    }

    /// The name `parse` accepts.
    pub fn name(self) -> &'static str {
        match self {
            UpstreamProtocol::H1 => "h1",
            UpstreamProtocol::H10 => "h1.0",
            UpstreamProtocol::H2c => "h2c",
            UpstreamProtocol::H2cMux => "h2c-mux",
        }
    }

    /// Whether this is one of the HTTP/2 protocols.
    pub fn is_h2(self) -> bool {
        matches!(self, UpstreamProtocol::H2c | UpstreamProtocol::H2cMux)
    }
}

/// Proxy configuration.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Cleartext listener (used by [`crate::spawn`]).
    pub listen: Option<SocketAddr>,
    /// TLS listener (used by [`crate::spawn`]).
    pub tls_listen: Option<SocketAddr>,
    /// Front settings shared with `h2lab serve`: certificate, ALPN, threads, limits, idle
    /// timeout, `quiet`.
    pub front: h2lab_server::ServerConfig,
    /// The upstreams, used round robin.
    pub upstreams: Vec<UpstreamAddr>,
    /// The upstream protocol.
    pub protocol: UpstreamProtocol,
    /// Idle keep-alive connections kept per upstream and worker (HTTP/1.1, h2c); for
    /// h2c-mux, the most connections opened per upstream and worker.
    pub pool: usize,
    /// Concurrent streams per h2c-mux connection (capped by the upstream's
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    pub streams: u32,
    /// No upstream progress for this long: 504 (or the exchange is cut if the response
    /// already started). h2c-mux: a request waiting this long for a stream slot gets 504
    /// too, without being sent.
    pub upstream_timeout: Duration,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            listen: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))),
            tls_listen: None,
            front: h2lab_server::ServerConfig {
                listen: None,
                ..h2lab_server::ServerConfig::default()
            },
            upstreams: Vec::new(),
            protocol: UpstreamProtocol::H1,
            pool: 32,
            streams: 100,
            upstream_timeout: Duration::from_secs(60),
        }
    }
}

impl ProxyConfig {
    /// For tests: cleartext on `127.0.0.1:0`, quiet, one worker.
    pub fn local(upstreams: Vec<UpstreamAddr>, protocol: UpstreamProtocol) -> Self {
        let mut c = ProxyConfig {
            listen: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
            upstreams,
            protocol,
            ..ProxyConfig::default()
        };
        c.front.quiet = true;
        c
    }

    /// Checks the values; returns a message naming the bad one.
    pub fn validate(&self) -> Result<(), String> {
        self.front.validate()?;
        if self.upstreams.is_empty() {
            return Err("at least one --upstream is needed".into());
        }
        if self.pool == 0 {
            return Err("--pool must be at least 1".into());
        }
        if self.streams == 0 {
            return Err("--streams must be at least 1".into());
        }
        if self.upstream_timeout.is_zero() {
            return Err("--upstream-timeout must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(
            UpstreamAddr::parse("127.0.0.1:80").unwrap(),
            UpstreamAddr::Tcp("127.0.0.1:80".parse().unwrap())
        );
        assert_eq!(
            UpstreamAddr::parse("unix:/tmp/s").unwrap(),
            UpstreamAddr::Unix("/tmp/s".into())
        );
        assert!(UpstreamAddr::parse("unix:").is_err());
        for p in ["h1", "h1.0", "h2c", "h2c-mux"] {
            assert_eq!(UpstreamProtocol::parse(p).unwrap().name(), p);
        }
        assert!(UpstreamProtocol::parse("h3").is_err());
    }
}
