//! `h2lab page --browser`: real-browser arms beside the simulated fetcher's. Every load of a
//! browser arm is headless Chromium ([`h2lab_browser`]) in a fresh profile, forced onto the
//! arm's protocol and connected through the same link as the simulated arm (the link's TCP
//! relay for HTTP/1.1 and HTTP/2, its UDP relay for HTTP/3), pinned to the client's CPUs.
//! The arms alternate with the simulated ones round by round ([`ExtraArms`]), so a round's
//! browser and simulated loads were measured back to back and pair in the statistics
//! ([`super::browser_report`]).
//!
//! HTTP/1.1 on the built-in server gets a listener of its own that offers only `http/1.1`
//! in ALPN (Chromium always offers `h2`; a server choosing is what a browser meets); on an
//! external target the browser is told not to offer HTTP/2 (`--disable-http2`). The
//! built-in certificate is trusted by its SPKI pin; an external target's certificate by
//! `--ignore-certificate-errors` (recorded in the notes).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

pub use h2lab_browser::find_browser;
use h2lab_browser::{
    load, load_views, BrowserSpec, LoadOptions, PageLoad as BrowserLoad, Protocol, Workload,
};
use h2lab_server::{RunningServer, ServerConfig};

use super::rounds::RoundArm;
use super::{PageConfig, PageReport, ProtoPage, SlowConfig};
use crate::env::{pin_servers, LabEnv, PinGuard, Pinning};
use crate::error::LabError;
use crate::host::{loadavg, CpuCounters, MachineLoad};
use crate::link::{self, LinkConfig, LinkProfile, RunningLink};
use crate::proto::LabProtocol;

/// `--browser` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserConfig {
    /// The Chromium/Chrome binary (resolved from `--browser chromium|PATH`).
    pub binary: PathBuf,
    /// `--browser-only`: the simulated arms are not run.
    pub only: bool,
}

/// Arms run besides the simulated ones, one load per call, alternated round by round.
pub trait ExtraArms {
    /// How many arms.
    fn arms(&self) -> usize;
    /// Whether only these arms run (the simulated ones are skipped: `--browser-only`).
    fn only(&self) -> bool;
    /// Runs arm `arm`'s load of round `round`.
    fn run(&mut self, arm: usize, round: usize, log: &mut dyn FnMut(&str));
    /// Arm `arm`'s protocol (the simulated arm of the same protocol is its pair).
    /// `arm` is below [`ExtraArms::arms`].
    fn proto(&self, arm: usize) -> LabProtocol;
}

/// One browser arm.
pub struct BrowserArm {
    /// The protocol (the simulated arm it pairs with).
    pub proto: LabProtocol,
    /// The link it crosses.
    pub link: LinkProfile,
    opts: LoadOptions,
    /// `rounds[i]`: round `i`'s load (`None`: it failed or did not run); with
    /// `--repeat-view` its first view.
    pub rounds: Vec<Option<BrowserLoad>>,
    /// `--repeat-view`: round `i`'s repeat view, in the same browser process.
    pub repeats: Vec<Option<BrowserLoad>>,
    /// The check load run before the arm's first round with DevTools' `Network` domain on,
    /// which counts the connections (measured loads leave it off: [`LoadOptions`]'s
    /// `count_connections`). `None` when the measured loads count them (`--repeat-view`) or
    /// it failed.
    pub check: Option<BrowserLoad>,
    /// `machine[i]`: what the rest of the machine did during round `i`'s load (the
    /// browser's own processes not counted as others).
    pub machine: Vec<Option<MachineLoad>>,
    /// Why the first failed load failed.
    pub error: Option<String>,
}

/// The browser arms and what they need kept running (an HTTP/1.1-only listener, its link).
pub struct BrowserArms {
    /// The arms.
    pub arms: Vec<BrowserArm>,
    /// The binary used.
    pub binary: PathBuf,
    /// Whether loads were pinned to the client's CPUs.
    pub pinned: bool,
    /// Things worth knowing (for the report's notes).
    pub notes: Vec<String>,
    /// `--browser-only`.
    pub only: bool,
    /// `--repeat-view`: each load is a first and a repeat view ([`load_views`]).
    pub repeat_view: bool,
    _links: Vec<RunningLink>,
    _h1_server: Option<RunningServer>,
    _pin: PinGuard,
}

fn browser_protocol(p: LabProtocol) -> Option<Protocol> {
    match p {
        LabProtocol::H1Tls => Some(Protocol::H1),
        LabProtocol::H2 => Some(Protocol::H2),
        LabProtocol::H3 => Some(Protocol::H3),
        _ => None,
    }
}

/// The built-in server again, on a TLS port offering only `http/1.1` (same certificate,
/// same threads and CPUs as the first), on the server side of `profile`'s packet path if its
/// conditions cross one.
fn h1_only_server(
    env: &LabEnv,
    threads: usize,
    profile: LinkProfile,
) -> Result<(RunningServer, PinGuard, SocketAddr), LabError> {
    let side = env.server_side(profile);
    let iso = env.isolation();
    let pinning = if iso.server_cpus.is_empty() {
        Pinning::Off
    } else {
        Pinning::Cpus {
            server: iso.server_cpus.clone(),
            client: iso.client_cpus.clone(),
        }
    };
    let cfg = ServerConfig {
        listen: None,
        tls_listen: Some(match side {
            Some(_) => SocketAddr::from((h2lab_link::packet::SERVER_ADDR, 0)),
            None => SocketAddr::from(([127, 0, 0, 1], 0)),
        }),
        cert_dir: env.cert_dir().map(PathBuf::from),
        alpn: vec![b"http/1.1".to_vec()],
        threads: threads.max(1),
        quiet: true,
        ..ServerConfig::local()
    };
    let (server, _, guard) = pin_servers(&pinning, || match side {
        // Its threads start in the server namespace (and inherit the server CPUs).
        Some(e) => std::thread::scope(|sc| {
            let io = |source| h2lab_server::ServerError::Io {
                context: "entering the packet path's server side".into(),
                source,
            };
            sc.spawn(move || {
                e.enter().map_err(io)?;
                h2lab_server::spawn(cfg)
            })
            .join()
            .unwrap_or_else(|_| Err(io(std::io::Error::other("the start thread panicked"))))
        }),
        None => h2lab_server::spawn(cfg),
    });
    let server = server.map_err(|source| LabError::Server {
        role: "built-in HTTP/1.1-only server",
        source,
    })?;
    let addr = server
        .tls_addr()
        .ok_or(LabError::NoAddress("HTTP/1.1-only server: no address"))?;
    Ok((server, guard, addr))
}

impl BrowserArm {
    /// The browser protocol the arm is forced onto.
    pub fn protocol(&self) -> Protocol {
        self.opts.protocol
    }

    /// Whether the measured loads count connections (DevTools' `Network` domain on).
    pub fn opts_count_connections(&self) -> bool {
        self.opts.count_connections
    }
}

impl BrowserArms {
    /// One browser arm per TLS protocol of `protos` (HTTP/1.1 over TLS, HTTP/2, HTTP/3;
    /// cleartext protocols have none: browsers speak HTTP/2 and HTTP/3 only over TLS) over
    /// `profile`, loading `workload`.
    pub fn setup(
        env: &mut LabEnv,
        cfg: &BrowserConfig,
        profile: LinkProfile,
        protos: &[LabProtocol],
        workload: Workload,
        threads: usize,
        timeout: std::time::Duration,
    ) -> Result<BrowserArms, LabError> {
        let client = env.isolation().client_cpus.clone();
        let spec = BrowserSpec {
            binary: cfg.binary.clone(),
            cpus: (!client.is_empty()).then_some(client),
            extra_args: Vec::new(),
        };
        let pin = env
            .cert_path()
            .map(|p| h2lab_browser::spki::pin_of_pem_file(&p))
            .transpose()
            .map_err(LabError::Browser)?;
        let mut out = BrowserArms {
            arms: Vec::new(),
            binary: cfg.binary.clone(),
            pinned: spec.cpus.is_some(),
            notes: Vec::new(),
            only: cfg.only,
            repeat_view: false,
            _links: Vec::new(),
            _h1_server: None,
            _pin: PinGuard::default(),
        };
        if pin.is_none() {
            out.notes.push(
                "browser: the external target's certificate is accepted without checks \
                 (--ignore-certificate-errors)"
                    .into(),
            );
        }
        for &p in protos {
            let Some(bp) = browser_protocol(p) else {
                out.notes.push(format!(
                    "browser: no {} arm (browsers speak HTTP/2 and HTTP/3 only over TLS)",
                    p.label()
                ));
                continue;
            };
            let origin = env.origin(p, profile)?;
            let mut extra = Vec::new();
            let addr = if bp == Protocol::H1 && env.is_builtin() {
                let (server, guard, upstream) = h1_only_server(env, threads, profile)?;
                out._h1_server = Some(server);
                out._pin = guard;
                // On a packet path the server is already behind it.
                if profile == LinkProfile::Loopback || env.server_side(profile).is_some() {
                    upstream
                } else {
                    let l = link::spawn(LinkConfig::profile(
                        profile,
                        SocketAddr::from(([127, 0, 0, 1], 0)),
                        upstream,
                    ))
                    .map_err(|source| LabError::Link {
                        name: Some(profile.to_string()),
                        source,
                    })?;
                    let a = l.addr();
                    out._links.push(l);
                    a
                }
            } else {
                if bp == Protocol::H1 {
                    extra.push("--disable-http2".to_string());
                }
                match origin.connect_to.first() {
                    Some(a) => *a,
                    None => (origin.target.host.as_str(), origin.target.port)
                        .to_socket_addrs()
                        .ok()
                        .and_then(|mut a| a.next())
                        .ok_or(LabError::NoAddress("browser: the target does not resolve"))?,
                }
            };
            let host = if env.is_builtin() {
                "localhost".to_string()
            } else {
                origin.target.host.clone()
            };
            let mut spec = spec.clone();
            spec.extra_args = extra;
            if pin.is_none() {
                spec.extra_args.push("--ignore-certificate-errors".into());
            }
            out.arms.push(BrowserArm {
                proto: p,
                link: profile,
                opts: LoadOptions {
                    spec,
                    protocol: bp,
                    host,
                    addr,
                    spki_pin: pin.clone().unwrap_or_default(),
                    workload: workload.clone(),
                    timeout,
                    count_connections: false,
                },
                rounds: Vec::new(),
                repeats: Vec::new(),
                check: None,
                machine: Vec::new(),
                error: None,
            });
        }
        Ok(out)
    }
}

impl ExtraArms for BrowserArms {
    fn arms(&self) -> usize {
        self.arms.len()
    }

    fn only(&self) -> bool {
        self.only
    }

    fn proto(&self, arm: usize) -> LabProtocol {
        self.arms[arm].proto
    }

    fn run(&mut self, arm: usize, round: usize, log: &mut dyn FnMut(&str)) {
        let Some(a) = self.arms.get_mut(arm) else {
            return;
        };
        let name = format!("chromium {}", a.proto.label());
        if round == 0 && !a.opts.count_connections {
            let mut o = a.opts.clone();
            o.count_connections = true;
            match load(&o) {
                Ok(l) => {
                    log(&format!(
                        "check {name:<16} {} connection(s) (DevTools Network events on; not \
                         measured)",
                        l.connections
                    ));
                    a.check = Some(l);
                }
                Err(e) => log(&format!("check {name}: {e}")),
            }
        }
        let before = CpuCounters::now();
        let load_avg = loadavg();
        let t0 = std::time::Instant::now();
        let (r, repeat) = if self.repeat_view {
            match load_views(&a.opts) {
                Ok((first, again)) => (Ok(first), Some(again)),
                Err(e) => (Err(e), None),
            }
        } else {
            (load(&a.opts), None)
        };
        let elapsed = t0.elapsed();
        let machine = match (&before, CpuCounters::now()) {
            (Some(b), Some(e)) => {
                let browser = r
                    .as_ref()
                    .ok()
                    .and_then(|l| repeat.as_ref().or(Some(l)).and_then(|l| l.process_cpu_ms));
                Some(machine_load(b, &e, load_avg, browser))
            }
            _ => None,
        };
        if a.machine.len() <= round {
            a.machine.resize_with(round + 1, || None);
        }
        a.machine[round] = machine;
        match &r {
            Ok(l) => {
                let off = l.off_protocol(a.opts.protocol.next_hop());
                let conns = if a.opts.count_connections {
                    format!("{} connection(s), ", l.connections)
                } else {
                    String::new()
                };
                log(&format!(
                    "load {} {:<16} {:>9}  {conns}{} resources, browser CPU {} in {}{}{}",
                    round + 1,
                    name,
                    crate::fmt::ms(l.page_ms()),
                    l.resources.len(),
                    l.cpu_ms.map_or_else(|| "-".into(), crate::fmt::ms),
                    crate::fmt::ms(elapsed.as_secs_f64() * 1e3),
                    if machine.is_some_and(|m| m.busy()) {
                        "  ! busy machine"
                    } else {
                        ""
                    },
                    if off.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "  PROTOCOL FALLBACK ({} not over {}), left out",
                            off.len(),
                            a.opts.protocol.next_hop()
                        )
                    }
                ));
            }
            Err(e) => {
                log(&format!("load {} {name}: {e}", round + 1));
                a.error.get_or_insert_with(|| e.to_string());
            }
        }
        if let Some(l) = &repeat {
            log(&format!(
                "  repeat view {name:<16} {:>9}  {} connection(s)",
                crate::fmt::ms(l.page_ms()),
                l.connections
            ));
        }
        if a.repeats.len() <= round {
            a.repeats.resize_with(round + 1, || None);
        }
        a.repeats[round] = repeat;
        if a.rounds.len() <= round {
            a.rounds.resize_with(round + 1, || None);
        }
        a.rounds[round] = r.ok();
    }
}

/// What the rest of the machine did between `a` and `b` (the one-minute load average
/// `loadavg` at the start), with the browser's own CPU time (`browser_ms`, its processes
/// from their start) counted as ours, not as another process's: as for the simulated arms,
/// only what neither the lab nor its browser did can make a round busy.
pub fn machine_load(
    a: &CpuCounters,
    b: &CpuCounters,
    loadavg: f64,
    browser_ms: Option<f64>,
) -> MachineLoad {
    let mut m = MachineLoad::between(a, b, loadavg);
    let total = b.total.saturating_sub(a.total);
    if let (Some(ms), Some(hz)) = (browser_ms, h2lab_browser::launch::clock_ticks()) {
        if total > 0 {
            let ticks = ms / 1e3 * hz as f64;
            m.other_cpu = (m.other_cpu - ticks / total as f64).max(0.0);
        }
    }
    m
}

/// The browser arms `cfg` asks for (`None` without `--browser`) for `protos` over `link`.
pub fn arms_for(
    env: &mut LabEnv,
    cfg: &PageConfig,
    link: LinkProfile,
    protos: &[LabProtocol],
    workload: Workload,
) -> Result<Option<BrowserArms>, LabError> {
    cfg.browser
        .as_ref()
        .map(|b| {
            let mut a = BrowserArms::setup(
                env,
                b,
                link,
                protos,
                workload,
                cfg.server_threads,
                cfg.timeout,
            )?;
            a.repeat_view = cfg.repeat_view;
            if cfg.repeat_view {
                // The repeat view's new connections are its point: both views count them.
                for arm in &mut a.arms {
                    arm.opts.count_connections = true;
                }
                a.notes.push(
                    "browser: --repeat-view: one browser process and profile per round and \
                     protocol, shared by its two views (the browser table shows the first views)"
                        .into(),
                );
            }
            Ok(a)
        })
        .transpose()
}

/// `--slow`'s browser workload: the page `/ping`, then the parallel `fetch()` calls.
pub fn fetches(s: &SlowConfig) -> Workload {
    Workload::Fetches {
        path: "/ping".into(),
        n: s.requests,
        delay_ms: u64::try_from(s.delay.as_millis()).unwrap_or(u64::MAX),
    }
}

/// The arms as [`ExtraArms`] for a round loop.
pub fn as_extra(b: &mut Option<BrowserArms>) -> Option<&mut dyn ExtraArms> {
    b.as_mut().map(|b| b as &mut dyn ExtraArms)
}

/// Adds the summary of `b` (if any) against the simulated arms `sims` on `link` to
/// `report`, with its notes.
pub fn finish(
    b: Option<BrowserArms>,
    sims: &[ProtoPage],
    link: &str,
    equivalence: f64,
    report: &mut PageReport,
) {
    if let Some(b) = b {
        report.browser.push(super::browser_report::summarise(
            &b,
            sims,
            link,
            b.only,
            equivalence,
        ));
        report.notes.extend(b.notes);
    }
}

/// Runs round `round` of the simulated arms of protocols `sims` (`sim(j, log)` loads arm
/// `j`; none when the extra arms run alone) and the extra arms, in the kernel's order
/// ([`super::rounds::round_order`]: each extra arm beside the simulated arm of its
/// protocol, forwards and backwards in turn).
#[allow(clippy::type_complexity)] // the simulated arm's loader and the progress sink it logs to
pub fn run_round(
    round: usize,
    sims: &[LabProtocol],
    extra: Option<&mut (dyn ExtraArms + '_)>,
    sim: &mut dyn FnMut(usize, &mut dyn FnMut(&str)),
    log: &mut dyn FnMut(&str),
) {
    let mut extra = extra;
    let sims = if extra.as_ref().is_some_and(|e| e.only()) {
        &[][..]
    } else {
        sims
    };
    let extra_protos: Vec<LabProtocol> = extra
        .as_ref()
        .map_or_else(Vec::new, |e| (0..e.arms()).map(|j| e.proto(j)).collect());
    for arm in super::rounds::round_order(sims, &extra_protos, round) {
        match arm {
            RoundArm::Sim(j) => sim(j, log),
            RoundArm::Extra(j) => {
                if let Some(e) = extra.as_deref_mut() {
                    e.run(j, round, log);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The browser's processes are not "other processes": a round whose only other CPU user
    /// was its own browser is not judged busy (the machine's busy judgement of the simulated
    /// arms counts the lab's own threads as ours in the same way).
    #[test]
    fn the_browsers_own_cpu_does_not_make_its_round_busy() {
        let hz = h2lab_browser::launch::clock_ticks().unwrap() as f64;
        let a = CpuCounters {
            total: 10_000,
            idle: 5_000,
            steal: 0,
            own: 100,
        };
        // 1,000 ticks of all CPUs passed: 600 idle, 50 ours, 350 busy elsewhere.
        let b = CpuCounters {
            total: 11_000,
            idle: 5_600,
            steal: 0,
            own: 150,
        };
        let without = machine_load(&a, &b, 1.5, None);
        assert!((without.other_cpu - 0.35).abs() < 1e-9 && without.busy());
        // 300 of those 350 ticks were the browser's: 5% others, not busy.
        let browser_ms = 300.0 / hz * 1e3;
        let with = machine_load(&a, &b, 1.5, Some(browser_ms));
        assert!((with.other_cpu - 0.05).abs() < 1e-9, "{with:?}");
        assert!(!with.busy());
        assert_eq!(with.loadavg, 1.5);
        // More browser CPU than the machine measured (clock skew): never negative.
        assert_eq!(
            machine_load(&a, &b, 1.5, Some(browser_ms * 10.0)).other_cpu,
            0.0
        );
    }
}
