//! `h2lab serve`: the test target server (`h2lab-server`) from the command line.
//!
//! One cleartext port speaks HTTP/1.1 and h2c (prior knowledge and `Upgrade: h2c`); `--tls`
//! serves HTTP/2 and HTTP/1.1 (ALPN) over TLS instead, `--tls-listen` adds a TLS port next to
//! the cleartext one. Without `--cert/--key` a self-signed certificate for localhost is
//! generated (or reused) and its path printed, so that `curl --cacert` can trust it.
//!
//! Output: the listening addresses (the real port when `--listen` asks for port 0) and the
//! certificate on stdout, one line each, then hints unless `--quiet`. Protocol violations are
//! logged on stderr (rate-limited). Runs until SIGINT or SIGTERM, then sends GOAWAY to HTTP/2
//! clients, closes every connection and exits 0. Errors (bad flags, a port in use, an unusable
//! certificate) are one line on stderr and exit status 1.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::Args;
use h2lab_server::{RunningServer, ServerConfig};

use crate::listen::{print_listening, stop_on_signal, ListenArgs};
use crate::signals::SignalPipe;
use crate::values::{parse_duration, parse_size};

/// Exit status of failed starts and usage errors.
const EXIT_FAILURE: u8 = 1;
/// Prefix of every line this command prints.
const PREFIX: &str = "h2lab serve:";

fn defaults() -> ServerConfig {
    ServerConfig::default()
}

/// `h2lab serve` options.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "ADDR is HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080, localhost:0) or a \
                        bare PORT on 127.0.0.1; port 0 picks a free port (printed).\n<SIZE> is an \
                        integer with an optional unit K, M or G (powers of 1024); <DURATION> a \
                        number with an optional unit h, m, s, ms, us or ns (seconds when omitted).",
    mut_arg("listen", |a| a.help(
        "Address to serve on: HTTP/1.1 and h2c (cleartext), or TLS with --tls \
         [default: 127.0.0.1:8080, with --tls 127.0.0.1:8443]")),
)]
pub struct ServeArgs {
    /// The listening and certificate flags.
    #[command(flatten)]
    pub listener: ListenArgs,

    /// Serve TLS (HTTP/2 and HTTP/1.1 chosen by ALPN) on the --listen address instead of
    /// cleartext.
    #[arg(long = "tls", conflicts_with = "tls_listen")]
    pub tls: bool,

    /// Worker threads (each with its own event loop; connections stay on one thread).
    #[arg(short = 't', long = "threads", value_name = "N", default_value_t = defaults().threads,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub threads: usize,

    /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS advertised and enforced.
    #[arg(long = "max-concurrent-streams", value_name = "N",
          default_value_t = defaults().max_concurrent_streams)]
    pub max_concurrent_streams: u32,

    /// HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE (per-stream receive window), at most 2^31-1.
    #[arg(long = "initial-window-size", value_name = "SIZE", value_parser = parse_u32_size,
          default_value_t = defaults().initial_stream_window)]
    pub initial_window_size: u32,

    /// HTTP/2 connection receive window, 65535..=2^31-1 (raised with WINDOW_UPDATE).
    #[arg(long = "connection-window-size", value_name = "SIZE", value_parser = parse_u32_size,
          default_value_t = defaults().initial_connection_window)]
    pub connection_window_size: u32,

    /// HTTP/2 SETTINGS_MAX_FRAME_SIZE, 16384..=16777215.
    #[arg(long = "max-frame-size", value_name = "SIZE", value_parser = parse_u32_size,
          default_value_t = defaults().max_frame_size)]
    pub max_frame_size: u32,

    /// HTTP/2 SETTINGS_HEADER_TABLE_SIZE (our HPACK decoder's table).
    #[arg(long = "header-table-size", value_name = "SIZE", value_parser = parse_u32_size,
          default_value_t = defaults().header_table_size)]
    pub header_table_size: u32,

    /// Largest request header list (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE; the largest
    /// HTTP/1.1 request head); larger requests get 431 or a stream error.
    #[arg(long = "max-header-list-size", value_name = "SIZE", value_parser = parse_u32_size,
          default_value_t = defaults().max_header_list_size)]
    pub max_header_list_size: u32,

    /// HTTP/2 response scheduling: rfc9218 orders DATA by the RFC 9218 priorities the client
    /// sends (`priority` header, PRIORITY_UPDATE); off sends round-robin.
    #[arg(long = "priorities", value_name = "off|rfc9218", default_value = "rfc9218",
          value_parser = parse_priorities)]
    pub priorities: h2lab_server::sched::PriorityMode,

    /// HTTP/2 server push: a `/page` response pushes its render-blocking CSS and JS (and
    /// names them in `link: <...>; rel=preload`) to clients that allow push.
    #[arg(long = "push")]
    pub push: bool,
    /// 103 Early Hints: `/page` first answers `103 Early Hints` with `link: <...>;
    /// rel=preload; as=style|script` for its render-blocking CSS and JS, on HTTP/1.1,
    /// HTTP/2 and HTTP/3, then its 200 after the page's think time (`/page?think=200ms`)
    #[arg(long = "early-hints")]
    pub early_hints: bool,
    /// 0-RTT: accept TLS 1.3 early data and QUIC 0-RTT from resumed clients (single-use
    /// tickets); only GET and HEAD are answered from early data, other requests (and
    /// `?replay=unsafe` targets) get `425 Too Early` (RFC 8470). Off by default
    #[arg(long = "0rtt")]
    pub zero_rtt: bool,

    /// TCP_NOTSENT_LOWAT in bytes with --priorities rfc9218 (0: kernel default): keeps unsent
    /// socket data small so priorities act on a slow link.
    #[arg(long = "notsent-lowat", value_name = "SIZE", value_parser = parse_u32_size,
          default_value_t = defaults().notsent_lowat)]
    pub notsent_lowat: u32,

    /// Apply --notsent-lowat only to connections with at least this RTT (measured from our
    /// SETTINGS to their ACK); 0 applies it to all.
    #[arg(long = "notsent-lowat-min-rtt", value_name = "DURATION", value_parser = parse_duration,
          default_value = "10ms")]
    pub notsent_lowat_min_rtt: Duration,

    /// HTTP/1.1 persistent connections; off closes after every response (HTTP/1.0 style).
    #[arg(long = "keep-alive", value_name = "on|off", value_parser = parse_on_off, action = clap::ArgAction::Set,
          default_value = "on", conflicts_with = "no_keep_alive")]
    pub keep_alive: bool,

    /// Same as --keep-alive off.
    #[arg(long = "no-keep-alive")]
    pub no_keep_alive: bool,

    /// Close a connection idle this long (and a request head or TLS handshake taking longer:
    /// slowloris).
    #[arg(long = "idle-timeout", value_name = "DURATION", value_parser = parse_duration,
          default_value = "60s")]
    pub idle_timeout: Duration,

    /// End a connection after N requests (nginx's keepalive_requests): HTTP/1.1 answers the
    /// Nth with `connection: close`; HTTP/2 sends GOAWAY, answers what it accepted, closes.
    #[arg(long = "max-requests-per-connection", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests_per_connection: Option<u32>,

    /// Largest request body accepted; larger gets 413 (HTTP/2: then RST_STREAM).
    #[arg(long = "max-request-body", value_name = "SIZE", value_parser = parse_size,
          default_value = "16M")]
    pub max_request_body: u64,

    /// Serve static files from DIR for paths the built-in endpoints do not claim (no access
    /// outside DIR).
    #[arg(long = "root", value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Also serve HTTP/3 (QUIC on UDP, ALPN h3) on the TLS port number with the same
    /// certificate, and advertise it with `alt-svc: h3=":PORT"` on the TLS port. Off by
    /// default: it adds a UDP socket and a thread, and alt-svc would move browsers (and the
    /// page experiments) to HTTP/3 unasked. Needs --tls or --tls-listen.
    #[arg(long = "h3")]
    pub h3: bool,

    /// With --h3: send without UDP GSO (one datagram per system call), to measure its effect.
    #[arg(long = "no-udp-gso", requires = "h3")]
    pub no_udp_gso: bool,

    /// Print only the listening addresses and the certificate (no hints).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

fn parse_u32_size(s: &str) -> Result<u32, String> {
    let n = parse_size(s)?;
    u32::try_from(n).map_err(|_| format!("{s:?} is too large (at most {})", u32::MAX))
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("invalid value {s:?}: expected on or off")),
    }
}

/// The server configuration the flags describe.
pub fn build_config(args: &ServeArgs) -> ServerConfig {
    let tls_default = SocketAddr::from(([127, 0, 0, 1], 8443));
    let d = defaults();
    let l = &args.listener;
    let (listen, tls_listen) = if args.tls {
        (None, Some(l.listen.unwrap_or(tls_default)))
    } else {
        (
            Some(l.listen.or(d.listen).unwrap_or(tls_default)),
            l.tls_listen,
        )
    };
    ServerConfig {
        listen,
        tls_listen,
        cert: l.cert.clone(),
        key: l.key.clone(),
        cert_dir: l.cert_dir.clone(),
        threads: args.threads,
        max_concurrent_streams: args.max_concurrent_streams,
        initial_stream_window: args.initial_window_size,
        initial_connection_window: args.connection_window_size,
        max_frame_size: args.max_frame_size,
        header_table_size: args.header_table_size,
        max_header_list_size: args.max_header_list_size,
        priorities: args.priorities,
        push: args.push,
        early_hints: args.early_hints,
        zero_rtt: args.zero_rtt,
        notsent_lowat: args.notsent_lowat,
        notsent_lowat_min_rtt: args.notsent_lowat_min_rtt,
        keep_alive: args.keep_alive && !args.no_keep_alive,
        idle_timeout: args.idle_timeout,
        max_requests_per_connection: args.max_requests_per_connection,
        max_request_body: args.max_request_body,
        root: args.root.clone(),
        h3: args.h3,
        h3_gso: !args.no_udp_gso,
        // This command prints the certificate location itself (on stdout).
        quiet: true,
        ..d
    }
}

fn parse_priorities(s: &str) -> Result<h2lab_server::sched::PriorityMode, String> {
    h2lab_server::sched::PriorityMode::parse(s)
        .ok_or_else(|| format!("expected off or rfc9218, got {s:?}"))
}

/// Runs `h2lab serve` and returns the process exit status.
pub fn main(args: ServeArgs) -> ExitCode {
    let config = build_config(&args);
    if let Err(m) = config.validate() {
        return fail(&format!("invalid configuration: {m}"));
    }
    // Before the server starts: a signal that arrives as soon as the addresses are printed
    // must already stop it cleanly.
    let signals = match SignalPipe::stop_signals() {
        Ok(s) => s,
        Err(e) => return fail(&format!("cannot install signal handlers: {e}")),
    };
    let server = match h2lab_server::spawn(config) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    print_banner(&server, &args);
    if let Err(e) = stop_on_signal(signals, server.shutdown_handle()) {
        server.shutdown();
        let _ = server.join();
        return fail(&format!("cannot start the signal thread: {e}"));
    }
    match server.join() {
        Ok(()) => {
            if !args.quiet {
                println!("{PREFIX} stopped");
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

/// The lines a user (or a script, or a test) needs: where to connect and what to trust.
fn print_banner(server: &RunningServer, args: &ServeArgs) {
    print_listening(PREFIX, server.addr(), server.tls_addr());
    if let Some(a) = server.h3_addr() {
        println!("{PREFIX} listening on https://{a}/ (HTTP/3 over QUIC, UDP)");
    }
    if let (Some(cert), Some(key)) = (server.cert_path(), server.key_path()) {
        if args.listener.cert.is_some() {
            println!(
                "{PREFIX} certificate {} (key {})",
                cert.display(),
                key.display()
            );
        } else {
            println!(
                "{PREFIX} self-signed certificate {} (key {}) for localhost, 127.0.0.1 and ::1",
                cert.display(),
                key.display()
            );
        }
    }
    if args.early_hints {
        // A setting that changes what clients receive: printed even with --quiet.
        println!(
            "{PREFIX} early hints: on (/page answers 103 Early Hints naming its CSS and JS, then its 200 after ?think=)"
        );
    }
    if server.tls_addr().is_some() {
        print_zero_rtt(args.zero_rtt, args.quiet);
    }
    if args.quiet {
        return;
    }
    if let Some(a) = server.addr() {
        println!("{PREFIX} try: curl --http2-prior-knowledge http://{a}/ or h2load -n1000 -m10 http://{a}/data?size=1k");
    }
    if let (Some(a), Some(cert)) = (server.tls_addr(), server.cert_path()) {
        println!(
            "{PREFIX} try: curl --cacert {} https://localhost:{}/ or h2load -n1000 -m10 https://{a}/json",
            cert.display(),
            a.port()
        );
    }
    println!("{PREFIX} endpoints: / /ping /json /data?size=N /compute?work=N /info /delay?ms=N /status/N /page?n=N; SIGINT or SIGTERM stops");
}

/// The 0-RTT setting of the TLS ports: on is printed even with `--quiet` (it changes what
/// clients may do), off only in the full banner.
fn print_zero_rtt(on: bool, quiet: bool) {
    if on {
        println!(
            "{PREFIX} 0-RTT: on (TLS 1.3 early data up to {} KiB and QUIC 0-RTT from resumed clients, single-use tickets; GET/HEAD answered early, others 425 Too Early)",
            h2lab_server::early::MAX_EARLY_DATA / 1024
        );
    } else if !quiet {
        println!("{PREFIX} 0-RTT: off (sessions resume; --0rtt accepts early data)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> ServeArgs {
        let mut v = vec!["h2lab", "serve"];
        v.extend_from_slice(args);
        match crate::command::Cli::try_parse_from(v).unwrap().command {
            crate::command::Command::Serve(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_library_defaults() {
        let c = build_config(&parse(&[]));
        let d = ServerConfig::default();
        assert_eq!(c.listen, d.listen);
        assert_eq!(c.tls_listen, None);
        assert_eq!(c.threads, d.threads);
        assert_eq!(c.max_concurrent_streams, d.max_concurrent_streams);
        assert_eq!(c.initial_stream_window, d.initial_stream_window);
        assert_eq!(c.initial_connection_window, d.initial_connection_window);
        assert_eq!(c.max_frame_size, d.max_frame_size);
        assert_eq!(c.header_table_size, d.header_table_size);
        assert_eq!(c.max_header_list_size, d.max_header_list_size);
        assert_eq!(c.keep_alive, d.keep_alive);
        assert_eq!(c.idle_timeout, d.idle_timeout);
        assert_eq!(c.max_request_body, d.max_request_body);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn flags_map_to_the_config() {
        let c = build_config(&parse(&[
            "--listen",
            "9000",
            "--tls-listen",
            "[::1]:0",
            "-t",
            "3",
            "--max-concurrent-streams",
            "7",
            "--initial-window-size",
            "1M",
            "--connection-window-size",
            "16M",
            "--max-frame-size",
            "32K",
            "--header-table-size",
            "0",
            "--max-header-list-size",
            "64K",
            "--keep-alive",
            "off",
            "--idle-timeout",
            "500ms",
            "--max-request-body",
            "1K",
            "--root",
            "/srv",
            "--priorities",
            "off",
            "--notsent-lowat",
            "4K",
            "-q",
        ]));
        assert_eq!(c.listen, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(c.tls_listen, Some("[::1]:0".parse().unwrap()));
        assert_eq!(c.threads, 3);
        assert_eq!(c.max_concurrent_streams, 7);
        assert_eq!(c.initial_stream_window, 1 << 20);
        assert_eq!(c.initial_connection_window, 16 << 20);
        assert_eq!(c.max_frame_size, 32 << 10);
        assert_eq!(c.header_table_size, 0);
        assert_eq!(c.max_header_list_size, 64 << 10);
        assert!(!c.keep_alive);
        assert_eq!(c.idle_timeout, Duration::from_millis(500));
        assert_eq!(c.max_request_body, 1024);
        assert_eq!(c.root, Some(PathBuf::from("/srv")));
        assert_eq!(c.priorities, h2lab_server::sched::PriorityMode::Off);
        assert_eq!(c.notsent_lowat, 4096);
        assert!(!build_config(&parse(&["--no-keep-alive"])).keep_alive);
    }

    #[test]
    fn tls_moves_the_listen_address_to_tls() {
        let c = build_config(&parse(&["--tls", "--listen", "127.0.0.1:0"]));
        assert_eq!(c.listen, None);
        assert_eq!(c.tls_listen, Some("127.0.0.1:0".parse().unwrap()));
        let c = build_config(&parse(&["--tls"]));
        assert_eq!(c.tls_listen, Some("127.0.0.1:8443".parse().unwrap()));
    }

    #[test]
    fn bad_values_are_rejected() {
        use crate::command::Cli;
        for bad in [
            &["serve", "--listen", "nowhere"][..],
            &["serve", "--threads", "0"],
            &["serve", "--keep-alive", "maybe"],
            &["serve", "--priorities", "h2o"],
            &["serve", "--keep-alive", "off", "--no-keep-alive"],
            &["serve", "--tls", "--tls-listen", "1"],
            &["serve", "--cert", "c.pem"],
            &["serve", "--max-frame-size", "5G"],
            &["serve", "--idle-timeout", "soon"],
        ] {
            let mut v = vec!["h2lab"];
            v.extend_from_slice(bad);
            assert!(Cli::try_parse_from(&v).is_err(), "{bad:?}");
        }
        assert!(crate::values::parse_addr("localhost:0").is_ok());
        assert!(build_config(&parse(&["--max-frame-size", "1K"]))
            .validate()
            .is_err());
    }
}
