//! Parsers for the values `h2lab link` takes on the command line: durations (`20ms`), rates
//! (`90mbit`) and loss (`0.5%`). The CLI calls these so every lab command spells them alike.

use std::fmt;
use std::time::Duration;

use h2lab_engine::syntax::{self, BareNumber, DurationErrorKind};

/// A value given on the command line could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    what: &'static str,
    input: String,
    hint: &'static str,
}

impl ParseError {
    fn new(what: &'static str, input: &str, hint: &'static str) -> Self {
        ParseError {
            what,
            input: input.to_owned(),
            hint,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} {:?}: {}", self.what, self.input, self.hint)
    }
}

impl std::error::Error for ParseError {}

/// Splits `"12.5ms"` into `("12.5", "ms")`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

/// Parses a non-negative decimal number (digits with at most one dot).
fn parse_number(s: &str) -> Option<f64> {
    if s.is_empty() || s == "." || s.matches('.').count() > 1 {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

const DURATION_HINT: &str = "expected a number with a unit: ns, us, ms, s, m, h (e.g. 20ms, 1.5s)";

/// Parses a duration such as `20ms`, `1.5s`, `250us`, `0` (the workspace's one syntax,
/// [`h2lab_engine::syntax`]). A bare number other than 0 is rejected (ambiguous).
pub fn parse_duration(s: &str) -> Result<Duration, ParseError> {
    let d = syntax::parse_duration(s, BareNumber::ZeroOnly).map_err(|e| match e.kind {
        DurationErrorKind::Invalid => ParseError::new("duration", s, DURATION_HINT),
        DurationErrorKind::TooLarge => ParseError::new("duration", s, "too large"),
    })?;
    if d.as_nanos() > 1_000_000_000_000_000_000 {
        return Err(ParseError::new("duration", s, "too large"));
    }
    Ok(d)
}

const RATE_HINT: &str = "expected bits per second with a unit: bit, kbit, mbit, gbit \
     (e.g. 90mbit, 1gbit, 500kbit), or \"unlimited\"";

/// Parses a link rate in bits per second: `90mbit`, `1gbit`, `500kbit`, `12.5mbit`, `9600bit`,
/// also `90Mbit/s`. Units are decimal (1 mbit = 1 000 000 bits), as in `tc`. `unlimited`, `none`
/// and `0` mean no limit (`None`). Byte-based spellings such as `mbps` are rejected as ambiguous
/// (`tc` reads them as megabytes, most people as megabits).
pub fn parse_rate(s: &str) -> Result<Option<u64>, ParseError> {
    let t = s.trim().to_ascii_lowercase();
    if matches!(t.as_str(), "unlimited" | "none" | "inf" | "0") {
        return Ok(None);
    }
    let (num, unit) = split_number(&t);
    let value = parse_number(num).ok_or_else(|| ParseError::new("rate", s, RATE_HINT))?;
    let unit = unit.strip_suffix("/s").unwrap_or(unit);
    let scale = match unit {
        "bit" | "b" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        "tbit" | "t" => 1e12,
        "bps" | "kbps" | "mbps" | "gbps" => {
            return Err(ParseError::new(
                "rate",
                s,
                "ambiguous unit: write mbit for megabits per second",
            ))
        }
        _ => return Err(ParseError::new("rate", s, RATE_HINT)),
    };
    let bps = (value * scale).round();
    if bps < 1.0 {
        return Err(ParseError::new("rate", s, "below 1 bit per second"));
    }
    if bps > 1e15 {
        return Err(ParseError::new("rate", s, "too large"));
    }
    Ok(Some(bps as u64))
}

/// Parses a loss probability: `0.5%` (percent) or `0.005` (fraction). Must be below 100%.
pub fn parse_loss(s: &str) -> Result<f64, ParseError> {
    const HINT: &str = "expected a percentage such as 0.5% or a fraction such as 0.005, below 100%";
    let t = s.trim();
    let (num, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let value = parse_number(num).ok_or_else(|| ParseError::new("loss", s, HINT))?;
    let p = if percent { value / 100.0 } else { value };
    if p >= 1.0 {
        return Err(ParseError::new("loss", s, HINT));
    }
    Ok(p)
}

/// Parses a byte size: `65536`, `64k`, `256KiB`, `1m`, `1MiB`, `2g`. Units are binary
/// (`k` = 1024), as buffer sizes usually are.
pub fn parse_bytes(s: &str) -> Result<usize, ParseError> {
    const HINT: &str = "expected a size such as 65536, 256k or 1m (k = 1024)";
    let t = s.trim().to_ascii_lowercase();
    let (num, unit) = split_number(&t);
    let value = parse_number(num).ok_or_else(|| ParseError::new("size", s, HINT))?;
    let scale = match unit {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(ParseError::new("size", s, HINT)),
    };
    let bytes = (value * scale).round();
    if !(1.0..=1e15).contains(&bytes) {
        return Err(ParseError::new("size", s, "out of range"));
    }
    Ok(bytes as usize)
}

/// Formats a rate the way [`parse_rate`] reads it back: `90mbit`, `1gbit`, `1.5mbit`,
/// `unlimited`.
pub fn format_rate(bps: Option<u64>) -> String {
    let Some(bps) = bps else {
        return "unlimited".to_owned();
    };
    for (scale, unit) in [(1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")] {
        if bps as f64 >= scale {
            let v = bps as f64 / scale;
            return format!("{}{unit}", trim_float(v));
        }
    }
    format!("{bps}bit")
}

/// Formats a duration the way [`parse_duration`] reads it back: `20ms`, `1.5s`, `250us`, `0`.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns == 0.0 {
        return "0".to_owned();
    }
    for (scale, unit) in [(1e9, "s"), (1e6, "ms"), (1e3, "us")] {
        if ns >= scale {
            return format!("{}{unit}", trim_float(ns / scale));
        }
    }
    format!("{ns}ns")
}

/// `1.50` -> `1.5`, `2.000` -> `2`, at most three decimals.
fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20ms").unwrap(), Duration::from_millis(20));
        assert_eq!(
            parse_duration(" 1.5s ").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2 ms").unwrap(), Duration::from_millis(2));
        assert_eq!(parse_duration("0.5ms").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("7ns").unwrap(), Duration::from_nanos(7));
        for bad in ["20", "ms", "-1ms", "1.2.3ms", "20 parsecs", "", "1e3ms"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("90mbit").unwrap(), Some(90_000_000));
        assert_eq!(parse_rate("1gbit").unwrap(), Some(1_000_000_000));
        assert_eq!(parse_rate("500kbit").unwrap(), Some(500_000));
        assert_eq!(parse_rate("12.5Mbit/s").unwrap(), Some(12_500_000));
        assert_eq!(parse_rate("9600bit").unwrap(), Some(9600));
        assert_eq!(parse_rate("3m").unwrap(), Some(3_000_000));
        assert_eq!(parse_rate("unlimited").unwrap(), None);
        assert_eq!(parse_rate("0").unwrap(), None);
        let e = parse_rate("90mbps").unwrap_err();
        assert!(e.to_string().contains("ambiguous"), "{e}");
        for bad in ["90", "fast", "mbit", "0.1bit", "-5mbit"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn losses() {
        assert_eq!(parse_loss("0.5%").unwrap(), 0.005);
        assert_eq!(parse_loss("0.005").unwrap(), 0.005);
        assert_eq!(parse_loss("0").unwrap(), 0.0);
        assert_eq!(parse_loss("2 %").unwrap(), 0.02);
        for bad in ["100%", "1", "1.5", "-1%", "lots", "%"] {
            assert!(parse_loss(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("65536").unwrap(), 65536);
        assert_eq!(parse_bytes("64k").unwrap(), 65536);
        assert_eq!(parse_bytes("256KiB").unwrap(), 256 * 1024);
        assert_eq!(parse_bytes("1.5m").unwrap(), 1536 * 1024);
        assert_eq!(parse_bytes("1MiB").unwrap(), 1 << 20);
        for bad in ["", "0", "k", "12 parsecs", "-1k"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formatting_round_trips() {
        for s in [
            "90mbit",
            "1gbit",
            "500kbit",
            "1.5mbit",
            "9.6kbit",
            "600bit",
            "unlimited",
        ] {
            assert_eq!(format_rate(parse_rate(s).unwrap()), s);
        }
        for s in ["20ms", "1.5s", "250us", "0", "7ns"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
