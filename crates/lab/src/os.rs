//! The lab's calls to the operating system beyond `std`, in one place and on `rustix`'s safe
//! wrappers: CPU affinity, the open-files limit, per-thread CPU clocks and process groups.
//! Everything else in the lab reaches the OS through these functions.
//!
//! One call is left on `libc`: reading *another* thread's CPU clock ([`thread_cpu_ns`] with a
//! thread id). Its clock id is built from the thread id as glibc's `pthread_getcpuclockid`
//! builds it; rustix 1.1 reads the calling thread's clock only, and `/proc`'s `schedstat`
//! lags by up to a scheduler tick (4 ms of a 15 ms window), so the clock stays.

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

/// CPU time of thread `tid` of this process, or of the calling thread with `None` (ns),
/// from the thread's kernel CPU clock. Unlike `/proc/.../schedstat`, whose counter a
/// *running* thread only brings up to date at the next scheduler tick or switch (up to 4 ms
/// stale: 4% of a 100 ms round at each end), the clock adds the current slice: tight at the
/// edges of short measured periods. Falls back to schedstat where the clock cannot be read.
#[cfg(target_os = "linux")]
pub fn thread_cpu_ns(tid: Option<u32>) -> Option<u64> {
    let ns = |t: rustix::time::Timespec| -> Option<u64> {
        Some(u64::try_from(t.tv_sec).ok()? * 1_000_000_000 + u64::try_from(t.tv_nsec).ok()?)
    };
    match tid {
        None => ns(rustix::time::clock_gettime(
            rustix::time::ClockId::ThreadCPUTime,
        ))
        .or_else(crate::host::current_thread_cpu_ns),
        Some(t) => other_thread_clock(t).or_else(|| crate::host::thread_cpu_ns(t)),
    }
}

/// CPU time of thread `tid` of this process, from `/proc` (see the Linux version).
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_ns(tid: Option<u32>) -> Option<u64> {
    match tid {
        Some(t) => crate::host::thread_cpu_ns(t),
        None => crate::host::current_thread_cpu_ns(),
    }
}

/// Thread `tid`'s CPU clock (see the module docs for why this is not on rustix).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // clock_gettime on another thread's CPU clock: no safe wrapper exists
fn other_thread_clock(tid: u32) -> Option<u64> {
    // The kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): `(~tid << 3) | SCHED (2) |
    // PERTHREAD (4)`, as glibc's pthread_getcpuclockid builds it.
    let clock: libc::clockid_t = (!(tid as libc::clockid_t)) << 3 | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_clocks_answer() {
        let before = open_files_limit();
        let after = raise_open_files_limit(before.unwrap_or(1024));
        assert_eq!(before, after, "asking for what it has changes nothing");
        let a = thread_cpu_ns(None).expect("own clock");
        let mut x = 0u64;
        while thread_cpu_ns(None).unwrap() == a && x < 1_000_000_000 {
            x = x.wrapping_add(1);
        }
        assert!(thread_cpu_ns(None).unwrap() > a);
        // Pinning the calling thread to the CPUs it may already use changes nothing.
        if let Some(cpus) = crate::host::allowed_cpus() {
            pin(0, &cpus).unwrap();
        }
    }
}
