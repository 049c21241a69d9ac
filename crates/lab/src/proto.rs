//! The protocol variants the lab compares, with their command-line names.

use crate::error::ParseError;
use std::fmt;
use std::str::FromStr;

use h2lab_engine::AppProtocol;
use serde::Serialize;

/// One way of speaking HTTP to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabProtocol {
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
    /// `h3`: HTTP/3 over QUIC (UDP, TLS 1.3, ALPN `h3`).
    H3,
}

impl LabProtocol {
    /// Every variant, in display order.
    pub const ALL: [LabProtocol; 6] = [
        LabProtocol::H1,
        LabProtocol::H1Close,
        LabProtocol::H1Tls,
        LabProtocol::H2,
        LabProtocol::H2c,
        LabProtocol::H3,
    ];

    /// The command-line name (`h1`, `h1.0`, `h1-tls`, `h2`, `h2c`, `h3`).
    pub fn name(self) -> &'static str {
        match self {
            LabProtocol::H1 => "h1",
            LabProtocol::H1Close => "h1.0",
            LabProtocol::H1Tls => "h1-tls",
            LabProtocol::H2 => "h2",
            LabProtocol::H2c => "h2c",
            LabProtocol::H3 => "h3",
        }
    }

    /// A human label for tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            LabProtocol::H1 => "HTTP/1.1",
            LabProtocol::H1Close => "HTTP/1.0 (no keep-alive)",
            LabProtocol::H1Tls => "HTTP/1.1 (TLS)",
            LabProtocol::H2 => "HTTP/2 (TLS)",
            LabProtocol::H2c => "HTTP/2 (h2c)",
            LabProtocol::H3 => "HTTP/3 (QUIC)",
        }
    }

    /// A short label for narrow table columns.
    pub fn short(self) -> &'static str {
        match self {
            LabProtocol::H1 => "http/1.1",
            LabProtocol::H1Close => "http/1.0",
            LabProtocol::H1Tls => "http/1.1+tls",
            LabProtocol::H2 => "h2",
            LabProtocol::H2c => "h2c",
            LabProtocol::H3 => "h3",
        }
    }

    /// Whether the connection runs TLS (HTTP/3: QUIC's TLS 1.3).
    pub fn tls(self) -> bool {
        matches!(self, LabProtocol::H1Tls | LabProtocol::H2 | LabProtocol::H3)
    }

    /// Whether this is HTTP/2.
    pub fn is_h2(self) -> bool {
        matches!(self, LabProtocol::H2 | LabProtocol::H2c)
    }

    /// Whether this is HTTP/3 (QUIC over UDP).
    pub fn is_h3(self) -> bool {
        self == LabProtocol::H3
    }

    /// The application protocol the engine must negotiate for this variant (`h1.0` is
    /// HTTP/1.1 with `Connection: close`).
    pub fn app_protocol(self) -> AppProtocol {
        match self {
            LabProtocol::H1 | LabProtocol::H1Close | LabProtocol::H1Tls => AppProtocol::Http11,
            LabProtocol::H2 => AppProtocol::H2,
            LabProtocol::H2c => AppProtocol::H2c,
            LabProtocol::H3 => AppProtocol::H3,
        }
    }

    /// Client CPU a new connection's set-up costs, for sizing warm-ups: a QUIC handshake is
    /// done in user space by the client's one thread (about 2.5 ms each measured with 200
    /// connections on the shared 2-core VM, release build), so 200 HTTP/3 connections need
    /// about half a second before the first request; TCP (and its TLS) is left at zero
    /// (the base warm-up covers it).
    pub fn setup_cost(self) -> std::time::Duration {
        match self {
            LabProtocol::H3 => std::time::Duration::from_millis(3),
            _ => std::time::Duration::ZERO,
        }
    }

    /// The rate (bit/s) the client's protocol stack moves response bytes at when it, not the
    /// link, is the bottleneck, for sizing measured periods; `None`: no such bound (the
    /// kernel's TCP). HTTP/3's QUIC runs in user space in the client's one thread: about
    /// 1.2 Gbit/s of 100 KiB responses at 200 connections on the shared 2-core VM (`h2lab
    /// bench --h3`, release build, nice 19, load 7–10), taken at half of that. All the
    /// connections' responses share it, so at `-c 200` of 100 KiB a "round" of responses
    /// takes about 0.27 s, and a shorter measured period can fall between two rounds' bursts
    /// and count nothing.
    pub fn stack_bps(self) -> Option<u64> {
        match self {
            LabProtocol::H3 => Some(600_000_000),
            _ => None,
        }
    }

    /// Whether requests are multiplexed as streams on one connection (HTTP/2, HTTP/3).
    pub fn multiplexes(self) -> bool {
        self.is_h2() || self.is_h3()
    }

    /// The chart colour (HTTP/2 is red, as in the seed article's graphs).
    pub fn color(self) -> &'static str {
        match self {
            LabProtocol::H1 => "#1f77b4",
            LabProtocol::H1Close => "#8c6bb1",
            LabProtocol::H1Tls => "#17a2b8",
            LabProtocol::H2 => "#d62728",
            LabProtocol::H2c => "#ff7f0e",
            LabProtocol::H3 => "#8c564b",
        }
    }
}

impl fmt::Display for LabProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LabProtocol {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "h1" | "http/1.1" | "h1.1" | "http1" => Ok(LabProtocol::H1),
            "h1.0" | "http/1.0" | "h1-close" | "h10" => Ok(LabProtocol::H1Close),
            "h1-tls" | "h1s" | "https/1.1" => Ok(LabProtocol::H1Tls),
            "h2" | "http/2" => Ok(LabProtocol::H2),
            "h2c" => Ok(LabProtocol::H2c),
            "h3" | "http/3" | "quic" => Ok(LabProtocol::H3),
            other => Err(ParseError::UnknownProtocol(other.to_owned())),
        }
    }
}

/// The caveat of comparing HTTP/3 with TCP-based protocols across an emulated link (a note
/// in the `compare` and `page` reports whenever `h3` crosses one).
pub const H3_LINK_CAVEAT: &str = "HTTP/3 across an emulated link: QUIC runs its real \
congestion control over the link's UDP relay, while the relayed TCP connections (HTTP/1.1, \
HTTP/2) get the link's model of TCP's congestion window (`--tcp-model`, CUBIC's beta 0.7 by \
default: slow start from 10 segments, one cut per window of data at a loss; no retransmission \
timeout, CUBIC curve or pacing). Close to like for like, not identical: with `--tcp-model none` \
TCP never sees the link's loss and its times are optimistic";

/// Parses a comma-separated protocol list (`h1,h2c`), without duplicates.
pub fn parse_list(s: &str) -> Result<Vec<LabProtocol>, ParseError> {
    let mut v: Vec<LabProtocol> = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let p: LabProtocol = part.parse()?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if v.is_empty() {
        return Err(ParseError::EmptyList("protocol"));
    }
    Ok(v)
}

/// Parses a comma-separated list of arms (`h1,h2c` or the A/A control `h2c,h2c`): like
/// [`parse_list`] but a protocol listed twice is kept twice (measured as two arms).
pub fn parse_arms(s: &str) -> Result<Vec<LabProtocol>, ParseError> {
    let v: Vec<LabProtocol> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(ParseError::EmptyList("protocol"));
    }
    if LabProtocol::ALL
        .iter()
        .any(|p| v.iter().filter(|&&q| q == *p).count() > 2)
    {
        return Err(ParseError::ListedTooOften);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in LabProtocol::ALL {
            assert_eq!(p.name().parse::<LabProtocol>().unwrap(), p);
        }
        assert_eq!(
            parse_list("h1, h2c,h1").unwrap(),
            vec![LabProtocol::H1, LabProtocol::H2c]
        );
        assert_eq!(parse_list("h3,http/3").unwrap(), vec![LabProtocol::H3]);
        assert!(parse_list("h4")
            .unwrap_err()
            .to_string()
            .contains("unknown protocol"));
        assert!(parse_list(",").is_err());
        assert_eq!(
            parse_arms("h2c,h2c").unwrap(),
            vec![LabProtocol::H2c, LabProtocol::H2c]
        );
        assert!(parse_arms("h2c,h2c,h2c").is_err());
    }
}
