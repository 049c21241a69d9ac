//! `h2lab bench`: builds the engine configuration from h2load-style options, runs it, prints
//! h2load's report and writes the JSON / CSV results.
//!
//! Output follows h2load: everything of a run goes to stdout (`starting benchmark...`, the
//! `spawning thread` lines, TLS and protocol lines, `progress:` lines, the report); errors go to
//! stderr as one line. On a terminal, the `progress:` lines are replaced by one live line on
//! stderr.
//!
//! Exit status: 0 when the run completed; 1 on usage errors, when the run could not start or
//! nothing succeeded, on a `--require-protocol` mismatch, or when the JSON/CSV file could not be
//! written; 130 when SIGINT/SIGTERM stopped the run (the report of what was done is still printed
//! and written); 99 when the run completed but a `--threshold` failed.

use std::fs;
use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use h2lab_engine::{
    parse_connect_to, AppProtocol, BenchConfig, ProtocolChoice, RunResult, Scheme, StopFlag,
};
use h2lab_report::json;
use h2lab_report::progress::{Console, Progress, ProgressMode};
use h2lab_report::shard::{ShardJson, SliceJson};
use h2lab_report::threshold::{self, EXIT_THRESHOLD_FAILED};
use h2lab_report::{csv, text, RunOptions};

use crate::args::BenchArgs;
use crate::load;
use crate::shard;

/// Exit status of failed runs and usage errors.
pub const EXIT_FAILURE: u8 = 1;
pub use crate::signals::EXIT_INTERRUPTED;

/// Most raw samples of each kind kept for `--output-file` (h2load's limit).
const MAX_SAMPLES: usize = 1_000_000;

/// Prefix of every error line.
const PREFIX: &str = "h2lab bench: error:";

/// A start this much after `--start-at` is reported on stderr (it is always recorded).
const LATE_NOTICE: Duration = Duration::from_millis(1);

/// A sharded run: the whole run and where this shard stands in it.
pub struct ShardRun {
    /// This shard.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
    /// The whole run's configuration.
    pub whole: BenchConfig,
}

/// The whole configuration and, with `--shard`, this shard's slice of it (the configuration
/// to run comes first).
fn configure(args: &BenchArgs) -> Result<(BenchConfig, Option<ShardRun>), String> {
    let whole = build_config(args)?;
    let Some(spec) = args.shard else {
        return Ok((whole, None));
    };
    let env = std::env::var(shard::INDEX_ENV).ok();
    let index = spec.resolve(env.as_deref())?;
    let cfg = shard::slice(&whole, args.input_file.is_some(), index, spec.count)?;
    Ok((
        cfg,
        Some(ShardRun {
            index,
            count: spec.count,
            whole,
        }),
    ))
}

/// When the shard started, for its result.
struct Started {
    start_at: Option<SystemTime>,
    measure_start: SystemTime,
    late: Duration,
}

/// Runs `h2lab bench` and returns the process exit status.
pub fn main(args: BenchArgs) -> ExitCode {
    let (cfg, shard_run) = match configure(&args) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("{PREFIX} {msg}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    if let Ok(n) = std::thread::available_parallelism() {
        if cfg.threads as usize > n.get() {
            eprintln!("-t: warning: the number of threads is greater than hardware cores.");
        }
    }
    // h2load's warning, word for word.
    if cfg.qlog_file_base.is_some()
        && cfg.effective_alpn().first().map(String::as_str) != Some("h3")
    {
        eprintln!("Warning: --qlog-file-base: only effective in quic, ignoring.");
    }

    let stop = StopFlag::new();
    if let Err(e) = crate::signals::stop_on_signals(&stop) {
        eprintln!("{PREFIX} cannot install signal handlers: {e}");
        return ExitCode::from(EXIT_FAILURE);
    }

    let mut banner = String::from(text::starting_line());
    for (i, (clients, requests)) in split_per_thread(&cfg).into_iter().enumerate() {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        let line = text::spawning_line(i, clients, requests, cfg.warm_up, load::run_duration(&cfg));
        banner.push_str(&match cfg.load.connection_rate {
            // h2load: " Up to R client(s) will be created every PERIOD" in rate mode.
            Some((rate, period)) => {
                let t = cfg.threads.max(1);
                let r = u64::from(rate / t + u32::from(i < rate % t));
                text::with_rate_mode(&line, clients, r, period)
            }
            None => line,
        });
    }
    print_stdout(&banner);

    let live = io::stderr().is_terminal();
    let (mode, progress_out): (ProgressMode, Box<dyn Write + Send>) = if live {
        (ProgressMode::Live, Box::new(io::stderr()))
    } else {
        (ProgressMode::Lines, Box::new(io::stdout()))
    };
    let console = Console::new(
        io::stdout(),
        Progress::new(mode, load::run_duration(&cfg), progress_out),
    );
    let observer = match load::SeriesObserver::new(&console, args.load.timeseries.as_deref()) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{PREFIX} {msg}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let mut late = Duration::ZERO;
    if let Some(at) = args.start_at {
        if let Ok(ahead) = at.duration_since(SystemTime::now()) {
            if ahead >= Duration::from_secs(1) {
                eprintln!(
                    "h2lab bench: waiting {:.1} s for --start-at {:.3}",
                    ahead.as_secs_f64(),
                    shard::unix_seconds(at)
                );
            }
        }
        match shard::wait_until(at, &stop) {
            Some(l) => late = l,
            None => {
                eprintln!("{PREFIX} interrupted while waiting for --start-at");
                return ExitCode::from(EXIT_INTERRUPTED);
            }
        }
        if late >= LATE_NOTICE {
            let who = shard_run
                .as_ref()
                .map(|s| format!("shard {}/{}", s.index, s.count))
                .unwrap_or_else(|| "the run".to_string());
            eprintln!(
                "h2lab bench: warning: {who} started {:.3} s late (--start-at {:.3})",
                late.as_secs_f64(),
                shard::unix_seconds(at)
            );
        }
    }
    let started = Started {
        start_at: args.start_at,
        measure_start: SystemTime::now() + cfg.warm_up.unwrap_or(Duration::ZERO),
        late,
    };
    let outcome = h2lab_engine::run(&cfg, &observer, &stop);
    console.progress().finish();
    if let Some(msg) = observer.error() {
        eprintln!("{PREFIX} {msg}");
    }

    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(if stop.is_stopped() {
                EXIT_INTERRUPTED
            } else {
                EXIT_FAILURE
            });
        }
    };
    let shard = shard_run.as_ref().map(|s| (s, &started));
    report(&args, &cfg, &result, shard)
}

/// The `shard` object of a shard's result.
fn shard_json(
    s: &ShardRun,
    started: &Started,
    cfg: &BenchConfig,
    r: &RunResult,
) -> Result<ShardJson, json::JsonError> {
    Ok(ShardJson {
        index: s.index,
        count: s.count,
        plan: RunOptions::from(&s.whole),
        slice: SliceJson {
            clients: cfg.clients,
            lanes: cfg.load.shard.map_or(cfg.clients, |l| l.whole_clients),
            requests: if cfg.load.is_timed(cfg) {
                0
            } else {
                cfg.requests
            },
            threads: cfg.threads,
            rate: cfg.load.connection_rate.map(|(r, _)| r),
            queue_limit: cfg.load.queue_limit,
            uris: cfg.uris.len() as u64,
        },
        start_at_unix: started.start_at.map(shard::unix_seconds),
        started_unix: shard::unix_seconds(started.measure_start),
        late_seconds: started.late.as_secs_f64(),
        interval_histograms: h2lab_report::shard::interval_histograms(&r.timeseries)?,
    })
}

/// Prints the report, writes the result files and decides the exit status.
fn report(
    args: &BenchArgs,
    cfg: &BenchConfig,
    r: &RunResult,
    shard: Option<(&ShardRun, &Started)>,
) -> ExitCode {
    let verdicts = threshold::evaluate(&args.load.thresholds, r);
    let summary = text::summary_as(r, args.output_format, args.histogram);
    print_stdout(&(summary + &threshold::lines(&verdicts)));
    let mut status = if r.interrupted { EXIT_INTERRUPTED } else { 0 };
    if status == 0 && verdicts.iter().any(|v| !v.passed) {
        status = EXIT_THRESHOLD_FAILED;
    }
    let options = RunOptions::from(cfg);
    if let Some(path) = &args.json {
        let written = json::to_json(r, &options).and_then(|mut doc| {
            if !verdicts.is_empty() {
                doc.thresholds = Some(verdicts.iter().map(json::ThresholdJson::from).collect());
            }
            if let Some((s, started)) = shard {
                doc.shard = Some(shard_json(s, started, cfg, r)?);
            }
            write_json(path, &doc)
        });
        if let Err(e) = written {
            eprintln!("{PREFIX} --json {}: {e}", path.display());
            status = EXIT_FAILURE;
        }
    }
    if let Some(path) = &args.output_file {
        if let Err(e) = h2lab_report::h2load_json::write(path, r) {
            eprintln!("{PREFIX} --output-file {}: {e}", path.display());
            status = EXIT_FAILURE;
        }
    }
    if let Some(path) = &args.csv {
        if let Err(e) = csv::write(path, r, &options) {
            eprintln!("{PREFIX} --csv {}: {e}", path.display());
            status = EXIT_FAILURE;
        }
    }
    if let (Some(want), Some(got)) = (cfg.require_protocol, r.app_protocol) {
        if want != got {
            eprintln!("{PREFIX} --require-protocol {want}: the server negotiated {got}");
            return ExitCode::from(EXIT_FAILURE);
        }
    }
    if r.requests.succeeded == 0 && !r.interrupted {
        let reason = r
            .errors
            .messages
            .first()
            .map(|m| format!(" (first error: {m})"))
            .unwrap_or_default();
        eprintln!("{PREFIX} no request succeeded{reason}");
        return ExitCode::from(EXIT_FAILURE);
    }
    ExitCode::from(status)
}

/// Writes the result document to `path`, or to stdout as one line for `-` (what `kubectl logs`
/// collects from a pod).
pub fn write_json(path: &Path, doc: &json::BenchJson) -> Result<(), json::JsonError> {
    if path.as_os_str() == "-" {
        let mut line = serde_json::to_string(doc)?;
        line.push('\n');
        print_stdout(&line);
        Ok(())
    } else {
        json::write(path, doc)
    }
}

fn print_stdout(s: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// Clients and requests per thread: the engine's own split, so the banner prints what runs.
pub fn split_per_thread(cfg: &BenchConfig) -> Vec<(u64, u64)> {
    h2lab_engine::plan::thread_split(cfg)
        .into_iter()
        .map(|(c, r)| (u64::from(c), r))
        .collect()
}

/// Reads `-i`: one URI per line (`-` for stdin); blank lines are skipped.
fn read_input_file(path: &std::path::Path) -> Result<Vec<String>, String> {
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text).map(|_| ()))
    };
    read.map_err(|e| format!("-i: cannot read input file {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

/// Builds and validates the engine configuration, with h2load's option semantics. Errors are
/// one-line messages.
pub fn build_config(a: &BenchArgs) -> Result<BenchConfig, String> {
    let script = match &a.load.timing_script_file {
        Some(p) => Some(load::read_timing_script(p)?),
        None => None,
    };
    // h2load: a timing script (or -i) replaces the URIs of the command line.
    let uris = match (&script, &a.input_file) {
        (Some(s), _) => s.uris.clone(),
        (None, Some(p)) => read_input_file(p)?,
        (None, None) => a.uris.clone(),
    };
    if uris.is_empty() {
        return Err("no URI or input file given".to_string());
    }
    let mut cfg =
        BenchConfig::from_uris(&uris, a.base_uri.as_deref()).map_err(|e| e.to_string())?;
    let scheme = cfg.scheme();

    cfg.requests = a.requests.unwrap_or(1);
    cfg.clients = a.clients;
    cfg.max_concurrent_streams = a.max_concurrent_streams;
    cfg.threads = a.threads;
    cfg.duration = a.duration;
    cfg.warm_up = a.warm_up_time;
    cfg.headers = a.headers.clone();
    if let Some(p) = a.priority {
        // RFC 9218 §5: the `priority` request header field (an explicit -H wins).
        if !cfg
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("priority"))
        {
            cfg.headers.push(("priority".into(), p.to_string()));
        }
    }
    cfg.window_bits = a.window_bits;
    cfg.connection_window_bits = a.connection_window_bits;
    cfg.header_table_size = a.header_table_size;
    cfg.encoder_header_table_size = a.encoder_header_table_size;
    cfg.connection_active_timeout = a.connection_active_timeout;
    cfg.connection_inactivity_timeout = a.connection_inactivity_timeout;
    cfg.sni = a.sni.clone();
    cfg.verbose = a.verbose;
    cfg.log_file = a.log_file.clone();
    cfg.insecure = true;
    // Off unless asked for (--no-coalesce is the default now); a zero hold is off too.
    cfg.coalesce = a.coalesce.or(a.coalesce_hold).filter(|d| !d.is_zero());
    // h2load's --output-file carries raw samples: keep them (bounded) only then.
    cfg.max_samples = a.output_file.as_ref().map(|_| MAX_SAMPLES);
    cfg.accept_push = a.push;
    cfg.read_wait = match a.read_wait {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
        None => Some(h2lab_engine::DEFAULT_READ_WAIT),
    };

    if let Some(p) = &a.data {
        let body = fs::read(p).map_err(|e| format!("-d: cannot read {}: {e}", p.display()))?;
        cfg.body = Some(Arc::from(body));
    }
    if let Some(c) = &a.connect_to {
        cfg.connect_to = Some(parse_connect_to(c).map_err(|e| e.to_string())?);
    }

    // Protocol: --h1 forces HTTP/1.1 everywhere; -p picks the cleartext protocol; --alpn-list
    // is what TLS offers.
    if a.h1 {
        if a.no_tls_proto.as_deref() == Some("h2c") {
            return Err("--h1 and -p h2c conflict".to_string());
        }
        if let Some(list) = &a.alpn_list {
            if list.0 != ["http/1.1"] {
                return Err(
                    "--h1 and --alpn-list conflict (--h1 means --alpn-list=http/1.1)".into(),
                );
            }
        }
        cfg.protocol = ProtocolChoice::H1;
    } else {
        cfg.protocol = match (scheme, a.no_tls_proto.as_deref()) {
            (Scheme::Http, Some("http/1.1")) => ProtocolChoice::H1,
            _ => ProtocolChoice::H2,
        };
        if let Some(list) = &a.alpn_list {
            cfg.alpn_list = list.0.clone();
        }
        if a.no_tls_proto.as_deref() == Some("h3") {
            cfg.alpn_list = vec!["h3".to_owned()];
        }
    }

    cfg.require_protocol = match a.require_protocol.as_deref() {
        None => None,
        Some("http/1.1") => Some(AppProtocol::Http11),
        Some(_) => {
            let h2 = if scheme == Scheme::Https {
                AppProtocol::H2
            } else {
                AppProtocol::H2c
            };
            let speaks_h1 = match scheme {
                Scheme::Http => cfg.cleartext_protocol() == AppProtocol::Http11,
                Scheme::Https => !cfg.effective_alpn().iter().any(|p| p == "h2"),
            };
            if speaks_h1 {
                return Err(
                    "--require-protocol h2 conflicts with the protocol options (--h1, -p or \
                     --alpn-list without h2)"
                        .to_string(),
                );
            }
            Some(h2)
        }
    };

    crate::compat::apply(&a.compat, &mut cfg)?;
    load::apply(
        &a.load,
        &mut cfg,
        a.requests,
        script.as_ref(),
        a.json.is_some(),
    )?;
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Cli, Command};
    use clap::Parser;
    use h2lab_engine::BaseUri;
    use std::path::PathBuf;
    use std::time::Duration;

    fn parse(argv: &[&str]) -> Result<BenchConfig, String> {
        let mut full = vec!["h2lab", "bench"];
        full.extend_from_slice(argv);
        let cli = Cli::try_parse_from(full).map_err(|e| e.to_string())?;
        let Command::Bench(args) = cli.command else {
            return Err("not a bench command".into());
        };
        build_config(&args)
    }

    fn args(argv: &[&str]) -> BenchArgs {
        let mut full = vec!["h2lab", "bench"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Command::Bench(a) => a,
            other => panic!("not a bench command: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_h2loads() {
        let c = parse(&["http://127.0.0.1:8080/index.html"]).unwrap();
        assert_eq!(
            (c.requests, c.clients, c.max_concurrent_streams, c.threads),
            (1, 1, 1, 1)
        );
        assert_eq!((c.window_bits, c.connection_window_bits), (30, 30));
        assert_eq!(
            (c.header_table_size, c.encoder_header_table_size),
            (4096, 4096)
        );
        assert_eq!(c.protocol, ProtocolChoice::H2);
        assert_eq!(c.cleartext_protocol(), AppProtocol::H2c);
        assert_eq!(c.alpn_list, vec!["h2", "http/1.1"]);
        assert!(c.insecure);
        assert!(!c.verbose);
        assert_eq!(c.duration, None);
        assert_eq!(c.uris[0].path, "/index.html");
        assert_eq!(c.uris[0].port, 8080);
    }

    #[test]
    fn every_h2load_flag_maps_to_the_config() {
        let dir = std::env::temp_dir().join(format!("h2lab-cli-args-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let body = dir.join("body.bin");
        fs::write(&body, b"post me").unwrap();
        let log = dir.join("log.tsv");
        let c = parse(&[
            "-n",
            "1000",
            "-c",
            "10",
            "-m",
            "8",
            "-t",
            "2",
            "-w",
            "20",
            "-W",
            "24",
            "-H",
            "X-Test: 1",
            "--header=:authority: example.test",
            "-d",
            body.to_str().unwrap(),
            "-T",
            "5s",
            "-N",
            "500ms",
            "--header-table-size",
            "8K",
            "--encoder-header-table-size=0",
            "--log-file",
            log.to_str().unwrap(),
            "--connect-to",
            "127.0.0.1:9443",
            "--sni",
            "sni.test",
            "--alpn-list",
            "h2",
            "-v",
            "--require-protocol",
            "h2",
            "https://example.test/a",
            "https://other.test/b?x",
        ])
        .unwrap();
        assert_eq!(c.requests, 1000);
        assert_eq!(c.clients, 10);
        assert_eq!(c.max_concurrent_streams, 8);
        assert_eq!(c.threads, 2);
        assert_eq!((c.window_bits, c.connection_window_bits), (20, 24));
        assert_eq!(
            c.headers,
            vec![
                ("x-test".to_string(), "1".to_string()),
                (":authority".to_string(), "example.test".to_string())
            ]
        );
        assert_eq!(c.body.as_deref(), Some(&b"post me"[..]));
        assert_eq!(c.connection_active_timeout, Some(Duration::from_secs(5)));
        assert_eq!(
            c.connection_inactivity_timeout,
            Some(Duration::from_millis(500))
        );
        assert_eq!(c.header_table_size, 8192);
        assert_eq!(c.encoder_header_table_size, 0);
        assert_eq!(c.log_file, Some(log));
        assert_eq!(c.connect_to, Some(("127.0.0.1".to_string(), 9443)));
        assert_eq!(c.sni.as_deref(), Some("sni.test"));
        assert_eq!(c.effective_alpn(), vec!["h2"]);
        assert!(c.verbose);
        assert_eq!(c.require_protocol, Some(AppProtocol::H2));
        assert_eq!(c.uris.len(), 2);
        assert_eq!(c.uris[1].path, "/b?x");
        assert_eq!(c.scheme(), Scheme::Https);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_option_spellings() {
        let c = parse(&[
            "--requests=20",
            "--clients=2",
            "--max-concurrent-streams=4",
            "--threads=1",
            "--window-bits=16",
            "--connection-window-bits=16",
            "--connection-active-timeout=1m",
            "--connection-inactivity-timeout=2",
            "--npn-list=h2,http/1.1",
            "--verbose",
            "https://h/",
        ])
        .unwrap();
        assert_eq!(
            (c.requests, c.clients, c.max_concurrent_streams),
            (20, 2, 4)
        );
        assert_eq!(c.connection_active_timeout, Some(Duration::from_secs(60)));
        assert_eq!(
            c.connection_inactivity_timeout,
            Some(Duration::from_secs(2))
        );
        assert_eq!(c.effective_alpn(), vec!["h2", "http/1.1"]);
    }

    #[test]
    fn duration_mode() {
        let c = parse(&[
            "-D",
            "10",
            "--warm-up-time",
            "500ms",
            "-c",
            "4",
            "http://h/",
        ])
        .unwrap();
        assert_eq!(c.duration, Some(Duration::from_secs(10)));
        assert_eq!(c.warm_up, Some(Duration::from_millis(500)));
        let c = parse(&["--duration=1m", "http://h/"]).unwrap();
        assert_eq!(c.duration, Some(Duration::from_secs(60)));
        assert_eq!(split_per_thread(&c), vec![(1, 0)]);
    }

    #[test]
    fn request_coalescing_flags() {
        // Off by default: the load shape is h2load's.
        let c = parse(&["http://h/"]).unwrap();
        assert_eq!(c.coalesce, None);
        let c = parse(&["--coalesce", "http://h/"]).unwrap();
        assert_eq!(c.coalesce, Some(h2lab_engine::DEFAULT_COALESCE_HOLD));
        let c = parse(&["--coalesce=5ms", "http://h/"]).unwrap();
        assert_eq!(c.coalesce, Some(Duration::from_millis(5)));
        let c = parse(&["--coalesce=0", "http://h/"]).unwrap();
        assert_eq!(c.coalesce, None);
        // Compatibility spellings.
        let c = parse(&["--no-coalesce", "http://h/"]).unwrap();
        assert_eq!(c.coalesce, None);
        let c = parse(&["--coalesce-hold", "5ms", "http://h/"]).unwrap();
        assert_eq!(c.coalesce, Some(Duration::from_millis(5)));
        assert!(parse(&["--no-coalesce", "--coalesce-hold", "5ms", "http://h/"]).is_err());
        assert!(parse(&["--no-coalesce", "--coalesce", "http://h/"]).is_err());
        assert!(parse(&["--coalesce=soon", "http://h/"]).is_err());
    }

    #[test]
    fn push_flag() {
        assert!(!parse(&["http://h/"]).unwrap().accept_push);
        assert!(
            parse(&["--push", "accept", "http://h/"])
                .unwrap()
                .accept_push
        );
        assert!(
            !parse(&["--push", "refuse", "http://h/"])
                .unwrap()
                .accept_push
        );
        assert!(parse(&["--push", "on", "http://h/"]).is_err());
    }

    #[test]
    fn read_wait_flag() {
        let c = parse(&["http://h/"]).unwrap();
        assert_eq!(c.read_wait, Some(h2lab_engine::DEFAULT_READ_WAIT));
        let c = parse(&["--read-wait", "0", "http://h/"]).unwrap();
        assert_eq!(c.read_wait, None);
        let c = parse(&["--read-wait", "20us", "http://h/"]).unwrap();
        assert_eq!(c.read_wait, Some(std::time::Duration::from_micros(20)));
        assert!(parse(&["--read-wait", "soon", "http://h/"]).is_err());
    }

    #[test]
    fn protocol_selection() {
        let c = parse(&["--h1", "http://h/"]).unwrap();
        assert_eq!(c.protocol, ProtocolChoice::H1);
        assert_eq!(c.cleartext_protocol(), AppProtocol::Http11);
        let c = parse(&["--h1", "https://h/"]).unwrap();
        assert_eq!(c.effective_alpn(), vec!["http/1.1"]);
        let c = parse(&["-p", "http/1.1", "http://h/"]).unwrap();
        assert_eq!(c.cleartext_protocol(), AppProtocol::Http11);
        let c = parse(&["--no-tls-proto=h2c", "http://h/"]).unwrap();
        assert_eq!(c.cleartext_protocol(), AppProtocol::H2c);
        // -p only concerns cleartext: TLS still offers h2 first.
        let c = parse(&["-p", "http/1.1", "https://h/"]).unwrap();
        assert_eq!(c.effective_alpn(), vec!["h2", "http/1.1"]);
        let c = parse(&["--require-protocol", "h2", "http://h/"]).unwrap();
        assert_eq!(c.require_protocol, Some(AppProtocol::H2c));
        let c = parse(&["--require-protocol", "http/1.1", "--h1", "https://h/"]).unwrap();
        assert_eq!(c.require_protocol, Some(AppProtocol::Http11));
    }

    #[test]
    fn base_uri_and_input_file() {
        let c = parse(&["-B", "unix:/tmp/x.sock", "http://h/a"]).unwrap();
        assert_eq!(
            c.base_uri,
            Some(BaseUri::Unix(PathBuf::from("/tmp/x.sock")))
        );
        let c = parse(&["--base-uri", "https://127.0.0.1:8443", "/a", "/b"]).unwrap();
        assert_eq!(c.scheme(), Scheme::Https);
        assert_eq!(c.uris.len(), 2);

        let dir = std::env::temp_dir().join(format!("h2lab-cli-i-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let list = dir.join("uris.txt");
        fs::write(&list, "http://h:81/one\r\n\nhttp://h:81/two\n").unwrap();
        // -i replaces the URIs of the command line.
        let c = parse(&["-i", list.to_str().unwrap(), "http://ignored/"]).unwrap();
        let paths: Vec<&str> = c.uris.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, vec!["/one", "/two"]);
        assert_eq!(c.uris[0].port, 81);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_are_one_line_messages() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "no URI or input file given"),
            (&["ftp://h/"], "invalid URI"),
            (&["not a uri"], "invalid URI"),
            (&["-n", "5", "-c", "10", "http://h/"], "-n, -c:"),
            (&["-c", "1", "-t", "2", "http://h/"], "-c, -t:"),
            (&["-m", "0", "http://h/"], "-m:"),
            (&["--warm-up-time", "1", "http://h/"], "--warm-up-time"),
            (&["--h1", "-p", "h2c", "http://h/"], "conflict"),
            (&["--h1", "--alpn-list", "h2", "https://h/"], "conflict"),
            (
                &["--h1", "--require-protocol", "h2", "http://h/"],
                "conflicts",
            ),
            (
                &["-d", "/nonexistent/h2lab/body", "http://h/"],
                "-d: cannot read",
            ),
            (
                &["-i", "/nonexistent/h2lab/uris", "http://h/"],
                "-i: cannot read",
            ),
            (&["-B", "unix:", "http://h/"], "-B"),
            (&["--connect-to", "[::1", "http://h/"], "--connect-to"),
            (&["-H", "x-a: b\u{1}\r\nc", "http://h/"], "header"),
        ];
        for (argv, want) in cases {
            let e = parse(argv).unwrap_err();
            assert!(e.contains(want), "{argv:?}: {e:?} should mention {want:?}");
            assert!(
                !e.trim_end().contains('\n'),
                "{argv:?}: multi-line error {e:?}"
            );
        }
    }

    #[test]
    fn timing_script_split_is_what_the_workers_run() {
        // With a timing script -n counts per client, so a worker with two clients runs twice
        // the requests of a worker with one: the banner must say so.
        let dir = std::env::temp_dir().join(format!("h2lab-split-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let script = dir.join("script");
        let lines: String = (0..10).map(|i| format!("{i}\thttp://h/{i}\n")).collect();
        fs::write(&script, lines).unwrap();
        let c = parse(&[
            "-n",
            "10",
            "-c",
            "3",
            "-t",
            "2",
            "--timing-script-file",
            script.to_str().unwrap(),
        ])
        .unwrap();
        assert_eq!(split_per_thread(&c), vec![(2, 20), (1, 10)]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn threads_split_like_h2load() {
        let c = parse(&["-n", "2001", "-c", "10", "-t", "3", "http://h/"]).unwrap();
        assert_eq!(split_per_thread(&c), vec![(4, 667), (3, 667), (3, 667)]);
        let a = args(&["--json", "r.json", "--csv", "r.csv", "http://h/"]);
        assert_eq!(a.json, Some(PathBuf::from("r.json")));
        assert_eq!(a.csv, Some(PathBuf::from("r.csv")));
    }
}
