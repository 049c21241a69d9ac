//! `h2lab proxy`: the reverse proxy (`h2lab-proxy`) from the command line.
//!
//! Prints the listening addresses on stdout, runs until SIGINT or SIGTERM, and prints the
//! counters on exit with `--stats`; SIGUSR1 prints them at any time (stderr). Errors are one
//! line on stderr and exit status 1.

use std::process::ExitCode;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::Args;
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};

use crate::listen::{print_listening, stop_on_signal, ListenArgs};
use crate::signals::SignalPipe;
use crate::values::parse_duration;

const EXIT_FAILURE: u8 = 1;
const PREFIX: &str = "h2lab proxy:";

/// `h2lab proxy` options.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "ADDR is HOST:PORT or a bare PORT on 127.0.0.1 (port 0 picks a free port, \
                  printed). An --upstream is HOST:PORT or unix:/path. <DURATION> is a number \
                  with an optional unit h, m, s, ms, us or ns (seconds when omitted)."
)]
pub struct ProxyArgs {
    /// The listening and certificate flags.
    #[command(flatten)]
    pub listener: ListenArgs,

    /// Worker threads (each with its own event loop, client and upstream connections).
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub threads: usize,

    /// An upstream (repeatable; used round robin): HOST:PORT or unix:/path.
    #[arg(short = 'u', long = "upstream", value_name = "ADDR", required = true,
          value_parser = UpstreamAddr::parse)]
    pub upstreams: Vec<UpstreamAddr>,

    /// Upstream protocol: h1 (keep-alive, pooled), h1.0 (a connection per request), h2c
    /// (one stream per connection, as nginx 1.29), h2c-mux (multiplexed).
    #[arg(long = "upstream-protocol", value_name = "PROTO", default_value = "h1",
          value_parser = UpstreamProtocol::parse)]
    pub protocol: UpstreamProtocol,

    /// Idle keep-alive connections kept per upstream and worker (h1, h2c); for h2c-mux the
    /// most connections per upstream and worker.
    #[arg(long = "pool", value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..).map(|v| v as usize))]
    pub pool: usize,

    /// Concurrent streams per h2c-mux connection (capped by the upstream's
    /// MAX_CONCURRENT_STREAMS).
    #[arg(long = "streams", value_name = "M", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub streams: u32,

    /// No upstream progress for this long (h2c-mux: no stream slot either): 504.
    #[arg(long = "upstream-timeout", value_name = "DURATION", value_parser = parse_duration,
          default_value = "60s")]
    pub upstream_timeout: Duration,

    /// Close client connections idle this long.
    #[arg(long = "idle-timeout", value_name = "DURATION", value_parser = parse_duration,
          default_value = "60s")]
    pub idle_timeout: Duration,

    /// Print the counters on exit (SIGUSR1 prints them at any time).
    #[arg(long = "stats")]
    pub stats: bool,

    /// Print only the listening addresses.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// The library configuration for `args`.
pub fn build_config(args: &ProxyArgs) -> ProxyConfig {
    let mut c = ProxyConfig::default();
    let l = &args.listener;
    if let Some(a) = l.listen {
        c.listen = Some(a);
    }
    c.tls_listen = l.tls_listen;
    c.front.cert = l.cert.clone();
    c.front.key = l.key.clone();
    c.front.cert_dir = l.cert_dir.clone();
    c.front.threads = args.threads;
    c.front.idle_timeout = args.idle_timeout;
    c.front.quiet = args.quiet;
    c.upstreams = args.upstreams.clone();
    c.protocol = args.protocol;
    c.pool = args.pool;
    c.streams = args.streams;
    c.upstream_timeout = args.upstream_timeout;
    c
}

/// Runs `h2lab proxy`.
pub fn main(args: ProxyArgs) -> ExitCode {
    let config = build_config(&args);
    if let Err(m) = config.validate() {
        return fail(&format!("invalid configuration: {m}"));
    }
    // SIGINT/SIGTERM stop, SIGUSR1 prints the counters.
    let signals =
        SignalPipe::on(&[SIGINT, SIGTERM]).and_then(|stop| Ok((stop, SignalPipe::on(&[SIGUSR1])?)));
    let (stop_rx, mut usr1_rx) = match signals {
        Ok(p) => p,
        Err(e) => return fail(&format!("cannot install signal handlers: {e}")),
    };
    let proxy = match h2lab_proxy::spawn(config) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    print_listening(PREFIX, proxy.addr(), proxy.tls_addr());
    if !args.quiet {
        let ups: Vec<String> = args.upstreams.iter().map(ToString::to_string).collect();
        println!(
            "{PREFIX} upstreams {} over {}; SIGUSR1 prints the counters, SIGINT or SIGTERM stops",
            ups.join(", "),
            args.protocol.name()
        );
    }
    if let Err(e) = stop_on_signal(stop_rx, proxy.shutdown_handle()) {
        return fail(&format!("cannot start the signal thread: {e}"));
    }
    let handle = proxy.stats().clone();
    let _ = std::thread::Builder::new()
        .name("h2lab-usr1".into())
        .spawn(move || {
            while usr1_rx.next() {
                let s = handle.snapshot(Duration::from_secs(1));
                eprintln!("{PREFIX} counters\n{s}");
            }
        });
    match proxy.join() {
        Ok(s) => {
            if args.stats {
                println!("{s}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.to_string()),
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("{PREFIX} {msg}");
    ExitCode::from(EXIT_FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: ProxyArgs,
    }

    #[test]
    fn flags_map_to_the_config() {
        let t = T::parse_from([
            "x",
            "-u",
            "127.0.0.1:9001",
            "--upstream",
            "unix:/tmp/b.sock",
            "--upstream-protocol",
            "h2c-mux",
            "--pool",
            "4",
            "--streams",
            "50",
            "--upstream-timeout",
            "2s",
            "-l",
            "0",
        ]);
        let c = build_config(&t.a);
        assert_eq!(c.upstreams.len(), 2);
        assert_eq!(c.protocol, UpstreamProtocol::H2cMux);
        assert_eq!(c.pool, 4);
        assert_eq!(c.streams, 50);
        assert_eq!(c.upstream_timeout, Duration::from_secs(2));
        assert_eq!(c.listen.unwrap().port(), 0);
        assert!(c.validate().is_ok());
        assert!(T::try_parse_from(["x"]).is_err(), "--upstream is required");
        assert!(T::try_parse_from(["x", "-u", "1.2.3.4:1", "--upstream-protocol", "h3"]).is_err());
    }
}
