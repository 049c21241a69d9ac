//! `h2lab compare`: the protocol matrix (see `h2lab_lab::compare`). With no arguments it
//! starts the built-in server and the emulated links in-process and runs the default matrix
//! (about 5 minutes on 2 cores); `--quick` runs a one-minute version.
//!
//! Progress goes to stderr; the cell table, the decision table and notes to stdout. The
//! report directory gets `index.html` (self-contained), `results.json` and `results.csv`.
//!
//! Exit status: 0 when the matrix ran (failed cells are listed in the notes); 1 on usage
//! errors, when the environment could not start or no cell produced a result, or when an
//! output file could not be written; 130 when SIGINT/SIGTERM stopped it (what was measured
//! is still reported).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use h2lab_engine::StopFlag;
use std::time::Duration;

use h2lab_engine::Target;
use h2lab_lab::compare::axes::{HeaderSet, Payload};
use h2lab_lab::compare::{output, CompareConfig, Preset};
use h2lab_lab::env::{Pinning, Targets};
use h2lab_lab::fmt::{dur, wrap_long_lines};
use h2lab_lab::html;
use h2lab_lab::link::LinkProfile;
use h2lab_lab::proto::LabProtocol;

use crate::lab_values::List;

/// Exit status of failed runs and usage errors.
pub const EXIT_FAILURE: u8 = 1;
pub use crate::signals::EXIT_INTERRUPTED;

const PREFIX: &str = "h2lab compare: error:";

/// `h2lab compare` options. Lists are comma-separated.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Protocols: h1 (HTTP/1.1 keep-alive), h1.0 (no keep-alive: \
    Connection: close), h1-tls, h2 (TLS), h2c, h3 (HTTP/3 over QUIC).\nPayloads: ping, json, compute, info, a size \
    (1k, 100k: /data?size=), a /path or NAME=/path.\nHeaders: none or a size (4k: realistic \
    JWT, cookie and tracing headers).\nLinks: loopback (direct), lan (1 ms, 1 Gbit/s), wan \
    (40 ms, 50 Mbit/s), mobile (80 ms, 12/3 Mbit/s), lossy (wan with 1% loss), lossy3 (wan with 3% loss).\nDefault matrix: every payload at \
    c=50, 1 stream, no extra headers, loopback; then concurrency, headers, streams and \
    links varied one at a time on the sweep payloads (--full: the cross product)."
)]
pub struct CompareArgs {
    /// Run the one-minute matrix on loopback (4 payloads and 4 KiB headers on 10k; without
    /// h3, see --protocols; add `--links loopback,wan` for the WAN on 10k).
    #[arg(long, conflicts_with = "tiny")]
    pub quick: bool,

    /// A few-second matrix for tests.
    #[arg(long, hide = true)]
    pub tiny: bool,

    /// Measure this server instead of the built-in one: http:// serves h1, h1.0 and h2c;
    /// https:// serves h1-tls and h2.
    #[arg(long, value_name = "URL", value_parser = crate::lab_values::targets)]
    pub target: Option<Targets>,

    /// Cleartext HTTP/1.1 server for h1 and h1.0 (overrides --target).
    #[arg(long, value_name = "URL", value_parser = crate::lab_values::target)]
    pub h1_url: Option<Target>,

    /// TLS server for h2 (and h1-tls) (overrides --target).
    #[arg(long, value_name = "URL", value_parser = crate::lab_values::target)]
    pub h2_url: Option<Target>,

    /// Cleartext HTTP/2 server for h2c (overrides --target).
    #[arg(long, value_name = "URL", value_parser = crate::lab_values::target)]
    pub h2c_url: Option<Target>,

    /// HTTP/3 server for h3: an https:// URL whose host and port answer QUIC on UDP
    /// (overrides --target).
    #[arg(long, value_name = "URL", value_parser = crate::lab_values::target)]
    pub h3_url: Option<Target>,

    /// Protocols to compare [default: h1,h1.0,h1-tls,h2,h2c,h3; --quick: h1,h1.0,h1-tls,h2,h2c
    /// (with h3, --quick's first rounds take 13 s of its 55 s instead of 9 s, a round of its
    /// 100 KB condition three times as long, and fewer of the budget's rounds that narrow
    /// the intervals are left; add it with --protocols)]. A protocol listed twice
    /// (`h2c,h2c`) is an A/A control: two arms, measured separately, never a winner.
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::protocols)]
    pub protocols: Option<List<LabProtocol>>,

    /// Payloads of the base sweep [default: ping,json,1k,10k,50k,100k,compute].
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::payloads)]
    pub payloads: Option<List<Payload>>,

    /// Payloads measured when another axis varies [default: json,100k].
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::payloads)]
    pub sweep_payloads: Option<List<Payload>>,

    /// Request header sets; the first is the base [default: none,4k].
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::header_sets)]
    pub headers: Option<List<HeaderSet>>,

    /// Concurrent requests; the base is 50 if listed [default: 10,50,200].
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::counts)]
    pub concurrency: Option<List<u32>>,

    /// HTTP/2 streams per connection (connections = concurrency / streams) [default: 1,10].
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::counts)]
    pub streams: Option<List<u32>>,

    /// Link profiles; the first is the base [default: loopback,lan,wan].
    #[arg(long, value_name = "LIST", value_parser = crate::lab_values::links)]
    pub links: Option<List<LinkProfile>>,

    /// The loss experiment: the WAN link (40 ms, 50 Mbit/s) at these loss percentages,
    /// from 0, 1 and 3 (`--loss 0,1,3` is `--links wan,lossy,lossy3`).
    #[arg(long, value_name = "LIST", conflicts_with = "links", value_parser = crate::lab_values::loss_levels)]
    pub loss: Option<List<LinkProfile>>,

    /// Measure the full cross product of the axes.
    #[arg(long)]
    pub full: bool,

    /// First rounds per condition: every protocol runs once per round, back to back
    /// [default: 9; fewer, down to 6, when they would not fit in --budget]; --budget adds
    /// more.
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,

    /// Measured time per run (a window of the arm's open connections), stretched on slow
    /// links to 3 round trips of the whole concurrency [default: 15ms: short windows of the
    /// arms close together in time share more of the machine's slow and fast spells, and
    /// the budget adds rounds, see docs/methods.md].
    #[arg(long, value_name = "DURATION", value_parser = crate::lab_values::window)]
    pub duration: Option<Duration>,

    /// Unmeasured warm-up at the start of each arm's first run (its connections are set up
    /// then), discarded [default: 100ms]; later runs on the open connections warm up for
    /// 5 ms on loopback (the arm measured before has drained: a window returns once its
    /// requests in flight have completed, up to 200 ms), on a shaped link for 20 ms, one
    /// link round plus one RTT and at least two RTTs (so that the arm before has drained).
    #[arg(long, value_name = "DURATION", value_parser = crate::lab_values::duration)]
    pub warm_up: Option<Duration>,

    /// Client threads [default: 1].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,

    /// Built-in server threads.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub server_threads: usize,

    #[command(flatten)]
    pub cpus: CpuArgs,

    /// Equivalence band of the throughput and server-cost decisions: a ratio whose 95% CI
    /// lies outside 1 ± this is a win, inside it parity; one that crosses its edge is
    /// slight when it leaves 1.0 out, undecided when it contains 1.0 [default: 3%].
    #[arg(long, value_name = "PERCENT", value_parser = crate::lab_values::fraction)]
    pub equivalence: Option<f64>,

    /// Equivalence band of the throughput decisions (overrides --equivalence) [default: 3%].
    #[arg(long, value_name = "PERCENT", value_parser = crate::lab_values::fraction)]
    pub throughput_band: Option<f64>,

    /// Equivalence band of the server-cost decisions (overrides --equivalence)
    /// [default: 3%].
    #[arg(long, value_name = "PERCENT", value_parser = crate::lab_values::fraction)]
    pub cost_band: Option<f64>,

    /// Equivalence band of the p99 decisions [default: 10%: the tail of a 15 ms window
    /// spreads 10–20% between two identical arms].
    #[arg(long, value_name = "PERCENT", value_parser = crate::lab_values::fraction)]
    pub p99_band: Option<f64>,

    /// Measure a round again (up to twice) when other processes used the machine during it.
    #[arg(long)]
    pub strict: bool,

    /// After the matrix, add rounds to conditions with undecided verdicts, for at most MAX
    /// [default MAX: 2m].
    #[arg(long, value_name = "MAX", num_args = 0..=1, default_missing_value = "2m", value_parser = crate::lab_values::duration)]
    pub until_decided: Option<Duration>,

    /// Wall-time budget of the whole run: after the first rounds, the time left adds rounds
    /// to the conditions with undecided decisions, nearest to deciding first (then, if time
    /// is left, to those whose throughput or server-cost CIs are wider than
    /// --target-width); 0 measures the first rounds only [default: 285s; --quick 55s].
    #[arg(long, value_name = "DURATION", value_parser = crate::lab_values::duration)]
    pub budget: Option<Duration>,

    /// Relative CI width ((hi - lo) / ratio) at which a condition stops getting rounds from
    /// the budget [default: 3%].
    #[arg(long, value_name = "PERCENT", value_parser = crate::lab_values::fraction)]
    pub target_width: Option<f64>,

    /// Measure every run on fresh connections (connect, warm up, measure, close: the
    /// behaviour before standing connections; slower, for comparison) instead of keeping
    /// each arm's connections open between its runs.
    #[arg(long)]
    pub fresh_connections: bool,

    /// Keep runs measured in a slow spell in the statistics. By default a round in which
    /// every arm of a loopback condition cost at least 1.3x its usual CPU per request (the
    /// machine itself ran slower: a hypervisor, a neighbour) is left out of the decisions
    /// and marked in results.json (`slow_spell`); this flag turns that check off.
    #[arg(long)]
    pub keep_slow_spells: bool,

    /// How shaped links are emulated: packet (the kernel's own TCP and QUIC in network
    /// namespaces joined by TUN devices; needs root or a user namespace, else the relay with a
    /// warning) or relay (user-space relay, TCP modelled).
    #[arg(long, value_name = "MODE", default_value = "packet", value_parser = crate::values::path_mode)]
    pub mode: h2lab_lab::netpath::PathMode,

    /// TCP congestion control on the packet link, both ends of every connection (set on the
    /// route across the path: any of /proc/sys/net/ipv4/tcp_available_congestion_control,
    /// e.g. cubic, reno, bbr; default: the host's default). Recorded per side in results.json.
    #[arg(long = "cc", value_name = "NAME")]
    pub cc: Option<String>,

    /// Print every column of the cell table (wider than a terminal); by default it has the
    /// protocol, req/s with its CI, p99, server µs/req and the busy marks.
    #[arg(long)]
    pub wide: bool,

    /// Write the HTML report (index.html, results.json, results.csv) here.
    #[arg(long, value_name = "DIR", default_value = "h2lab-report")]
    pub report: PathBuf,

    /// Do not write the report directory.
    #[arg(long)]
    pub no_report: bool,

    /// Also write the JSON results to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Also write the CSV results to this file.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
}

/// CPU pinning of the in-process servers and the client (compare, page and upstream). The
/// help below says what `compare` and `page` pin (the built-in server; the links run with the
/// client); `upstream` words it for its own servers ([`crate::upstream::UpstreamArgs`]).
#[derive(Debug, Clone, Args)]
pub struct CpuArgs {
    /// CPUs for the built-in server's threads (`0`, `0-1`, `0,2`) [default: the first half
    /// of the allowed CPUs when there are two or more].
    #[arg(long, value_name = "LIST", conflicts_with = "no_pin", value_parser = crate::lab_values::cpus)]
    pub server_cpus: Option<List<usize>>,

    /// CPUs for the client's threads and the emulated links [default: the other half].
    #[arg(long, value_name = "LIST", conflicts_with = "no_pin", value_parser = crate::lab_values::cpus)]
    pub client_cpus: Option<List<usize>>,

    /// Do not pin: the scheduler places the server and the client.
    #[arg(long)]
    pub no_pin: bool,
}

impl CpuArgs {
    /// The pinning these flags ask for.
    pub fn pinning(&self) -> Result<Pinning, String> {
        if self.no_pin {
            return Ok(Pinning::Off);
        }
        let list = |l: &Option<List<usize>>| l.as_ref().map_or_else(Vec::new, |l| l.0.clone());
        let (server, client) = (list(&self.server_cpus), list(&self.client_cpus));
        if server.is_empty() && client.is_empty() {
            return Ok(Pinning::Auto);
        }
        if server.iter().any(|c| client.contains(c)) {
            return Err("--server-cpus and --client-cpus overlap".into());
        }
        Ok(Pinning::Cpus { server, client })
    }
}

/// `3%`, `3` or `0.03` as a fraction (the value parser of the lab's band flags).
pub(crate) use crate::lab_values::fraction as parse_fraction;

fn build(args: &CompareArgs) -> Result<CompareConfig, String> {
    let preset = if args.tiny {
        Preset::Tiny
    } else if args.quick {
        Preset::Quick
    } else {
        Preset::Default
    };
    let mut cfg = CompareConfig::preset(preset);
    let mut targets: Option<Targets> = args.target.clone();
    for (flag, url, protos) in [
        ("--h1-url", &args.h1_url, &[LabProtocol::H1][..]),
        (
            "--h2-url",
            &args.h2_url,
            &[LabProtocol::H2, LabProtocol::H1Tls][..],
        ),
        ("--h2c-url", &args.h2c_url, &[LabProtocol::H2c][..]),
        ("--h3-url", &args.h3_url, &[LabProtocol::H3][..]),
    ] {
        if let Some(u) = url {
            let t = targets.get_or_insert_with(Targets::default);
            for &p in protos {
                t.set_target(p, u.clone())
                    .map_err(|e| format!("{flag}: {e}"))?;
            }
        }
    }
    if let Some(t) = &targets {
        // Default protocols: what the given URLs can serve, HTTP/1.1-over-TLS only when
        // there is no cleartext HTTP/1.1.
        let mut v = t.available();
        if v.contains(&LabProtocol::H1) {
            v.retain(|p| *p != LabProtocol::H1Tls);
        }
        cfg.axes.protocols = v;
    }
    cfg.targets = targets;
    if let Some(l) = &args.protocols {
        cfg.axes.protocols = l.0.clone();
    }
    if let Some(l) = &args.payloads {
        cfg.axes.payloads = l.0.clone();
        if args.sweep_payloads.is_none() {
            // Sweep the first and last payload the user listed.
            let p = &cfg.axes.payloads;
            let mut sw = vec![p[0].clone()];
            if p.len() > 1 {
                sw.push(p[p.len() - 1].clone());
            }
            cfg.axes.sweep_payloads = sw;
        }
    }
    if let Some(l) = &args.sweep_payloads {
        cfg.axes.sweep_payloads = l.0.clone();
    }
    if let Some(l) = &args.headers {
        cfg.axes.headers = l.0.clone();
    }
    if let Some(l) = &args.concurrency {
        cfg.axes.concurrency = l.0.clone();
    }
    if let Some(l) = &args.streams {
        cfg.axes.streams = l.0.clone();
    }
    if let Some(l) = args.links.as_ref().or(args.loss.as_ref()) {
        cfg.axes.links = l.0.clone();
    }
    cfg.axes.full = args.full;
    if let Some(n) = args.runs {
        if n == 0 || n > 100 {
            return Err("--runs: expected 1..=100".into());
        }
        cfg.timing.runs = n;
    }
    if let Some(d) = args.duration {
        cfg.timing.duration = d;
    }
    if let Some(d) = args.warm_up {
        cfg.timing.warm_up = d;
    }
    if let Some(t) = args.threads {
        if t == 0 {
            return Err("--threads: must be at least 1".into());
        }
        cfg.timing.client_threads = t;
    }
    if args.server_threads == 0 {
        return Err("--server-threads: must be at least 1".into());
    }
    cfg.server_threads = args.server_threads;
    cfg.pinning = args.cpus.pinning()?;
    for (value, bands) in [
        (args.equivalence, &[0, 2][..]),
        (args.throughput_band, &[0][..]),
        (args.cost_band, &[2][..]),
        (args.p99_band, &[1][..]),
    ] {
        if let Some(band) = value {
            for &i in bands {
                *[
                    &mut cfg.bands.throughput,
                    &mut cfg.bands.p99,
                    &mut cfg.bands.server_cost,
                ][i] = band;
            }
        }
    }
    cfg.strict = args.strict;
    cfg.fresh_connections = args.fresh_connections;
    cfg.keep_slow_spells = args.keep_slow_spells;
    cfg.mode = args.mode;
    cfg.tcp_cc = args.cc.clone();
    cfg.until_decided = args.until_decided;
    if let Some(b) = args.budget {
        cfg.budget = (!b.is_zero()).then_some(b);
    }
    if let Some(w) = args.target_width {
        cfg.target_width = w;
    }
    Ok(cfg)
}

/// Writes each `(path, text)` (a failure is one line on stderr, the others are still written),
/// then names the report's `index.html` when there is a `report` directory. `false` when a
/// write failed.
pub fn write_outputs(prefix: &str, writes: Vec<(PathBuf, String)>, report: Option<&Path>) -> bool {
    let mut ok = true;
    for (path, text) in writes {
        if let Err(e) = write_file(&path, &text) {
            eprintln!("{prefix} {e}");
            ok = false;
        }
    }
    if let Some(dir) = report {
        println!("report: {}", dir.join("index.html").display());
    }
    ok
}

/// Writes `text` to `path`, creating parent directories.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Runs `h2lab compare` and returns the exit status.
pub fn main(args: CompareArgs) -> ExitCode {
    let cfg = match build(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    // Before any thread starts (a user namespace is entered by a single-threaded process).
    crate::link_packet::privileges_for(cfg.mode, cfg.targets.is_none());
    let stop = StopFlag::new();
    if let Err(e) = crate::signals::stop_on_signals(&stop) {
        eprintln!("{PREFIX} cannot install signal handlers: {e}");
        return ExitCode::from(EXIT_FAILURE);
    }
    let mut on_start =
        |plan: &h2lab_lab::compare::matrix::MatrixPlan, eta: std::time::Duration, env: &str| {
            eprintln!("{}", wrap_long_lines(&format!("server: {env}")));
            eprintln!(
                "{}",
                wrap_long_lines(&format!(
                    "{} conditions, {} cells × {} run(s) of {} (+{} warm-up): about {}{}",
                    plan.conditions.len(),
                    plan.cells.len(),
                    cfg.timing.runs,
                    dur(cfg.timing.duration),
                    dur(cfg.timing.warm_up),
                    if eta.as_secs() >= 90 {
                        format!("{:.1} min", eta.as_secs_f64() / 60.0)
                    } else {
                        format!("{:.0} s", eta.as_secs_f64())
                    },
                    match cfg.budget {
                        Some(b) if b > eta => format!(
                            ", then rounds on undecided conditions (nearest first) and CIs wider \
                         than {:.0}% until {} s",
                            100.0 * cfg.target_width,
                            b.as_secs()
                        ),
                        _ => String::new(),
                    }
                ))
            );
            if h2lab_lab::compare::schedule::interleaves(plan, cfg.fresh_connections) {
                eprintln!(
                    "first rounds interleaved across conditions (round 1 of each, then round 2, \
                     ...):\ncells are reported when their block of conditions ends"
                );
            }
        };
    let mut on_cell = |p: h2lab_lab::compare::run::Progress<'_>| {
        eprintln!("{}", output::progress_line(&p));
    };
    let r = match h2lab_lab::compare::run(&cfg, &stop, &mut on_start, &mut on_cell) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    eprintln!("{}", wrap_long_lines(&r.wall.summary()));
    let written = std::time::Instant::now();
    println!("{}", output::render_text_with(&r, args.wide));
    let json = output::json(&r);
    let csv = output::csv(&r);
    let mut status = if stop.is_stopped() {
        EXIT_INTERRUPTED
    } else {
        0
    };
    if r.cells.iter().all(|c| c.rps.is_none()) {
        eprintln!("{PREFIX} no cell produced a result");
        status = EXIT_FAILURE;
    }
    let mut writes: Vec<(PathBuf, String)> = Vec::new();
    if let Some(p) = &args.json {
        writes.push((p.clone(), json.clone()));
    }
    if let Some(p) = &args.csv {
        writes.push((p.clone(), csv.clone()));
    }
    if !args.no_report {
        let html = html::compare::render(&r);
        writes.push((args.report.join("index.html"), html));
        writes.push((args.report.join("results.json"), json));
        writes.push((args.report.join("results.csv"), csv));
    }
    if !write_outputs(
        PREFIX,
        writes,
        (!args.no_report).then_some(args.report.as_path()),
    ) {
        status = EXIT_FAILURE;
    }
    eprintln!(
        "tables and report written in {:.1} s",
        written.elapsed().as_secs_f64()
    );
    ExitCode::from(status)
}
