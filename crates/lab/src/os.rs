//! The lab's calls to the operating system beyond `std`, in one place and on `rustix`'s safe
//! wrappers: CPU affinity, the open-files limit, the calling thread's CPU clock and process
//! groups. Everything else in the lab reaches the OS through these functions; nothing here
//! is `unsafe`.
//!
//! Another thread's CPU clock is not read from here: rustix reads the calling thread's only,
//! and `/proc`'s `schedstat` lags by up to a scheduler tick for a running thread (4 ms of a
//! 15 ms window). The built-in server's event loops read their own clocks and hand them over
//! on request ([`h2lab_server::cpu_clock`], [`crate::kernel::clocks`]).

use std::io;

/// Pins thread `tid` of this process (0: the calling thread) to `cpus`. Threads it starts
/// afterwards inherit the set.
#[cfg(target_os = "linux")]
pub fn pin(tid: u32, cpus: &[usize]) -> io::Result<()> {
    use rustix::thread::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    for &c in cpus.iter().filter(|&&c| c < CpuSet::MAX_CPU) {
        set.set(c);
    }
    let pid = if tid == 0 {
        None
    } else {
        let raw = i32::try_from(tid).map_err(|_| io::Error::other("thread id too large"))?;
        Some(rustix::process::Pid::from_raw(raw).ok_or_else(|| io::Error::other("thread id 0"))?)
    };
    sched_setaffinity(pid, &set).map_err(io::Error::from)
}

/// Pinning is only implemented on Linux.
#[cfg(not(target_os = "linux"))]
pub fn pin(_tid: u32, _cpus: &[usize]) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "CPU pinning needs Linux",
    ))
}

/// The process's soft limit on open files (`None`: unlimited or unknown).
#[cfg(unix)]
pub fn open_files_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// The process's limit on open files (unknown here).
#[cfg(not(unix))]
pub fn open_files_limit() -> Option<u64> {
    None
}

/// Raises the process's soft limit on open files towards its hard limit (at most `want`),
/// as load generators do. Returns the soft limit after.
#[cfg(unix)]
pub fn raise_open_files_limit(want: u64) -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let r = getrlimit(Resource::Nofile);
    let cur = r.current.unwrap_or(u64::MAX);
    let target = want.min(r.maximum.unwrap_or(u64::MAX));
    if target <= cur {
        return Some(cur);
    }
    let new = Rlimit {
        current: Some(target),
        maximum: r.maximum,
    };
    Some(if setrlimit(Resource::Nofile, new).is_ok() {
        target
    } else {
        cur
    })
}

/// The process's soft limit on open files (cannot be raised here).
#[cfg(not(unix))]
pub fn raise_open_files_limit(_want: u64) -> Option<u64> {
    None
}

/// Sends SIGKILL to process group `pgid` (a child started as a group leader, not reaped yet,
/// so that the id is still its own).
#[cfg(unix)]
pub fn kill_process_group(pgid: u32) {
    if let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Process groups are only signalled on Unix.
#[cfg(not(unix))]
pub fn kill_process_group(_pgid: u32) {}

/// CPU time of the calling thread (ns), from its kernel CPU clock. Unlike
/// `/proc/.../schedstat`, whose counter a *running* thread only brings up to date at the next
/// scheduler tick or switch (up to 4 ms stale: 4% of a 100 ms round at each end), the clock
/// adds the current slice: tight at the edges of short measured periods. Falls back to
/// schedstat where the clock cannot be read.
pub fn thread_cpu_ns() -> Option<u64> {
    h2lab_server::cpu_clock::own_cpu_ns().or_else(crate::host::current_thread_cpu_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_clocks_answer() {
        let before = open_files_limit();
        let after = raise_open_files_limit(before.unwrap_or(1024));
        assert_eq!(before, after, "asking for what it has changes nothing");
        let a = thread_cpu_ns().expect("own clock");
        let mut x = 0u64;
        while thread_cpu_ns().unwrap() == a && x < 1_000_000_000 {
            x = x.wrapping_add(1);
        }
        assert!(thread_cpu_ns().unwrap() > a);
        // Pinning the calling thread to the CPUs it may already use changes nothing.
        if let Some(cpus) = crate::host::allowed_cpus() {
            pin(0, &cpus).unwrap();
        }
    }
}
