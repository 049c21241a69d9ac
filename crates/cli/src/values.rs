//! The value syntaxes of the command line that several sub-commands share: h2load's
//! `<DURATION>` and `<SIZE>`, and listening addresses. A leaf module: it uses nothing else of
//! the binary's.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use h2lab_engine::syntax::{self, BareNumber, DurationError};

/// Parses h2load's `<DURATION>`: a number with an optional unit `h`, `m`, `s`, `ms`, or (additions)
/// `us`, `ns`, seconds when omitted (the workspace's one syntax, [`h2lab_engine::syntax`]).
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    syntax::parse_duration(s, BareNumber::Seconds)
}

/// Parses the lab's `--mode`: `packet` (kernel TCP over the packet link) or `relay` (modelled
/// TCP).
pub fn path_mode(s: &str) -> Result<h2lab_lab::netpath::PathMode, String> {
    h2lab_lab::netpath::PathMode::parse(s)
        .ok_or_else(|| format!("invalid mode {s:?}: expected packet or relay"))
}

/// Parses h2load's `<SIZE>`: an integer with an optional unit `K`, `M` or `G` (powers of 1024,
/// either case).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("invalid size {s:?}: expected an integer with an optional unit K, M or G");
    let (num, shift) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 20),
        Some(b'g' | b'G') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

/// Parses a header table size (`--header-table-size`): a `<SIZE>` that fits in 32 bits.
pub fn parse_table_size(s: &str) -> Result<u32, String> {
    let n = parse_size(s)?;
    u32::try_from(n).map_err(|_| {
        format!(
            "value too large; it must be less than or equal to {}",
            u32::MAX
        )
    })
}

/// Parses `--listen`/`--tls-listen`: `HOST:PORT` (IPv6 in brackets; a name is resolved, the
/// first address wins) or a bare port on 127.0.0.1.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let bad = || format!("invalid address {s:?}: expected HOST:PORT or PORT");
    if !s.contains(':') {
        return Err(bad());
    }
    s.to_socket_addrs()
        .map_err(|e| format!("cannot resolve {s:?}: {e}"))?
        .next()
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_like_h2load() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("50us"), Ok(Duration::from_micros(50)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "s", "-1", "10x", "ms", "us"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        // The workspace's one duration syntax is the union of the former ones: decimals, `ns`
        // and a space before the unit (rejected here before) are accepted with their
        // obvious meaning.
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10 s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1ns"), Ok(Duration::from_nanos(1)));
        assert!(parse_duration("99999999999999999999").is_err());
        assert!(parse_duration(&format!("{}h", u64::MAX / 2)).is_err());
    }

    #[test]
    fn sizes_like_h2load() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        for bad in ["", "K", "1KB", "-1", "1.5K", " 1"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(parse_table_size("4G").is_err());
        assert_eq!(parse_table_size("64K"), Ok(65536));
    }
}
