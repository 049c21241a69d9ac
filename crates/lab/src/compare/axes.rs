//! The axes of the protocol matrix and their command-line syntax.

use crate::error::ParseError;
use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::link::LinkProfile;

/// A response payload: a name for tables and the request path on the target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Payload {
    /// Short name (`ping`, `1k`, `compute`).
    pub name: String,
    /// Request target (`/data?size=1k`).
    pub path: String,
}

/// Work units of the `compute` payload (about 50 µs of CPU on the built-in server).
pub const COMPUTE_WORK: u64 = 50_000;

impl Payload {
    /// A label for tables: the path for built-in names (`/ping`, `1k`).
    pub fn label(&self) -> String {
        match self.name.as_str() {
            "ping" | "json" | "compute" | "info" => format!("/{}", self.name),
            _ => self.name.clone(),
        }
    }
}

impl Payload {
    /// Approximate response body size in bytes, for sizing runs on slow links: exact for
    /// `/data?size=` payloads (k and m are powers of 1024, as the server reads them), about
    /// 200 for `json`, 2 KiB for `info`, small for the rest.
    pub fn approx_bytes(&self) -> u64 {
        if let Some(size) = self.path.strip_prefix("/data?size=") {
            let l = size.to_ascii_lowercase();
            let digits = l.trim_end_matches(['k', 'm', 'g']);
            let mult = match l.strip_prefix(digits) {
                Some("k") => 1024,
                Some("m") => 1024 * 1024,
                Some("g") => 1024 * 1024 * 1024,
                _ => 1,
            };
            return digits.parse::<u64>().map_or(0, |n| n.saturating_mul(mult));
        }
        match self.name.as_str() {
            "json" => 200,
            "info" => 2048,
            _ => 64,
        }
    }
}

impl FromStr for Payload {
    type Err = ParseError;

    /// `ping`, `json`, `compute`, `info`, a size (`1k`, `100k`, `2m`: `/data?size=`), a
    /// path (`/x?y`), or `name=/path`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let p = |name: &str, path: String| Payload {
            name: name.to_owned(),
            path,
        };
        if let Some((name, path)) = s.split_once('=') {
            if !path.starts_with('/') || name.is_empty() || path.contains(char::is_whitespace) {
                return Err(ParseError::PayloadPath(s.to_owned()));
            }
            return Ok(p(name, path.to_owned()));
        }
        if s.starts_with('/') {
            if s.contains(char::is_whitespace) {
                return Err(ParseError::PayloadPath(s.to_owned()));
            }
            return Ok(p(s, s.to_owned()));
        }
        let lower = s.to_ascii_lowercase();
        match lower.as_str() {
            "ping" => Ok(p("ping", "/ping".into())),
            "json" => Ok(p("json", "/json".into())),
            "info" => Ok(p("info", "/info".into())),
            "compute" => Ok(p("compute", format!("/compute?work={COMPUTE_WORK}"))),
            _ => {
                let digits = lower.trim_end_matches(['k', 'm', 'b']);
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    let unit = lower.trim_start_matches(|c: char| c.is_ascii_digit());
                    let unit = unit.trim_end_matches('b');
                    if unit.len() <= 1 {
                        let name = format!("{digits}{unit}");
                        return Ok(Payload {
                            path: format!("/data?size={name}"),
                            name,
                        });
                    }
                }
                Err(ParseError::UnknownPayload(s.to_owned()))
            }
        }
    }
}

/// Extra request headers sent with every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HeaderSet {
    /// Only the client's defaults.
    None,
    /// Realistic large headers (JWT, cookies, tracing) of about this many KiB.
    Large(u32),
}

impl HeaderSet {
    /// The name used on the command line and in tables (`none`, `4k`).
    pub fn name(self) -> String {
        match self {
            HeaderSet::None => "none".into(),
            HeaderSet::Large(k) => format!("{k}k"),
        }
    }

    /// The header fields to add.
    pub fn fields(self) -> Vec<(String, String)> {
        match self {
            HeaderSet::None => Vec::new(),
            HeaderSet::Large(k) => super::headers::realistic(k as usize * 1024),
        }
    }
}

impl fmt::Display for HeaderSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for HeaderSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl FromStr for HeaderSet {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let l = s.trim().to_ascii_lowercase();
        if l == "none" || l == "0" || l == "0k" {
            return Ok(HeaderSet::None);
        }
        let digits = l.trim_end_matches(['k', 'b']);
        match digits.parse::<u32>() {
            Ok(k)
                if (1..=12).contains(&k)
                    && l.trim_start_matches(|c: char| c.is_ascii_digit())
                        .starts_with('k') =>
            {
                Ok(HeaderSet::Large(k))
            }
            _ => Err(ParseError::HeaderSet(s.to_owned())),
        }
    }
}

/// Serialises a link profile by name.
pub fn profile_name<S: Serializer>(p: &LinkProfile, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.name())
}

/// Parses a comma-separated list with `parse`, dropping duplicates, keeping order.
pub fn parse_list<T: PartialEq>(
    s: &str,
    what: &'static str,
    parse: impl Fn(&str) -> Result<T, ParseError>,
) -> Result<Vec<T>, ParseError> {
    let mut v: Vec<T> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let x = parse(part)?;
        if !v.contains(&x) {
            v.push(x);
        }
    }
    if v.is_empty() {
        return Err(ParseError::EmptyList(what));
    }
    Ok(v)
}

/// Parses a positive count (`50`).
pub fn parse_count(s: &str) -> Result<u32, ParseError> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ParseError::NotPositive(s.to_owned())),
    }
}

/// Parses a link profile name.
pub fn parse_profile(s: &str) -> Result<LinkProfile, ParseError> {
    s.parse::<LinkProfile>()
        .map_err(|e| ParseError::Link(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads() {
        let p: Payload = "ping".parse().unwrap();
        assert_eq!((p.name.as_str(), p.path.as_str()), ("ping", "/ping"));
        assert_eq!(p.label(), "/ping");
        let p: Payload = "100K".parse().unwrap();
        assert_eq!(
            (p.name.as_str(), p.path.as_str()),
            ("100k", "/data?size=100k")
        );
        let p: Payload = "653".parse().unwrap();
        assert_eq!(p.path, "/data?size=653");
        let p: Payload = "img=/asset/1/2-4096.png".parse().unwrap();
        assert_eq!(p.name, "img");
        assert_eq!(
            "compute".parse::<Payload>().unwrap().path,
            format!("/compute?work={COMPUTE_WORK}")
        );
        assert!("10q".parse::<Payload>().is_err());
        assert_eq!("100k".parse::<Payload>().unwrap().approx_bytes(), 102_400);
        assert_eq!("653".parse::<Payload>().unwrap().approx_bytes(), 653);
        assert_eq!("json".parse::<Payload>().unwrap().approx_bytes(), 200);
        assert!("x=y".parse::<Payload>().is_err());
    }

    #[test]
    fn header_sets_and_lists() {
        assert_eq!("none".parse::<HeaderSet>().unwrap(), HeaderSet::None);
        assert_eq!("4k".parse::<HeaderSet>().unwrap(), HeaderSet::Large(4));
        assert!("4".parse::<HeaderSet>().is_err());
        assert!("64k".parse::<HeaderSet>().is_err());
        assert_eq!(
            parse_list("10, 50,10", "c", parse_count).unwrap(),
            vec![10, 50]
        );
        assert!(parse_list("0", "c", parse_count).is_err());
        assert!(parse_list("", "c", parse_count).is_err());
        assert_eq!(
            parse_list("wan,lan", "link", parse_profile).unwrap(),
            vec![LinkProfile::Wan, LinkProfile::Lan]
        );
    }
}
