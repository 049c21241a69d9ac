//! The time series of a run: one row per interval (default 1 s) of the measurement.
//!
//! Each worker keeps per-interval latency histograms (reset every interval) and remembers its
//! cumulative counters at the start of the interval; when an interval ends it sends its part
//! (counter deltas, histograms, open connections) over a channel. A collector thread merges the
//! parts of all workers by interval index and hands each finished row to the
//! [`Observer`](crate::Observer) at once — as soon as every live worker has reported that
//! interval, or a deadline after its end — so rows reach the disk while the run is going on
//! (a crash loses at most the rows in flight). The rows are also returned in the result.
//!
//! Nothing here runs per request except `SeriesRecorder::record` (two histogram records).

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

pub use crate::interval::{IntervalErrors, IntervalHistograms, IntervalLatency, IntervalRow};
use crate::result::new_duration_histogram;
use crate::schedule::Profile;

/// Cumulative counters of a worker (deltas between two of them make an interval's counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub started: u64,
    pub completed: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub bytes: u64,
    pub errors: IntervalErrors,
    pub late: u64,
    pub dropped: u64,
}

impl Totals {
    fn sub(&self, o: &Totals) -> Totals {
        Totals {
            started: self.started.saturating_sub(o.started),
            completed: self.completed.saturating_sub(o.completed),
            succeeded: self.succeeded.saturating_sub(o.succeeded),
            failed: self.failed.saturating_sub(o.failed),
            bytes: self.bytes.saturating_sub(o.bytes),
            errors: self.errors.sub(&o.errors),
            late: self.late.saturating_sub(o.late),
            dropped: self.dropped.saturating_sub(o.dropped),
        }
    }

    fn add(&mut self, o: &Totals) {
        self.started += o.started;
        self.completed += o.completed;
        self.succeeded += o.succeeded;
        self.failed += o.failed;
        self.bytes += o.bytes;
        self.errors.add(&o.errors);
        self.late += o.late;
        self.dropped += o.dropped;
    }
}

/// One worker's share of one interval.
#[derive(Debug)]
pub(crate) struct IntervalPart {
    worker: u32,
    index: u64,
    length: Duration,
    delta: Totals,
    active: u64,
    hist: Histogram<u64>,
    /// From the send, for paced runs (otherwise `hist` is from the send).
    hist_send: Option<Histogram<u64>>,
}

/// What workers send to the collector.
#[derive(Debug)]
pub(crate) enum SeriesMsg {
    /// A finished interval.
    Part(Box<IntervalPart>),
    /// The worker has stopped; it sent every interval below `next`.
    Done { worker: u32, next: u64 },
}

/// The worker side: per-interval histograms and the counters at the start of the interval.
#[derive(Debug)]
pub(crate) struct SeriesRecorder {
    tx: Sender<SeriesMsg>,
    worker: u32,
    origin: Instant,
    interval: Duration,
    index: u64,
    end: Instant,
    hist: Histogram<u64>,
    hist_send: Option<Histogram<u64>>,
    base: Totals,
    /// End of a timed run: the interval reaching it is left to [`SeriesRecorder::finish`], so
    /// that what completes in the run's last loop turn lands in the last row.
    stop_at: Option<Instant>,
    done: bool,
}

impl SeriesRecorder {
    /// A recorder whose first interval starts at `origin` (the start of the measurement);
    /// `stop_at` is the end of a timed run.
    pub(crate) fn new(
        tx: Sender<SeriesMsg>,
        worker: u32,
        origin: Instant,
        interval: Duration,
        paced: bool,
        stop_at: Option<Instant>,
    ) -> SeriesRecorder {
        SeriesRecorder {
            tx,
            worker,
            origin,
            interval,
            index: 0,
            end: origin + interval,
            hist: new_duration_histogram(),
            hist_send: paced.then(new_duration_histogram),
            base: Totals::default(),
            stop_at,
            done: false,
        }
    }

    /// When the current interval ends (when it is to be sent).
    pub(crate) fn end(&self) -> Instant {
        self.end
    }

    /// Whether the current interval is over at `now` (the last one of a timed run never is:
    /// [`SeriesRecorder::finish`] sends it).
    #[inline]
    pub(crate) fn due(&self, now: Instant) -> bool {
        now >= self.end && self.stop_at.map_or(true, |s| self.end < s) && !self.done
    }

    /// Records a completed request: latency from the send, and from the intended start for
    /// paced runs.
    #[inline]
    pub(crate) fn record(&mut self, from_send: Duration, corrected: Option<Duration>) {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        match (&mut self.hist_send, corrected) {
            (Some(hs), Some(c)) => {
                hs.saturating_record(ns(from_send));
                self.hist.saturating_record(ns(c));
            }
            (Some(hs), None) => {
                hs.saturating_record(ns(from_send));
                self.hist.saturating_record(ns(from_send));
            }
            (None, _) => self.hist.saturating_record(ns(from_send)),
        }
    }

    /// Forgets everything before `origin` (end of the warm-up; the counters were reset).
    pub(crate) fn restart(&mut self, origin: Instant) {
        self.origin = origin;
        self.index = 0;
        self.end = origin + self.interval;
        self.hist.reset();
        if let Some(h) = self.hist_send.as_mut() {
            h.reset();
        }
        self.base = Totals::default();
    }

    fn emit(&mut self, length: Duration, totals: &Totals, active: u64) {
        let hist = std::mem::replace(&mut self.hist, new_duration_histogram());
        let hist_send = self
            .hist_send
            .as_mut()
            .map(|h| std::mem::replace(h, new_duration_histogram()));
        let part = IntervalPart {
            worker: self.worker,
            index: self.index,
            length,
            delta: totals.sub(&self.base),
            active,
            hist,
            hist_send,
        };
        self.base = *totals;
        // The collector only goes away when the run is over.
        let _ = self.tx.send(SeriesMsg::Part(Box::new(part)));
        self.index += 1;
    }

    /// Sends every interval that has ended by `now`.
    pub(crate) fn roll(&mut self, now: Instant, totals: &Totals, active: u64) {
        while self.due(now) {
            self.emit(self.interval, totals, active);
            self.end += self.interval;
        }
    }

    /// The worker stops at `end`: sends the intervals before it, then the last one (cut at
    /// `end`, with whatever completed up to now), then says it is done.
    pub(crate) fn finish(&mut self, end: Instant, totals: &Totals, active: u64) {
        if self.done {
            return;
        }
        while self.end < end {
            self.emit(self.interval, totals, active);
            self.end += self.interval;
        }
        let start = self.end - self.interval;
        let length = end.saturating_duration_since(start);
        if !length.is_zero() || *totals != self.base {
            self.emit(length, totals, active);
        }
        self.done = true;
        let _ = self.tx.send(SeriesMsg::Done {
            worker: self.worker,
            next: self.index,
        });
    }
}

/// A row being merged.
struct Pending {
    parts: u32,
    length: Duration,
    delta: Totals,
    active: u64,
    hist: Option<Histogram<u64>>,
    hist_send: Option<Histogram<u64>>,
}

/// The collector thread's state: merges parts by interval and emits rows in order.
pub(crate) struct Collector {
    origin: Instant,
    interval: Duration,
    /// Level profile (relative to the run start) and the warm-up before the measurement.
    target: Option<(Profile, Duration)>,
    pending: BTreeMap<u64, Pending>,
    /// Per worker: the index below which it has sent everything and will send nothing more.
    done: Vec<Option<u64>>,
    next: u64,
    rows: Vec<IntervalRow>,
    keep_histograms: bool,
}

impl Collector {
    /// A collector for `workers` workers whose intervals start at `origin`.
    pub(crate) fn new(
        workers: u32,
        origin: Instant,
        interval: Duration,
        target: Option<(Profile, Duration)>,
        keep_histograms: bool,
    ) -> Collector {
        Collector {
            origin,
            interval,
            target,
            pending: BTreeMap::new(),
            done: vec![None; workers as usize],
            next: 0,
            rows: Vec::new(),
            keep_histograms,
        }
    }

    /// Receives until every worker is done (or the channel closes), emitting each row through
    /// `emit` as soon as it is complete; returns all rows.
    pub(crate) fn run(
        mut self,
        rx: Receiver<SeriesMsg>,
        emit: &mut dyn FnMut(&IntervalRow),
    ) -> Vec<IntervalRow> {
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(m) => self.accept(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            while let Ok(m) = rx.try_recv() {
                self.accept(m);
            }
            self.flush(Instant::now(), false, emit);
            if self.done.iter().all(Option::is_some) {
                break;
            }
        }
        self.flush(Instant::now(), true, emit);
        self.rows
    }

    fn accept(&mut self, m: SeriesMsg) {
        match m {
            SeriesMsg::Done { worker, next } => {
                if let Some(d) = self.done.get_mut(worker as usize) {
                    *d = Some(next);
                }
            }
            SeriesMsg::Part(p) => {
                let p = *p;
                if p.index < self.next {
                    self.late_part(p);
                    return;
                }
                let e = self.pending.entry(p.index).or_insert(Pending {
                    parts: 0,
                    length: Duration::ZERO,
                    delta: Totals::default(),
                    active: 0,
                    hist: None,
                    hist_send: None,
                });
                e.parts += 1;
                e.length = e.length.max(p.length);
                e.delta.add(&p.delta);
                e.active += p.active;
                merge_hist(&mut e.hist, p.hist);
                if let Some(h) = p.hist_send {
                    merge_hist(&mut e.hist_send, h);
                }
                let _ = p.worker;
            }
        }
    }

    /// A part for a row already written (its worker missed the deadline): its counts go into
    /// the in-memory row, the percentiles stay those of the parts that were in time.
    fn late_part(&mut self, p: IntervalPart) {
        if let Some(r) = self.rows.iter_mut().find(|r| r.index == p.index) {
            let d = &p.delta;
            r.started += d.started;
            r.completed += d.completed;
            r.succeeded += d.succeeded;
            r.failed += d.failed;
            r.bytes += d.bytes;
            r.errors.add(&d.errors);
            r.late += d.late;
            r.dropped += d.dropped;
            r.active_connections += p.active;
            if !p.hist.is_empty() {
                r.latency.max = r.latency.max.max(p.hist.median_equivalent(p.hist.max()));
            }
            if let Some(h) = r.histograms.as_deref_mut() {
                let add = |bytes: &mut Vec<u8>, part: &Histogram<u64>| {
                    if let Some(mut m) = IntervalHistograms::decode(bytes) {
                        let _ = m.add(part);
                        *bytes = IntervalHistograms::encode(&m);
                    }
                };
                add(&mut h.latency, &p.hist);
                if let (Some(u), Some(pu)) = (h.uncorrected.as_mut(), p.hist_send.as_ref()) {
                    add(u, pu);
                }
            }
        }
    }

    /// Workers expected to report interval `i`.
    fn expected(&self, i: u64) -> u32 {
        self.done
            .iter()
            .filter(|d| !matches!(d, Some(next) if *next <= i))
            .count() as u32
    }

    fn flush(&mut self, now: Instant, all: bool, emit: &mut dyn FnMut(&IntervalRow)) {
        let grace = self.interval.max(Duration::from_secs(1));
        loop {
            let i = self.next;
            let deadline =
                self.origin + self.interval.saturating_mul(saturating_u32(i + 1)) + grace;
            let late = all || now >= deadline;
            match self.pending.get(&i) {
                Some(p) => {
                    if !(late || p.parts >= self.expected(i)) {
                        return;
                    }
                    if let Some(p) = self.pending.remove(&i) {
                        let row = self.row(i, p);
                        emit(&row);
                        self.rows.push(row);
                    }
                    self.next = i + 1;
                }
                None => {
                    // Nothing for `i` yet: skip it only when nobody will send it.
                    match self.pending.range(i..).next().map(|(k, _)| *k) {
                        Some(k) if late || self.expected(i) == 0 => self.next = k,
                        _ => return,
                    }
                }
            }
        }
    }

    fn row(&self, index: u64, p: Pending) -> IntervalRow {
        let start = self.interval.saturating_mul(saturating_u32(index));
        let latency = p.hist.as_ref().map(IntervalLatency::of).unwrap_or_default();
        let latency_uncorrected = match &p.hist_send {
            Some(h) => IntervalLatency::of(h),
            None => latency,
        };
        let target = self.target.as_ref().map(|(prof, warm)| {
            let t0 = (*warm + start).as_secs_f64();
            prof.mean_level(t0, t0 + p.length.as_secs_f64())
        });
        let d = p.delta;
        let histograms = if self.keep_histograms {
            let latency = p.hist.unwrap_or_else(new_duration_histogram);
            Some(Box::new(IntervalHistograms {
                latency: IntervalHistograms::encode(&latency),
                uncorrected: p.hist_send.as_ref().map(IntervalHistograms::encode),
            }))
        } else {
            None
        };
        IntervalRow {
            index,
            start,
            length: p.length,
            target,
            started: d.started,
            completed: d.completed,
            succeeded: d.succeeded,
            failed: d.failed,
            bytes: d.bytes,
            errors: d.errors,
            late: d.late,
            dropped: d.dropped,
            active_connections: p.active,
            latency,
            latency_uncorrected,
            histograms,
        }
    }
}

fn saturating_u32(i: u64) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

fn merge_hist(into: &mut Option<Histogram<u64>>, h: Histogram<u64>) {
    match into {
        None => *into = Some(h),
        // Same bounds everywhere: cannot fail.
        Some(m) => {
            let _ = m.add(&h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    fn totals(completed: u64) -> Totals {
        Totals {
            completed,
            started: completed,
            succeeded: completed,
            bytes: completed * 10,
            ..Default::default()
        }
    }

    #[test]
    fn merges_workers_by_interval_and_emits_in_order() {
        let (tx, rx) = channel();
        let origin = Instant::now() - Duration::from_secs(10);
        let iv = Duration::from_secs(1);
        let mut a = SeriesRecorder::new(tx.clone(), 0, origin, iv, true, None);
        let mut b = SeriesRecorder::new(tx, 1, origin, iv, true, None);
        a.record(Duration::from_millis(1), Some(Duration::from_millis(3)));
        a.roll(origin + Duration::from_millis(1500), &totals(5), 2);
        b.record(Duration::from_millis(2), Some(Duration::from_millis(2)));
        b.record(Duration::from_millis(2), Some(Duration::from_millis(400)));
        b.roll(origin + Duration::from_millis(2100), &totals(7), 3);
        a.finish(origin + Duration::from_millis(2500), &totals(9), 0);
        b.finish(origin + Duration::from_millis(2000), &totals(7), 0);
        let target = Some((Profile::constant(100.0), Duration::ZERO));
        let mut written = Vec::new();
        let rows =
            Collector::new(2, origin, iv, target, true).run(rx, &mut |r| written.push(r.clone()));
        assert_eq!(rows, written);
        // Kept histograms give the row's statistics back.
        let h = rows[0].histograms.as_deref().unwrap();
        let l = IntervalHistograms::decode(&h.latency).unwrap();
        assert_eq!(IntervalLatency::of(&l), rows[0].latency);
        let u = IntervalHistograms::decode(h.uncorrected.as_ref().unwrap()).unwrap();
        assert_eq!(IntervalLatency::of(&u), rows[0].latency_uncorrected);
        assert!(h.latency.len() < 1000, "{} bytes", h.latency.len());
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].completed, 12);
        assert_eq!(rows[0].bytes, 120);
        assert_eq!(rows[0].active_connections, 5);
        assert_eq!(rows[0].target, Some(100.0));
        assert_eq!(rows[0].latency.count, 3);
        assert!((rows[0].latency.max as f64 - 400e6).abs() < 400e6 * 0.001);
        assert!((rows[0].latency_uncorrected.max as f64 - 2e6).abs() < 2e3);
        // Interval 1: worker 0 completed 4 more, worker 1 nothing.
        assert_eq!(rows[1].completed, 4);
        assert_eq!(rows[1].length, iv);
        // Interval 2: only worker 0's partial half second.
        assert_eq!(rows[2].index, 2);
        assert_eq!(rows[2].length, Duration::from_millis(500));
        assert_eq!(rows[2].completed, 0);
        assert_eq!(rows[2].rps(), 0.0);
    }

    #[test]
    fn a_missing_worker_does_not_block_rows_forever() {
        let (tx, rx) = channel();
        // Interval 0 ended long ago: its deadline has passed.
        let origin = Instant::now() - Duration::from_secs(30);
        let iv = Duration::from_secs(1);
        let mut a = SeriesRecorder::new(tx.clone(), 0, origin, iv, false, None);
        a.roll(origin + Duration::from_millis(1001), &totals(1), 1);
        let mut c = Collector::new(2, origin, iv, None, false);
        let mut out = Vec::new();
        c.accept(rx.try_recv().unwrap());
        c.flush(Instant::now(), false, &mut |r| out.push(r.index));
        assert_eq!(out, vec![0]);
        // The straggler's part still counts in memory.
        let mut b = SeriesRecorder::new(tx, 1, origin, iv, false, None);
        b.record(Duration::from_millis(5), None);
        b.roll(origin + Duration::from_millis(1001), &totals(2), 1);
        c.accept(rx.try_recv().unwrap());
        assert_eq!(c.rows[0].completed, 3);
        assert_eq!(c.rows[0].active_connections, 2);
    }
}
