//! A *standing* run: workers that connect once and then measure as many windows as asked,
//! on the connections they keep open in between.
//!
//! [`run`](crate::run) opens its connections, warms up, measures and closes everything, so
//! an experiment that measures many short periods of the same configuration (the lab's
//! rounds) pays thread start, connection and TLS set-up and teardown every time — on a busy
//! machine often more than the measured period itself. [`StandingRun::open`] starts the
//! workers and their connections once; [`StandingRun::measure`] tells them to send requests
//! for a warm-up and a measured period and returns that window's [`RunResult`]; between
//! windows the workers send nothing and sleep in their event loops (connections idle).
//!
//! Closed model only: no `--rps`, arrival rate, stages, timing script, `-r`, time series, log
//! file or qlog file ([`StandingRefusal`]; [`StandingRun::supports`] answers whether `open`
//! refuses a configuration); the configuration's request count, duration and warm-up are
//! ignored (each window has its own).
//!
//! Raw samples ([`BenchConfig::max_samples`]) are kept per window: each window's result has
//! the samples of that window (its reservoirs start empty, capped as a run's are), as its
//! histograms do. A shard's configuration (`h2lab bench --shard`, [`crate::ShardLanes`])
//! stands as it runs: its slice (connections, `-n`, URIs) is the configuration itself, and
//! the lanes of the whole run place only arrivals and stage levels, which a standing run
//! refuses, so in the closed model a shard measures exactly as [`crate::run`] measures it.
//!
//! Every protocol, HTTP/3 included: the workers run their one event loop while paused
//! (`worker::phases`), so QUIC's timers and ACKs are served between windows as within, and
//! a QUIC connection sends a PING after a second without sending anything, so that the
//! idle timeout (quinn's 30 s, `h2lab serve`'s 60 s) does not close it between windows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::Waker;

use crate::config::BenchConfig;
use crate::config::ConfigError;
use crate::error::TimeoutError;
use crate::pacing::Pacer;
use crate::plan::Plan;
use crate::request::Prepared;
use crate::result::RunResult;
use crate::stats::merge;
use crate::worker::{Progress, WindowCmd, Worker, WorkerOutcome, WorkerSetup, WAKE};
use crate::{EngineError, Observer, StopFlag};

/// One standing worker thread, as the controller sees it.
struct Standing {
    commands: Sender<WindowCmd>,
    waker: Arc<Waker>,
    progress: Arc<Progress>,
    thread: Option<JoinHandle<WorkerOutcome>>,
}

/// Workers that stay connected between measured windows (see the module docs). Dropping it
/// closes the connections and joins the threads.
pub struct StandingRun {
    workers: Vec<Standing>,
    abort: Arc<AtomicBool>,
    windows: u32,
    drain: Duration,
}

/// What [`StandingRun::open`] refuses to measure ([`StandingRun::refusal`]): a standing run
/// measures the closed model only, and keeps no per-request output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandingRefusal {
    /// `--rps`: paced clients.
    Rps,
    /// `--arrival-rate`: the open model.
    ArrivalRate,
    /// `--stages`: ramps of the rate or of the connections.
    Stages,
    /// `--timing-script-file`: scripted request times.
    TimingScript,
    /// `-r` / `--rate-period`: clients started in batches.
    ConnectionRate,
    /// A time series (`--interval`).
    TimeSeries,
    /// `--log-file`: one line per request.
    LogFile,
    /// `--qlog-file-base`: a qlog per QUIC connection.
    QlogFile,
}

impl StandingRefusal {
    /// Every reason, in the order [`StandingRun::refusal`] checks them.
    pub const ALL: [StandingRefusal; 8] = [
        StandingRefusal::Rps,
        StandingRefusal::ArrivalRate,
        StandingRefusal::Stages,
        StandingRefusal::TimingScript,
        StandingRefusal::ConnectionRate,
        StandingRefusal::TimeSeries,
        StandingRefusal::LogFile,
        StandingRefusal::QlogFile,
    ];

    /// What is refused, as the error names it.
    pub fn as_str(self) -> &'static str {
        match self {
            StandingRefusal::Rps => "--rps pacing",
            StandingRefusal::ArrivalRate => "an arrival rate",
            StandingRefusal::Stages => "stages",
            StandingRefusal::TimingScript => "a timing script",
            StandingRefusal::ConnectionRate => "-r",
            StandingRefusal::TimeSeries => "a time series",
            StandingRefusal::LogFile => "a log file",
            StandingRefusal::QlogFile => "a qlog file",
        }
    }
}

/// `a standing run measures the closed model only (… is not supported)`, the error
/// [`StandingRun::open`] returns.
impl std::fmt::Display for StandingRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a standing run measures the closed model only ({} is not supported)",
            self.as_str()
        )
    }
}

/// How often [`StandingRun::measure`] reports progress.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// HTTP/3: a standing run's QUIC connection sends a PING after this long without sending
/// anything (between windows), so that an idle timeout longer than this (quinn's 30 s,
/// `h2lab serve`'s 60 s, nginx's and Caddy's) never closes it while paused. Within a
/// window requests keep the connection busy and no PING is sent.
const QUIC_KEEP_ALIVE: Duration = Duration::from_secs(1);

impl StandingRun {
    /// Whether [`StandingRun::open`] can measure `cfg` on standing connections: exactly when
    /// [`StandingRun::refusal`] finds nothing to refuse. Every protocol can stand (HTTP/1.1,
    /// HTTP/2 and HTTP/3: a paused worker keeps serving its QUIC connections' timers and
    /// ACKs, and they send a PING after a second without traffic, so that the idle timeout
    /// does not close them between windows); what `open` refuses is the load model and the
    /// per-request outputs.
    pub fn supports(cfg: &BenchConfig) -> bool {
        StandingRun::refusal(cfg).is_none()
    }

    /// Why [`StandingRun::open`] would refuse `cfg` (the first reason in
    /// [`StandingRefusal::ALL`]'s order), or `None` when it measures it. `open` refuses with
    /// this reason before anything else, so a configuration refused here is never connected;
    /// one accepted here can still fail as [`crate::run`] would (an invalid configuration, an
    /// unresolvable host, a TLS set-up error).
    pub fn refusal(cfg: &BenchConfig) -> Option<StandingRefusal> {
        let l = &cfg.load;
        let present = |r: StandingRefusal| match r {
            StandingRefusal::Rps => l.rps.is_some(),
            StandingRefusal::ArrivalRate => l.arrival_rate.is_some(),
            StandingRefusal::Stages => !l.stages.is_empty(),
            StandingRefusal::TimingScript => l.timing_script.is_some(),
            StandingRefusal::ConnectionRate => l.connection_rate.is_some(),
            StandingRefusal::TimeSeries => l.interval.is_some(),
            StandingRefusal::LogFile => cfg.log_file.is_some(),
            StandingRefusal::QlogFile => cfg.qlog_file_base.is_some(),
        };
        StandingRefusal::ALL.into_iter().find(|&r| present(r))
    }

    /// Starts `cfg.threads` workers that connect `cfg.clients` clients and wait, paused,
    /// for [`StandingRun::measure`]. Connection failures show in the first window's result
    /// (or as its error when nothing could connect).
    pub fn open(cfg: &BenchConfig, stop: &StopFlag) -> Result<StandingRun, EngineError> {
        if let Some(r) = StandingRun::refusal(cfg) {
            return Err(EngineError::Config(ConfigError::Invalid(r.to_string())));
        }
        // Validated as a timing-based run (windows have durations, not request counts).
        let mut timed = cfg.clone();
        timed.duration = Some(timed.duration.unwrap_or(Duration::from_secs(1)));
        timed.validate()?;
        let cfg = &timed;
        let alpn = cfg.effective_alpn();
        let endpoint = crate::run::resolve(cfg)?;
        let tls = crate::run::tls_of(cfg, &alpn)?;
        let quic = crate::run::quic_dial(cfg, &alpn, Some(QUIC_KEEP_ALIVE))?;
        let prep = Prepared::new(cfg)?;
        let plan = Plan::new(cfg);
        let abort = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let mut run = StandingRun {
            workers: Vec::with_capacity(cfg.threads as usize),
            abort: Arc::clone(&abort),
            windows: 0,
            drain: Duration::ZERO,
        };
        for i in 0..cfg.threads {
            let progress = Arc::new(Progress::default());
            let setup: WorkerSetup<'static> = WorkerSetup {
                id: i,
                nclients: plan.clients_of(i),
                req_todo: 0,
                dialer: crate::run::worker_dialer(cfg, &endpoint, &tls, &alpn, &prep, quic.clone()),
                require: cfg.require_protocol,
                timing: None,
                active_timeout: cfg.connection_active_timeout,
                inactivity_timeout: cfg.connection_inactivity_timeout,
                start,
                stop: stop.clone(),
                abort: Arc::clone(&abort),
                progress: Arc::clone(&progress),
                observer: None,
                phases: None,
                log: None,
                verbose: cfg.verbose,
                pacer: Pacer::Closed,
                gate: plan.gate_of(i),
                series: None,
                coalesce: cfg.coalesce,
                read_wait: cfg.read_wait,
                max_samples: cfg
                    .max_samples
                    .map(|m| crate::samples::per_worker_cap(m, cfg.threads)),
            };
            let (tx, rx) = mpsc::channel();
            let (waker_tx, waker_rx) = mpsc::sync_channel(1);
            let thread = std::thread::Builder::new()
                .name(format!("h2lab-standing-{i}"))
                .spawn(move || standing_worker(setup, rx, waker_tx))
                .map_err(|e| EngineError::Io {
                    context: "cannot spawn worker thread".into(),
                    source: e,
                })?;
            let waker = match waker_rx.recv() {
                Ok(Ok(w)) => w,
                Ok(Err(e)) => {
                    let _ = thread.join();
                    return Err(EngineError::Io {
                        context: "cannot create event loop".into(),
                        source: e,
                    });
                }
                Err(_) => {
                    let _ = thread.join();
                    return Err(EngineError::Io {
                        context: "worker thread ended at start".into(),
                        source: std::io::Error::other("no event loop"),
                    });
                }
            };
            run.workers.push(Standing {
                commands: tx,
                waker,
                progress,
                thread: Some(thread),
            });
        }
        Ok(run)
    }

    /// From now on, a window's [`StandingRun::measure`] returns only once the requests
    /// still in flight at the end of its measured period have completed (they are not
    /// counted: the period is over), or `cap` after that end, whichever comes first;
    /// `Duration::ZERO` (the default) returns at once and lets them complete while paused.
    /// An experiment that measures other work right after a window (the lab's next arm)
    /// sets a cap, so that this window's tail never runs inside the next one.
    pub fn drain_before_reply(&mut self, cap: Duration) {
        self.drain = cap;
    }

    /// Windows measured so far.
    pub fn windows(&self) -> u32 {
        self.windows
    }

    /// Sends requests on the open connections for `warm_up` (not counted), then measures
    /// for `duration`, and returns what the window measured (its `duration` is the
    /// measured period; with [`StandingRun::drain_before_reply`], once the window's requests
    /// in flight have completed). `observer` gets each worker's [`crate::TimedRunPhase`]s from the
    /// worker's thread (`WarmUpStarted`, `MainStarted`, `MainOver`) and progress from this
    /// thread about every 100 ms. Errors as [`crate::run`]: when no connection could be
    /// established, the first connection error.
    pub fn measure(
        &mut self,
        warm_up: Duration,
        duration: Duration,
        observer: Arc<dyn Observer + Send + Sync>,
    ) -> Result<RunResult, EngineError> {
        let (reply_tx, reply_rx) = mpsc::channel();
        let start = Instant::now();
        let mut expected = 0;
        for w in &self.workers {
            let sent = w.commands.send(WindowCmd::Measure {
                warm_up,
                duration,
                drain: self.drain,
                observer: Arc::clone(&observer),
                reply: reply_tx.clone(),
            });
            if sent.is_ok() {
                expected += 1;
                let _ = w.waker.wake();
            }
        }
        drop(reply_tx);
        self.windows += 1;
        let mut outcomes: Vec<WorkerOutcome> = Vec::with_capacity(expected);
        while outcomes.len() < expected {
            match reply_rx.recv_timeout(PROGRESS_INTERVAL) {
                Ok(o) => outcomes.push(o),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // A worker ended (stop flag, or it could not run): no more replies.
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let (done, errors) = self.workers.iter().fold((0, 0), |(d, e), w| {
                (
                    d + w.progress.done.load(Ordering::Relaxed),
                    e + w.progress.errors.load(Ordering::Relaxed),
                )
            });
            observer.progress(done, 0, start.elapsed(), errors);
        }
        let interrupted = outcomes.len() < self.workers.len();
        let mut stats = Vec::with_capacity(outcomes.len());
        let mut connected = false;
        let mut first = None;
        for o in outcomes {
            if let Some(e) = o.fatal {
                return Err(e);
            }
            connected |= o.connected;
            if first.is_none() {
                first = match (
                    o.first_connect_error,
                    o.first_tls_error,
                    o.first_protocol_error,
                ) {
                    (Some((addr, source)), _, _) => Some(EngineError::Connect { addr, source }),
                    (None, Some(e), _) => Some(EngineError::Tls(e)),
                    (None, None, Some(e)) => Some(EngineError::Protocol(e)),
                    _ => None,
                };
            }
            stats.push(o.stats);
        }
        if !connected && !interrupted {
            if let Some(e) = first {
                return Err(e);
            }
            if stats.iter().any(|s| s.run.errors.timeout > 0) {
                return Err(EngineError::Timeout(TimeoutError::NoConnection));
            }
        }
        Ok(merge(stats, duration, true, interrupted))
    }

    /// Closes every connection and joins the worker threads.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        for w in &self.workers {
            let _ = w.commands.send(WindowCmd::Close);
            let _ = w.waker.wake();
        }
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                if t.join().is_err() {
                    self.abort.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

impl Drop for StandingRun {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A standing worker's thread: its event loop, then windows until told to close.
fn standing_worker(
    setup: WorkerSetup<'static>,
    commands: Receiver<WindowCmd>,
    waker_tx: mpsc::SyncSender<std::io::Result<Arc<Waker>>>,
) -> WorkerOutcome {
    let worker = Worker::new(setup).and_then(|w| {
        let waker = Waker::new(w.registry(), WAKE)?;
        Ok((w, Arc::new(waker)))
    });
    match worker {
        Ok((w, waker)) => {
            let _ = waker_tx.send(Ok(waker));
            w.run_windows(commands)
        }
        Err(e) => {
            let _ = waker_tx.send(Err(e));
            WorkerOutcome::empty()
        }
    }
}
