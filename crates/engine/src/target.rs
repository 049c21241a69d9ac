//! Request targets: h2load-style URIs, `-B` and `--connect-to`, and the configuration error
//! their parsing (and the validation of the options, [`BenchConfig::validate`]) reports.
//!
//! URI handling follows h2load: every URI contributes its path and query
//! (used round-robin), while the scheme, host and port come from the *first*
//! URI — or from `-B` when a base URI is given. `-B unix:/path` keeps the
//! scheme and authority of the first URI but connects to a UNIX socket;
//! `--connect-to host:port` changes only where the TCP connection goes.
//!
//! [`BenchConfig::validate`]: crate::BenchConfig::validate

use std::fmt;
use std::path::PathBuf;

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
}
