//! The client core of `h2lab bench`: a drop-in for h2load that spends less
//! CPU per request.
//!
//! [`run`] starts `-t` worker threads. Each worker owns its clients
//! (connections), one mio event loop and its statistics; nothing is shared
//! between workers while the run lasts except the stop flag and a relaxed
//! per-worker progress counter. After the workers join, their statistics
//! are merged into a [`RunResult`] whose counters have h2load's meanings.
//!
//! Protocols live behind one stream-level trait ([`session::Session`]):
//! HTTP/1.1 ([`h1`]) and HTTP/2 ([`h2`]); transports (TCP, TLS via rustls,
//! UNIX sockets) behind a small table in `transport`. One connection driver
//! (`conn`: connect, TLS, ALPN, session, read, flush, end) serves both the
//! bench workers and the page fetcher ([`fetch`]).
//!
//! Counting follows h2load 1.52 (`requests:`, `status codes:`, `traffic:`
//! lines; see [`RequestCounts`]), with these deliberate differences:
//! - A connection the server ends cleanly (GOAWAY, `Connection: close`,
//!   idle close) is re-established and the run continues. Requests the
//!   server provably did not process (streams above GOAWAY's last-stream-id,
//!   REFUSED_STREAM, requests pipelined behind `Connection: close`) are
//!   retried and counted once in `started`. In-flight requests lost with a
//!   connection count as failed and errored (h2load does the same); a
//!   connection that fails before completing anything is not retried.
//! - Connect time and time to first byte are one sample per connection
//!   (h2load: per client, last connection), and samples taken during
//!   `--warm-up-time` are kept (h2load reports 0us there).
//! - An interrupted run ([`StopFlag`]) abandons in-flight requests and
//!   reports `total = done`, like a `-D` run.
//! - HTTP/2 streams never exceed the server's SETTINGS_MAX_CONCURRENT_STREAMS;
//!   streams refused before the server's SETTINGS arrived are retried.
//! - Request coalescing ([`BenchConfig::coalesce`], opt-in with
//!   `--coalesce`, closed model only): when some streams of a connection
//!   complete while others are in flight, the freed slots wait (at most 1 ms)
//!   for the rest, so the new requests leave in one write. By default, as
//!   h2load does, one request is sent per completed stream at once.
//! - Read waiting ([`BenchConfig::read_wait`], on by default): a worker with
//!   nothing to do sleeps 1% of its recent mean request time (at most 50 µs)
//!   before polling again, so that responses arriving close together are read
//!   with one wake-up, one read and one ACK; never at request times under
//!   0.5 ms, nor while reads already carry more than four responses each
//!   (`--read-wait 0` turns it off).
//!
//! Load shapes ([`LoadShape`], modules [`load`] and [`plan`]): the open model (`--arrival-rate`,
//! each request due at an exactly computed time, latency also measured from that time —
//! corrected for coordinated omission), linear `--stages`, h2load's `--rps`,
//! `-r`/`--rate-period` and `--timing-script-file`, and a per-interval time series
//! ([`timeseries`]).
//!
//! Flag mapping (h2load → [`BenchConfig`]): `-n` requests, `-c` clients,
//! `-m` max_concurrent_streams, `-t` threads, `-D` duration,
//! `--warm-up-time` warm_up, `-H` headers, `-d` body, `--h1`/`-p`
//! protocol, `--alpn-list` alpn_list, `-B` base_uri, `--connect-to`
//! connect_to, `--sni` sni, `-w`/`-W` window bits, `--header-table-size`,
//! `--encoder-header-table-size`, `-T`/`-N` timeouts, `--log-file`, `-v`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub mod config;
mod conn;
mod error;
pub mod fetch;
#[doc(hidden)]
pub mod fuzzing;
pub mod h1;
pub mod h2;
pub mod h3;
pub mod interval;
pub mod load;
mod pacing;
pub mod plan;
pub mod priority;
mod request;
pub mod result;
pub mod resume;
mod run;
pub mod samples;
pub mod schedule;
pub mod session;
pub mod standing;
mod stats;
pub mod syntax;
pub mod target;
mod timer;
pub mod timeseries;
pub mod tls_opts;
pub mod transport;
mod worker;
mod zero_poll;

pub use config::{
    parse_connect_to, parse_uris, AppProtocol, BaseUri, BenchConfig, ConfigError, ProtocolChoice,
    Scheme, Target, DEFAULT_COALESCE_HOLD, DEFAULT_READ_WAIT,
};
pub use error::{EngineError, ProtocolError, TimeoutError, TransportError};
pub use h3::stats::{QuicConnSample, QuicStats};
pub use interval::{IntervalErrors, IntervalHistograms, IntervalLatency, IntervalRow};
pub use load::{LoadShape, ShardLanes};
pub use request::USER_AGENT;
pub use result::{
    new_duration_histogram, ErrorCounts, PacingCounts, RequestCounts, RunError, RunResult,
    StatusCounts, TlsInfo, Traffic,
};
pub use run::run;
pub use schedule::{Profile, Stage};
pub use standing::{StandingRefusal, StandingRun};

/// Receives live information while a run is in progress. Called from the
/// thread that called [`run`] (`progress`) and from worker 0 (`tls_info`,
/// `protocol`, once each, as soon as the first connection is established).
pub trait Observer: Sync {
    /// Periodic progress (about every 100 ms and once at the end): requests
    /// done so far, the total planned (0 for `-D` runs), time since the start,
    /// and the number of error events so far.
    fn progress(&self, done: u64, total: u64, elapsed: Duration, errors: u64);
    /// TLS details of the first TLS connection.
    fn tls_info(&self, info: &TlsInfo);
    /// The application protocol of the first connection.
    fn protocol(&self, p: AppProtocol);
    /// A finished time-series row (only when [`LoadShape::interval`] is set), in order, from
    /// the collector thread, as soon as every worker has reported the interval. Write it
    /// out (and flush) here for crash safety; all rows are also in [`RunResult::timeseries`].
    ///
    /// No method of this trait has a default: a wrapper that forwards to another observer
    /// cannot silently drop an event it forgot about.
    fn interval(&self, row: &IntervalRow);
    /// A timing-based (`-D`) run reached `phase` in worker `thread`. Called
    /// from that worker's thread.
    fn phase(&self, thread: u32, phase: TimedRunPhase);
}

/// The steps of a timing-based (`-D`) run in one worker, in order. h2load
/// prints a line for each (see `docs/h2load-output-format.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimedRunPhase {
    /// The worker starts its clients (h2load: `Warm-up started for thread #N.`).
    WarmUpStarted,
    /// The worker started the `started`-th of its `total` clients (h2load,
    /// thread 0 only: `progress: P% of clients started` every tenth).
    ClientStarted {
        /// Clients started so far in this worker.
        started: u32,
        /// Clients of this worker.
        total: u32,
    },
    /// The warm-up is over and measuring starts, at once when there is no
    /// warm-up (h2load: `Warm-up phase is over for thread #N.` and
    /// `Main benchmark duration is started for thread #N.`).
    MainStarted,
    /// The duration is over (h2load: `Main benchmark duration is over for
    /// thread #N. Stopping all clients.`).
    MainOver,
    /// Every client was stopped (h2load: `Stopped all clients for thread #N`).
    Stopped,
}

/// An [`Observer`] that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl Observer for NoopObserver {
    fn progress(&self, _done: u64, _total: u64, _elapsed: Duration, _errors: u64) {}
    fn tls_info(&self, _info: &TlsInfo) {}
    fn protocol(&self, _p: AppProtocol) {}
    fn interval(&self, _row: &IntervalRow) {}
    fn phase(&self, _thread: u32, _phase: TimedRunPhase) {}
}

/// Stops a run early (set from a SIGINT/SIGTERM handler). Workers check it
/// every loop turn (at least every 100 ms), abandon in-flight requests and
/// report what was done; the result then has `interrupted = true`.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(pub Arc<AtomicBool>);

impl StopFlag {
    /// A flag that is not set.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// Requests the run to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`StopFlag::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
