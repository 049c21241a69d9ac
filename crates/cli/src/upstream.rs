//! `h2lab upstream`: the upstream-hop experiment (`h2lab_lab::upstream`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use h2lab_engine::StopFlag;
use h2lab_lab::upstream::{self, ProxyKind, UpstreamConfig};

use crate::values::parse_duration;

/// `h2lab upstream` options. The CPU flags are shared with `compare` and `page`, whose help
/// speaks of their built-in server; here the server CPUs hold the backends, the links and the
/// proxy (`h2lab_lab::env::pin_servers` around `upstream`'s start).
#[derive(Debug, Clone, Args)]
#[command(mut_arg("server_cpus", |a| a.help(UPSTREAM_SERVER_CPUS)))]
#[command(mut_arg("client_cpus", |a| a.help(UPSTREAM_CLIENT_CPUS)))]
#[command(mut_arg("no_pin", |a| a.help(UPSTREAM_NO_PIN)))]
pub struct UpstreamArgs {
    /// The short matrix: 4 payloads × c = 10, 200, 2 runs of 1 s.
    #[arg(long = "quick")]
    pub quick: bool,

    /// The proxy in the middle: h2lab (in-process) or nginx (the seed's configuration).
    #[arg(long = "proxy", value_name = "h2lab|nginx", default_value = "h2lab",
          value_parser = ["h2lab", "nginx"])]
    pub proxy: String,

    /// Round-trip time of the proxy → backend links.
    #[arg(long = "rtt", value_name = "DURATION", value_parser = parse_duration, default_value = "5ms")]
    pub rtt: Duration,

    /// Runs per cell and arm (default: 6, --quick 2; fewer than 6 never decide a comparison).
    #[arg(long = "runs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,

    /// Measured period of each run (default: 3s, --quick 1s).
    #[arg(long = "duration", value_name = "DURATION", value_parser = positive_duration)]
    pub duration: Option<Duration>,

    /// Streams per h2c-mux upstream connection.
    #[arg(long = "streams", value_name = "M", default_value_t = 100)]
    pub streams: u32,

    /// CPUs of the backends, the links and the proxy (`--server-cpus`), and of the client.
    #[command(flatten)]
    pub cpus: crate::compare::CpuArgs,

    /// Measure a round again (up to twice) when other processes used the machine during it.
    #[arg(long)]
    pub strict: bool,

    /// The backends answer /page with 103 Early Hints before its 200 (serve --early-hints),
    /// and a page payload (/page?n=1&css=1&js=1) is measured besides the others: the report
    /// counts, per arm and cell, the interim responses the proxy passed on to the client.
    #[arg(long)]
    pub early_hints: bool,
    /// How the proxy -> backends hop is emulated: packet (the kernel's own TCP in network
    /// namespaces joined by TUN devices: backends on the server side, proxy and client on the
    /// client side; needs root or a user namespace, else the relay with a warning) or relay
    /// (user-space relay, TCP modelled).
    #[arg(long, value_name = "MODE", default_value = "packet", value_parser = crate::values::path_mode)]
    pub mode: h2lab_lab::netpath::PathMode,

    /// TCP congestion control on the packet link, both ends of every connection (set on the
    /// route across the path: any of /proc/sys/net/ipv4/tcp_available_congestion_control,
    /// e.g. cubic, reno, bbr; default: the host's default). Recorded per side in results.json.
    #[arg(long = "cc", value_name = "NAME")]
    pub cc: Option<String>,

    /// Also write the report here: index.html (self-contained), results.json, results.csv.
    #[arg(long = "report", value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// `--server-cpus` for `upstream`: what it pins there.
const UPSTREAM_SERVER_CPUS: &str = "CPUs for the backends' threads, the links (proxy → backend) \
    and the proxy (h2lab's, or nginx) (`0`, `0-1`, `0,2`) [default: the first half of the \
    allowed CPUs when there are two or more]";

/// `--client-cpus` for `upstream`.
const UPSTREAM_CLIENT_CPUS: &str = "CPUs for the client's threads [default: the other half]";

/// `--no-pin` for `upstream`.
const UPSTREAM_NO_PIN: &str =
    "Do not pin: the scheduler places the backends, the links, the proxy and the client";

/// A duration greater than zero (a zero measured period would reach the engine, whose error
/// names its own flag, `-D`).
fn positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s) {
        Ok(d) if d.is_zero() => Err("must be greater than 0".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs `h2lab upstream`.
pub fn main(args: UpstreamArgs) -> ExitCode {
    let mut cfg = if args.quick {
        UpstreamConfig::quick()
    } else {
        UpstreamConfig::seed()
    };
    cfg.rtt = args.rtt;
    cfg.streams = args.streams.max(1);
    if let Some(r) = args.runs {
        cfg.runs = r;
    }
    if let Some(d) = args.duration {
        let floor = upstream::min_window(cfg.rtt);
        if d < floor {
            eprintln!(
                "h2lab upstream: --duration: at least {} at --rtt {} (ten round trips: a \
                 shorter period measures the start of the run, not its steady state)",
                h2lab_lab::fmt::dur(floor),
                h2lab_lab::fmt::dur(cfg.rtt)
            );
            return ExitCode::from(1);
        }
        cfg.duration = d;
    }
    cfg.pinning = match args.cpus.pinning() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("h2lab upstream: {e}");
            return ExitCode::from(1);
        }
    };
    cfg.strict = args.strict;
    if args.early_hints {
        cfg.early_hints = true;
        cfg.payloads.extend("page=/page?n=1&css=1&js=1".parse());
    }
    cfg.mode = args.mode;
    cfg.tcp_cc = args.cc.clone();
    // Before any thread starts (a user namespace is entered by a single-threaded process).
    crate::link_packet::privileges_for(cfg.mode, true);
    cfg.proxy = if args.proxy == "nginx" {
        ProxyKind::Nginx
    } else {
        ProxyKind::H2lab
    };
    let stop = StopFlag::new();
    match upstream::run(&cfg, &stop, &mut |line| {
        eprintln!("{}", h2lab_lab::fmt::wrap_long_lines(line))
    }) {
        Ok(r) => {
            print!("{}", h2lab_lab::fmt::wrap_long_lines(&upstream::render(&r)));
            let Some(dir) = &args.report else {
                return ExitCode::SUCCESS;
            };
            let writes = vec![
                (dir.join("index.html"), upstream::html(&r)),
                (dir.join("results.json"), upstream::json(&r)),
                (dir.join("results.csv"), upstream::csv(&r)),
            ];
            if crate::compare::write_outputs("h2lab upstream:", writes, Some(dir)) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("h2lab upstream: {e}");
            ExitCode::from(1)
        }
    }
}
