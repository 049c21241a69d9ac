//! `--timeseries PATH`: one row per interval, as CSV or as JSON lines (`.jsonl`, `.ndjson`).
//!
//! Both formats carry the same flat fields ([`IntervalJson`]); the `--json` result embeds the
//! same objects under `timeseries`. Latencies are milliseconds with microsecond precision;
//! `p50_ms`…`max_ms` are from each request's intended start in paced runs (corrected) and from
//! the send otherwise, `uncorrected_*` always from the send. Each row is written and flushed as
//! soon as the engine has merged it, so a crash loses at most the rows in flight.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::{IntervalErrors, IntervalLatency, IntervalRow};

/// One time-series row in the file formats and in the JSON result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalJson {
    /// Interval number from 0.
    pub index: u64,
    /// Start of the interval, seconds from the start of the measurement.
    pub time_s: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub seconds: f64,
    /// The level in force (mean over the interval): req/s in the open model and with `--rps`,
    /// active connections with closed-model stages; null otherwise.
    pub target: Option<f64>,
    /// Requests sent.
    pub started: u64,
    /// Requests completed with a response.
    pub completed: u64,
    /// `completed / seconds`.
    pub rps: f64,
    /// Completed with 2xx/3xx.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Bytes received.
    pub bytes: u64,
    /// All error events.
    pub errors: u64,
    /// Failed connection attempts.
    pub errors_connect: u64,
    /// TLS failures.
    pub errors_tls: u64,
    /// `-T`/`-N` timeouts.
    pub errors_timeout: u64,
    /// Protocol violations by the peer.
    pub errors_protocol: u64,
    /// Connections lost with requests in flight.
    pub errors_io: u64,
    /// HTTP/2 streams reset by the peer.
    pub errors_stream_reset: u64,
    /// GOAWAY frames with an error code.
    pub errors_goaway: u64,
    /// Open model: sent after waiting for a free slot.
    pub late: u64,
    /// Open model: dropped because the queue was full.
    pub dropped: u64,
    /// Connections open at the end of the interval.
    pub active_connections: u64,
    /// Latency median (ms).
    pub p50_ms: f64,
    /// 90th percentile (ms).
    pub p90_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Maximum (ms).
    pub max_ms: f64,
    /// Median from the send (ms).
    pub uncorrected_p50_ms: f64,
    /// 90th percentile from the send (ms).
    pub uncorrected_p90_ms: f64,
    /// 99th percentile from the send (ms).
    pub uncorrected_p99_ms: f64,
    /// Maximum from the send (ms).
    pub uncorrected_max_ms: f64,
}

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e3).round() / 1e3
}

fn ns(ms: f64) -> u64 {
    let v = (ms * 1e6).round();
    if v.is_finite() && v > 0.0 {
        v as u64
    } else {
        0
    }
}

impl From<&IntervalRow> for IntervalJson {
    fn from(r: &IntervalRow) -> Self {
        let e = &r.errors;
        let (l, u) = (&r.latency, &r.latency_uncorrected);
        IntervalJson {
            index: r.index,
            time_s: r.start.as_secs_f64(),
            seconds: r.length.as_secs_f64(),
            target: r.target.map(|t| (t * 1000.0).round() / 1000.0),
            started: r.started,
            completed: r.completed,
            rps: (r.rps() * 100.0).round() / 100.0,
            succeeded: r.succeeded,
            failed: r.failed,
            bytes: r.bytes,
            errors: e.total(),
            errors_connect: e.connect,
            errors_tls: e.tls,
            errors_timeout: e.timeout,
            errors_protocol: e.protocol,
            errors_io: e.io,
            errors_stream_reset: e.stream_reset,
            errors_goaway: e.goaway,
            late: r.late,
            dropped: r.dropped,
            active_connections: r.active_connections,
            p50_ms: ms(l.p50),
            p90_ms: ms(l.p90),
            p99_ms: ms(l.p99),
            max_ms: ms(l.max),
            uncorrected_p50_ms: ms(u.p50),
            uncorrected_p90_ms: ms(u.p90),
            uncorrected_p99_ms: ms(u.p99),
            uncorrected_max_ms: ms(u.max),
        }
    }
}

impl From<&IntervalJson> for IntervalRow {
    fn from(j: &IntervalJson) -> Self {
        let d = |s: f64| Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO);
        IntervalRow {
            index: j.index,
            start: d(j.time_s),
            length: d(j.seconds),
            target: j.target,
            started: j.started,
            completed: j.completed,
            succeeded: j.succeeded,
            failed: j.failed,
            bytes: j.bytes,
            errors: IntervalErrors {
                connect: j.errors_connect,
                tls: j.errors_tls,
                timeout: j.errors_timeout,
                protocol: j.errors_protocol,
                io: j.errors_io,
                stream_reset: j.errors_stream_reset,
                goaway: j.errors_goaway,
            },
            late: j.late,
            dropped: j.dropped,
            active_connections: j.active_connections,
            latency: IntervalLatency {
                count: 0,
                p50: ns(j.p50_ms),
                p90: ns(j.p90_ms),
                p99: ns(j.p99_ms),
                max: ns(j.max_ms),
            },
            latency_uncorrected: IntervalLatency {
                count: 0,
                p50: ns(j.uncorrected_p50_ms),
                p90: ns(j.uncorrected_p90_ms),
                p99: ns(j.uncorrected_p99_ms),
                max: ns(j.uncorrected_max_ms),
            },
            histograms: None,
        }
    }
}

/// The CSV header line (the [`IntervalJson`] fields, in order).
pub const CSV_HEADER: &str = "index,time_s,seconds,target,started,completed,rps,succeeded,failed,\
bytes,errors,errors_connect,errors_tls,errors_timeout,errors_protocol,errors_io,\
errors_stream_reset,errors_goaway,late,dropped,active_connections,p50_ms,p90_ms,p99_ms,max_ms,\
uncorrected_p50_ms,uncorrected_p90_ms,uncorrected_p99_ms,uncorrected_max_ms";

/// One CSV line (without the newline); `target` is empty when there is none.
pub fn csv_line(r: &IntervalRow) -> String {
    let j = IntervalJson::from(r);
    let target = j.target.map(|t| t.to_string()).unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        j.index,
        j.time_s,
        j.seconds,
        target,
        j.started,
        j.completed,
        j.rps,
        j.succeeded,
        j.failed,
        j.bytes,
        j.errors,
        j.errors_connect,
        j.errors_tls,
        j.errors_timeout,
        j.errors_protocol,
        j.errors_io,
        j.errors_stream_reset,
        j.errors_goaway,
        j.late,
        j.dropped,
        j.active_connections,
        j.p50_ms,
        j.p90_ms,
        j.p99_ms,
        j.max_ms,
        j.uncorrected_p50_ms,
        j.uncorrected_p90_ms,
        j.uncorrected_p99_ms,
        j.uncorrected_max_ms,
    )
}

/// The file format, chosen by the extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per line (`.jsonl`, `.ndjson`).
    JsonLines,
}

impl Format {
    /// JSON lines for `.jsonl` / `.ndjson` (any case), CSV otherwise.
    pub fn for_path(path: &Path) -> Format {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("jsonl" | "ndjson") => Format::JsonLines,
            _ => Format::Csv,
        }
    }
}

/// Writes rows as they come, flushing each.
#[derive(Debug)]
pub struct SeriesWriter<W: Write> {
    out: W,
    format: Format,
}

impl SeriesWriter<BufWriter<File>> {
    /// Creates (truncates) `path`; the format follows the extension. CSV gets its header at
    /// once.
    pub fn create(path: &Path) -> io::Result<Self> {
        let f = File::create(path)?;
        SeriesWriter::new(BufWriter::new(f), Format::for_path(path))
    }
}

impl<W: Write> SeriesWriter<W> {
    /// A writer on `out` (the CSV header is written at once).
    pub fn new(mut out: W, format: Format) -> io::Result<Self> {
        if format == Format::Csv {
            writeln!(out, "{CSV_HEADER}")?;
            out.flush()?;
        }
        Ok(SeriesWriter { out, format })
    }

    /// Writes one row and flushes it.
    pub fn write(&mut self, r: &IntervalRow) -> io::Result<()> {
        match self.format {
            Format::Csv => writeln!(self.out, "{}", csv_line(r))?,
            Format::JsonLines => {
                let line =
                    serde_json::to_string(&IntervalJson::from(r)).map_err(io::Error::other)?;
                writeln!(self.out, "{line}")?;
            }
        }
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> IntervalRow {
        IntervalRow {
            index: 3,
            start: Duration::from_secs(3),
            length: Duration::from_millis(500),
            target: Some(2000.0),
            started: 1001,
            completed: 1000,
            succeeded: 999,
            failed: 1,
            bytes: 65_300,
            errors: IntervalErrors {
                stream_reset: 1,
                ..Default::default()
            },
            late: 4,
            dropped: 0,
            active_connections: 10,
            latency: IntervalLatency {
                count: 1000,
                p50: 81_234,
                p90: 120_000,
                p99: 1_500_000,
                max: 1_000_000_000,
            },
            latency_uncorrected: IntervalLatency {
                count: 1000,
                p50: 50_000,
                p90: 60_000,
                p99: 99_999,
                max: 2_000_000,
            },
            histograms: None,
        }
    }

    #[test]
    fn csv_rows() {
        let mut w = SeriesWriter::new(Vec::new(), Format::Csv).unwrap();
        w.write(&row()).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let values: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header.len(), values.len());
        let get = |k: &str| values[header.iter().position(|h| *h == k).unwrap()];
        assert_eq!(get("time_s"), "3");
        assert_eq!(get("seconds"), "0.5");
        assert_eq!(get("rps"), "2000");
        assert_eq!(get("errors"), "1");
        assert_eq!(get("p50_ms"), "0.081");
        assert_eq!(get("max_ms"), "1000");
        assert_eq!(get("uncorrected_p99_ms"), "0.1");
        let mut r = row();
        r.target = None;
        assert!(csv_line(&r).starts_with("3,3,0.5,,1001,"));
    }

    #[test]
    fn json_lines_round_trip() {
        let mut w = SeriesWriter::new(Vec::new(), Format::JsonLines).unwrap();
        w.write(&row()).unwrap();
        w.write(&row()).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(text.lines().count(), 2);
        let j: IntervalJson = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let back = IntervalRow::from(&j);
        assert_eq!(back.latency.p99, 1_500_000);
        assert_eq!(back.latency.p50, 81_000, "microsecond precision");
        assert_eq!(back.completed, 1000);
        assert_eq!(back.errors.stream_reset, 1);
        assert_eq!(Format::for_path(Path::new("a.JSONL")), Format::JsonLines);
        assert_eq!(Format::for_path(Path::new("a.ndjson")), Format::JsonLines);
        assert_eq!(Format::for_path(Path::new("a.csv")), Format::Csv);
        assert_eq!(Format::for_path(Path::new("series")), Format::Csv);
    }
}
