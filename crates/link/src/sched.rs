//! How the link's own threads are scheduled: the packet link's pump and the relay's TCP and
//! UDP loops all ask for the same treatment, so a loaded machine delays them alike.
#![allow(unsafe_code)] // prctl and sched_setscheduler have no safe wrapper in std

/// Asks for timer wake-ups without the default 50 µs of slack (the link thread's delays) and,
/// where permitted (root, or `CAP_SYS_NICE`, or an `RLIMIT_RTPRIO` of at least 1), the lowest
/// real-time priority (SCHED_FIFO 1), so that a loaded machine's other threads do not delay
/// packets by whole scheduler slices. The link threads sleep (`ppoll`, `epoll_wait`,
/// `nanosleep`) whenever nothing is due and spin at most a few tens of microseconds before a
/// deadline, and the kernel's real-time throttling (`sched_rt_runtime_us`) bounds them anyway.
/// Applies to the calling thread only. Returns whether the real-time priority was set.
#[cfg(target_os = "linux")]
pub(crate) fn tight_timers() -> bool {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only sets a per-thread scheduling parameter.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling thread; `param` is a live sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Elsewhere the link runs with the system's default scheduling.
#[cfg(not(target_os = "linux"))]
pub(crate) fn tight_timers() -> bool {
    false
}
