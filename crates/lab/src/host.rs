//! What the lab needs from the operating system (Linux; elsewhere everything reports
//! "unavailable"): which CPUs the process may use, pinning threads to CPU sets
//! (`sched_setaffinity`), the CPU clock of any thread of this process (the scheduler's
//! `sum_exec_runtime`, the clock behind `CLOCK_THREAD_CPUTIME_ID`, read from
//! `/proc/self/task/TID/schedstat` in nanoseconds) and what the rest of the machine is
//! doing (`/proc/stat`, `/proc/loadavg`); and starting an external server (nginx, nghttpd,
//! h2o) on fresh ports until it listens, the listening sockets proven to be its own
//! (`/proc/net/tcp{,6}` and `/proc/PID/fd`, `start_listening`).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

use h2lab_procnet::{Proto, TCP_LISTEN};
use serde::Serialize;

pub use h2lab_server::current_tid;

/// Parses a CPU list such as `0`, `0-3` or `0,2-3` (the kernel's `Cpus_allowed_list`
/// format, also accepted by `--server-cpus`).
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, crate::error::ParseError> {
    use crate::error::ParseError;
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: usize = a.parse().map_err(|_| ParseError::CpuNumber(a.to_owned()))?;
        let b: usize = b.parse().map_err(|_| ParseError::CpuNumber(b.to_owned()))?;
        if a > b || b >= 1024 {
            return Err(ParseError::CpuRange(part.to_owned()));
        }
        v.extend(a..=b);
    }
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return Err(ParseError::EmptyList("CPU"));
    }
    Ok(v)
}

/// `0-1,3` from a sorted CPU list.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The CPUs the calling thread may run on (`Cpus_allowed_list` of
/// `/proc/thread-self/status`); `None` when unknown (not Linux).
pub fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    parse_cpu_list(line).ok()
}

/// Pins thread `tid` of this process (0: the calling thread) to `cpus` ([`crate::os::pin`]).
pub fn pin(tid: u32, cpus: &[usize]) -> io::Result<()> {
    crate::os::pin(tid, cpus)
}

/// The `schedstat` of thread `tid` of this process (`None`: the calling thread), in ns: the
/// time it ran and the time it waited for a CPU while it was ready to run (the scheduler's
/// run delay: time the machine took from the thread, whoever took it, another process,
/// another thread of this one or the kernel's softirq threads; waiting for the network or
/// a lock is not in it).
pub fn thread_schedstat(tid: Option<u32>) -> Option<(u64, u64)> {
    let s = match tid {
        Some(t) => std::fs::read_to_string(format!("/proc/self/task/{t}/schedstat")),
        None => std::fs::read_to_string("/proc/thread-self/schedstat"),
    }
    .ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// CPU time thread `tid` of this process has used so far (ns).
pub fn thread_cpu_ns(tid: u32) -> Option<u64> {
    thread_schedstat(Some(tid)).map(|(ran, _)| ran)
}

/// CPU time the calling thread has used so far (ns).
pub fn current_thread_cpu_ns() -> Option<u64> {
    thread_schedstat(None).map(|(ran, _)| ran)
}

/// The sum of [`thread_cpu_ns`] over `tids` (threads that have exited count as 0).
pub fn threads_cpu_ns(tids: &[u32]) -> u64 {
    tids.iter().filter_map(|&t| thread_cpu_ns(t)).sum()
}

/// A snapshot of the machine's CPU counters (clock ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuCounters {
    /// All ticks of all CPUs (user … steal).
    pub total: u64,
    /// Idle and I/O-wait ticks.
    pub idle: u64,
    /// Ticks the hypervisor gave to someone else.
    pub steal: u64,
    /// User and system ticks of this process.
    pub own: u64,
}

impl CpuCounters {
    /// Reads `/proc/stat` and `/proc/self/stat`; `None` when unavailable.
    pub fn now() -> Option<CpuCounters> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        CpuCounters::parse(&stat, &own)
    }

    /// Parses the `cpu` line of `/proc/stat` and the utime/stime of `/proc/self/stat`.
    pub fn parse(stat: &str, self_stat: &str) -> Option<CpuCounters> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let total: u64 = f.iter().take(8).sum();
        let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
        let steal = f.get(7).copied().unwrap_or(0);
        // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
        let rest = &self_stat[self_stat.rfind(')')? + 1..];
        let g: Vec<&str> = rest.split_whitespace().collect();
        let own = g.get(11)?.parse::<u64>().ok()? + g.get(12)?.parse::<u64>().ok()?;
        Some(CpuCounters {
            total,
            idle,
            steal,
            own,
        })
    }
}

/// What the rest of the machine did while something was measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct MachineLoad {
    /// One-minute load average at the start.
    pub loadavg: f64,
    /// Share of all CPU time that other processes used (0..1 of the whole machine).
    pub other_cpu: f64,
    /// Share of all CPU time stolen by the hypervisor (0..1).
    pub steal: f64,
}

/// Another process used more than this share of the machine: the measurement is flagged.
pub const BUSY_OTHER_CPU: f64 = 0.15;
/// More than this share of CPU time was stolen by the hypervisor: flagged.
pub const BUSY_STEAL: f64 = 0.05;

impl MachineLoad {
    /// The load between two snapshots (`loadavg` as given).
    pub fn between(a: &CpuCounters, b: &CpuCounters, loadavg: f64) -> MachineLoad {
        let total = b.total.saturating_sub(a.total);
        if total == 0 {
            return MachineLoad {
                loadavg,
                ..MachineLoad::default()
            };
        }
        let busy = total.saturating_sub(b.idle.saturating_sub(a.idle));
        let steal = b.steal.saturating_sub(a.steal);
        let own = b.own.saturating_sub(a.own);
        let other = busy.saturating_sub(steal).saturating_sub(own);
        MachineLoad {
            loadavg,
            other_cpu: other as f64 / total as f64,
            steal: steal as f64 / total as f64,
        }
    }

    /// Whether the machine was too busy for a clean measurement ([`BUSY_OTHER_CPU`],
    /// [`BUSY_STEAL`]).
    pub fn busy(&self) -> bool {
        self.other_cpu > BUSY_OTHER_CPU || self.steal > BUSY_STEAL
    }
}

/// The one-minute load average (`/proc/loadavg`), NaN when unknown.
pub fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Samples the machine around a measurement: [`LoadProbe::start`] before,
/// [`LoadProbe::finish`] after.
#[derive(Debug, Clone, Copy)]
pub struct LoadProbe {
    start: Option<CpuCounters>,
    loadavg: f64,
}

impl LoadProbe {
    /// Takes the first snapshot.
    pub fn start() -> LoadProbe {
        LoadProbe {
            start: CpuCounters::now(),
            loadavg: loadavg(),
        }
    }

    /// The load since [`LoadProbe::start`]; `None` when `/proc` is unavailable.
    pub fn finish(&self) -> Option<MachineLoad> {
        let b = CpuCounters::now()?;
        Some(MachineLoad::between(self.start.as_ref()?, &b, self.loadavg))
    }
}

/// `n` distinct TCP ports of 127.0.0.1 free a moment ago (bound to port 0 together, then
/// released), for an external server started right after; racy, so its starter retries on
/// fresh ports when the server cannot bind.
pub(crate) fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<io::Result<Vec<_>>>()?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// Why an external server is not ready ([`wait_listening`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// It exited (typically: a port was taken between the choice and its bind).
    Exited,
    /// By the deadline it did not hold a listening socket on this port (the first missing).
    TimedOut(u16),
}

/// Whether this system has `/proc`'s socket tables (Linux), which the ownership check of
/// [`held_listeners`] reads.
pub(crate) fn has_proc() -> bool {
    h2lab_procnet::has_proc()
}

/// The ports of `ports` on which process `pid` itself holds a listening TCP socket: a
/// listening socket of the port in the kernel's tables (`/proc/PID/net/tcp{,6}`, those of
/// the process's own network namespace) among the process's descriptors (`/proc/PID/fd`), so
/// that another program that took the port cannot pass for it. The descriptors and each table are read once for all the ports. Where the
/// descriptors cannot be read (permission denied: a process that changed user), any listening
/// socket on the port counts; where there is no `/proc` (not Linux), a connection to
/// 127.0.0.1:`port` is the only evidence there is.
pub(crate) fn held_listeners(pid: u32, ports: &[u16]) -> Vec<u16> {
    if !has_proc() {
        return ports
            .iter()
            .copied()
            .filter(|&port| {
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            })
            .collect();
    }
    // The process's sockets first: the tables are long on a busy machine (tens of
    // thousands of lines), the descriptors of a server starting up few.
    let owned: Option<Vec<u64>> = match h2lab_procnet::socket_inodes_of(pid) {
        Ok(owned) => Some(owned),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => None,
        Err(_) => return Vec::new(), // gone
    };
    if owned.as_ref().is_some_and(Vec::is_empty) {
        return Vec::new();
    }
    // The process's own namespace's table: an anchor may run on a packet path's server side.
    let listening: Vec<(u16, u64)> = h2lab_procnet::entries_of(pid, Proto::Tcp)
        .into_iter()
        .filter(|e| e.state == TCP_LISTEN)
        .map(|e| (e.local_port, e.inode))
        .collect();
    ports
        .iter()
        .copied()
        .filter(|&port| {
            listening
                .iter()
                .any(|&(p, n)| p == port && owned.as_ref().map_or(true, |o| o.contains(&n)))
        })
        .collect()
}

/// Polls (2 ms growing to 50 ms pauses) until `child` holds a listening socket on every port of
/// `ports` ([`held_listeners`]), until it exits, or until `timeout` has passed.
pub(crate) fn wait_listening(
    child: &mut Child,
    ports: &[u16],
    timeout: Duration,
) -> Result<(), NotReady> {
    let end = Instant::now() + timeout;
    let pid = child.id();
    let mut pending = ports.to_vec();
    let mut pause = Duration::from_millis(2);
    loop {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return Err(NotReady::Exited);
        }
        let held = held_listeners(pid, &pending);
        pending.retain(|p| !held.contains(p));
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(NotReady::TimedOut(pending[0]));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// An external server [`start_listening`] saw listening on its ports.
pub(crate) struct Listening {
    /// The server's process.
    pub child: Child,
    /// Its ports, as `next_ports` chose them in the attempt that succeeded.
    pub ports: Vec<u16>,
    /// Which attempt succeeded (from 1).
    pub attempts: u32,
}

/// Why [`start_listening`] failed.
#[derive(Debug)]
pub(crate) enum StartFailed<E> {
    /// Choosing the ports or spawning failed (not retried).
    Setup(E),
    /// Every attempt failed; how the last one did.
    NotReady(NotReady),
}

/// Starts an external server on ports chosen at run time, and retries on fresh ones: up to
/// `attempts` times, `next_ports` chooses the ports, `spawn` starts the server on them, and
/// [`wait_listening`] waits (`timeout` at most) until the server's own process listens on
/// every one. An attempt whose server exits first (a port taken between the choice and its
/// bind) or misses the deadline (a port held by another program, which a connection would
/// have taken for the server) is ended with `stop` and retried. The nginx starter of
/// `upstream --proxy nginx` and the `page --render` anchors (nghttpd, h2o) share it.
pub(crate) fn start_listening<E>(
    attempts: u32,
    timeout: Duration,
    mut next_ports: impl FnMut() -> Result<Vec<u16>, E>,
    mut spawn: impl FnMut(&[u16]) -> Result<Child, E>,
    mut stop: impl FnMut(&mut Child),
) -> Result<Listening, StartFailed<E>> {
    let mut last = NotReady::Exited;
    for attempt in 1..=attempts {
        let ports = next_ports().map_err(StartFailed::Setup)?;
        let mut child = spawn(&ports).map_err(StartFailed::Setup)?;
        match wait_listening(&mut child, &ports, timeout) {
            Ok(()) => {
                return Ok(Listening {
                    child,
                    ports,
                    attempts: attempt,
                })
            }
            Err(why) => {
                stop(&mut child);
                last = why;
            }
        }
    }
    Err(StartFailed::NotReady(last))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::process::{Command, Stdio};

    /// Whether process `pid` itself holds a TCP socket listening on `port`.
    pub(crate) fn holds_listener(pid: u32, port: u16) -> bool {
        held_listeners(pid, &[port]) == [port]
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-2,5, 7").unwrap(), vec![0, 1, 2, 5, 7]);
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("x").is_err());
    }

    #[test]
    fn machine_load_from_counters() {
        let stat = |user: u64, idle: u64, steal: u64| {
            format!("cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3\n")
        };
        let me = |t: u64| format!("42 (h2lab (x)) S 1 2 3 4 5 6 7 8 9 10 {t} 0 0 0");
        let a = CpuCounters::parse(&stat(100, 100, 0), &me(10)).unwrap();
        assert_eq!((a.total, a.idle, a.own), (200, 100, 10));
        // 100 ticks: 30 ours, 40 someone else's, 10 stolen, 20 idle.
        let b = CpuCounters::parse(&stat(170, 120, 10), &me(40)).unwrap();
        let l = MachineLoad::between(&a, &b, 1.5);
        assert!((l.other_cpu - 0.40).abs() < 1e-9, "{l:?}");
        assert!((l.steal - 0.10).abs() < 1e-9);
        assert!(l.busy());
        let quiet = CpuCounters::parse(&stat(130, 170, 0), &me(40)).unwrap();
        assert!(!MachineLoad::between(&a, &quiet, 0.1).busy());
    }

    #[test]
    fn own_thread_cpu_clock_advances() {
        if current_thread_cpu_ns().is_none() {
            return; // not Linux
        }
        let tid = current_tid().unwrap();
        let a = thread_cpu_ns(tid).unwrap();
        let mut x = 0u64;
        let mut n = 0;
        // Burn CPU until the clock moves (bounded).
        while thread_cpu_ns(tid).unwrap() == a && n < 1_000_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(n);
            n += 1;
        }
        assert!(thread_cpu_ns(tid).unwrap() > a, "{x}");
    }

    /// Set in the environment of this test binary run again as a server ([`listener_child`]):
    /// the port to listen on, or `none`.
    const CHILD_ENV: &str = "H2LAB_LAB_TEST_LISTENER";

    /// Not a test: the body of [`listener_child`] (returns at once in a normal test run).
    #[test]
    fn listener_child_entry() {
        let Some(what) = std::env::var_os(CHILD_ENV) else {
            return;
        };
        let _listener = match what.to_str().and_then(|p| p.parse::<u16>().ok()) {
            Some(port) => match TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => Some(l),
                Err(_) => std::process::exit(1), // as a server whose port is taken
            },
            None => None,
        };
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
        std::process::exit(0);
    }

    /// This test binary run again as a stand-in for an external server: it listens on
    /// 127.0.0.1:`port` (exiting at once when it cannot bind) or, with `None`, stays up without
    /// listening (as a server still retrying its bind); until killed or its standard input
    /// closes.
    pub(crate) fn listener_child(port: Option<u16>) -> Command {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "host::tests::listener_child_entry",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, port.map_or("none".into(), |p| p.to_string()))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        cmd
    }

    fn stop(child: &mut Child) {
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A listener of another process (this test's) on the port accepts connections, but is not
    /// taken for the server's: a server that stays up without listening is not ready, and
    /// times out on that port.
    #[test]
    fn a_stand_in_listener_is_not_the_servers() {
        if !has_proc() {
            return;
        }
        let stand_in = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = stand_in.local_addr().unwrap().port();
        assert!(holds_listener(std::process::id(), port));
        let mut idle = listener_child(None).spawn().unwrap();
        assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(!holds_listener(idle.id(), port));
        assert_eq!(
            wait_listening(&mut idle, &[port], Duration::from_millis(300)),
            Err(NotReady::TimedOut(port))
        );
        stop(&mut idle);
        // Every attempt like that: an error naming the port, each attempt stopped.
        let mut stopped = 0;
        let r = start_listening(
            2,
            Duration::from_millis(100),
            || Ok::<_, io::Error>(vec![port]),
            |_| listener_child(None).spawn(),
            |c| {
                stopped += 1;
                stop(c);
            },
        );
        assert!(
            matches!(r, Err(StartFailed::NotReady(NotReady::TimedOut(p))) if p == port),
            "{:?}",
            r.err()
        );
        assert_eq!(stopped, 2);
    }

    /// The first ports offered are a stand-in's: the server cannot bind and exits (a connection
    /// to the port would have succeeded meanwhile), and the start is retried on a fresh port,
    /// which the server's own process is seen listening on.
    #[test]
    fn a_taken_port_is_retried_and_a_real_start_is_ready() {
        if !has_proc() {
            return;
        }
        let stand_in = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = stand_in.local_addr().unwrap().port();
        let mut offered = Vec::new();
        let mut stopped = 0;
        let started = start_listening(
            3,
            Duration::from_secs(30),
            || {
                let p = if offered.is_empty() {
                    vec![taken]
                } else {
                    free_ports(1)?
                };
                offered.push(p[0]);
                Ok::<_, io::Error>(p)
            },
            |p| listener_child(Some(p[0])).spawn(),
            |c| {
                stopped += 1;
                stop(c);
            },
        )
        .map_err(|e| format!("{e:?}"))
        .unwrap();
        let mut child = started.child;
        assert_eq!(started.attempts, 2);
        assert_eq!(stopped, 1);
        assert_eq!(offered.len(), 2);
        assert_eq!(started.ports, vec![offered[1]]);
        assert_ne!(offered[1], taken);
        assert!(holds_listener(child.id(), offered[1]));
        assert!(TcpStream::connect(("127.0.0.1", offered[1])).is_ok());
        stop(&mut child);
    }
}
