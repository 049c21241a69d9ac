//! Per-worker statistics (owned by one thread, merged after join).
//!
//! Counter meanings follow h2load's `Stats` (see `RequestCounts`). Durations
//! go into HdrHistograms in nanoseconds with 3 significant figures.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::result::{PacingCounts, RunError, RunResult, MAX_ERROR_MESSAGES};
use crate::samples::{secs, Samples, WorkerSamples};
use crate::timeseries::{IntervalErrors, SeriesRecorder, Totals};

/// Everything one worker measured: the run's own counters ([`RunResult`], the one place
/// they are declared and added up), plus what only a worker keeps while it runs.
#[derive(Debug)]
pub(crate) struct WorkerStats {
    /// What this worker measured, with the run's meanings; `requests.total` is h2load's
    /// `req_todo` (for `-n` runs: this worker's share). Its `informational`, `elapsed`,
    /// `timeseries` and `samples` stay empty: the worker keeps those below.
    pub run: RunResult,
    /// Interim responses by code (index = code - 100, 100..=199).
    pub informational: [u64; 100],
    /// Connections open right now (for the time series).
    pub open_conns: u64,
    /// Time series recorder, when a series is recorded.
    pub series: Option<Box<SeriesRecorder>>,
    /// Raw-sample reservoirs (only with `max_samples`).
    pub samples: Option<Box<WorkerSamples>>,
}

impl WorkerStats {
    pub(crate) fn new(req_todo: u64) -> WorkerStats {
        let mut run = RunResult::empty();
        run.requests.total = req_todo;
        WorkerStats {
            run,
            informational: [0; 100],
            open_conns: 0,
            series: None,
            samples: None,
        }
    }

    /// Forgets what the warm-up measured. Connect and TTFB samples are kept:
    /// connections are normally made during warm-up, and without them the
    /// connect row would be empty (h2load prints zeros there). So are the protocol, the
    /// TLS details and resumptions, the per-client rates and the QUIC figures.
    pub(crate) fn reset_after_warm_up(&mut self) {
        let kept = std::mem::replace(&mut self.run, RunResult::empty());
        let r = &mut self.run;
        r.requests.total = kept.requests.total;
        r.connect_time = kept.connect_time;
        r.ttfb = kept.ttfb;
        r.client_rps = kept.client_rps;
        r.app_protocol = kept.app_protocol;
        r.protocol_fallback = kept.protocol_fallback;
        r.tls = kept.tls;
        r.tls_resumed = kept.tls_resumed;
        r.resume = kept.resume;
        r.quic = kept.quic;
        r.pacing = kept.pacing.map(|p| PacingCounts {
            queue_limit: p.queue_limit,
            ..PacingCounts::default()
        });
        self.informational = [0; 100];
        if let Some(s) = self.samples.as_mut() {
            s.request.clear();
        }
    }

    /// Records a duration, saturating at the histogram's maximum.
    #[inline]
    pub(crate) fn record(h: &mut Histogram<u64>, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        h.saturating_record(ns);
    }

    /// A connection's connect time.
    pub(crate) fn record_connect(&mut self, d: Duration) {
        Self::record(&mut self.run.connect_time, d);
        if let Some(s) = self.samples.as_mut() {
            s.connect.push(secs(d));
        }
    }

    /// A connection's time to first byte.
    pub(crate) fn record_ttfb(&mut self, d: Duration) {
        Self::record(&mut self.run.ttfb, d);
        if let Some(s) = self.samples.as_mut() {
            s.ttfb.push(secs(d));
        }
    }

    /// A completed request's latencies: from the send, and from the intended start for paced
    /// runs (run histograms and the time series).
    #[inline]
    /// The worker rolls the series (`roll_series`) before counting the request.
    pub(crate) fn record_latency(&mut self, from_send: Duration, corrected: Option<Duration>) {
        Self::record(&mut self.run.request_time, from_send);
        if let Some(s) = self.samples.as_mut() {
            s.request.push(secs(from_send));
        }
        if let Some(c) = corrected {
            Self::record(&mut self.run.request_time_corrected, c);
        }
        if let Some(r) = self.series.as_mut() {
            r.record(from_send, corrected);
        }
    }

    /// The cumulative counters the time series takes deltas of.
    fn totals(&self) -> Totals {
        let r = &self.run;
        let e = &r.errors;
        let p = r.pacing.as_ref();
        Totals {
            started: r.requests.started,
            completed: r.requests.completed,
            succeeded: r.requests.succeeded,
            failed: r.requests.failed,
            bytes: r.traffic.bytes_total,
            errors: IntervalErrors {
                connect: e.connect,
                tls: e.tls,
                timeout: e.timeout,
                protocol: e.protocol,
                io: e.io,
                stream_reset: e.stream_resets.values().sum(),
                goaway: e.goaway_errors.values().sum(),
            },
            late: p.map_or(0, |p| p.late),
            dropped: p.map_or(0, |p| p.dropped),
        }
    }

    /// Sends the time-series intervals that have ended by `now`.
    #[inline]
    pub(crate) fn roll_series(&mut self, now: Instant) {
        if self.series.as_ref().is_some_and(|r| r.due(now)) {
            let t = self.totals();
            let active = self.open_conns;
            if let Some(r) = self.series.as_mut() {
                r.roll(now, &t, active);
            }
        }
    }

    /// The worker stops at `end`: last partial interval, then done.
    pub(crate) fn finish_series(&mut self, end: Instant) {
        let t = self.totals();
        let active = self.open_conns;
        if let Some(r) = self.series.as_mut() {
            r.finish(end, &t, active);
        }
    }

    /// Remembers the first message of a kind of error.
    pub(crate) fn note_error(&mut self, msg: impl FnOnce() -> RunError) {
        let messages = &mut self.run.errors.messages;
        if messages.len() < MAX_ERROR_MESSAGES {
            let m = msg();
            if !messages.contains(&m) {
                messages.push(m);
            }
        }
    }
}

/// Merges worker statistics into a [`RunResult`] with h2load's final fix-up:
/// requests never issued (clients that gave up) count as failed and errored.
pub(crate) fn merge(
    workers: Vec<WorkerStats>,
    elapsed: Duration,
    timing_based: bool,
    interrupted: bool,
) -> RunResult {
    let mut r = RunResult::empty();
    let mut informational = [0u64; 100];
    let mut samples: Option<Samples> = None;
    for w in workers {
        // The engine's histograms all have the same bounds: adding cannot fail.
        let _ = r.add(&w.run);
        for (sum, n) in informational.iter_mut().zip(w.informational) {
            *sum += n;
        }
        if let Some(s) = &w.samples {
            samples.get_or_insert_with(Samples::default).add(s);
        }
    }
    let req = &mut r.requests;
    if timing_based || interrupted {
        // h2load: in timing-based mode each client's req_todo becomes its req_done.
        req.total = req.done;
    } else {
        // h2load: "Requests which have not been issued due to connection errors,
        // are counted towards req_failed and req_error."
        let not_issued = req
            .total
            .saturating_sub(req.succeeded)
            .saturating_sub(req.failed);
        req.failed += not_issued;
        req.errored += not_issued;
    }
    r.elapsed = elapsed;
    r.interrupted = interrupted;
    r.informational = (100u16..)
        .zip(informational)
        .filter(|&(_, n)| n > 0)
        .collect();
    r.samples = samples.map(|mut s| {
        s.sort();
        s
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_counts_unissued_requests_as_errored() {
        let mut a = WorkerStats::new(10);
        let q = &mut a.run.requests;
        (q.started, q.done, q.completed, q.succeeded) = (6, 6, 6, 5);
        q.failed = 1; // a 404
        a.run.status.s2xx = 5;
        a.run.status.s4xx = 1;
        WorkerStats::record(&mut a.run.request_time, Duration::from_micros(100));
        let mut b = WorkerStats::new(5);
        let q = &mut b.run.requests;
        (q.started, q.done, q.completed, q.succeeded) = (5, 5, 5, 5);
        b.run.status.s2xx = 5;
        let r = merge(vec![a, b], Duration::from_secs(1), false, false);
        assert_eq!(r.requests.total, 15);
        assert_eq!(r.requests.succeeded, 10);
        assert_eq!(r.requests.failed, 5); // 1 (404) + 4 never issued
        assert_eq!(r.requests.errored, 4);
        assert_eq!(r.requests.succeeded + r.requests.failed, r.requests.total);
        assert_eq!(r.status.s2xx, 10);
        assert_eq!(r.request_time.len(), 1);
        assert!((r.req_per_sec() - 11.0).abs() < 1e-9);
    }
}
