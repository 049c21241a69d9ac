//! The protocol variants the lab compares, with their command-line names.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// One way of speaking HTTP to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Proto {
    /// `h1`: HTTP/1.1 with keep-alive, cleartext.
    H1,
    /// `h1.0`: HTTP/1.0-style, no keep-alive: every request on a new connection
    /// (`Connection: close`), cleartext.
    H1Close,
    /// `h1-tls`: HTTP/1.1 with keep-alive over TLS (ALPN `http/1.1`).
    H1Tls,
    /// `h2`: HTTP/2 over TLS (ALPN `h2`).
    H2,
    /// `h2c`: HTTP/2 over cleartext TCP with prior knowledge.
    H2c,
}

impl Proto {
    /// Every variant, in display order.
    pub const ALL: [Proto; 5] = [
        Proto::H1,
        Proto::H1Close,
        Proto::H1Tls,
        Proto::H2,
        Proto::H2c,
    ];

    /// The command-line name (`h1`, `h1.0`, `h1-tls`, `h2`, `h2c`).
    pub fn name(self) -> &'static str {
        match self {
            Proto::H1 => "h1",
            Proto::H1Close => "h1.0",
            Proto::H1Tls => "h1-tls",
            Proto::H2 => "h2",
            Proto::H2c => "h2c",
        }
    }

    /// A human label for tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            Proto::H1 => "HTTP/1.1",
            Proto::H1Close => "HTTP/1.0 (no keep-alive)",
            Proto::H1Tls => "HTTP/1.1 (TLS)",
            Proto::H2 => "HTTP/2 (TLS)",
            Proto::H2c => "HTTP/2 (h2c)",
        }
    }

    /// A short label for narrow table columns.
    pub fn short(self) -> &'static str {
        match self {
            Proto::H1 => "http/1.1",
            Proto::H1Close => "http/1.0",
            Proto::H1Tls => "http/1.1+tls",
            Proto::H2 => "h2",
            Proto::H2c => "h2c",
        }
    }

    /// Whether the connection runs TLS.
    pub fn tls(self) -> bool {
        matches!(self, Proto::H1Tls | Proto::H2)
    }

    /// Whether this is HTTP/2 (streams can be multiplexed).
    pub fn is_h2(self) -> bool {
        matches!(self, Proto::H2 | Proto::H2c)
    }

    /// The chart colour (HTTP/2 is red, as in the seed article's graphs).
    pub fn color(self) -> &'static str {
        match self {
            Proto::H1 => "#1f77b4",
            Proto::H1Close => "#8c6bb1",
            Proto::H1Tls => "#17a2b8",
            Proto::H2 => "#d62728",
            Proto::H2c => "#ff7f0e",
        }
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Proto {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "h1" | "http/1.1" | "h1.1" | "http1" => Ok(Proto::H1),
            "h1.0" | "http/1.0" | "h1-close" | "h10" => Ok(Proto::H1Close),
            "h1-tls" | "h1s" | "https/1.1" => Ok(Proto::H1Tls),
            "h2" | "http/2" => Ok(Proto::H2),
            "h2c" => Ok(Proto::H2c),
            other => Err(format!(
                "unknown protocol {other:?} (expected h1, h1.0, h1-tls, h2 or h2c)"
            )),
        }
    }
}

/// Parses a comma-separated protocol list (`h1,h2c`), without duplicates.
pub fn parse_list(s: &str) -> Result<Vec<Proto>, String> {
    let mut v: Vec<Proto> = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let p: Proto = part.parse()?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if v.is_empty() {
        return Err("empty protocol list".into());
    }
    Ok(v)
}

/// Parses a comma-separated list of arms (`h1,h2c` or the A/A control `h2c,h2c`): like
/// [`parse_list`] but a protocol listed twice is kept twice (measured as two arms).
pub fn parse_arms(s: &str) -> Result<Vec<Proto>, String> {
    let v: Vec<Proto> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("empty protocol list".into());
    }
    if Proto::ALL
        .iter()
        .any(|p| v.iter().filter(|&&q| q == *p).count() > 2)
    {
        return Err("a protocol can be listed at most twice (an A/A control)".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Proto::ALL {
            assert_eq!(p.name().parse::<Proto>().unwrap(), p);
        }
        assert_eq!(
            parse_list("h1, h2c,h1").unwrap(),
            vec![Proto::H1, Proto::H2c]
        );
        assert!(parse_list("h3").unwrap_err().contains("unknown protocol"));
        assert!(parse_list(",").is_err());
        assert_eq!(parse_arms("h2c,h2c").unwrap(), vec![Proto::H2c, Proto::H2c]);
        assert!(parse_arms("h2c,h2c,h2c").is_err());
    }
}
