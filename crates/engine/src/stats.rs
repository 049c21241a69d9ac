//! Per-worker statistics (owned by one thread, merged after join).
//!
//! Counter meanings follow h2load's `Stats` (see `RequestCounts`). Durations
//! go into HdrHistograms in nanoseconds with 3 significant figures.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::config::AppProtocol;
use crate::h3::stats::QuicStats;
use crate::result::{
    new_duration_histogram, ErrorCounts, PacingCounts, RequestCounts, RunError, RunResult,
    StatusCounts, TlsInfo, Traffic, MAX_ERROR_MESSAGES,
};
use crate::samples::{secs, Samples, WorkerSamples};
use crate::timeseries::{IntervalErrors, SeriesRecorder, Totals};

/// Everything one worker measured.
#[derive(Debug)]
pub(crate) struct WorkerStats {
    /// h2load's `req_todo` (for `-n` runs: this worker's share).
    pub req_todo: u64,
    pub started: u64,
    pub done: u64,
    /// Completed with a response (any status): h2load `req_success`.
    pub completed: u64,
    /// Completed with 2xx/3xx: h2load `req_status_success`.
    pub status_success: u64,
    pub failed: u64,
    pub errored: u64,
    pub timeout: u64,
    /// Index = status / 100 (0..=5).
    pub status: [u64; 6],
    /// Interim responses by code (index = code - 100, 100..=199).
    pub informational: [u64; 100],
    pub traffic: Traffic,
    /// Bytes handed to the transport (requests, HTTP/2 frames; before TLS encryption).
    pub bytes_sent: u64,
    /// Bytes read attributed to the responses counted in `completed`: on each completion,
    /// what its connection read since the previous completion on it.
    pub response_bytes: u64,
    pub request_time: Histogram<u64>,
    /// From the intended start (paced runs only).
    pub request_time_corrected: Histogram<u64>,
    pub connect_time: Histogram<u64>,
    pub ttfb: Histogram<u64>,
    pub client_rps: Vec<f64>,
    pub errors: ErrorCounts,
    pub goaways: u64,
    pub reconnects: u64,
    /// Sleeps of read waiting (see `worker::read_wait`).
    pub read_waits: u64,
    /// TLS handshakes that resumed a session.
    pub tls_resumed: u64,
    /// Resumption and early data (`--tls-resume`, `--0rtt`).
    pub resume: crate::resume::ResumeStats,
    /// Pushed streams accepted (`--push accept`).
    pub pushed_streams: u64,
    /// Pushed response body bytes received.
    pub pushed_bytes: u64,
    /// Octets of the frames that carried pushes (heads included); not in `traffic`.
    pub pushed_frame_bytes: u64,
    pub app_protocol: Option<AppProtocol>,
    pub protocol_fallback: bool,
    pub tls: Option<TlsInfo>,
    /// Open-model accounting (`Some` only in open-model runs).
    pub pacing: Option<PacingCounts>,
    /// Connections open right now (for the time series).
    pub open_conns: u64,
    /// Time series recorder, when a series is recorded.
    pub series: Option<Box<SeriesRecorder>>,
    /// Raw-sample reservoirs (only with `max_samples`).
    pub samples: Option<Box<WorkerSamples>>,
    /// QUIC figures (HTTP/3 runs only).
    pub quic: Option<Box<QuicStats>>,
}

impl WorkerStats {
    pub(crate) fn new(req_todo: u64) -> WorkerStats {
        WorkerStats {
            req_todo,
            started: 0,
            done: 0,
            completed: 0,
            status_success: 0,
            failed: 0,
            errored: 0,
            timeout: 0,
            status: [0; 6],
            informational: [0; 100],
            traffic: Traffic::default(),
            bytes_sent: 0,
            response_bytes: 0,
            request_time: new_duration_histogram(),
            request_time_corrected: new_duration_histogram(),
            connect_time: new_duration_histogram(),
            ttfb: new_duration_histogram(),
            client_rps: Vec::new(),
            errors: ErrorCounts::default(),
            goaways: 0,
            reconnects: 0,
            read_waits: 0,
            tls_resumed: 0,
            resume: Default::default(),
            pushed_streams: 0,
            pushed_bytes: 0,
            pushed_frame_bytes: 0,
            app_protocol: None,
            protocol_fallback: false,
            tls: None,
            pacing: None,
            open_conns: 0,
            series: None,
            samples: None,
            quic: None,
        }
    }

    /// Forgets what the warm-up measured. Connect and TTFB samples are kept:
    /// connections are normally made during warm-up, and without them the
    /// connect row would be empty (h2load prints zeros there).
    pub(crate) fn reset_after_warm_up(&mut self) {
        self.started = 0;
        self.done = 0;
        self.completed = 0;
        self.status_success = 0;
        self.failed = 0;
        self.errored = 0;
        self.timeout = 0;
        self.status = [0; 6];
        self.informational = [0; 100];
        self.traffic = Traffic::default();
        self.bytes_sent = 0;
        self.response_bytes = 0;
        self.request_time.reset();
        self.request_time_corrected.reset();
        if let Some(s) = self.samples.as_mut() {
            s.request.clear();
        }
        if let Some(p) = self.pacing.as_mut() {
            *p = PacingCounts {
                queue_limit: p.queue_limit,
                ..PacingCounts::default()
            };
        }
        self.errors = ErrorCounts::default();
        self.goaways = 0;
        self.reconnects = 0;
        self.read_waits = 0;
        self.pushed_streams = 0;
        self.pushed_bytes = 0;
        self.pushed_frame_bytes = 0;
    }

    /// Records a duration, saturating at the histogram's maximum.
    #[inline]
    pub(crate) fn record(h: &mut Histogram<u64>, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        h.saturating_record(ns);
    }

    /// A connection's connect time.
    pub(crate) fn record_connect(&mut self, d: Duration) {
        Self::record(&mut self.connect_time, d);
        if let Some(s) = self.samples.as_mut() {
            s.connect.push(secs(d));
        }
    }

    /// A connection's time to first byte.
    pub(crate) fn record_ttfb(&mut self, d: Duration) {
        Self::record(&mut self.ttfb, d);
        if let Some(s) = self.samples.as_mut() {
            s.ttfb.push(secs(d));
        }
    }

    /// A completed request's latencies: from the send, and from the intended start for paced
    /// runs (run histograms and the time series).
    #[inline]
    /// The worker rolls the series (`roll_series`) before counting the request.
    pub(crate) fn record_latency(&mut self, from_send: Duration, corrected: Option<Duration>) {
        Self::record(&mut self.request_time, from_send);
        if let Some(s) = self.samples.as_mut() {
            s.request.push(secs(from_send));
        }
        if let Some(c) = corrected {
            Self::record(&mut self.request_time_corrected, c);
        }
        if let Some(r) = self.series.as_mut() {
            r.record(from_send, corrected);
        }
    }

    /// The cumulative counters the time series takes deltas of.
    fn totals(&self) -> Totals {
        let e = &self.errors;
        let p = self.pacing.as_ref();
        Totals {
            started: self.started,
            completed: self.completed,
            succeeded: self.status_success,
            failed: self.failed,
            bytes: self.traffic.bytes_total,
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
        if self.errors.messages.len() < MAX_ERROR_MESSAGES {
            let m = msg();
            if !self.errors.messages.contains(&m) {
                self.errors.messages.push(m);
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
    let mut req = RequestCounts::default();
    let mut status = StatusCounts::default();
    let mut informational = [0u64; 100];
    let mut traffic = Traffic::default();
    let mut request_time = new_duration_histogram();
    let mut request_time_corrected = new_duration_histogram();
    let mut pacing: Option<PacingCounts> = None;
    let mut connect_time = new_duration_histogram();
    let mut ttfb = new_duration_histogram();
    let mut client_rps = Vec::new();
    let mut errors = ErrorCounts::default();
    let (mut goaways, mut reconnects, mut read_waits, mut tls_resumed) = (0, 0, 0, 0);
    let mut resume = crate::resume::ResumeStats::default();
    let (mut pushed_streams, mut pushed_bytes, mut pushed_frame_bytes) = (0, 0, 0);
    let mut bytes_sent = 0;
    let mut response_bytes = 0;
    let mut app_protocol = None;
    let mut protocol_fallback = false;
    let mut tls = None;
    let mut samples: Option<Samples> = None;
    let mut quic: Option<QuicStats> = None;
    for w in workers {
        if let Some(q) = &w.quic {
            quic.get_or_insert_with(QuicStats::default).merge(q);
        }
        if let Some(s) = &w.samples {
            samples.get_or_insert_with(Samples::default).add(s);
        }
        req.total += w.req_todo;
        req.started += w.started;
        req.done += w.done;
        req.succeeded += w.status_success;
        req.failed += w.failed;
        req.errored += w.errored;
        req.timeout += w.timeout;
        req.completed += w.completed;
        status.s1xx += w.status[1];
        status.s2xx += w.status[2];
        status.s3xx += w.status[3];
        status.s4xx += w.status[4];
        status.s5xx += w.status[5];
        for (sum, n) in informational.iter_mut().zip(w.informational) {
            *sum += n;
        }
        traffic.bytes_total += w.traffic.bytes_total;
        traffic.bytes_head += w.traffic.bytes_head;
        traffic.bytes_head_decomp += w.traffic.bytes_head_decomp;
        traffic.bytes_body += w.traffic.bytes_body;
        bytes_sent += w.bytes_sent;
        response_bytes += w.response_bytes;
        // Same bounds everywhere, so add cannot fail; ignore defensively.
        let _ = request_time.add(&w.request_time);
        let _ = request_time_corrected.add(&w.request_time_corrected);
        if let Some(p) = &w.pacing {
            pacing.get_or_insert_with(PacingCounts::default).merge(p);
        }
        let _ = connect_time.add(&w.connect_time);
        let _ = ttfb.add(&w.ttfb);
        client_rps.extend_from_slice(&w.client_rps);
        errors.merge(&w.errors);
        goaways += w.goaways;
        reconnects += w.reconnects;
        read_waits += w.read_waits;
        tls_resumed += w.tls_resumed;
        resume.merge(&w.resume);
        pushed_streams += w.pushed_streams;
        pushed_bytes += w.pushed_bytes;
        pushed_frame_bytes += w.pushed_frame_bytes;
        if app_protocol.is_none() {
            app_protocol = w.app_protocol;
        }
        protocol_fallback |= w.protocol_fallback;
        if tls.is_none() {
            tls = w.tls;
        }
    }
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
    RunResult {
        elapsed,
        requests: req,
        status,
        informational: (100u16..)
            .zip(informational)
            .filter(|&(_, n)| n > 0)
            .collect(),
        traffic,
        bytes_sent,
        response_bytes,
        request_time,
        request_time_corrected,
        connect_time,
        ttfb,
        client_rps,
        app_protocol,
        protocol_fallback,
        tls,
        errors,
        goaways,
        reconnects,
        read_waits,
        tls_resumed,
        resume,
        pushed_streams,
        pushed_bytes,
        pushed_frame_bytes,
        interrupted,
        pacing,
        timeseries: Vec::new(),
        quic,
        samples: samples.map(|mut s| {
            s.sort();
            s
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_counts_unissued_requests_as_errored() {
        let mut a = WorkerStats::new(10);
        a.started = 6;
        a.done = 6;
        a.completed = 6;
        a.status_success = 5;
        a.failed = 1; // a 404
        a.status[2] = 5;
        a.status[4] = 1;
        WorkerStats::record(&mut a.request_time, Duration::from_micros(100));
        let mut b = WorkerStats::new(5);
        b.started = 5;
        b.done = 5;
        b.completed = 5;
        b.status_success = 5;
        b.status[2] = 5;
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
