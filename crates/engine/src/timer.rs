//! A precise wake-up for paced runs.
//!
//! The event loop's poll timeout has millisecond resolution (epoll rounds up), which would make
//! every paced request up to 1 ms late. On Linux a `timerfd` armed for the next due time (with
//! nanosecond resolution) is registered in the poll instead, so the loop wakes when the request
//! is due; elsewhere the poll timeout alone is used. Arming is skipped when the deadline is
//! unchanged, so a busy loop does not pay a syscall per turn.

use std::time::Instant;

use mio::{Registry, Token};

/// The poll token of the timer (never a client token: client indices are below 2³²).
pub(crate) const TIMER_TOKEN: Token = Token(usize::MAX);

/// A one-shot timer registered in the worker's poll.
pub(crate) struct DeadlineTimer {
    #[cfg(target_os = "linux")]
    fd: Option<rustix::fd::OwnedFd>,
    armed: Option<Instant>,
}

impl DeadlineTimer {
    /// A timer registered in `registry`; without timerfd support it does nothing.
    pub(crate) fn new(registry: &Registry) -> DeadlineTimer {
        DeadlineTimer::with_token(registry, TIMER_TOKEN)
    }

    /// A timer that wakes `token` (a QUIC connection's own timer wakes its client).
    pub(crate) fn with_token(registry: &Registry, token: Token) -> DeadlineTimer {
        #[cfg(target_os = "linux")]
        {
            use rustix::fd::AsRawFd;
            use rustix::time::{timerfd_create, TimerfdClockId, TimerfdFlags};
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )
            .ok()
            .filter(|fd| {
                registry
                    .register(
                        &mut mio::unix::SourceFd(&fd.as_raw_fd()),
                        token,
                        mio::Interest::READABLE,
                    )
                    .is_ok()
            });
            DeadlineTimer { fd, armed: None }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (registry, token);
            DeadlineTimer { armed: None }
        }
    }

    /// Makes the poll wake at `at` (if it is in the future and not already armed for it).
    pub(crate) fn arm(&mut self, at: Instant, now: Instant) {
        if at <= now || self.armed == Some(at) {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            use rustix::time::{timerfd_settime, Itimerspec, TimerfdTimerFlags, Timespec};
            let d = at - now;
            let spec = Itimerspec {
                it_interval: Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: Timespec {
                    tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(d.subsec_nanos()),
                },
            };
            if timerfd_settime(fd, TimerfdTimerFlags::empty(), &spec).is_ok() {
                self.armed = Some(at);
            }
        }
    }

    /// Forgets a deadline that has passed (so the same instant can be armed again).
    pub(crate) fn expire(&mut self, now: Instant) {
        if self.armed.is_some_and(|a| a <= now) {
            self.armed = None;
        }
    }

    /// Removes the timer from `registry` (before its fd is closed).
    pub(crate) fn deregister(&mut self, registry: &Registry) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            use rustix::fd::AsRawFd;
            let _ = registry.deregister(&mut mio::unix::SourceFd(&fd.as_raw_fd()));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = registry;
    }
}
