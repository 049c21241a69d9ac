//! The rows of a run's time series ([`IntervalRow`]): what one interval of the measurement
//! counted and its latency percentiles. The recording and collecting of the rows while the
//! run goes on is in [`timeseries`](crate::timeseries).

use std::time::Duration;

use hdrhistogram::Histogram;

/// Latency percentiles of one interval, in nanoseconds (0 when nothing completed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntervalLatency {
    /// Requests measured.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Maximum.
    pub max: u64,
}

impl IntervalLatency {
    /// The statistics of one interval's histogram.
    pub fn of(h: &Histogram<u64>) -> IntervalLatency {
        if h.is_empty() {
            return IntervalLatency::default();
        }
        let q = |q: f64| h.median_equivalent(h.value_at_quantile(q));
        IntervalLatency {
            count: h.len(),
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            max: h.median_equivalent(h.max()),
        }
    }
}

/// Error events of one interval, by kind (see [`ErrorCounts`](crate::ErrorCounts)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntervalErrors {
    /// Failed connection attempts.
    pub connect: u64,
    /// TLS failures.
    pub tls: u64,
    /// `-T`/`-N` timeouts.
    pub timeout: u64,
    /// Protocol violations by the peer.
    pub protocol: u64,
    /// Connections lost with requests in flight.
    pub io: u64,
    /// HTTP/2 streams reset by the peer.
    pub stream_reset: u64,
    /// GOAWAY frames with an error code.
    pub goaway: u64,
}

impl IntervalErrors {
    /// All error events.
    pub fn total(&self) -> u64 {
        self.connect
            + self.tls
            + self.timeout
            + self.protocol
            + self.io
            + self.stream_reset
            + self.goaway
    }

    /// Adds `o` to these counts.
    pub(crate) fn add(&mut self, o: &IntervalErrors) {
        self.connect += o.connect;
        self.tls += o.tls;
        self.timeout += o.timeout;
        self.protocol += o.protocol;
        self.io += o.io;
        self.stream_reset += o.stream_reset;
        self.goaway += o.goaway;
    }

    /// These counts minus `o` (saturating): the events between two snapshots.
    pub(crate) fn sub(&self, o: &IntervalErrors) -> IntervalErrors {
        IntervalErrors {
            connect: self.connect.saturating_sub(o.connect),
            tls: self.tls.saturating_sub(o.tls),
            timeout: self.timeout.saturating_sub(o.timeout),
            protocol: self.protocol.saturating_sub(o.protocol),
            io: self.io.saturating_sub(o.io),
            stream_reset: self.stream_reset.saturating_sub(o.stream_reset),
            goaway: self.goaway.saturating_sub(o.goaway),
        }
    }
}

/// One row of the time series, merged over workers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IntervalRow {
    /// Interval number (0 = the first interval of the measurement).
    pub index: u64,
    /// Start of the interval, from the start of the measurement (after warm-up).
    pub start: Duration,
    /// Length of the interval (the last one may be shorter).
    pub length: Duration,
    /// The level in force, averaged over the interval: requests per second (open model,
    /// `--rps` × clients) or active connections (closed-model stages); `None` otherwise.
    pub target: Option<f64>,
    /// Requests sent.
    pub started: u64,
    /// Requests completed with a response (any status).
    pub completed: u64,
    /// Requests completed with 2xx/3xx.
    pub succeeded: u64,
    /// Requests failed (4xx/5xx, errors).
    pub failed: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Error events by kind.
    pub errors: IntervalErrors,
    /// Open model: requests sent after waiting for a free slot.
    pub late: u64,
    /// Open model: requests dropped because the queue was full.
    pub dropped: u64,
    /// Connections open at the end of the interval.
    pub active_connections: u64,
    /// Latency of the requests completed in the interval: from the intended start for paced
    /// runs (corrected), from the send otherwise.
    pub latency: IntervalLatency,
    /// Latency from the send (uncorrected); equal to `latency` in closed-model runs.
    pub latency_uncorrected: IntervalLatency,
    /// The interval's histograms, kept only when asked for
    /// ([`LoadShape::interval_histograms`](crate::LoadShape::interval_histograms)) so that
    /// the rows of several processes can be merged exactly.
    pub histograms: Option<Box<IntervalHistograms>>,
}

/// The latency histograms of one interval (see [`IntervalRow::histograms`]), kept serialised
/// as HdrHistogram V2 (uncompressed): a few hundred bytes instead of the ~270 KiB of counts of
/// a live histogram, so that a long run's rows stay small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalHistograms {
    /// What [`IntervalRow::latency`] is computed from.
    pub latency: Vec<u8>,
    /// What [`IntervalRow::latency_uncorrected`] is computed from, when it differs (paced runs).
    pub uncorrected: Option<Vec<u8>>,
}

impl IntervalHistograms {
    /// Serialises `h` as HdrHistogram V2.
    pub fn encode(h: &Histogram<u64>) -> Vec<u8> {
        use hdrhistogram::serialization::Serializer as _;
        let mut out = Vec::new();
        // Writing to a Vec cannot fail; an empty buffer would only make the row's
        // histogram unreadable.
        let _ = hdrhistogram::serialization::V2Serializer::new().serialize(h, &mut out);
        out
    }

    /// Reads a histogram serialised by [`IntervalHistograms::encode`].
    pub fn decode(bytes: &[u8]) -> Option<Histogram<u64>> {
        let mut h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(bytes))
            .ok()?;
        h.auto(true);
        Some(h)
    }
}

impl IntervalRow {
    /// Completed requests per second over the interval.
    pub fn rps(&self) -> f64 {
        let s = self.length.as_secs_f64();
        if s > 0.0 {
            self.completed as f64 / s
        } else {
            0.0
        }
    }
}
