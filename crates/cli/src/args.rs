//! Command-line definitions (clap derive) and the h2load value syntaxes.
//!
//! `h2lab bench` accepts h2load's options with h2load's meanings and defaults, so that
//! `h2load -n100000 -c100 -m10 https://host/` becomes `h2lab bench -n100000 -c100 -m10
//! https://host/`. Values use h2load's syntaxes: `<DURATION>` is an integer with an optional unit
//! `h`, `m`, `s` or `ms` (seconds when omitted); `<SIZE>` is an integer with an optional unit
//! `K`, `M` or `G` (powers of 1024).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// h2lab: HTTP/2 and HTTP/1.1 load generator (a drop-in for h2load) and protocol lab.
#[derive(Debug, Parser)]
#[command(name = "h2lab", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands. `serve` (the test server) and later `compare`, `page` and `link` plug in here:
/// one variant each, with its own `Args` struct in its own module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark an HTTP/2 or HTTP/1.1 server (accepts h2load's options).
    Bench(BenchArgs),
    /// Run the test target server: HTTP/1.1 and h2c, or HTTP/2 and HTTP/1.1 over TLS.
    Serve(crate::serve::ServeArgs),
    /// Compare protocols across payloads, headers, concurrency, streams and networks.
    Compare(crate::compare::CompareArgs),
    /// Load a page like a browser: 6 HTTP/1.1 connections vs one HTTP/2 connection.
    Page(crate::page::PageArgs),
    /// Emulate a network path (RTT, bandwidth, loss) as a TCP relay.
    Link(crate::link::LinkArgs),
}

/// `h2lab bench` options: h2load's, plus `--json`, `--csv` and `--require-protocol`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "<DURATION> is an integer with an optional unit h, m, s or ms (seconds when \
                  omitted), e.g. 10, 10s, 500ms, 1m.\n<SIZE> is an integer with an optional unit \
                  K, M or G (powers of 1024), e.g. 4K."
)]
pub struct BenchArgs {
    /// URIs to request, used round-robin by each client; scheme, host and port come from the
    /// first one (or from -B).
    #[arg(value_name = "URI")]
    pub uris: Vec<String>,

    /// Number of requests across all clients (ignored with -D).
    #[arg(short = 'n', long = "requests", value_name = "N", default_value_t = 1)]
    pub requests: u64,

    /// Number of concurrent clients (connections).
    #[arg(short = 'c', long = "clients", value_name = "N", default_value_t = 1)]
    pub clients: u32,

    /// Number of native threads.
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = 1)]
    pub threads: u32,

    /// Read URIs from PATH, one per line ('-' for stdin); URIs on the command line are then
    /// ignored.
    #[arg(short = 'i', long = "input-file", value_name = "PATH")]
    pub input_file: Option<PathBuf>,

    /// Max concurrent streams per connection; for HTTP/1.1 the pipelining depth.
    #[arg(
        short = 'm',
        long = "max-concurrent-streams",
        value_name = "N",
        default_value_t = 1
    )]
    pub max_concurrent_streams: u32,

    /// Stream-level initial window size is 2^N - 1.
    #[arg(short = 'w', long = "window-bits", value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u8).range(0..=30))]
    pub window_bits: u8,

    /// Connection-level initial window size is 2^N - 1.
    #[arg(short = 'W', long = "connection-window-bits", value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u8).range(0..=30))]
    pub connection_window_bits: u8,

    /// Add or override a request header ("name: value"; ":authority" and "host" override the
    /// authority).
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,

    /// Protocol for http:// URIs (no TLS): h2c or http/1.1.
    #[arg(short = 'p', long = "no-tls-proto", value_name = "PROTOID", value_parser = parse_no_tls_proto)]
    pub no_tls_proto: Option<String>,

    /// POST the contents of PATH (the method becomes POST).
    #[arg(short = 'd', long = "data", value_name = "PATH")]
    pub data: Option<PathBuf>,

    /// Timing-based benchmark: measure for DURATION (-n is then ignored).
    #[arg(short = 'D', long = "duration", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Warm-up period before the -D measurement starts.
    #[arg(long = "warm-up-time", value_name = "DURATION", value_parser = parse_duration)]
    pub warm_up_time: Option<Duration>,

    /// Give up on a connection this long after its last request was submitted.
    #[arg(short = 'T', long = "connection-active-timeout", value_name = "DURATION",
          value_parser = parse_duration)]
    pub connection_active_timeout: Option<Duration>,

    /// Drop a connection after this long without activity.
    #[arg(short = 'N', long = "connection-inactivity-timeout", value_name = "DURATION",
          value_parser = parse_duration)]
    pub connection_inactivity_timeout: Option<Duration>,

    /// Scheme, host and port for all requests (overrides the URIs'), or unix:PATH to connect to
    /// a UNIX domain socket.
    #[arg(short = 'B', long = "base-uri", value_name = "URI")]
    pub base_uri: Option<String>,

    /// Comma-separated ALPN protocol list offered over TLS, most preferred first.
    #[arg(long = "alpn-list", visible_alias = "npn-list", value_name = "LIST",
          value_parser = parse_alpn_list)]
    pub alpn_list: Option<AlpnList>,

    /// Force HTTP/1.1 for both http and https URIs (--alpn-list=http/1.1 -p http/1.1).
    #[arg(long = "h1")]
    pub h1: bool,

    /// Decoder (our) HPACK header table size.
    #[arg(long = "header-table-size", value_name = "SIZE", default_value = "4K",
          value_parser = parse_table_size)]
    pub header_table_size: u32,

    /// Encoder HPACK header table size (capped by the server's setting).
    #[arg(long = "encoder-header-table-size", value_name = "SIZE", default_value = "4K",
          value_parser = parse_table_size)]
    pub encoder_header_table_size: u32,

    /// Write one line per request to PATH: start time (us since epoch), status (-1 if
    /// failed), duration (us), tab-separated.
    #[arg(long = "log-file", value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// Connect to HOST[:PORT] instead of the URI's authority (which is still sent).
    #[arg(long = "connect-to", value_name = "HOST[:PORT]")]
    pub connect_to: Option<String>,

    /// TLS server name (SNI) to send instead of the URI host.
    #[arg(long = "sni", value_name = "NAME")]
    pub sni: Option<String>,

    /// Output debug information on stderr.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Write the full result as JSON to PATH (schema bench-result.v1).
    #[arg(long = "json", value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Write (or append) a one-row-per-run CSV to PATH.
    #[arg(long = "csv", value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Fail (exit 1) unless this protocol is negotiated: h2 or http/1.1.
    #[arg(long = "require-protocol", value_name = "PROTO", value_parser = ["h2", "http/1.1"])]
    pub require_protocol: Option<String>,
}

/// Parses h2load's `<DURATION>`: an integer with an optional unit `h`, `m`, `s` or `ms`
/// (seconds when omitted).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits_end);
    let bad = || {
        format!("invalid duration {s:?}: expected an integer with an optional unit h, m, s or ms")
    };
    if num.is_empty() {
        return Err(bad());
    }
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs_per = match unit {
        "" | "s" | "S" => 1,
        "m" | "M" => 60,
        "h" | "H" => 3600,
        "ms" | "MS" | "mS" | "Ms" => return Ok(Duration::from_millis(n)),
        _ => return Err(bad()),
    };
    n.checked_mul(secs_per)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("duration {s:?} is too large"))
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

fn parse_table_size(s: &str) -> Result<u32, String> {
    let n = parse_size(s)?;
    u32::try_from(n).map_err(|_| {
        format!(
            "value too large; it must be less than or equal to {}",
            u32::MAX
        )
    })
}

/// Parses `-H`: `name: value`. The name may start with `:` (pseudo-headers such as
/// `:authority`); it is lower-cased; leading blanks of the value are skipped; an empty value is
/// an error, as in h2load.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    // Skip a leading ':' so that ":authority: x" splits after "authority".
    let search_from = usize::from(s.starts_with(':'));
    let colon = s
        .get(search_from..)
        .and_then(|rest| rest.find(':'))
        .map(|i| i + search_from)
        .ok_or_else(|| format!("invalid header {s:?}: expected \"name: value\""))?;
    let (name, value) = s.split_at(colon);
    let value = value.get(1..).unwrap_or("").trim_start_matches([' ', '\t']);
    if name.is_empty() || name == ":" {
        return Err(format!("invalid header {s:?}: empty name"));
    }
    if value.is_empty() {
        return Err(format!("invalid header {s:?}: value missing"));
    }
    Ok((name.to_ascii_lowercase(), value.to_string()))
}

fn parse_no_tls_proto(s: &str) -> Result<String, String> {
    if s.eq_ignore_ascii_case("h2c") {
        Ok("h2c".to_string())
    } else if s.eq_ignore_ascii_case("http/1.1") {
        Ok("http/1.1".to_string())
    } else {
        Err(format!("unsupported protocol {s:?} (h2c or http/1.1)"))
    }
}

/// A parsed `--alpn-list` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlpnList(pub Vec<String>);

/// Parses `--alpn-list`: comma-separated, exactly as given (h2load treats blanks as part of the
/// identifiers).
pub fn parse_alpn_list(s: &str) -> Result<AlpnList, String> {
    let list: Vec<String> = s.split(',').map(str::to_string).collect();
    if list.iter().any(|p| p.is_empty() || p.len() > 255) {
        return Err(format!(
            "invalid ALPN list {s:?}: identifiers must be 1..=255 bytes, separated by single commas"
        ));
    }
    Ok(AlpnList(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_like_h2load() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "s", "1.5s", "-1", "10x", "10 s", "ms", "1us"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
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

    #[test]
    fn headers_like_h2load() {
        assert_eq!(
            parse_header("User-Agent: foo"),
            Ok(("user-agent".into(), "foo".into()))
        );
        assert_eq!(
            parse_header(":authority: example.com:8443"),
            Ok((":authority".into(), "example.com:8443".into()))
        );
        assert_eq!(parse_header("x:y"), Ok(("x".into(), "y".into())));
        assert_eq!(parse_header("x:  a: b "), Ok(("x".into(), "a: b ".into())));
        for bad in ["novalue", "x:", "x:   ", ": v", "::v"] {
            assert!(parse_header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn alpn_and_proto() {
        assert_eq!(
            parse_alpn_list("h2,http/1.1"),
            Ok(AlpnList(vec!["h2".to_string(), "http/1.1".to_string()]))
        );
        assert!(parse_alpn_list("h2,,http/1.1").is_err());
        assert!(parse_alpn_list("").is_err());
        assert_eq!(parse_no_tls_proto("H2C"), Ok("h2c".to_string()));
        assert!(parse_no_tls_proto("spdy/3").is_err());
    }
}
