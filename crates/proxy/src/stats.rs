//! Proxy counters: each worker keeps its own [`Stats`] (nothing shared on the hot path) and
//! publishes a copy when a snapshot is asked for ([`StatsHandle::snapshot`], `SIGUSR1`) and
//! when it stops.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mio::Waker;

/// Counters of one worker, or of all merged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests received from clients.
    pub requests: u64,
    /// Responses sent to clients (any status, including the proxy's own 502/504).
    pub responses: u64,
    /// Upstream connections opened.
    pub upstream_connections_opened: u64,
    /// Requests sent on an upstream connection that had already carried one.
    pub upstream_connections_reused: u64,
    /// Requests (streams) sent upstream.
    pub upstream_requests: u64,
    /// Most streams in flight at once on one upstream connection.
    pub max_streams_per_connection: u64,
    /// 502: the upstream refused the connection (or could not be reached).
    pub bad_gateway_refused: u64,
    /// 502: the upstream reset or closed the connection or stream, or sent garbage.
    pub bad_gateway_reset: u64,
    /// 504: no upstream progress within `--upstream-timeout` (or, h2c-mux, no stream slot
    /// within it).
    pub gateway_timeout: u64,
    /// Upstream requests cancelled because the client reset or went away.
    pub client_cancels: u64,
    /// Requests sent again on a fresh upstream connection (refused by a GOAWAY or
    /// REFUSED_STREAM, or lost with a reused keep-alive connection the upstream closed).
    pub upstream_retries: u64,
    /// Exchanges (client request + upstream request) open when the snapshot was taken.
    pub open_exchanges: u64,
    /// Upstream connections open when the snapshot was taken (pooled and busy).
    pub open_upstream_connections: u64,
    /// Upstream streams open when the snapshot was taken.
    pub open_upstream_streams: u64,
    /// The most response bytes queued in the proxy for one client connection (or HTTP/2
    /// stream) when the snapshot was taken: what a slow client costs (bounded by the
    /// upstream stream window plus the output high-water mark).
    pub largest_client_queue: u64,
}

impl Stats {
    /// Adds `o` (sums; the maximum for `max_streams_per_connection`).
    pub fn merge(&mut self, o: &Stats) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.upstream_connections_opened += o.upstream_connections_opened;
        self.upstream_connections_reused += o.upstream_connections_reused;
        self.upstream_requests += o.upstream_requests;
        self.max_streams_per_connection = self
            .max_streams_per_connection
            .max(o.max_streams_per_connection);
        self.bad_gateway_refused += o.bad_gateway_refused;
        self.bad_gateway_reset += o.bad_gateway_reset;
        self.gateway_timeout += o.gateway_timeout;
        self.client_cancels += o.client_cancels;
        self.upstream_retries += o.upstream_retries;
        self.open_exchanges += o.open_exchanges;
        self.open_upstream_connections += o.open_upstream_connections;
        self.open_upstream_streams += o.open_upstream_streams;
        self.largest_client_queue = self.largest_client_queue.max(o.largest_client_queue);
    }

    /// Mean requests per opened upstream connection.
    pub fn streams_per_connection(&self) -> f64 {
        if self.upstream_connections_opened == 0 {
            0.0
        } else {
            self.upstream_requests as f64 / self.upstream_connections_opened as f64
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "requests: {}", self.requests)?;
        writeln!(f, "responses: {}", self.responses)?;
        writeln!(
            f,
            "upstream connections: {} opened, {} requests on reused connections",
            self.upstream_connections_opened, self.upstream_connections_reused
        )?;
        writeln!(
            f,
            "upstream requests: {} ({:.1} per connection, at most {} at once on one)",
            self.upstream_requests,
            self.streams_per_connection(),
            self.max_streams_per_connection
        )?;
        writeln!(
            f,
            "5xx: {} 502 refused, {} 502 reset, {} 504 timeout; {} cancelled by clients; {} retried",
            self.bad_gateway_refused,
            self.bad_gateway_reset,
            self.gateway_timeout,
            self.client_cancels,
            self.upstream_retries
        )?;
        write!(
            f,
            "open: {} exchanges, {} upstream connections, {} upstream streams; largest client queue {} bytes",
            self.open_exchanges,
            self.open_upstream_connections,
            self.open_upstream_streams,
            self.largest_client_queue
        )
    }
}

#[derive(Default)]
struct Inner {
    asked: AtomicU64,
    slots: Mutex<Vec<(u64, Stats)>>,
    wakers: Mutex<Vec<Arc<Waker>>>,
}

/// Shared between the workers and whoever wants counters while the proxy runs.
#[derive(Clone, Default)]
pub struct StatsHandle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for StatsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatsHandle").finish_non_exhaustive()
    }
}

impl StatsHandle {
    /// A handle with no worker yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a worker; returns its slot.
    pub(crate) fn add_worker(&self, waker: Arc<Waker>) -> usize {
        let mut s = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        s.push((0, Stats::default()));
        self.inner
            .wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(waker);
        s.len() - 1
    }

    /// The snapshot generation asked for (workers compare it with what they published).
    pub(crate) fn asked(&self) -> u64 {
        self.inner.asked.load(Ordering::Relaxed)
    }

    /// A worker publishes its counters for generation `gen`.
    pub(crate) fn publish(&self, slot: usize, gen: u64, stats: Stats) {
        let mut s = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = s.get_mut(slot) {
            *e = (gen, stats);
        }
    }

    /// Asks every worker for its counters and waits (up to `wait`) for all to answer;
    /// returns the merged counters (workers that did not answer in time count with their
    /// previous snapshot).
    pub fn snapshot(&self, wait: Duration) -> Stats {
        let gen = self.inner.asked.fetch_add(1, Ordering::SeqCst) + 1;
        for w in self
            .inner
            .wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let _ = w.wake();
        }
        let deadline = Instant::now() + wait;
        loop {
            let done = {
                let s = self
                    .inner
                    .slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                s.iter().all(|(g, _)| *g >= gen)
            };
            if done || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.merged()
    }

    /// The last published counters of every worker, merged.
    pub fn merged(&self) -> Stats {
        let s = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut total = Stats::default();
        for (_, st) in s.iter() {
            total.merge(st);
        }
        total
    }
}
