//! One worker thread: a mio event loop driving its own clients.
//!
//! Hot-path rules: no heap allocation per request (slots, output buffers and
//! the read buffer are allocated once per client/worker and reused), one
//! write per connection per loop turn, one clock read per read batch and
//! per write.
//!
//! Request accounting follows h2load's `Client` (`req_left`, `req_inflight`,
//! `on_stream_close`, `process_abandoned_streams`, `process_timedout_streams`).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mio::{Events, Interest, Poll, Token};
use rustls::pki_types::ServerName;
use rustls::ClientConfig;

use crate::config::AppProtocol;
use crate::h1::H1Session;
use crate::h2::{H2Session, H2Settings};
use crate::pacing::{ClientPace, Pacer};
use crate::plan::Gate;
use crate::request::Prepared;
use crate::samples::WorkerSamples;
use crate::session::{AnySession, Session, SessionError, SessionEvents, SubmitError};
use crate::stats::WorkerStats;
use crate::timer::DeadlineTimer;
use crate::timeseries::SeriesRecorder;
use crate::transport::{Endpoint, Handshake, ReadEnd, Socket, Transport};
use crate::zero_poll::ZeroPoll;
use crate::{Observer, Phase as RunPhase, StopFlag};
use coalesce::Holds;
use read_wait::ReadWait;

mod coalesce;
mod pace;
mod read_wait;

/// Per-worker read buffer size (plaintext).
const READ_BUF: usize = 64 * 1024;
/// Consecutive connections closed by the server before any response
/// completed, after which a client gives up.
const MAX_FAILS_WITHOUT_PROGRESS: u32 = 3;
/// Upper bound on how long the loop sleeps, so the stop flag is seen promptly.
const MAX_POLL_WAIT: Duration = Duration::from_millis(100);

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
    pub prep: Arc<Prepared>,
    pub endpoint: Endpoint,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// `h2` is in the offered ALPN list.
    pub offers_h2: bool,
    /// `http/1.1` is in the offered ALPN list (fallback when nothing is selected).
    pub offers_h1: bool,
    pub cleartext: AppProtocol,
    pub require: Option<AppProtocol>,
    pub max_streams: u32,
    pub h2: H2Settings,
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
    pub first_tls_error: Option<String>,
    pub first_protocol_error: Option<String>,
    /// Some connection was established.
    pub connected: bool,
    pub interrupted: bool,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// When the first byte of the request was written.
    start: Instant,
    /// Wall-clock start in µs since the epoch (only with `--log-file`).
    wall_us: u64,
    /// First final status (0 = none yet).
    status: u16,
    in_use: bool,
    /// Submitted while measuring (not during warm-up).
    measured: bool,
    /// Paced runs: when the request was meant to start (its due time).
    intended: Option<Instant>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Handshaking,
    Open,
}

struct Conn {
    transport: Transport,
    phase: Phase,
    session: Option<AnySession>,
    last_activity: Instant,
    /// Index of the endpoint address in use.
    addr_idx: usize,
}

/// Per-client state that outlives connections (reused across reconnects).
struct Core {
    out: Vec<u8>,
    out_pos: usize,
    slots: Box<[Slot]>,
    free: Vec<u32>,
    unstamped: Vec<u32>,
    unbounded: bool,
    req_left: u64,
    req_inflight: u32,
    req_success: u64,
    uri_idx: usize,
    start: Option<Instant>,
    end: Option<Instant>,
    connect_start: Instant,
    ttfb_done: bool,
    completed_on_conn: u64,
    fails_without_progress: u32,
    active_deadline: Option<Instant>,
    finished: bool,
    /// Per-client schedule progress (`--rps`, timing script).
    pace: ClientPace,
    /// The gate lets this client run (`-r`, stages).
    active: bool,
    /// Switched off by the gate: submit nothing more, close once idle.
    parked: bool,
    /// Intended starts of paced requests the server refused (retried first; at most `-m`).
    retry: Vec<Instant>,
    /// Free slots are being held back since then (request coalescing).
    held_since: Option<Instant>,
}

impl Core {
    /// The client has requests to send: work left and not switched off by the gate.
    fn wants_requests(&self) -> bool {
        !self.parked && (self.unbounded || self.req_left > 0)
    }

    /// [`Core::wants_requests`] and a free slot to put one in.
    fn could_fill(&self) -> bool {
        self.wants_requests() && !self.free.is_empty()
    }
}

struct Client {
    gen: u32,
    /// Queued for the end-of-turn write.
    dirty: bool,
    conn: Option<Conn>,
    core: Core,
}

/// Outcome of one I/O turn on a connection.
enum Turn {
    Continue,
    /// The client has nothing left to do.
    ClientDone,
    /// The gate switched the client off and nothing is in flight: close, keep the client.
    Park,
    /// The connection ended.
    End(End),
}

/// How a connection ended.
#[derive(Debug)]
enum End {
    /// The server closed or announced closing (EOF between responses,
    /// `Connection: close`, GOAWAY drained): reconnect if work is left.
    ServerClosed,
    /// A transport error or truncated response.
    Io(String),
    /// A protocol error.
    Protocol(String),
}

pub(crate) struct Worker<'o> {
    s: WorkerSetup<'o>,
    poll: Poll,
    clients: Vec<Client>,
    stats: WorkerStats,
    /// Clients with output to write at the end of this turn.
    dirty: Vec<usize>,
    read_buf: Box<[u8]>,
    /// Ciphertext buffer for TLS (empty for cleartext runs).
    raw_buf: Box<[u8]>,
    measuring: bool,
    log: Option<BufWriter<File>>,
    reported: bool,
    out: WorkerOutcome,
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
}

impl<'o> Worker<'o> {
    pub(crate) fn new(mut s: WorkerSetup<'o>) -> io::Result<Worker<'o>> {
        let poll = Poll::new()?;
        let m = s.max_streams.max(1);
        let nclients = s.nclients.max(1) as u64;
        let per = s.req_todo / nclients;
        let mut rem = s.req_todo % nclients;
        let now = Instant::now();
        let clients = (0..s.nclients)
            .map(|_| {
                let mut todo = per;
                if rem > 0 {
                    todo += 1;
                    rem -= 1;
                }
                Client {
                    gen: 0,
                    dirty: false,
                    conn: None,
                    core: Core {
                        out: Vec::with_capacity(4096),
                        out_pos: 0,
                        slots: vec![
                            Slot {
                                start: now,
                                wall_us: 0,
                                status: 0,
                                in_use: false,
                                measured: false,
                                intended: None,
                            };
                            m as usize
                        ]
                        .into_boxed_slice(),
                        free: (0..m).rev().collect(),
                        unstamped: Vec::with_capacity(m as usize),
                        unbounded: s.timing.is_some() || matches!(s.pacer, Pacer::Open(_)),
                        req_left: todo,
                        req_inflight: 0,
                        req_success: 0,
                        uri_idx: 0,
                        start: None,
                        end: None,
                        connect_start: now,
                        ttfb_done: false,
                        completed_on_conn: 0,
                        fails_without_progress: 0,
                        active_deadline: None,
                        finished: false,
                        pace: ClientPace::default(),
                        active: true,
                        parked: false,
                        retry: Vec::with_capacity(m as usize),
                        held_since: None,
                    },
                }
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
            stats.pacing = Some(crate::result::PacingCounts {
                queue_limit: p.limit() as u64,
                ..Default::default()
            });
        }
        let timer = DeadlineTimer::new(poll.registry());
        let timed_work = s.pacer.is_paced() || !s.gate.is_static() || stats.series.is_some();
        let raw_buf = vec![0u8; if s.tls.is_some() { READ_BUF } else { 0 }].into_boxed_slice();
        // Paced runs send when the schedule says; only the closed model coalesces.
        let holds = s
            .coalesce
            .filter(|_| !s.pacer.is_paced())
            .map(|max| Holds::new(max, s.nclients as usize));
        let read_wait = ReadWait::new(s.read_wait.unwrap_or(Duration::ZERO));
        Ok(Worker {
            s,
            poll,
            clients,
            stats,
            dirty: Vec::with_capacity(nclients as usize),
            read_buf: vec![0u8; READ_BUF].into_boxed_slice(),
            raw_buf,
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
            out: WorkerOutcome {
                stats: WorkerStats::new(0),
                fatal: None,
                first_connect_error: None,
                first_tls_error: None,
                first_protocol_error: None,
                connected: false,
                interrupted: false,
            },
        })
    }

    /// Runs the event loop until every client is finished, the duration is
    /// over, or the run is stopped.
    pub(crate) fn run(mut self) -> WorkerOutcome {
        let mut events = Events::with_capacity(1024);
        let start = self.s.start;
        let (warm_end, main_end) = match self.s.timing {
            Some((w, d)) => (Some(start + w), Some(start + w + d)),
            None => (None, None),
        };
        let timer_step = timer_interval(self.s.active_timeout, self.s.inactivity_timeout);
        let mut next_timer = timer_step.map(|t| start + t);

        self.phase(RunPhase::WarmUpStarted);
        self.start_clients(Instant::now());
        if self.measuring {
            self.phase(RunPhase::MainStarted); // no warm-up
        }
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
            if let Some(w) = warm_end {
                if !self.measuring && now >= w {
                    self.end_warm_up(now);
                }
            }
            if let Some(e) = main_end {
                if now >= e {
                    self.phase(RunPhase::MainOver);
                    self.stop_all();
                    self.phase(RunPhase::Stopped);
                    break;
                }
            }
            if let (Some(t), Some(step)) = (next_timer, timer_step) {
                if now >= t {
                    self.check_timeouts(now);
                    next_timer = Some(now + step);
                }
            }
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
            let mut wait = MAX_POLL_WAIT;
            for d in [
                next_timer,
                main_end,
                warm_end.filter(|_| !self.measuring),
                self.pace_deadline(now),
                self.holds.as_ref().and_then(Holds::next_deadline),
            ]
            .into_iter()
            .flatten()
            {
                wait = wait.min(d.saturating_duration_since(now));
            }
            if let Err(e) = self.wait_for_events(&mut events, wait) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.out.fatal = Some(crate::EngineError::Io {
                    context: "event loop".into(),
                    source: e,
                });
                self.stop_all();
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
        self.stats.read_waits += 1;
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
            .store(self.stats.done, Ordering::Relaxed);
        self.s
            .progress
            .errors
            .store(self.stats.errors.total(), Ordering::Relaxed);
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
        for c in &mut self.clients {
            let (Some(start), end) = (c.core.start, c.core.end.unwrap_or(now)) else {
                continue;
            };
            let t = end.saturating_duration_since(start).as_secs_f64();
            if t > 1e-9 {
                self.stats.client_rps.push(c.core.req_success as f64 / t);
            }
        }
        if let Some(mut l) = self.log.take() {
            let _ = l.flush();
        }
        self.publish_progress();
        // Closes this worker's side of the time-series channel.
        self.stats.series = None;
        let mut out = self.out;
        out.stats = self.stats;
        out.interrupted = interrupted;
        out
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
                if let Some(sess) = conn.session.as_mut() {
                    sess.terminate(&mut c.out);
                    let _ = conn
                        .transport
                        .write(c.out.get(c.out_pos..).unwrap_or_default());
                }
                conn.transport.close();
                let _ = self.poll.registry().deregister(&mut conn.transport.socket);
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

    // ---- connecting -------------------------------------------------------

    /// Starts connecting client `idx`, trying addresses from `from_addr` on.
    fn connect(&mut self, idx: usize, now: Instant, from_addr: usize) {
        let n = self.s.endpoint.len();
        let client = &mut self.clients[idx];
        client.gen = client.gen.wrapping_add(1);
        let token = Token(((client.gen as u64) << 32 | idx as u64) as usize);
        client.core.connect_start = now;
        client.core.ttfb_done = false;
        client.core.completed_on_conn = 0;
        let mut last_err = None;
        for i in from_addr..n {
            match Socket::connect(&self.s.endpoint, i) {
                Ok(mut sock) => {
                    if let Err(e) = self.poll.registry().register(
                        &mut sock,
                        token,
                        Interest::READABLE | Interest::WRITABLE,
                    ) {
                        last_err = Some((i, e));
                        continue;
                    }
                    let transport = match &self.s.tls {
                        None => Transport::plain(sock),
                        Some((cfg, name)) => match Transport::tls(sock, cfg, name) {
                            Ok(t) => t,
                            Err(reason) => {
                                self.tls_failed(idx, reason);
                                return;
                            }
                        },
                    };
                    let client = &mut self.clients[idx];
                    client.core.start.get_or_insert(now);
                    client.conn = Some(Conn {
                        transport,
                        phase: Phase::Connecting,
                        session: None,
                        last_activity: now,
                        addr_idx: i,
                    });
                    return;
                }
                Err(e) => last_err = Some((i, e)),
            }
        }
        let (i, e) = last_err.unwrap_or_else(|| {
            (
                from_addr,
                io::Error::new(io::ErrorKind::NotFound, "no address to connect to"),
            )
        });
        self.connect_failed(idx, i, e);
    }

    /// The connect to address `addr_idx` failed: try the next address (like
    /// h2load walking getaddrinfo's list), or give the client up.
    fn connect_failed(&mut self, idx: usize, addr_idx: usize, e: io::Error) {
        let addr = self.s.endpoint.describe(addr_idx);
        if let Some(mut conn) = self.clients[idx].conn.take() {
            let _ = self.poll.registry().deregister(&mut conn.transport.socket);
        }
        if addr_idx + 1 < self.s.endpoint.len() {
            // h2load: "Try next address".
            self.connect(idx, Instant::now(), addr_idx + 1);
            return;
        }
        self.stats.errors.connect += 1;
        self.stats
            .note_error(|| format!("could not connect to {addr}: {e}"));
        if self.s.verbose {
            eprintln!("[DEBUG] client could not connect to host {addr}: {e}");
        }
        if self.out.first_connect_error.is_none() {
            self.out.first_connect_error = Some((addr, e));
        }
        self.give_up(idx);
    }

    fn tls_failed(&mut self, idx: usize, reason: String) {
        self.stats.errors.tls += 1;
        self.stats
            .note_error(|| format!("TLS handshake failed: {reason}"));
        if self.out.first_tls_error.is_none() {
            self.out.first_tls_error = Some(reason);
        }
        self.close_conn(idx);
        self.give_up(idx);
    }

    fn protocol_failed(&mut self, idx: usize, reason: String) {
        self.stats.errors.protocol += 1;
        self.stats.note_error(|| reason.clone());
        if self.out.first_protocol_error.is_none() {
            self.out.first_protocol_error = Some(reason);
        }
        self.close_conn(idx);
        self.give_up(idx);
    }

    fn close_conn(&mut self, idx: usize) {
        if let Some(mut conn) = self.clients[idx].conn.take() {
            if conn.session.is_some() {
                self.stats.open_conns = self.stats.open_conns.saturating_sub(1);
            }
            conn.transport.close();
            let _ = self.poll.registry().deregister(&mut conn.transport.socket);
        }
    }

    /// h2load `process_abandoned_streams`: the client stops; its in-flight and
    /// not yet issued requests count as failed and errored.
    fn give_up(&mut self, idx: usize) {
        let c = &mut self.clients[idx].core;
        let measured_inflight = c.slots.iter().filter(|s| s.in_use && s.measured).count() as u64;
        for s in c.slots.iter_mut() {
            s.in_use = false;
        }
        c.free.clear();
        c.free.extend((0..c.slots.len() as u32).rev());
        c.unstamped.clear();
        c.out.clear();
        c.out_pos = 0;
        c.req_inflight = 0;
        if self.measuring {
            let left = if c.unbounded { 0 } else { c.req_left };
            self.stats.failed += measured_inflight + left;
            self.stats.errored += measured_inflight + left;
        }
        c.req_left = 0;
        if !c.finished {
            c.finished = true;
            c.end = Some(Instant::now());
        }
    }

    // ---- timeouts ---------------------------------------------------------

    fn check_timeouts(&mut self, now: Instant) {
        for idx in 0..self.clients.len() {
            let c = &self.clients[idx];
            let Some(conn) = c.conn.as_ref() else {
                continue;
            };
            let inactive = self
                .s
                .inactivity_timeout
                .is_some_and(|t| now.saturating_duration_since(conn.last_activity) >= t);
            let active = c.core.active_deadline.is_some_and(|d| now >= d);
            if inactive || active {
                self.timeout(idx, if active { "-T" } else { "-N" });
            }
        }
    }

    /// h2load `Client::timeout`: in-flight requests count as timed out, then
    /// everything left is abandoned.
    fn timeout(&mut self, idx: usize, which: &str) {
        let inflight = self.clients[idx]
            .core
            .slots
            .iter()
            .filter(|s| s.in_use && s.measured)
            .count() as u64;
        if self.measuring {
            self.stats.timeout += inflight;
        }
        self.stats.errors.timeout += 1;
        let what = if which == "-T" {
            "connection active timeout (-T)"
        } else {
            "connection inactivity timeout (-N)"
        };
        self.stats.note_error(|| what.to_owned());
        self.close_conn(idx);
        self.give_up(idx);
    }

    // ---- I/O --------------------------------------------------------------

    /// Handles readiness for client `idx`: connect/handshake progress, then
    /// read everything, submit what can be submitted, write once.
    fn drive(&mut self, idx: usize, read_closed: bool) {
        let Some(conn) = self.clients[idx].conn.as_mut() else {
            return;
        };
        if conn.phase == Phase::Open {
            // The hot path: no clock read here (reads and writes take their own).
            self.service(idx, read_closed);
            return;
        }
        let now = Instant::now();
        if conn.phase == Phase::Connecting {
            match conn.transport.socket.check_connected() {
                Ok(false) => return,
                Ok(true) => {
                    conn.last_activity = now;
                    conn.phase = if conn.transport.is_tls() {
                        Phase::Handshaking
                    } else {
                        Phase::Open
                    };
                    if conn.phase == Phase::Open {
                        self.on_open(idx, now);
                        return;
                    }
                }
                Err(e) => {
                    let a = conn.addr_idx;
                    self.connect_failed(idx, a, e);
                    return;
                }
            }
        }
        let Some(conn) = self.clients[idx].conn.as_mut() else {
            return;
        };
        if conn.phase == Phase::Handshaking {
            match conn.transport.handshake() {
                Ok(Handshake::InProgress) => {
                    conn.last_activity = now;
                    return;
                }
                Ok(Handshake::Done) => {
                    self.on_open(idx, now);
                    return;
                }
                Err(reason) => {
                    self.tls_failed(idx, reason);
                    return;
                }
            }
        }
        self.service(idx, read_closed);
    }

    /// The transport is ready: pick the protocol, start the session.
    fn on_open(&mut self, idx: usize, now: Instant) {
        let Some(conn) = self.clients[idx].conn.as_mut() else {
            return;
        };
        let proto = if conn.transport.is_tls() {
            match conn.transport.alpn() {
                Some(b"h2") => Ok((AppProtocol::H2, false)),
                Some(b"http/1.1") => Ok((AppProtocol::Http11, self.s.offers_h2)),
                None if self.s.offers_h1 => Ok((AppProtocol::Http11, self.s.offers_h2)),
                None => Err("no protocol was negotiated with ALPN".to_owned()),
                Some(p) => Err(format!(
                    "server selected an unsupported protocol: {}",
                    String::from_utf8_lossy(p)
                )),
            }
        } else {
            Ok((self.s.cleartext, false))
        };
        let (proto, fallback) = match proto {
            Ok(p) => p,
            Err(reason) => {
                self.protocol_failed(idx, reason);
                return;
            }
        };
        self.out.connected = true;
        if let Some(req) = self.s.require {
            if req != proto {
                let reason = format!(
                    "--require-protocol {req}: the server negotiated {proto}{}",
                    if fallback { " (fallback from h2)" } else { "" }
                );
                if self.out.fatal.is_none() {
                    self.out.fatal = Some(crate::EngineError::Protocol { reason });
                }
                self.s.abort.store(true, Ordering::Relaxed);
                self.close_conn(idx);
                self.give_up(idx);
                return;
            }
        }
        let client = &mut self.clients[idx];
        let Some(conn) = client.conn.as_mut() else {
            return;
        };
        let core = &mut client.core;
        self.stats
            .record_connect(now.saturating_duration_since(core.connect_start));
        if conn.transport.resumed() {
            self.stats.tls_resumed += 1;
        }
        if self.stats.app_protocol.is_none() {
            self.stats.app_protocol = Some(proto);
            self.stats.protocol_fallback = fallback;
            self.stats.tls = conn.transport.tls_info();
        }
        if !self.reported {
            self.reported = true;
            if let Some(obs) = self.s.observer {
                if let Some(info) = conn.transport.tls_info() {
                    obs.tls_info(&info);
                }
                obs.protocol(proto);
            }
        }
        if self.s.verbose {
            eprintln!(
                "[DEBUG] worker {} client {idx}: connected, protocol {proto}",
                self.s.id
            );
        }
        let mut session = match proto {
            AppProtocol::Http11 => AnySession::H1(H1Session::new(
                Arc::clone(&self.s.prep),
                self.s.max_streams,
                self.s.verbose,
            )),
            AppProtocol::H2 | AppProtocol::H2c => AnySession::H2(Box::new(H2Session::new(
                Arc::clone(&self.s.prep),
                self.s.max_streams,
                &self.s.h2,
                self.s.verbose,
            ))),
        };
        session.on_connect(&mut core.out);
        conn.session = Some(session);
        self.stats.open_conns += 1;
        if core.pace.origin.is_none() && matches!(self.s.pacer, Pacer::PerClient(_)) {
            core.pace.origin = Some(now);
            self.next_client_due = Some(now);
        }
        conn.phase = Phase::Open;
        conn.last_activity = now;
        // Data may already be buffered (and no new edge will come for it).
        self.service(idx, true);
    }

    /// Read everything available, submit new requests, write once; then deal
    /// with the connection ending.
    fn service(&mut self, idx: usize, read_closed: bool) {
        match self.io_turn(idx, read_closed) {
            Turn::Continue => {
                if self.has_output(idx) {
                    self.mark_dirty(idx);
                }
            }
            Turn::ClientDone => self.client_done(idx, true),
            Turn::Park => self.client_done(idx, false),
            Turn::End(end) => self.conn_ended(idx, end),
        }
    }

    /// The client has nothing in flight and nothing left to do (`finished`), or the gate
    /// switched it off: say goodbye and close.
    fn client_done(&mut self, idx: usize, finished: bool) {
        let client = &mut self.clients[idx];
        if let Some(conn) = client.conn.as_mut() {
            let core = &mut client.core;
            if let Some(session) = conn.session.as_mut() {
                // Graceful goodbye (HTTP/2 GOAWAY), best effort.
                session.terminate(&mut core.out);
                let _ = conn
                    .transport
                    .write(core.out.get(core.out_pos..).unwrap_or_default());
            }
        }
        self.close_conn(idx);
        let core = &mut self.clients[idx].core;
        core.out.clear();
        core.out_pos = 0;
        if finished {
            core.finished = true;
            core.end = Some(Instant::now());
        }
    }

    fn io_turn(&mut self, idx: usize, read_closed: bool) -> Turn {
        let measuring = self.measuring;
        let Worker {
            clients,
            stats,
            read_buf,
            raw_buf,
            log,
            s,
            holds,
            read_wait,
            ..
        } = self;
        let pacer = &mut s.pacer;
        let client = &mut clients[idx];
        let Some(conn) = client.conn.as_mut() else {
            return Turn::Continue;
        };
        let core = &mut client.core;
        let Some(session) = conn.session.as_mut() else {
            return Turn::Continue;
        };
        let mut end: Option<End> = None;

        // 1. Read everything available (one read syscall per burst).
        let Conn {
            transport,
            last_activity,
            ..
        } = conn;
        let mut sess_err = None;
        let mut got_data = false;
        let r = transport.read_with(read_buf, raw_buf, read_closed, |input| {
            got_data = true;
            let now = Instant::now();
            *last_activity = now;
            if measuring {
                stats.traffic.bytes_total += input.len() as u64;
            }
            let mut out = std::mem::take(&mut core.out);
            let mut ev = Ev {
                core: &mut *core,
                st: &mut *stats,
                read_wait: &mut *read_wait,
                now,
                measuring,
                log: log.as_mut(),
            };
            let r = session.on_read(input, &mut out, &mut ev);
            core.out = out;
            match r {
                Ok(()) => true,
                Err(e) => {
                    sess_err = Some(e);
                    false
                }
            }
        });
        if got_data {
            read_wait.read();
        }
        match r {
            Ok(ReadEnd::Drained) => {}
            Ok(ReadEnd::Stopped) => {
                end = sess_err.map(|e| match e {
                    SessionError::Protocol(m) => End::Protocol(m),
                    SessionError::UnexpectedEof => End::Io(e.to_string()),
                });
            }
            Ok(ReadEnd::Eof) => {
                let mut ev = Ev {
                    core,
                    st: stats,
                    read_wait,
                    now: Instant::now(),
                    measuring,
                    log: log.as_mut(),
                };
                end = Some(match session.on_eof(&mut ev) {
                    Ok(()) => End::ServerClosed,
                    Err(e) => End::Io(e.to_string()),
                });
            }
            Err(e) => {
                end = Some(if e.kind() == io::ErrorKind::InvalidData {
                    End::Protocol(format!("TLS error: {e}"))
                } else {
                    End::Io(e.to_string())
                });
            }
        }

        // 2. Submit new requests into free slots, unless they are held back
        //    for the connection's other streams (request coalescing).
        let held = end.is_none()
            && holds.as_mut().is_some_and(|h| {
                core.could_fill()
                    && h.hold(idx, core.req_inflight, &mut core.held_since, Instant::now())
            });
        if end.is_none() && !held {
            core.held_since = None;
            fill(
                core,
                session,
                stats,
                &s.prep,
                s.active_timeout,
                measuring,
                pacer,
            );
        }

        if let Some(end) = end {
            return Turn::End(end);
        }

        // 3. Done with this client?
        if !core.unbounded && core.req_left == 0 && core.req_inflight == 0 {
            return Turn::ClientDone;
        }
        if core.parked && core.req_inflight == 0 {
            return Turn::Park;
        }
        Turn::Continue
    }

    /// Whether client `idx` has something for the end-of-turn write: bytes, output the
    /// session holds back (request bodies), TLS records, or a close to carry out.
    fn has_output(&self, idx: usize) -> bool {
        let Some(c) = self.clients.get(idx) else {
            return false;
        };
        let Some(conn) = c.conn.as_ref() else {
            return false;
        };
        c.core.out_pos < c.core.out.len()
            || conn.transport.wants_write()
            || conn
                .session
                .as_ref()
                .is_some_and(|s| s.wants_write() || s.wants_close())
    }

    /// Queues client `idx` for the end-of-turn write.
    fn mark_dirty(&mut self, idx: usize) {
        if let Some(c) = self.clients.get_mut(idx) {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push(idx);
            }
        }
    }

    /// Writes every connection that produced output this turn, once.
    fn flush_dirty(&mut self) {
        let mut list = std::mem::take(&mut self.dirty);
        for &idx in &list {
            if let Some(c) = self.clients.get_mut(idx) {
                c.dirty = false;
            }
            self.flush(idx);
        }
        list.clear();
        if self.dirty.is_empty() {
            self.dirty = list; // keep the capacity
        }
    }

    /// One write of the pending output (the protocol's held-back output
    /// first); then close if the protocol is done with the connection.
    fn flush(&mut self, idx: usize) {
        let log_enabled = self.log.is_some();
        let client = &mut self.clients[idx];
        let Some(conn) = client.conn.as_mut() else {
            return;
        };
        let core = &mut client.core;
        let Some(session) = conn.session.as_mut() else {
            return;
        };
        session.on_write(&mut core.out);
        let mut write_err = None;
        while core.out_pos < core.out.len() {
            let pending = core.out.get(core.out_pos..).unwrap_or_default();
            // Requests are timed from just before the write that carries
            // them (like h2load, which stamps when a request is handed to
            // the send path): on loopback the server may answer before the
            // write call returns.
            let before = (!core.unstamped.is_empty()).then(Instant::now);
            match conn.transport.write(pending) {
                Ok(n) => {
                    let now = before.unwrap_or_else(Instant::now);
                    conn.last_activity = now;
                    if !core.unstamped.is_empty() {
                        let wall = if log_enabled { wall_us() } else { 0 };
                        for &sl in &core.unstamped {
                            if let Some(slot) = core.slots.get_mut(sl as usize) {
                                slot.start = now;
                                slot.wall_us = wall;
                            }
                        }
                        core.unstamped.clear();
                    }
                    core.out_pos += n;
                    self.stats.bytes_sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    write_err = Some(e);
                    break;
                }
            }
        }
        if core.out_pos >= core.out.len() {
            core.out.clear();
            core.out_pos = 0;
            if let Err(e) = conn.transport.flush() {
                write_err.get_or_insert(e);
            }
        }
        let close = session.wants_close() && core.out.is_empty();
        if let Some(e) = write_err {
            self.conn_ended(idx, End::Io(format!("write: {e}")));
        } else if close {
            self.conn_ended(idx, End::ServerClosed);
        }
    }

    /// The connection is gone: account for what was in flight, then reconnect
    /// if the client has work left (GOAWAY, `Connection: close`, idle close),
    /// or give up after repeated failures without progress.
    fn conn_ended(&mut self, idx: usize, end: End) {
        if matches!(end, End::Protocol(_)) {
            // RFC 9113 §5.4.1: "An endpoint that encounters a connection error
            // SHOULD first send a GOAWAY frame". The session queued it: one
            // best-effort write before closing.
            let client = &mut self.clients[idx];
            if let Some(conn) = client.conn.as_mut() {
                let pending = client.core.out.get(client.core.out_pos..);
                let _ = conn.transport.write(pending.unwrap_or_default());
            }
        }
        let addr = self.clients[idx].conn.as_ref().map_or(0, |c| c.addr_idx);
        self.close_conn(idx);
        let measuring = self.measuring;
        let c = &mut self.clients[idx].core;
        // h2load try_again_or_fail: "we don't have a facility to re-start request
        // already in in-flight. Make them fail."
        let mut lost = 0u64;
        for s in c.slots.iter_mut() {
            if s.in_use {
                s.in_use = false;
                if s.measured {
                    lost += 1;
                }
            }
        }
        c.free.clear();
        c.free.extend((0..c.slots.len() as u32).rev());
        c.unstamped.clear();
        c.out.clear();
        c.out_pos = 0;
        c.req_inflight = 0;
        if measuring {
            self.stats.failed += lost;
            self.stats.errored += lost;
        }
        let progress = c.completed_on_conn > 0;
        let error = match &end {
            End::ServerClosed => None,
            End::Io(m) => {
                if lost > 0 {
                    self.stats.errors.io += 1;
                }
                Some(m.clone())
            }
            End::Protocol(m) => {
                self.stats.errors.protocol += 1;
                Some(m.clone())
            }
        };
        if let Some(m) = &error {
            self.stats.note_error(|| m.clone());
            if self.s.verbose {
                eprintln!("[DEBUG] worker {} client {idx}: {m}", self.s.id);
            }
            if matches!(end, End::Protocol(_)) && self.out.first_protocol_error.is_none() {
                self.out.first_protocol_error = Some(m.clone());
            }
        }
        let c = &mut self.clients[idx].core;
        let work_left = c.unbounded || c.req_left > 0;
        if !work_left {
            c.finished = true;
            c.end = Some(Instant::now());
            return;
        }
        if progress {
            c.fails_without_progress = 0;
        } else {
            c.fails_without_progress += 1;
        }
        // A connection that failed before completing anything is not retried
        // (h2load gives such a client up); one the server closed cleanly
        // (GOAWAY, `Connection: close`) is retried a few times.
        if (error.is_some() && !progress) || c.fails_without_progress >= MAX_FAILS_WITHOUT_PROGRESS
        {
            if error.is_none() {
                self.stats.note_error(|| {
                    format!(
                        "the server closed the connection {MAX_FAILS_WITHOUT_PROGRESS} times \
                         in a row before completing a request"
                    )
                });
            }
            self.give_up(idx);
            return;
        }
        self.stats.reconnects += 1;
        // h2load: "Keep using current address".
        self.connect(idx, Instant::now(), addr);
    }
}

/// Submits requests while the client has work, a slot is free, the session
/// accepts and the pacer lets a request go (h2load submits
/// `min(req_left, max_concurrent_streams)` at connect and one more per closed
/// stream). Returns how many were submitted.
fn fill(
    core: &mut Core,
    session: &mut AnySession,
    stats: &mut WorkerStats,
    prep: &Prepared,
    active_timeout: Option<Duration>,
    measuring: bool,
    pacer: &mut Pacer,
) -> u32 {
    let nuris = prep.len();
    let mut submitted = 0;
    while core.wants_requests() && session.can_submit() {
        let Some(slot) = core.free.pop() else { break };
        let retried = core.retry.pop();
        let intended = match retried {
            Some(i) => Some(i),
            None => match pacer.take(&mut core.pace, &mut stats.pacing, measuring) {
                Some(i) => i,
                None => {
                    core.free.push(slot);
                    break;
                }
            },
        };
        match session.submit(slot, core.uri_idx, &mut core.out) {
            Ok(()) => {}
            Err(SubmitError::WouldBlock | SubmitError::Exhausted) => {
                core.free.push(slot);
                match retried {
                    Some(i) => core.retry.push(i),
                    None => pacer.untake(&mut core.pace, &mut stats.pacing, measuring, intended),
                }
                break;
            }
        }
        submitted += 1;
        core.uri_idx += 1;
        if core.uri_idx >= nuris {
            core.uri_idx = 0;
        }
        if let Some(sl) = core.slots.get_mut(slot as usize) {
            *sl = Slot {
                start: sl.start,
                wall_us: 0,
                status: 0,
                in_use: true,
                measured: measuring,
                intended,
            };
        }
        core.unstamped.push(slot);
        core.req_inflight += 1;
        if measuring {
            stats.started += 1;
        }
        if !core.unbounded {
            core.req_left -= 1;
            if core.req_left == 0 {
                if let Some(t) = active_timeout {
                    core.active_deadline = Some(Instant::now() + t);
                }
            }
        }
    }
    submitted
}

/// The worker side of [`SessionEvents`]: all statistics happen here.
struct Ev<'a> {
    core: &'a mut Core,
    st: &'a mut WorkerStats,
    read_wait: &'a mut ReadWait,
    now: Instant,
    measuring: bool,
    log: Option<&'a mut BufWriter<File>>,
}

impl Ev<'_> {
    fn ttfb(&mut self) {
        if !self.core.ttfb_done {
            self.core.ttfb_done = true;
            self.st
                .record_ttfb(self.now.saturating_duration_since(self.core.connect_start));
        }
    }

    /// Releases a slot; returns it if it was in use.
    fn release(&mut self, slot: u32) -> Option<Slot> {
        let s = self.core.slots.get_mut(slot as usize)?;
        if !s.in_use {
            return None;
        }
        s.in_use = false;
        let copy = *s;
        self.core.free.push(slot);
        self.core.req_inflight = self.core.req_inflight.saturating_sub(1);
        Some(copy)
    }

    fn log_line(&mut self, s: &Slot, status: Option<u16>) {
        if let Some(l) = self.log.as_mut() {
            let d = self.now.saturating_duration_since(s.start).as_micros();
            let _ = match status {
                Some(code) => writeln!(l, "{}\t{}\t{}", s.wall_us, code, d),
                None => writeln!(l, "{}\t-1\t{}", s.wall_us, d),
            };
        }
    }
}

impl SessionEvents for Ev<'_> {
    fn status(&mut self, slot: u32, status: u16) {
        let Some(s) = self.core.slots.get_mut(slot as usize) else {
            return;
        };
        if !s.in_use || s.status != 0 {
            return;
        }
        let count = s.measured && self.measuring;
        if status < 200 {
            if count {
                self.st.status[1] += 1;
            }
            return;
        }
        s.status = status;
        if count && status < 600 {
            self.st.status[(status / 100) as usize] += 1;
        }
    }

    fn header_bytes(&mut self, wire: usize, decoded: usize) {
        if self.measuring {
            self.st.traffic.bytes_head += wire as u64;
            self.st.traffic.bytes_head_decomp += decoded as u64;
        }
    }

    fn body(&mut self, _slot: u32, len: usize) {
        self.ttfb();
        if self.measuring {
            self.st.traffic.bytes_body += len as u64;
        }
    }

    fn complete(&mut self, slot: u32) {
        // Counts after an interval's end belong to the next one.
        self.st.roll_series(self.now);
        self.ttfb();
        let Some(s) = self.release(slot) else { return };
        self.core.completed_on_conn += 1;
        let took = self.now.saturating_duration_since(s.start);
        self.read_wait.observe(took);
        if !(s.measured && self.measuring) {
            return;
        }
        self.core.req_success += 1;
        self.st.completed += 1;
        if (200..400).contains(&s.status) {
            self.st.status_success += 1;
        } else {
            self.st.failed += 1;
        }
        self.st.done += 1;
        let corrected = s.intended.map(|i| self.now.saturating_duration_since(i));
        self.st.record_latency(took, corrected);
        let status = s.status;
        self.log_line(&s, Some(status));
    }

    fn reset(&mut self, slot: u32, code: u32) {
        self.st.roll_series(self.now);
        let Some(s) = self.release(slot) else { return };
        if !(s.measured && self.measuring) {
            return;
        }
        *self.st.errors.stream_resets.entry(code).or_default() += 1;
        self.st.failed += 1;
        self.st.errored += 1;
        self.st.done += 1;
        self.log_line(&s, None);
    }

    fn refused(&mut self, slot: u32) {
        let Some(s) = self.release(slot) else { return };
        // Not processed by the server: put the request back.
        if s.measured && self.measuring {
            self.st.started = self.st.started.saturating_sub(1);
        }
        if let Some(i) = s.intended {
            if self.core.retry.len() < self.core.retry.capacity() {
                self.core.retry.push(i);
            }
        }
        if !self.core.unbounded {
            self.core.req_left += 1;
            self.core.active_deadline = None;
        }
    }

    fn goaway(&mut self, _last_stream_id: u32, code: u32) {
        self.st.goaways += 1;
        if code != 0 {
            *self.st.errors.goaway_errors.entry(code).or_default() += 1;
        }
    }

    fn push_refused(&mut self) {
        self.st.errors.push_refused += 1;
    }

    fn push_promise(&mut self, _stream: u32, _path: &[u8]) {
        if self.measuring {
            self.st.pushed_streams += 1;
        }
    }

    fn push_body(&mut self, _stream: u32, len: usize) {
        if self.measuring {
            self.st.pushed_bytes += len as u64;
        }
    }
}

fn wall_us() -> u64 {
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
