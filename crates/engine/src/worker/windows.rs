//! A worker that stays alive between measured periods ([`crate::standing`]): it connects
//! its clients once, then waits *paused* (connections open, no request sent) until told
//! to measure a window — a warm-up and a measured period on the connections already open —
//! hands the window's statistics back, and pauses again, until it is told to close.
//!
//! Requests in flight when a window ends complete while paused (they are not counted: the
//! next window's statistics start at its own warm-up's end). With a drain cap
//! ([`crate::StandingRun::drain_before_reply`]) the worker waits for them, up to the cap,
//! before it hands the window's statistics back, so that whoever measures next does not
//! share the machine with this window's tail. `-N`/`-T` timeouts apply only
//! inside windows (an idle connection between windows is not "inactive"). Closed model only.
//!
//! There is no loop here: the worker's one loop (`Worker::run_phases`) runs a standing
//! worker too, with a [`Schedule::Standing`] whose phases are *paused* and *window N* (a
//! warm-up, then the measured period); this module is that schedule's step (commands,
//! resuming, ending a window). Paused, the loop still serves every connection's events
//! (a server closing, HTTP/3's QUIC timers, ACKs and keep-alive PINGs); it only sends no
//! request.

use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::Token;

use super::{Schedule, Step, Worker, WorkerOutcome};
use crate::samples::WorkerSamples;
use crate::stats::WorkerStats;
use crate::{Observer, TimedRunPhase};

/// The token of the waker that interrupts a paused worker's poll (no client's: client
/// tokens carry a client index below 2^32 in their low half).
pub(crate) const WAKE: Token = Token(usize::MAX);

/// What a standing worker is told.
pub(crate) enum WindowCmd {
    /// Measure a window: `warm_up` (not counted), then `duration`; report phases to
    /// `observer` (from the worker's thread) and the window to `reply` — once the requests
    /// still in flight have completed, or `drain` after the period's end.
    Measure {
        warm_up: Duration,
        duration: Duration,
        drain: Duration,
        observer: Arc<dyn Observer + Send + Sync>,
        reply: Sender<WorkerOutcome>,
    },
    /// Close every connection and end the thread.
    Close,
}

/// The window being measured.
struct Window {
    warm_end: Instant,
    main_end: Instant,
    drain: Duration,
    /// The period is over: its statistics, held until the requests in flight complete or
    /// the drain deadline passes (boxed: once per window, and the schedule stays small).
    ended: Option<(Box<WorkerOutcome>, Instant)>,
    observer: Arc<dyn Observer + Send + Sync>,
    reply: Sender<WorkerOutcome>,
}

/// A standing worker's schedule: its commands and the window it measures, if any.
pub(super) struct Standing {
    commands: Receiver<WindowCmd>,
    window: Option<Window>,
}

impl Standing {
    /// The next phase change of the window (none while paused: a command wakes the loop).
    #[inline]
    pub(super) fn deadline(&self, measuring: bool) -> Option<Instant> {
        let w = self.window.as_ref()?;
        Some(match &w.ended {
            Some((_, until)) => *until,
            None if measuring => w.main_end,
            None => w.warm_end,
        })
    }

    /// No window is open.
    #[inline]
    pub(super) fn paused(&self) -> bool {
        self.window.is_none()
    }
}

impl WorkerOutcome {
    /// The outcome of a worker that never ran.
    pub(crate) fn empty() -> WorkerOutcome {
        WorkerOutcome {
            stats: WorkerStats::new(0),
            fatal: None,
            first_connect_error: None,
            first_tls_error: None,
            first_protocol_error: None,
            connected: false,
            interrupted: false,
        }
    }
}

impl Worker<'_> {
    /// The event loop's registry (for a [`mio::Waker`] with the [`WAKE`] token).
    pub(crate) fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }

    /// Runs windows as `commands` say (see the module docs) until [`WindowCmd::Close`], the
    /// controller goes away, or the stop flag is set; returns what is left (the last
    /// connection errors). The worker's one loop ([`Worker::run_phases`]), paused between
    /// windows.
    pub(crate) fn run_windows(mut self, commands: Receiver<WindowCmd>) -> WorkerOutcome {
        for c in &mut self.clients {
            c.core.unbounded = true;
            c.core.paused = true;
        }
        self.measuring = false;
        self.start_clients(Instant::now());
        self.run_phases(Schedule::Standing(Standing {
            commands,
            window: None,
        }))
    }

    /// The standing worker's step of [`Worker::advance`]: paused, takes the next command;
    /// in a window, ends the warm-up, then the window.
    pub(super) fn advance_standing(
        &mut self,
        st: &mut Standing,
        now: Instant,
        next_timer: &mut Option<Instant>,
    ) -> Step {
        let Some(w) = st.window.as_mut() else {
            return match st.commands.try_recv() {
                Ok(WindowCmd::Measure {
                    warm_up,
                    duration,
                    drain,
                    observer,
                    reply,
                }) => {
                    self.resume(now);
                    *next_timer = self.timer_step.map(|t| now + t);
                    observer.phase(self.s.id, TimedRunPhase::WarmUpStarted);
                    st.window = Some(Window {
                        warm_end: now + warm_up,
                        main_end: now + warm_up + duration,
                        drain,
                        ended: None,
                        observer,
                        reply,
                    });
                    self.advance_standing(st, now, next_timer)
                }
                Ok(WindowCmd::Close) | Err(TryRecvError::Disconnected) => {
                    self.stop_all();
                    Step::Stop
                }
                Err(TryRecvError::Empty) => Step::Go,
            };
        };
        if let Some((_, until)) = &w.ended {
            // Draining: the clients are paused; reply once nothing is in flight.
            if now >= *until || self.nothing_in_flight() {
                self.close_window(st, now);
                return Step::Again;
            }
            return Step::Go;
        }
        if !self.measuring && now >= w.warm_end {
            self.end_warm_up(now);
            w.observer.phase(self.s.id, TimedRunPhase::MainStarted);
        }
        if now >= w.main_end {
            w.observer.phase(self.s.id, TimedRunPhase::MainOver);
            let out = self.end_window(now, w.main_end - w.warm_end);
            *next_timer = None;
            if w.drain.is_zero() || self.nothing_in_flight() {
                let _ = w.reply.send(out);
                st.window = None;
            } else {
                w.ended = Some((Box::new(out), now + w.drain));
            }
            return Step::Again;
        }
        Step::Go
    }

    /// No client has a request in flight.
    fn nothing_in_flight(&self) -> bool {
        self.clients.iter().all(|c| c.core.req_inflight == 0)
    }

    /// Ends the open window (if any) and sends its statistics back (a draining window's
    /// were taken when its period ended).
    pub(super) fn close_window(&mut self, st: &mut Standing, now: Instant) {
        if let Some(w) = st.window.take() {
            let out = match w.ended {
                Some((out, _)) => *out,
                None => self.end_window(now, w.main_end - w.warm_end),
            };
            let _ = w.reply.send(out);
        }
    }

    /// Lets every client send again: fills the open connections, reconnects the clients
    /// whose connection ended while paused; idle time before now is not inactivity.
    fn resume(&mut self, now: Instant) {
        for idx in 0..self.clients.len() {
            let c = &mut self.clients[idx];
            c.core.paused = false;
            if c.core.finished {
                continue;
            }
            match c.conn.as_mut() {
                Some(conn) => {
                    conn.last_activity = now;
                    self.fill_client(idx);
                }
                None => {
                    self.stats.run.reconnects += 1;
                    self.connect(idx, now, 0);
                }
            }
        }
        self.flush_dirty();
    }

    /// The window is over: pause every client and hand back its statistics (those of the
    /// connections that outlive the window stay).
    fn end_window(&mut self, now: Instant, measured: Duration) -> WorkerOutcome {
        self.measuring = false;
        for c in &mut self.clients {
            c.core.paused = true;
            if let Some(start) = c.core.start.take() {
                let t = now.saturating_duration_since(start).min(measured);
                if t > Duration::from_nanos(1) {
                    self.stats
                        .run
                        .client_rps
                        .push(c.core.req_success as f64 / t.as_secs_f64());
                }
            }
        }
        let mut stats = WorkerStats::new(0);
        std::mem::swap(&mut stats, &mut self.stats);
        self.stats.open_conns = stats.open_conns;
        self.stats.run.app_protocol = stats.run.app_protocol;
        self.stats.run.protocol_fallback = stats.run.protocol_fallback;
        self.stats.run.tls = stats.run.tls.clone();
        // Raw samples are per window too: the next one starts with empty reservoirs.
        self.stats.samples = self
            .s
            .max_samples
            .map(|cap| Box::new(WorkerSamples::new(cap, self.s.id)));
        WorkerOutcome {
            stats,
            fatal: self.out.fatal.take(),
            first_connect_error: self.out.first_connect_error.take(),
            first_tls_error: self.out.first_tls_error.take(),
            first_protocol_error: self.out.first_protocol_error.take(),
            connected: self.out.connected,
            interrupted: false,
        }
    }
}
