//! `h2lab page`: browser-like page loads (see `h2lab_lab::page`). With no arguments it starts
//! the built-in server and a `wan` link in-process and loads the built-in `/page` (HTML +
//! 300 images of 1–8 KiB) 6 times over HTTP/1.1 (6 connections), HTTP/2 and HTTP/3 (1
//! connection each), alternated, and states each ratio with its 95% CI and verdict (win,
//! parity within `--equivalence`, or undecided). `--slow` runs the slow-endpoint case
//! instead; `--users` adds a load test.
//!
//! Progress goes to stderr, the tables to stdout; the report directory gets `index.html`
//! and `results.json`. Exit status: 0 on success, 1 on usage errors or when no load
//! succeeded.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use h2lab_engine::{parse_connect_to, BaseUri, Target};
use h2lab_lab::compare::axes::parse_profile;
use h2lab_lab::env::{host_port, Route};
use h2lab_lab::fmt::parse_dur;
use h2lab_lab::html;
use h2lab_lab::page::users::{parse_stages, ramp_hold, LoadTestConfig};
use h2lab_lab::page::{output, PageConfig, SlowConfig};
use h2lab_lab::proto;

use crate::compare::{write_file, write_outputs, EXIT_FAILURE};

const PREFIX: &str = "h2lab page: error:";

/// `h2lab page` options.
#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// Page to load instead of the built-in /page (its same-origin img, script, link and
    /// source resources are loaded too).
    #[arg(value_name = "URL")]
    pub url: Option<String>,

    /// Where to connect instead of the URL's host: unix:PATH for a UNIX domain socket (needs a
    /// URL, which still names the origin, and --link loopback), or a base URI
    /// (http://host:port, host:port) whose scheme, host and port replace the URL's, as with
    /// bench.
    #[arg(short = 'B', long = "base-uri", value_name = "URI")]
    pub base_uri: Option<String>,

    /// Connect to HOST[:PORT] instead of the URL's authority (which is still sent); every
    /// address HOST resolves to is tried in order. A comma-separated list tries each entry's
    /// addresses in turn.
    // This doc comment is --help text: HOST[:PORT] is not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long = "connect-to", value_name = "HOST[:PORT]")]
    pub connect_to: Option<String>,

    /// Query of the built-in /page: n images of min..max bytes.
    #[arg(long, value_name = "QUERY", default_value = h2lab_lab::page::DEFAULT_PAGE_QUERY)]
    pub page_query: String,

    /// Protocols to compare: h1, h1.0, h1-tls, h2, h2c, h3 (HTTP/3 over QUIC, one connection)
    /// [default: h1-tls,h2,h3 (HTTP/1.1 over 6 connections vs HTTP/2 vs HTTP/3, each on one
    /// connection); with --slow or --users h1-tls,h2 (the seeds' comparison); for an https://
    /// URL h1-tls,h2 (h3 only when listed: HTTP/3 on the URL's host and port); for an http://
    /// URL h1,h2c].
    #[arg(long, value_name = "LIST")]
    pub protocols: Option<String>,

    /// Link profile between client and server: loopback, lan, wan, mobile, lossy (wan with 1% loss), lossy3 (3%).
    #[arg(long, value_name = "PROFILE", default_value = "wan")]
    pub link: String,

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

    /// The loss experiment: load the page over the WAN link (40 ms, 50 Mbit/s) at each of
    /// these loss percentages, from 0, 1 and 3 (TCP and UDP relayed with the same loss
    /// probability), HTTP/1.1 x6 vs HTTP/2 vs HTTP/3 by default, with page-time CIs and
    /// paired verdicts per level; replaces --link [default -n: 6, the fewest rounds that can
    /// decide].
    #[arg(long, value_name = "LIST", conflicts_with_all = ["slow", "users", "stages", "render"])]
    pub loss: Option<String>,

    /// HTTP/1.x connections per host (browsers: 6).
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub h1_connections: u32,

    /// HTTP/2 connections per host (browsers: 1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub h2_connections: u32,

    /// HTTP/2 streams per connection (the server's limit applies too).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub h2_streams: u32,

    /// Page loads per protocol (alternated; 6 or more can decide a verdict) [default: 6;
    /// --slow: 1].
    #[arg(short = 'n', long, value_name = "N")]
    pub repeat: Option<u32>,

    /// Equivalence band of the verdicts: page-time ratios whose 95% CI lies within 1 ± this
    /// are parity, outside it a win, across its edge undecided [default: 3%].
    #[arg(long, value_name = "PERCENT")]
    pub equivalence: Option<String>,

    /// The slow-endpoint case instead of page loads: parallel requests to /delay.
    #[arg(long)]
    pub slow: bool,

    /// Parallel requests of --slow.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub slow_requests: u32,

    /// Server-side delay of each --slow request.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub delay: String,

    /// The render experiment: a page with render-blocking CSS/JS and images over
    /// HTTP/1.1 x6 and HTTP/2 against a server with priorities off and one with RFC 9218
    /// priorities on, and one pushing the CSS/JS (--push), on the wan and a lossy (2%) link;
    /// reports time until the CSS/JS are done and until the page is complete, bytes pushed
    /// and wasted, with verdicts. --page-query, -n and --json apply.
    #[arg(long, conflicts_with_all = ["slow", "users", "stages", "url"])]
    pub render: bool,

    /// With --render: the Early Hints experiment instead — two built-in servers, one sending
    /// 103 Early Hints for the page's CSS/JS before its 200 (after the page query's think=),
    /// one not; per protocol (--protocols, default h1-tls,h2,h3) time until the CSS/JS are
    /// done and until the page is complete, with and without hints, paired verdicts and the
    /// floor the link allows; on the wan and a lossy (2%) link, or only --link when it is not
    /// wan [default page: n=30&min=1k&max=8k&seed=1&css=2&css_size=24k&js=2&js_size=64k&think=200ms].
    #[arg(long, requires = "render")]
    pub early_hints: bool,

    /// Accept or refuse HTTP/2 server push.
    ///
    /// HTTP/2 server push: accept (the built-in server then pushes each page's CSS and JS,
    /// pushed responses are used instead of requested and counted) or refuse
    /// (SETTINGS_ENABLE_PUSH = 0, as browsers do now).
    #[arg(long, value_name = "accept|refuse", default_value = "refuse", value_parser = parse_push,
          action = clap::ArgAction::Set)]
    pub push: bool,

    /// Load test: ramp up to N virtual users (over --ramp), hold (--hold), ramp down.
    #[arg(long, value_name = "N")]
    pub users: Option<u32>,

    /// Load test stages DURATION:USERS,... (e.g. the seed's 5m:10,5m:10,30s:0).
    #[arg(long, value_name = "LIST")]
    pub stages: Option<String>,

    /// Ramp-up time of --users.
    #[arg(long, value_name = "DURATION", default_value = "20s")]
    pub ramp: String,

    /// Hold time of --users.
    #[arg(long, value_name = "DURATION", default_value = "20s")]
    pub hold: String,

    /// Load test rounds: the whole --users/--stages scenario runs this many times per
    /// protocol, the protocols alternating round by round; from 6 rounds on, the per-round
    /// ratio of median page times gives a verdict (win, slight, parity or undecided). 1: one
    /// run each, no verdict.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub load_rounds: u32,

    /// Pause between a virtual user's page loads.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub think: String,

    /// Also load every page with a real browser: headless Chromium (`chromium` on PATH) or
    /// the Chromium/Chrome binary at PATH, driven over the DevTools protocol on a pipe, a
    /// fresh profile per load, pinned to the client CPUs. One browser arm per TLS protocol
    /// (HTTP/1.1 on a listener offering only http/1.1, HTTP/2, HTTP/3 forced over QUIC),
    /// alternated round by round with the simulated arms through the same link; the report
    /// puts browser and simulated page times side by side with the per-round ratio
    /// simulated/browser and its 95% CI. A load where a resource came over another protocol
    /// is reported as a protocol fallback and left out. Works with --slow (the page issues
    /// the parallel fetch() calls), --loss, --repeat-view and --render --early-hints
    /// (Chromium arms over HTTP/2 and HTTP/3, with and without hints).
    #[arg(long, value_name = "chromium|PATH", conflicts_with_all = ["users", "stages"])]
    pub browser: Option<String>,

    /// With --browser: only the browser arms run (no simulated loads).
    #[arg(long, requires = "browser")]
    pub browser_only: bool,

    /// A returning visit: every load is a first view and, right after it, a repeat view on
    /// new connections that resume the first view's TLS sessions (TLS and QUIC; no 0-RTT);
    /// the fetcher keeps no HTTP cache (the built-in page's objects are no-store, so a
    /// browser re-fetches them too). Reports both views per protocol, the repeat-vs-first
    /// verdict and each view against its round-trip floor. With --browser, Chromium loads
    /// both views in one process, its connections closed between them (cache and TLS
    /// sessions kept).
    #[arg(long, conflicts_with_all = ["slow", "users", "stages", "render", "loss"])]
    pub repeat_view: bool,

    /// With --repeat-view: the repeat view sends its first requests on each resumed
    /// connection as TLS 1.3 early data (HTTP/1.1, HTTP/2) or QUIC 0-RTT (HTTP/3), and the
    /// built-in server accepts them (`serve --0rtt`: safe methods, single-use tickets);
    /// rejected early data is sent again after the handshake. The first view sends none.
    /// Reports per protocol the connections whose 0-RTT was accepted and the repeat view
    /// against its 0-RTT floor. Off by default: it changes what the server sees.
    #[arg(long = "0rtt", requires = "repeat_view")]
    pub zero_rtt: bool,

    /// Built-in server threads.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub server_threads: usize,

    #[command(flatten)]
    pub cpus: crate::compare::CpuArgs,

    /// Write the HTML report (index.html, results.json) here.
    #[arg(long, value_name = "DIR", default_value = "h2lab-page-report")]
    pub report: PathBuf,

    /// Do not write the report directory.
    #[arg(long)]
    pub no_report: bool,

    /// Also write the JSON results to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

/// `--push accept|refuse`.
pub(crate) fn parse_push(s: &str) -> Result<bool, String> {
    match s {
        "accept" => Ok(true),
        "refuse" => Ok(false),
        _ => Err("expected accept or refuse".into()),
    }
}

fn build(a: &PageArgs) -> Result<PageConfig, String> {
    let mut c = PageConfig {
        url: a.url.clone(),
        page_query: a.page_query.clone(),
        link: parse_profile(&a.link).map_err(|e| format!("--link: {e}"))?,
        h1_connections: a.h1_connections,
        h2_connections: a.h2_connections,
        h2_streams: a.h2_streams,
        server_threads: a.server_threads.max(1),
        pinning: a.cpus.pinning()?,
        push: a.push,
        repeat_view: a.repeat_view,
        zero_rtt: a.zero_rtt,
        mode: a.mode,
        tcp_cc: a.cc.clone(),
        ..PageConfig::default()
    };
    if a.h1_connections == 0 || a.h2_connections == 0 || a.h2_streams == 0 {
        return Err("--h1-connections, --h2-connections and --h2-streams must be positive".into());
    }
    if a.page_query.contains(char::is_whitespace) {
        return Err("--page-query: no spaces".into());
    }
    route(a, &mut c)?;
    if let Some(b) = &a.browser {
        let binary = h2lab_lab::page::browser::find_browser(b).map_err(|e| e.to_string())?;
        c.browser = Some(h2lab_lab::page::browser::BrowserConfig {
            binary,
            only: a.browser_only,
        });
    }
    if let Some(s) = &a.loss {
        c.loss_levels =
            h2lab_lab::link::parse_loss_levels(s).map_err(|e| format!("--loss: {e}"))?;
    }
    if let Some(s) = &a.protocols {
        c.protocols = Some(proto::parse_list(s).map_err(|e| format!("--protocols: {e}"))?);
    }
    c.repeat = match a.repeat {
        Some(0) => return Err("--repeat: must be at least 1".into()),
        Some(n) => n,
        None if a.slow => 1,
        None => 6,
    };
    if let Some(e) = &a.equivalence {
        c.equivalence =
            crate::compare::parse_fraction(e).map_err(|e| format!("--equivalence: {e}"))?;
    }
    if a.slow {
        let delay = parse_dur(&a.delay).map_err(|e| format!("--delay: {e}"))?;
        if a.slow_requests == 0 || a.slow_requests > 10_000 {
            return Err("--slow-requests: expected 1..=10000".into());
        }
        c.slow = Some(SlowConfig {
            requests: a.slow_requests,
            delay,
        });
        c.timeout = c.timeout.max(delay * (a.slow_requests + 10));
    }
    let think = parse_dur(&a.think).map_err(|e| format!("--think: {e}"))?;
    let stages = match (&a.stages, a.users) {
        (Some(s), _) => Some(parse_stages(s).map_err(|e| format!("--stages: {e}"))?),
        (None, Some(0)) => return Err("--users: must be at least 1".into()),
        (None, Some(n)) => Some(ramp_hold(
            n,
            parse_dur(&a.ramp).map_err(|e| format!("--ramp: {e}"))?,
            parse_dur(&a.hold).map_err(|e| format!("--hold: {e}"))?,
        )),
        (None, None) => None,
    };
    if let Some(stages) = stages {
        if a.slow {
            return Err("--users/--stages cannot be combined with --slow".into());
        }
        c.load_test = Some(LoadTestConfig {
            stages,
            think,
            sample: Duration::from_secs(1),
            rounds: a.load_rounds,
        });
    }
    Ok(c)
}

/// `-B` and `--connect-to`: where connections go (the URL still names the origin).
fn route(a: &PageArgs, c: &mut PageConfig) -> Result<(), String> {
    if let Some(b) = &a.base_uri {
        let Some(url) = &a.url else {
            return Err("--base-uri needs a page URL (the built-in server listens on TCP)".into());
        };
        match BaseUri::parse(b).map_err(|e| format!("-B: {e}"))? {
            BaseUri::Unix(path) => c.route = Some(Route::Unix(path)),
            BaseUri::Tcp { scheme, host, port } => {
                let t = Target::parse(url).map_err(|e| e.to_string())?;
                let t = Target {
                    scheme: scheme.unwrap_or(t.scheme),
                    host,
                    port,
                    path: t.path,
                };
                c.url = Some(format!("{}://{}{}", t.scheme, host_port(&t), t.path));
            }
        }
    }
    if let Some(list) = &a.connect_to {
        if matches!(c.route, Some(Route::Unix(_))) {
            return Err("--connect-to cannot be combined with -B unix:PATH".into());
        }
        let mut hosts = Vec::new();
        for entry in list.split(',') {
            let (host, port) = parse_connect_to(entry.trim()).map_err(|e| e.to_string())?;
            hosts.push((host, (port != 0).then_some(port)));
        }
        let default_port = match &c.url {
            Some(u) => Target::parse(u).map_err(|e| e.to_string())?.port,
            None => return Err("--connect-to needs a page URL".into()),
        };
        c.route = Some(Route::resolve(&hosts, default_port).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// `h2lab page --render --early-hints`.
fn main_hints(args: &PageArgs) -> ExitCode {
    use h2lab_lab::page::hints;
    let mut cfg = hints::HintsConfig {
        mode: args.mode,
        tcp_cc: args.cc.clone(),
        ..hints::HintsConfig::default()
    };
    let mut setup = || -> Result<(), String> {
        if args.page_query != h2lab_lab::page::DEFAULT_PAGE_QUERY {
            cfg.page_query = args.page_query.clone();
        }
        if let Some(n) = args.repeat {
            cfg.repeat = n.max(1);
        }
        if let Some(e) = &args.equivalence {
            cfg.equivalence =
                crate::compare::parse_fraction(e).map_err(|e| format!("--equivalence: {e}"))?;
        }
        if let Some(p) = &args.protocols {
            let v = proto::parse_list(p).map_err(|e| format!("--protocols: {e}"))?;
            if v.iter().any(|p| !p.tls()) {
                return Err("--early-hints: TLS protocols only (h1-tls, h2, h3)".into());
            }
            cfg.protocols = v;
        }
        if let Some(b) = &args.browser {
            let bin = h2lab_lab::page::browser::find_browser(b).map_err(|e| e.to_string())?;
            cfg.browser = Some(bin);
        }
        if args.link != "wan" {
            let profile = parse_profile(&args.link).map_err(|e| format!("--link: {e}"))?;
            cfg.links = vec![h2lab_lab::page::render::RenderLink {
                name: profile.name().into(),
                profile,
                loss: 0.0,
            }];
        }
        Ok(())
    };
    if let Err(e) = setup() {
        eprintln!("{PREFIX} {e}");
        return ExitCode::from(EXIT_FAILURE);
    }
    // Before any thread starts (a user namespace is entered single-threaded).
    crate::link_packet::privileges_for(cfg.mode, true);
    let r = hints::run(&cfg, &mut |line| {
        eprintln!("{}", h2lab_lab::fmt::wrap_long_lines(line))
    });
    report_experiment(
        args,
        r.map(|r| {
            let any = r
                .links
                .iter()
                .any(|l| l.arms.iter().any(|a| a.page_ms.is_some()));
            (hints::render_text(&r), hints::json(&r), any)
        }),
    )
}

/// Prints an experiment's text report, writes its JSON (`--json`) and returns the exit
/// status: failure when the run failed, the JSON could not be written or no load succeeded.
fn report_experiment(
    args: &PageArgs,
    run: Result<(String, String, bool), h2lab_lab::error::LabError>,
) -> ExitCode {
    let (text, json, any_load) = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    println!("{}", h2lab_lab::fmt::wrap_long_lines(&text));
    let mut status = 0;
    if let Some(p) = &args.json {
        if let Err(e) = write_file(p, &json) {
            eprintln!("{PREFIX} {e}");
            status = EXIT_FAILURE;
        }
    }
    if !any_load {
        eprintln!("{PREFIX} no page load succeeded");
        status = EXIT_FAILURE;
    }
    ExitCode::from(status)
}

/// `h2lab page --render`.
fn main_render(args: &PageArgs) -> ExitCode {
    if args.early_hints {
        return main_hints(args);
    }
    if args.browser.is_some() {
        eprintln!("{PREFIX} --browser: with --render only together with --early-hints");
        return ExitCode::from(EXIT_FAILURE);
    }
    use h2lab_lab::page::render;
    let mut cfg = render::RenderConfig {
        mode: args.mode,
        tcp_cc: args.cc.clone(),
        ..render::RenderConfig::default()
    };
    if args.page_query != h2lab_lab::page::DEFAULT_PAGE_QUERY {
        cfg.pages = vec![("custom".into(), args.page_query.clone())];
    }
    if let Some(n) = args.repeat {
        cfg.repeat = n.max(1);
    }
    if let Some(e) = &args.equivalence {
        match crate::compare::parse_fraction(e) {
            Ok(f) => cfg.equivalence = f,
            Err(e) => {
                eprintln!("{PREFIX} --equivalence: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        }
    }
    // Before any thread starts (a user namespace is entered single-threaded).
    crate::link_packet::privileges_for(cfg.mode, true);
    let r = render::run(&cfg, &mut |line| {
        eprintln!("{}", h2lab_lab::fmt::wrap_long_lines(line))
    });
    report_experiment(
        args,
        r.map(|r| {
            let any = r
                .links
                .iter()
                .any(|l| l.arms.iter().any(|a| a.page_ms.is_some()));
            (render::render_text(&r), render::json(&r), any)
        }),
    )
}

/// Runs `h2lab page` and returns the exit status.
pub fn main(args: PageArgs) -> ExitCode {
    if args.render {
        return main_render(&args);
    }
    let cfg = match build(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    crate::link_packet::privileges_for(cfg.mode, cfg.url.is_none());
    let r = match h2lab_lab::page::run(&cfg, &mut |line| {
        eprintln!("{}", h2lab_lab::fmt::wrap_long_lines(line))
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{PREFIX} {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    println!(
        "{}",
        h2lab_lab::fmt::wrap_long_lines(&output::render_text(&r))
    );
    let mut status = 0;
    let any_ok = r.protocols.iter().any(|p| p.page_ms.is_some())
        || r.browser
            .iter()
            .any(|b| b.arms.iter().any(|a| a.page.page_ms.is_some()))
        || r.slow
            .as_ref()
            .is_some_and(|s| s.results.iter().any(|p| p.page_ms.is_some()));
    if !any_ok {
        eprintln!("{PREFIX} no page load succeeded");
        status = EXIT_FAILURE;
    }
    let json = output::json(&r);
    let mut writes: Vec<(PathBuf, String)> = Vec::new();
    if let Some(p) = &args.json {
        writes.push((p.clone(), json.clone()));
    }
    if !args.no_report {
        writes.push((args.report.join("index.html"), html::page::render(&r)));
        writes.push((args.report.join("results.json"), json));
    }
    if !write_outputs(
        PREFIX,
        writes,
        (!args.no_report).then_some(args.report.as_path()),
    ) {
        status = EXIT_FAILURE;
    }
    ExitCode::from(status)
}

#[cfg(test)]
mod tests {
    use super::parse_push;

    #[test]
    fn push_accept_or_refuse() {
        assert_eq!(parse_push("accept"), Ok(true));
        assert_eq!(parse_push("refuse"), Ok(false));
        assert!(parse_push("on").is_err());
    }
}
