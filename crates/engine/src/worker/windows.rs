//! A worker that stays alive between measured periods ([`crate::standing`]): it connects
//! its clients once, then waits *paused* (connections open, no request sent) until told
//! to measure a window — a warm-up and a measured period on the connections already open —
//! hands the window's statistics back, and pauses again, until it is told to close.
//!
//! Requests in flight when a window ends complete while paused (they are not counted: the
//! next window's statistics start at its own warm-up's end). `-N`/`-T` timeouts apply only
//! inside windows (an idle connection between windows is not "inactive"). Closed model only.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Token};

use super::{timer_interval, Worker, WorkerOutcome, MAX_POLL_WAIT};
use crate::stats::WorkerStats;
use crate::{Observer, TimedRunPhase};

/// The token of the waker that interrupts a paused worker's poll (no client's: client
/// tokens carry a client index below 2^32 in their low half).
pub(crate) const WAKE: Token = Token(usize::MAX);

/// Longest poll between windows (the stop flag is seen this late at worst; commands wake
/// the loop at once).
const PAUSED_POLL_WAIT: Duration = Duration::from_secs(1);

/// What a standing worker is told.
pub(crate) enum WindowCmd {
    /// Measure a window: `warm_up` (not counted), then `duration`; report phases to
    /// `observer` (from the worker's thread) and the window to `reply`.
    Measure {
        warm_up: Duration,
        duration: Duration,
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
    measuring: bool,
    observer: Arc<dyn Observer + Send + Sync>,
    reply: Sender<WorkerOutcome>,
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
    /// connection errors).
    pub(crate) fn run_windows(mut self, commands: Receiver<WindowCmd>) -> WorkerOutcome {
        let mut events = Events::with_capacity(1024);
        for c in &mut self.clients {
            c.core.unbounded = true;
            c.core.paused = true;
        }
        self.measuring = false;
        self.start_clients(Instant::now());
        let timer_step = timer_interval(self.s.active_timeout, self.s.inactivity_timeout);
        let mut next_timer: Option<Instant> = None;
        let mut window: Option<Window> = None;
        let mut stopped_by_flag = false;
        loop {
            if self.s.stop.is_stopped() || self.s.abort.load(Ordering::Relaxed) {
                stopped_by_flag = self.s.stop.is_stopped();
                self.stop_all();
                break;
            }
            let now = Instant::now();
            if window.is_none() {
                match commands.try_recv() {
                    Ok(WindowCmd::Measure {
                        warm_up,
                        duration,
                        observer,
                        reply,
                    }) => {
                        self.resume(now);
                        next_timer = timer_step.map(|t| now + t);
                        observer.phase(self.s.id, TimedRunPhase::WarmUpStarted);
                        window = Some(Window {
                            warm_end: now + warm_up,
                            main_end: now + warm_up + duration,
                            measuring: false,
                            observer,
                            reply,
                        });
                    }
                    Ok(WindowCmd::Close) | Err(TryRecvError::Disconnected) => {
                        self.stop_all();
                        break;
                    }
                    Err(TryRecvError::Empty) => {}
                }
            }
            if let Some(w) = window.as_mut() {
                if !w.measuring && now >= w.warm_end {
                    w.measuring = true;
                    self.stats.reset_after_warm_up();
                    self.measuring = true;
                    for c in &mut self.clients {
                        c.core.start = Some(now);
                        c.core.req_success = 0;
                    }
                    w.observer.phase(self.s.id, TimedRunPhase::MainStarted);
                }
                if now >= w.main_end {
                    w.observer.phase(self.s.id, TimedRunPhase::MainOver);
                    let w = window.take().expect("window is open");
                    let out = self.end_window(now, w.main_end - w.warm_end);
                    let _ = w.reply.send(out);
                    next_timer = None;
                    continue;
                }
            }
            if let (Some(t), Some(step)) = (next_timer, timer_step) {
                if now >= t {
                    self.check_timeouts(now);
                    next_timer = Some(now + step);
                }
            }
            // Paused, the loop only waits for a command (the waker), the stop flag or a
            // connection event: it need not wake ten times a second on the client's CPU.
            let mut wait = if window.is_some() {
                MAX_POLL_WAIT
            } else {
                PAUSED_POLL_WAIT
            };
            if let Some(w) = &window {
                let next = if w.measuring { w.main_end } else { w.warm_end };
                wait = wait.min(next.saturating_duration_since(now));
            }
            if let Some(t) = next_timer {
                wait = wait.min(t.saturating_duration_since(now));
            }
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                self.event_loop_failed(e);
                break;
            }
            self.process(&events);
            if !self.dirty.is_empty() {
                self.flush_dirty();
            }
            self.publish_progress();
        }
        if let Some(w) = window.take() {
            let out = self.end_window(Instant::now(), w.main_end - w.warm_end);
            let _ = w.reply.send(out);
        }
        self.finish(stopped_by_flag)
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
                    self.stats.reconnects += 1;
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
                        .client_rps
                        .push(c.core.req_success as f64 / t.as_secs_f64());
                }
            }
        }
        let mut stats = WorkerStats::new(0);
        std::mem::swap(&mut stats, &mut self.stats);
        self.stats.open_conns = stats.open_conns;
        self.stats.app_protocol = stats.app_protocol;
        self.stats.protocol_fallback = stats.protocol_fallback;
        self.stats.tls = stats.tls.clone();
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
