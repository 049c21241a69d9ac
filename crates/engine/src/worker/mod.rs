//! One worker thread: a mio event loop driving its own clients.
//!
//! Hot-path rules: no heap allocation per request (slots, output buffers and
//! the read buffer are allocated once per client/worker and reused), one
//! write per connection per loop turn, one clock read per read batch and
//! per write.
//!
//! Request accounting follows h2load's `Client` (`req_left`, `req_inflight`,
//! `on_stream_close`, `process_abandoned_streams`, `process_timedout_streams`).
//!
//! This file is the loop (warm-up, duration, timers, polling, the end-of-turn
//! write); the rest is split by job: `client` (per-client slots and `fill`),
//! `connect` (connection life on the shared driver, [`crate::conn`]), `turn`
//! (one read/submit turn and the write), `events` (statistics from session
//! events), `pace` (pacing and gating), `coalesce` and `read_wait`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mio::{Events, Poll};

use crate::conn::{Dialer, ReadBufs};
use crate::error::{ProtocolError, TransportError};
use crate::pacing::Pacer;
use crate::plan::Gate;
use crate::samples::WorkerSamples;
use crate::stats::WorkerStats;
use crate::timer::DeadlineTimer;
use crate::timeseries::SeriesRecorder;
use crate::zero_poll::ZeroPoll;
use crate::{Observer, StopFlag, TimedRunPhase as RunPhase};
use client::{fill, Client};
use coalesce::Holds;
use read_wait::ReadWait;
use windows::Standing;

mod client;
mod coalesce;
mod connect;
mod early;
mod events;
mod pace;
mod phases;
mod read_wait;
mod turn;
mod windows;

pub(crate) use windows::{WindowCmd, WAKE};

/// The phases a worker loop runs through.
enum Schedule {
    /// `-n`: until every client is finished.
    Count,
    /// `-D`: warm-up until `warm_end`, measured until `main_end`, then over.
    Timed {
        /// End of the warm-up (start of the measured period).
        warm_end: Instant,
        /// End of the measured period.
        main_end: Instant,
    },
    /// A standing run's worker: paused, or measuring a window.
    Standing(Standing),
}

/// What the loop does after `Worker::advance` (in `phases`).
enum Step {
    /// Poll and serve the connections.
    Go,
    /// Start the turn again (a window just ended: look for the next command first).
    Again,
    /// The loop is over.
    Stop,
}

/// Consecutive connections closed by the server before any response
/// completed, after which a client gives up.
const MAX_FAILS_WITHOUT_PROGRESS: u32 = 3;
/// Upper bound on how long the loop sleeps, so the stop flag is seen promptly.
const MAX_POLL_WAIT: Duration = Duration::from_millis(100);
/// Longest poll between a standing worker's windows (the stop flag is seen this late at
/// worst; commands wake the loop at once).
const PAUSED_POLL_WAIT: Duration = Duration::from_secs(1);

/// Progress counters shared with the thread that called `run` (relaxed).
#[derive(Debug, Default)]
#[repr(align(64))] // one cache line per worker: no false sharing
pub(crate) struct Progress {
    pub done: AtomicU64,
    pub errors: AtomicU64,
}

/// What a worker needs; everything is owned by (or private to) the worker
/// except the stop/abort flags and its progress counters.
pub(crate) struct WorkerSetup<'o> {
    pub id: u32,
    pub nclients: u32,
    /// This worker's share of `-n` (0 with `-D`).
    pub req_todo: u64,
    /// How connections are opened and which sessions run on them.
    pub dialer: Dialer,
    pub require: Option<crate::config::AppProtocol>,
    /// `(warm-up, duration)` for timing-based runs.
    pub timing: Option<(Duration, Duration)>,
    pub active_timeout: Option<Duration>,
    pub inactivity_timeout: Option<Duration>,
    pub start: Instant,
    pub stop: StopFlag,
    pub abort: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
    pub observer: Option<&'o dyn Observer>,
    /// Receives this worker's [`RunPhase`]s (timing-based runs only).
    pub phases: Option<&'o dyn Observer>,
    pub log: Option<File>,
    pub verbose: bool,
    /// How requests are paced (closed model, open model, per-client schedules).
    pub pacer: Pacer,
    /// Which clients are active when (`-r`, closed-model stages).
    pub gate: Gate,
    /// Time series recorder.
    pub series: Option<Box<SeriesRecorder>>,
    /// Longest a freed slot waits for its connection's other streams
    /// (request coalescing, see `coalesce`); `None` sends at once.
    pub coalesce: Option<Duration>,
    /// Longest read wait (see `read_wait`); `None` reads at once.
    pub read_wait: Option<Duration>,
    /// This worker's share of [`crate::BenchConfig::max_samples`].
    pub max_samples: Option<usize>,
}

/// What a worker hands back.
#[derive(Debug)]
pub(crate) struct WorkerOutcome {
    pub stats: WorkerStats,
    /// A condition that makes the whole run fail (e.g. `--require-protocol`).
    pub fatal: Option<crate::EngineError>,
    /// First connection-level failure of each kind, to explain a run where
    /// nothing could connect.
    pub first_connect_error: Option<(String, io::Error)>,
    pub first_tls_error: Option<TransportError>,
    pub first_protocol_error: Option<ProtocolError>,
    /// Some connection was established.
    pub connected: bool,
    pub interrupted: bool,
}

/// What a [`WorkerOutcome`] carries besides the statistics, gathered while the worker runs
/// (apart from them: an outcome's statistics hold four latency histograms, which a
/// placeholder outcome would hold for nothing in every worker).
#[derive(Debug, Default)]
pub(crate) struct Ends {
    /// See [`WorkerOutcome::fatal`].
    pub fatal: Option<crate::EngineError>,
    /// See [`WorkerOutcome::first_connect_error`].
    pub first_connect_error: Option<(String, io::Error)>,
    /// See [`WorkerOutcome::first_tls_error`].
    pub first_tls_error: Option<TransportError>,
    /// See [`WorkerOutcome::first_protocol_error`].
    pub first_protocol_error: Option<ProtocolError>,
    /// See [`WorkerOutcome::connected`].
    pub connected: bool,
}

pub(crate) struct Worker<'o> {
    s: WorkerSetup<'o>,
    poll: Poll,
    clients: Vec<Client>,
    stats: WorkerStats,
    /// Clients with output to write at the end of this turn.
    dirty: Vec<usize>,
    /// Read buffers (plaintext, and ciphertext for TLS).
    bufs: ReadBufs,
    measuring: bool,
    log: Option<BufWriter<File>>,
    reported: bool,
    out: Ends,
    /// Precise wake-ups for paced requests.
    timer: DeadlineTimer,
    /// Pacing, gating or a time series is in use (the loop then reads the clock after polls).
    timed_work: bool,
    /// Per-client pacing: when the next client request becomes due (scan then).
    next_client_due: Option<Instant>,
    /// Next gate evaluation.
    next_gate: Option<Instant>,
    /// Clients holding freed slots back (request coalescing; closed model only).
    holds: Option<Holds>,
    /// Every client below this index is finished.
    first_unfinished: usize,
    /// How long to wait before reading when idle.
    read_wait: ReadWait,
    /// Clients waiting for a request to be due before they reconnect (`Core::reconnect_to`).
    deferred: usize,
    /// How often `-T`/`-N` timeouts are scanned for (none without them).
    timer_step: Option<Duration>,
}

impl<'o> Worker<'o> {
    pub(crate) fn new(mut s: WorkerSetup<'o>) -> io::Result<Worker<'o>> {
        let poll = Poll::new()?;
        let m = s.dialer.max_streams.max(1);
        let nclients = s.nclients.max(1) as u64;
        let per = s.req_todo / nclients;
        let mut rem = s.req_todo % nclients;
        let now = Instant::now();
        let unbounded = s.timing.is_some() || matches!(s.pacer, Pacer::Open(_));
        let clients = (0..s.nclients)
            .map(|_| {
                let mut todo = per;
                if rem > 0 {
                    todo += 1;
                    rem -= 1;
                }
                let mut c = Client::new(todo, m, unbounded, now);
                c.core.reconnect_every = s.dialer.reconnect_every;
                c
            })
            .collect();
        let measuring = match s.timing {
            None => true,
            Some((w, _)) => w.is_zero(),
        };
        let log = s.log.take().map(|f| BufWriter::with_capacity(64 * 1024, f));
        let mut stats = WorkerStats::new(s.req_todo);
        stats.series = s.series.take();
        stats.samples = s
            .max_samples
            .map(|cap| Box::new(WorkerSamples::new(cap, s.id)));
        if let Pacer::Open(p) = &s.pacer {
            stats.run.pacing = Some(crate::result::PacingCounts {
                queue_limit: p.limit() as u64,
                ..Default::default()
            });
        }
        let timer = DeadlineTimer::new(poll.registry());
        let timed_work = s.pacer.is_paced() || !s.gate.is_static() || stats.series.is_some();
        let bufs = ReadBufs::new(s.dialer.tls.is_some());
        // Paced runs send when the schedule says; only the closed model coalesces.
        let holds = s
            .coalesce
            .filter(|_| !s.pacer.is_paced())
            .map(|max| Holds::new(max, s.nclients as usize));
        let read_wait = ReadWait::new(s.read_wait.unwrap_or(Duration::ZERO));
        let timer_step = timer_interval(s.active_timeout, s.inactivity_timeout);
        Ok(Worker {
            s,
            poll,
            clients,
            stats,
            dirty: Vec::with_capacity(nclients as usize),
            bufs,
            measuring,
            log,
            reported: false,
            timer,
            timed_work,
            next_client_due: None,
            next_gate: None,
            holds,
            first_unfinished: 0,
            read_wait,
            deferred: 0,
            timer_step,
            out: Ends::default(),
        })
    }

    /// Runs the event loop until every client is finished, the duration is
    /// over, or the run is stopped.
    pub(crate) fn run(mut self) -> WorkerOutcome {
        let start = self.s.start;
        let sched = match self.s.timing {
            Some((w, d)) => Schedule::Timed {
                warm_end: start + w,
                main_end: start + w + d,
            },
            None => Schedule::Count,
        };
        self.phase(RunPhase::WarmUpStarted);
        self.start_clients(Instant::now());
        if self.measuring {
            self.phase(RunPhase::MainStarted); // no warm-up
        }
        self.run_phases(sched)
    }

    /// The worker's event loop, through the phases of `sched` (a bench run's, or a
    /// standing worker's paused periods and windows; see `phases`), with the clients
    /// already started.
    fn run_phases(mut self, mut sched: Schedule) -> WorkerOutcome {
        let mut events = Events::with_capacity(1024);
        let mut next_timer = match sched {
            Schedule::Standing(_) => None,
            _ => self.timer_step.map(|t| self.s.start + t),
        };
        let mut stopped_by_flag = false;
        let mut zero_poll = ZeroPoll::default();
        if self.s.read_wait.is_some() {
            read_wait::precise_sleeps();
        }
        loop {
            if self.s.stop.is_stopped() || self.s.abort.load(Ordering::Relaxed) {
                stopped_by_flag = self.s.stop.is_stopped();
                self.stop_all();
                break;
            }
            let now = Instant::now();
            match self.advance(&mut sched, now, &mut next_timer) {
                Step::Go => {}
                Step::Again => continue,
                Step::Stop => break,
            }
            if let (Some(t), Some(step)) = (next_timer, self.timer_step) {
                if now >= t {
                    self.check_timeouts(now);
                    next_timer = Some(now + step);
                }
            }
            if sched.ends_with_clients() {
                // Clients never become unfinished again: skip the finished prefix.
                while self
                    .clients
                    .get(self.first_unfinished)
                    .is_some_and(|c| c.core.finished)
                {
                    self.first_unfinished += 1;
                }
                if self.first_unfinished >= self.clients.len() {
                    break;
                }
            }
            // Paused, the loop only waits for a command (the waker), the stop flag or a
            // connection event (QUIC timers included): it need not wake ten times a second.
            let paused = sched.paused();
            let mut wait = if paused {
                PAUSED_POLL_WAIT
            } else {
                MAX_POLL_WAIT
            };
            for d in [
                next_timer,
                sched.deadline(self.measuring),
                self.pace_deadline(now),
                self.holds.as_ref().and_then(Holds::next_deadline),
            ]
            .into_iter()
            .flatten()
            {
                wait = wait.min(d.saturating_duration_since(now));
            }
            let polled = if paused {
                self.poll.poll(&mut events, Some(wait))
            } else {
                self.wait_for_events(&mut events, wait)
            };
            if let Err(e) = polled {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.event_loop_failed(e);
                break;
            }
            self.process(&events);
            if self.timed_work {
                self.pace(Instant::now());
            }
            // (No clock read unless some client is holding.)
            if self
                .holds
                .as_ref()
                .is_some_and(|h| h.next_deadline().is_some())
            {
                self.release_holds(Instant::now());
            }
            if !self.dirty.is_empty() {
                // Like h2load (which writes one loop iteration after reading),
                // give responses that arrived meanwhile a chance to be read
                // first, so each connection's requests go out in one write —
                // while that finds something often enough to pay for the
                // extra syscall (see `zero_poll`).
                if zero_poll.wanted() && self.poll.poll(&mut events, Some(Duration::ZERO)).is_ok() {
                    zero_poll.record(!events.is_empty());
                    self.process(&events);
                }
                self.flush_dirty();
            }
            self.publish_progress();
        }
        if let Schedule::Standing(st) = &mut sched {
            self.close_window(st, Instant::now());
        }
        self.finish(stopped_by_flag)
    }

    /// Polls for events, blocking at most `wait`. When a zero-timeout poll
    /// finds nothing and read waiting is on, sleeps first (see `read_wait`).
    fn wait_for_events(&mut self, events: &mut Events, wait: Duration) -> io::Result<()> {
        let nap = self
            .read_wait
            .wait()
            .map_or(Duration::ZERO, |n| n.min(wait));
        if nap.is_zero() {
            return self.poll.poll(events, Some(wait));
        }
        self.poll.poll(events, Some(Duration::ZERO))?;
        if !events.is_empty() {
            return Ok(());
        }
        std::thread::sleep(nap);
        self.stats.run.read_waits += 1;
        // The deadline behind `wait` is as far off as it was, less the sleep.
        self.poll.poll(events, Some(wait - nap))
    }

    fn process(&mut self, events: &Events) {
        for ev in events.iter() {
            let t = ev.token().0 as u64;
            let idx = (t & 0xffff_ffff) as usize;
            let gen = (t >> 32) as u32;
            match self.clients.get(idx) {
                Some(c) if c.gen == gen && c.conn.is_some() => {
                    self.drive(idx, ev.is_read_closed() || ev.is_error())
                }
                _ => {}
            }
        }
    }

    /// Submits the requests of clients whose hold ran out.
    fn release_holds(&mut self, now: Instant) {
        let Some(mut holds) = self.holds.take() else {
            return;
        };
        while let Some((idx, since)) = holds.pop_expired(now) {
            let Some(client) = self.clients.get_mut(idx) else {
                continue;
            };
            // A hold released early (all streams done) leaves a stale entry.
            if client.core.held_since == Some(since) {
                client.core.held_since = None;
                self.fill_client(idx);
            }
        }
        self.holds = Some(holds);
    }

    fn publish_progress(&self) {
        self.s
            .progress
            .done
            .store(self.stats.run.requests.done, Ordering::Relaxed);
        self.s
            .progress
            .errors
            .store(self.stats.run.errors.total(), Ordering::Relaxed);
    }

    /// Tells the observer (if any) that a timing-based run reached `p`.
    fn phase(&self, p: RunPhase) {
        if let (Some(o), Some(_)) = (self.s.phases, self.s.timing) {
            o.phase(self.s.id, p);
        }
    }

    fn end_warm_up(&mut self, now: Instant) {
        self.stats.reset_after_warm_up();
        if let (Some(r), Some((w, _))) = (self.stats.series.as_mut(), self.s.timing) {
            r.restart(self.s.start + w);
        }
        self.measuring = true;
        self.phase(RunPhase::MainStarted);
        for c in &mut self.clients {
            c.core.start = Some(now);
            c.core.req_success = 0;
        }
        if self.s.verbose {
            eprintln!("[DEBUG] worker {}: warm-up over, measuring", self.s.id);
        }
    }

    fn finish(mut self, interrupted: bool) -> WorkerOutcome {
        let now = Instant::now();
        self.finish_pacing(now);
        if self.s.dialer.quic.is_some() {
            // Connections still open count as they are now; then one sample per client.
            for idx in 0..self.clients.len() {
                if let Some(mut conn) = self.clients[idx].conn.take() {
                    self.harvest_quic(idx, &mut conn);
                    self.clients[idx].conn = Some(conn);
                }
            }
            let q = self.stats.run.quic.get_or_insert_with(Default::default);
            for c in &self.clients {
                q.push_client(&c.quic);
            }
        }
        for c in &mut self.clients {
            let (Some(start), end) = (c.core.start, c.core.end.unwrap_or(now)) else {
                continue;
            };
            let t = end.saturating_duration_since(start).as_secs_f64();
            if t > 1e-9 {
                self.stats
                    .run
                    .client_rps
                    .push(c.core.req_success as f64 / t);
            }
        }
        if let Some(mut l) = self.log.take() {
            let _ = l.flush();
        }
        self.publish_progress();
        // Closes this worker's side of the time-series channel.
        self.stats.series = None;
        let out = self.out;
        WorkerOutcome {
            stats: self.stats,
            fatal: out.fatal,
            first_connect_error: out.first_connect_error,
            first_tls_error: out.first_tls_error,
            first_protocol_error: out.first_protocol_error,
            connected: out.connected,
            interrupted,
        }
    }

    /// The poller failed: the worker's run ends with that error, every connection
    /// abandoned.
    fn event_loop_failed(&mut self, e: io::Error) {
        self.out.fatal = Some(crate::EngineError::Io {
            context: "event loop".into(),
            source: e,
        });
        self.stop_all();
    }

    /// Abandons everything without counting in-flight requests (h2load does the
    /// same when the duration is over).
    fn stop_all(&mut self) {
        let now = Instant::now();
        // Before the connections go: the last time-series row counts them.
        self.finish_pacing(now);
        for idx in 0..self.clients.len() {
            if let Some(mut conn) = self.clients[idx].conn.take() {
                if conn.session.is_some() {
                    self.stats.open_conns = self.stats.open_conns.saturating_sub(1);
                }
                let c = &mut self.clients[idx].core;
                conn.goodbye(&mut c.out, c.out_pos);
                self.harvest_quic(idx, &mut conn);
                conn.close(self.poll.registry());
            }
            let c = &mut self.clients[idx].core;
            for s in c.slots.iter_mut() {
                s.in_use = false;
            }
            c.req_inflight = 0;
            if !c.finished {
                c.finished = true;
                c.end = Some(now);
            }
        }
    }
}

pub(super) fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// How often to scan for `-T`/`-N` timeouts: an eighth of the shortest one,
/// between 1 ms and 100 ms.
fn timer_interval(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    let t = match (a, b) {
        (Some(a), Some(b)) => a.min(b),
        (Some(t), None) | (None, Some(t)) => t,
        (None, None) => return None,
    };
    Some((t / 8).clamp(Duration::from_millis(1), Duration::from_millis(100)))
}
