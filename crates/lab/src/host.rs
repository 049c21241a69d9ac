//! What the lab needs from the operating system (Linux; elsewhere everything reports
//! "unavailable"): which CPUs the process may use, pinning threads to CPU sets
//! (`sched_setaffinity`), the CPU clock of any thread of this process (the scheduler's
//! `sum_exec_runtime`, the clock behind `CLOCK_THREAD_CPUTIME_ID`, read from
//! `/proc/self/task/TID/schedstat` in nanoseconds) and what the rest of the machine is
//! doing (`/proc/stat`, `/proc/loadavg`).

use std::io;

use serde::Serialize;

pub use h2lab_server::current_tid;

/// Parses a CPU list such as `0`, `0-3` or `0,2-3` (the kernel's `Cpus_allowed_list`
/// format, also accepted by `--server-cpus`).
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: usize = a.parse().map_err(|_| format!("bad CPU number {a:?}"))?;
        let b: usize = b.parse().map_err(|_| format!("bad CPU number {b:?}"))?;
        if a > b || b >= 1024 {
            return Err(format!("bad CPU range {part:?}"));
        }
        v.extend(a..=b);
    }
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return Err("empty CPU list".into());
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

/// Pins thread `tid` of this process (0: the calling thread) to `cpus`. Threads it starts
/// afterwards inherit the set.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // sched_setaffinity has no safe wrapper in std
pub fn pin(tid: u32, cpus: &[usize]) -> io::Result<()> {
    // The kernel's cpu_set_t is a bit mask of 1024 CPUs.
    let mut mask = [0u64; 16];
    for &c in cpus.iter().filter(|&&c| c < 1024) {
        mask[c / 64] |= 1 << (c % 64);
    }
    let pid = libc::pid_t::try_from(tid).map_err(|_| io::Error::other("thread id too large"))?;
    // SAFETY: `mask` is a live, properly aligned buffer of exactly the size passed, laid out
    // as the kernel's cpu_set_t (an array of unsigned longs); the kernel only reads it.
    let r = unsafe {
        libc::sched_setaffinity(
            pid,
            std::mem::size_of_val(&mask),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pinning is only implemented on Linux.
#[cfg(not(target_os = "linux"))]
pub fn pin(_tid: u32, _cpus: &[usize]) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "CPU pinning needs Linux",
    ))
}

fn schedstat_ns(path: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// CPU time thread `tid` of this process has used so far (ns).
pub fn thread_cpu_ns(tid: u32) -> Option<u64> {
    schedstat_ns(&format!("/proc/self/task/{tid}/schedstat"))
}

/// CPU time the calling thread has used so far (ns).
pub fn current_thread_cpu_ns() -> Option<u64> {
    schedstat_ns("/proc/thread-self/schedstat")
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
