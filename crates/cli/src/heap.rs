//! The heap allocator's settings for the lab's commands (`compare`, `page`, `upstream`).
//!
//! The lab opens and closes arms all run long: each arm's client threads start, allocate
//! their buffers and statistics, and end when the arm is closed. glibc's malloc gives each
//! new thread an arena of its own (up to eight per CPU) and keeps what a thread freed in its
//! arena; it also raises its mmap threshold to the largest block freed (up to 32 MB), so
//! that buffers of a few hundred kilobytes (a thread's UDP receive slots, a relay's rings)
//! end up in those arenas too. Measured on the default `compare` (2-core VM, 2026-11-28):
//! 533 MB peak RSS with glibc's defaults, 294 MB with two arenas and a fixed 128 KiB mmap
//! threshold (`MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072`), the same wall time.
//! Nothing on the measured paths allocates per request, so fewer arenas cost no lock
//! contention there.

/// Two arenas, and blocks of 128 KiB or more mapped on their own (and unmapped when freed).
/// Call before any thread is started. A no-op where the C library is not glibc.
pub fn bound_for_lab() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets malloc's parameters; it is called before this process
        // starts a thread, with parameters and values glibc documents (mallopt(3)).
        #[allow(unsafe_code)] // glibc's mallopt has no safe binding
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        }
    }
}
