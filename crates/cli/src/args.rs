//! Command-line definitions (clap derive) and the h2load value syntaxes.
//!
//! `h2lab bench` accepts h2load's options with h2load's meanings and defaults, so that
//! `h2load -n100000 -c100 -m10 https://host/` becomes `h2lab bench -n100000 -c100 -m10
//! https://host/`. Values use h2load's syntaxes: `<DURATION>` is a number with an optional unit
//! `h`, `m`, `s` or `ms` (seconds when omitted; also `us`, `ns` and decimals); `<SIZE>` is an integer with an optional unit
//! `K`, `M` or `G` (powers of 1024).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use h2lab_engine::Stage;
use h2lab_report::layout::OutputFormat;
use h2lab_report::threshold::Threshold;

use crate::values::{parse_duration, parse_table_size};
use h2lab_engine::syntax::{self, BareNumber};

/// `h2lab bench` options: h2load's, plus `--json`, `--csv` and `--require-protocol`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "<DURATION> is a number with an optional unit h, m, s, ms, us or ns (seconds when \
                  omitted), e.g. 10, 10s, 1.5s, 500ms, 1m.\n<SIZE> is an integer with an optional unit \
                  K, M or G (powers of 1024), e.g. 4K."
)]
pub struct BenchArgs {
    /// URIs to request, used round-robin by each client; scheme, host and port come from the
    /// first one (or from -B).
    #[arg(value_name = "URI")]
    pub uris: Vec<String>,

    /// Number of requests across all clients (ignored with -D; per client with
    /// --timing-script-file) [default: 1].
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,

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

    /// RFC 9218 priority of every request, e.g. "u=0" or "u=5,i": sent as the `priority`
    /// header (urgency 0..7, default 3; i = incremental).
    #[arg(long = "priority", value_name = "u=N[,i]", value_parser = parse_priority)]
    pub priority: Option<h2lab_wire::priority::ExtPriority>,

    /// Accept or refuse HTTP/2 server push.
    ///
    /// HTTP/2 server push: accept (SETTINGS_ENABLE_PUSH = 1; pushed streams and bytes are
    /// counted, never used, and kept out of h2load's counters) or refuse (the default, as
    /// h2load and browsers do).
    #[arg(long, value_name = "accept|refuse", default_value = "refuse",
          value_parser = crate::page::parse_push, action = clap::ArgAction::Set)]
    pub push: bool,

    /// Protocol for http:// URIs (no TLS): h2c or http/1.1; h3: HTTP/3 (https://, as --h3).
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

    /// Decoder (our) HPACK header table size; with HTTP/3 our QPACK table
    /// (SETTINGS_QPACK_MAX_TABLE_CAPACITY, with 100 blocked streams, as h2load).
    #[arg(long = "header-table-size", value_name = "SIZE", default_value = "4K",
          value_parser = parse_table_size)]
    pub header_table_size: u32,

    /// Encoder HPACK header table size (capped by the server's setting); with HTTP/3 the
    /// largest QPACK table our requests use.
    #[arg(long = "encoder-header-table-size", value_name = "SIZE", default_value = "4K",
          value_parser = parse_table_size)]
    pub encoder_header_table_size: u32,

    /// Write one line per request to PATH: start time (us since epoch), status (-1 if
    /// failed), duration (us), tab-separated.
    #[arg(long = "log-file", value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// Connect to `HOST[:PORT]` instead of the URI's authority (which is still sent).
    #[arg(
        long = "connect-to",
        value_name = "HOST[:PORT]",
        help = "Connect to HOST[:PORT] instead of the URI's authority (which is still sent)"
    )]
    pub connect_to: Option<String>,

    /// TLS server name (SNI) to send instead of the URI host.
    #[arg(long = "sni", value_name = "NAME")]
    pub sni: Option<String>,

    /// Output debug information on stderr.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Write the full result as JSON to PATH (schema bench-result.v1); '-' prints it to stdout
    /// as one line after the report.
    #[arg(long = "json", value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Write (or append) a one-row-per-run CSV to PATH. HTTP/3 runs also fill the QUIC
    /// columns at the end (RTTs, packets, UDP datagrams, GRO; `quic_packets_recv_datagrams`
    /// counts received datagrams: quinn-proto has no received-packet counter).
    #[arg(long = "csv", value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Latency table layout: h2load-1.52, h2load-1.69 or h2load-1.70.
    ///
    /// Latency table layout: h2load-1.52 (h2load 1.52 to 1.68: min max mean sd +/- sd, with
    /// h2lab's p50 p90 p99 p99.9 appended), h2load-1.69 or h2load-1.70 (min max median p95 p99
    /// mean sd +/- sd, rows request, connect, TTFB, req/s; the two differ in column gaps and in
    /// the req/s number format).
    #[arg(long = "output-format", value_name = "FORMAT", default_value = "h2load-1.52",
          value_parser = parse_output_format)]
    pub output_format: OutputFormat,

    /// Write h2load's JSON result document ("v1", as h2load 1.70 writes it, with the raw
    /// samples: at most 1,000,000 of each kind, reservoir-sampled) to PATH. h2lab's own
    /// result document is --json.
    #[arg(long = "output-file", value_name = "PATH")]
    pub output_file: Option<PathBuf>,

    /// Draw h2load's text histogram (ten buckets from min to max) under each latency row.
    #[arg(long = "histogram")]
    pub histogram: bool,

    /// Fail (exit 1) unless this protocol is negotiated: h2 or http/1.1.
    #[arg(long = "require-protocol", value_name = "PROTO", value_parser = ["h2", "http/1.1"])]
    pub require_protocol: Option<String>,

    /// Request coalescing (off by default, as in h2load): a client whose streams complete
    /// while others on the same connection are still in flight waits at most HOLD [1ms when
    /// given without a value] so that its new requests leave in one write. It saves client
    /// and server CPU, but changes the load: between batches fewer than -m streams are in
    /// flight, so req/s and latency are not h2load's for the same flags. Requests are timed
    /// from the write that carries them. Paced runs never wait. --coalesce=0 is off.
    #[arg(long = "coalesce", value_name = "HOLD", num_args = 0..=1, require_equals = true,
          default_missing_value = "1ms", value_parser = parse_duration)]
    pub coalesce: Option<Duration>,

    /// Compatibility: coalescing is off by default now, so this does nothing.
    #[arg(long = "no-coalesce", hide = true, conflicts_with_all = ["coalesce", "coalesce_hold"])]
    pub no_coalesce: bool,

    /// Compatibility: the same as --coalesce=DURATION.
    #[arg(long = "coalesce-hold", value_name = "DURATION", value_parser = parse_duration,
          hide = true, conflicts_with = "coalesce")]
    pub coalesce_hold: Option<Duration>,

    /// Longest time a worker with nothing to do waits before it reads again, so that
    /// responses arriving close together are read together (fewer wake-ups, reads and
    /// ACKs; like a NIC's interrupt moderation). The wait is 1% of the recent mean request
    /// time, at most this long, and none under 5us, so a response is seen at most 1% late; no
    /// waiting while reads already carry more than four responses each. 0 reads as soon as data
    /// arrives, as h2load does [default: 50us].
    #[arg(long = "read-wait", value_name = "DURATION", value_parser = parse_duration)]
    pub read_wait: Option<Duration>,

    /// Run shard I of N of the whole run (0-based; auto/N reads JOB_COMPLETION_INDEX, as a
    /// Kubernetes Indexed Job sets it): -c, -n, -r and the open model's arrivals are split
    /// exactly; -i URIs and timing-script lines are dealt round-robin. The --json result
    /// carries what `h2lab merge` needs.
    #[arg(long = "shard", value_name = "I/N", value_parser = crate::shard::parse_shard)]
    pub shard: Option<crate::shard::ShardSpec>,

    /// Wait until TIME before starting (RFC 3339, e.g. 2026-11-24T21:00:00Z, or Unix seconds),
    /// so that shards start together; a late start is reported and recorded.
    #[arg(long = "start-at", value_name = "TIME", value_parser = crate::shard::parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,

    /// Load-shape options (boxed: they would make `Command::Bench` much larger than the other
    /// subcommands).
    #[command(flatten)]
    pub load: Box<LoadArgs>,

    /// h2load 1.69/1.70's TLS and frame-size options, and the ones not supported yet.
    #[command(flatten)]
    pub compat: Box<crate::compat::CompatArgs>,
}

/// Load shapes: h2lab's open model, stages, time series and thresholds, and h2load's pacing
/// flags (`--rps`, `-r`, `--rate-period`, `--timing-script-file`).
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Open model: R requests per second across the run, each sent at its own scheduled time
    /// whether or not earlier ones have completed; latency is measured from that time
    /// (corrected for coordinated omission) and from the send. With --stages: the start rate.
    #[arg(long = "arrival-rate", visible_alias = "req-rate", value_name = "R",
          value_parser = parse_rate)]
    pub arrival_rate: Option<f64>,

    /// Linear ramps DURATION:LEVEL[,DURATION:LEVEL...], e.g. 30s:100,1m:100,10s:0. The levels
    /// are req/s with --arrival-rate, otherwise active connections (virtual users, from 0).
    /// The stages set the duration of the run.
    #[arg(long = "stages", value_name = "STAGES", value_parser = parse_stages)]
    pub stages: Option<Stages>,

    /// Open model: most due requests waiting for a free slot (all -c x -m busy); more are
    /// dropped and reported as not sent on time [default: 5 s of arrivals at the peak rate,
    /// at least -c x -m].
    #[arg(long = "queue-limit", value_name = "N")]
    pub queue_limit: Option<u64>,

    /// Requests per second for each client (h2load's --rps).
    #[arg(long = "rps", value_name = "N", value_parser = parse_rate)]
    pub rps: Option<f64>,

    /// Create N connections per --rate-period until -c are made (h2load's -r; not with -D).
    #[arg(short = 'r', long = "rate", value_name = "N")]
    pub rate: Option<u32>,

    /// The period of -r.
    #[arg(long = "rate-period", value_name = "DURATION", default_value = "1s",
          value_parser = parse_duration)]
    pub rate_period: Duration,

    /// Lines `"OFFSET-MS<TAB>URI"`: each client requests the URIs in order, each at its offset
    /// from the client's start ('-' for stdin; h2load's format). -n then counts per client.
    #[arg(
        long = "timing-script-file",
        value_name = "PATH",
        help = "Lines \"OFFSET-MS<TAB>URI\": each client requests the URIs in order, each at its \
                  offset from the client's start ('-' for stdin; h2load's format). -n then counts \
                  per client"
    )]
    pub timing_script_file: Option<PathBuf>,

    /// Write one row per interval to PATH: CSV, or JSON lines for .jsonl/.ndjson.
    #[arg(long = "timeseries", value_name = "PATH")]
    pub timeseries: Option<PathBuf>,

    /// Time-series interval [default: 1s].
    #[arg(long = "interval", value_name = "DURATION", value_parser = parse_duration)]
    pub interval: Option<Duration>,

    /// Pass/fail criterion (repeatable): p99<50ms, ttfb.p90<10ms, mean<5ms, errors<0.1%,
    /// rps>10000, not_sent<1%. Any failure makes the exit status 99.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = parse_threshold)]
    pub thresholds: Vec<Threshold>,
}

/// A parsed `--stages` value.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(pub Vec<Stage>);

/// Parses `--stages`: `DURATION:LEVEL` pairs separated by commas (h2load durations; the
/// workspace's one stage syntax, [`h2lab_engine::syntax::parse_stage`]); each stage lasts
/// more than 0.
pub fn parse_stages(s: &str) -> Result<Stages, String> {
    let mut out = Vec::new();
    for part in syntax::stage_parts(s) {
        let bad = |why: String| format!("invalid stage {part:?} in --stages: {why}");
        let stage =
            syntax::parse_stage(part, BareNumber::Seconds).map_err(|e| bad(e.to_string()))?;
        if stage.duration.is_zero() {
            return Err(bad("the duration must be positive".into()));
        }
        out.push(stage);
    }
    if out.is_empty() {
        return Err(format!(
            "invalid --stages {s:?}: expected DURATION:LEVEL pairs, e.g. 30s:100"
        ));
    }
    Ok(Stages(out))
}

/// Parses a rate (`--arrival-rate`, `--rps`): a finite number >= 0.
fn parse_rate(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("invalid rate {s:?}: expected a number of requests per second"))
}

fn parse_output_format(s: &str) -> Result<OutputFormat, String> {
    OutputFormat::parse(s)
}

fn parse_threshold(s: &str) -> Result<Threshold, String> {
    Threshold::parse(s)
}

/// Parses `--priority` as a `priority` field value (RFC 9218 §4: a Structured Fields
/// Dictionary; `u=0`, `u=5,i`, `i`).
///
/// The wire parser applies RFC 9218's rules for a *received* value (unknown members and
/// out-of-range urgencies are ignored, leaving the defaults); a value the user typed is checked
/// strictly, so that `u=9` or a typo is an error instead of silently sending `u=3`.
pub fn parse_priority(s: &str) -> Result<h2lab_wire::priority::ExtPriority, String> {
    let bad = |why: String| format!("invalid priority {s:?}: {why} (expected u=N[,i], N in 0..=7)");
    let p = h2lab_wire::priority::parse(s.as_bytes()).map_err(|e| bad(e.to_string()))?;
    for member in s.split(',') {
        let member = member.trim();
        let item = member.split(';').next().unwrap_or("");
        match item
            .split_once('=')
            .map_or((item, None), |(k, v)| (k, Some(v)))
        {
            ("u", Some(v)) if v.parse::<u8>().is_ok_and(|u| u <= 7) => {}
            ("u", _) => return Err(bad("the urgency must be an integer from 0 to 7".into())),
            ("i", None | Some("?1" | "?0")) => {}
            (key, _) => return Err(bad(format!("unknown parameter {key:?}"))),
        }
    }
    Ok(p)
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
    } else if s.eq_ignore_ascii_case("h3") {
        Ok("h3".to_string())
    } else {
        Err(format!("unsupported protocol {s:?} (h2c, http/1.1 or h3)"))
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
    use crate::command::Cli;

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn priorities() {
        use h2lab_wire::priority::ExtPriority;
        assert_eq!(parse_priority("u=0"), Ok(ExtPriority::new(0, false)));
        assert_eq!(parse_priority("u=5,i"), Ok(ExtPriority::new(5, true)));
        assert!(parse_priority("u=5;;").is_err());
        assert_eq!(parse_priority("i"), Ok(ExtPriority::new(3, true)));
        assert_eq!(parse_priority("u=1, i=?0"), Ok(ExtPriority::new(1, false)));
        for bad in ["u=9", "u=-1", "u", "garbage", "u=2,x=1"] {
            assert!(parse_priority(bad).is_err(), "{bad}");
        }
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
    fn stages_syntax() {
        let s = parse_stages("30s:100,1m:100, 10s:0").unwrap().0;
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].duration, Duration::from_secs(60));
        assert_eq!(s[1].target, 100.0);
        assert_eq!(s[2].target, 0.0);
        assert_eq!(parse_stages("500ms:2.5").unwrap().0[0].target, 2.5);
        for bad in ["", " , ", "30s", "30s:", "0s:10", "x:1", "1s:-1", "1s:nan"] {
            assert!(parse_stages(bad).is_err(), "{bad:?}");
        }
        // The one stage syntax (shared with `page --stages`) skips empty parts.
        assert_eq!(parse_stages("1s:1,").unwrap().0.len(), 1);
        assert!(parse_rate("2000").is_ok());
        assert!(parse_rate("-1").is_err());
        assert!(parse_rate("inf").is_err());
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
