//! `--csv PATH`: one row per run, with a header row.
//!
//! [`write()`] creates the file (header + row) or, when the file already starts with the same
//! header, appends the run's row, so that repeated runs build one table. Latencies are in
//! microseconds with three decimals; rates with two decimals.
//!
//! HTTP/3 runs fill the QUIC columns appended after h2load-style ones (empty for other
//! protocols): `quic_min_rtt_us` and `quic_smoothed_rtt_us` (the median of the clients'
//! figures, as the text's `QUIC:` line), `quic_packets_sent`, `quic_packets_recv_datagrams`
//! (quinn-proto counts received *datagrams*, not the QUIC packets coalesced in them: h2load's
//! `packets recv`), `quic_packets_lost` (sums over the clients' last connections),
//! `udp_datagrams_sent`, `udp_datagrams_recv` (the sockets' counts, GSO and GRO batches
//! counted by segment) and `gro_datagrams_per_read` (the mean datagrams per receive call).

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

use crate::model::{RunOptions, RunResult};
use crate::stats::{bytes_per_second, requests_per_second, DistributionSummary};

/// Column names, in order.
pub const COLUMNS: &[&str] = &[
    "uri",
    "protocol",
    "clients",
    "max_concurrent_streams",
    "threads",
    "elapsed_s",
    "requests_total",
    "requests_started",
    "requests_done",
    "requests_succeeded",
    "requests_failed",
    "requests_errored",
    "requests_timeout",
    "status_1xx",
    "status_2xx",
    "status_3xx",
    "status_4xx",
    "status_5xx",
    "bytes_total",
    "bytes_headers",
    "bytes_headers_decompressed",
    "bytes_data",
    "req_per_s",
    "bytes_per_s",
    "request_min_us",
    "request_max_us",
    "request_mean_us",
    "request_sd_us",
    "request_p50_us",
    "request_p90_us",
    "request_p99_us",
    "request_p99_9_us",
    "connect_min_us",
    "connect_max_us",
    "connect_mean_us",
    "connect_p50_us",
    "connect_p99_us",
    "ttfb_min_us",
    "ttfb_max_us",
    "ttfb_mean_us",
    "ttfb_p50_us",
    "ttfb_p99_us",
    "client_rps_min",
    "client_rps_max",
    "client_rps_mean",
    "client_rps_sd",
    "goaways",
    "reconnects",
    "errors",
    "protocol_fallback",
    "interrupted",
    "quic_min_rtt_us",
    "quic_smoothed_rtt_us",
    "quic_packets_sent",
    "quic_packets_recv_datagrams",
    "quic_packets_lost",
    "udp_datagrams_sent",
    "udp_datagrams_recv",
    "gro_datagrams_per_read",
];

/// The QUIC columns of a run (see the module docs); empty cells without QUIC figures.
fn quic_cells(q: Option<&h2lab_engine::QuicStats>) -> [String; 8] {
    use crate::quic::{gro_stat, time_stat};
    let Some(q) = q else {
        return Default::default();
    };
    let sum = |v: &[u64]| v.iter().sum::<u64>().to_string();
    [
        format!("{:.3}", time_stat(&q.min_rtt).median * 1e6),
        format!("{:.3}", time_stat(&q.smoothed_rtt).median * 1e6),
        sum(&q.packets_sent),
        sum(&q.packets_recv),
        sum(&q.packets_lost),
        q.datagrams_sent.to_string(),
        q.datagrams_recv.to_string(),
        format!("{:.2}", gro_stat(&q.gro_counts).mean),
    ]
}

/// The header row (with trailing newline).
pub fn header() -> String {
    let mut s = COLUMNS.join(",");
    s.push('\n');
    s
}

/// Quotes a field when it contains a comma, a quote or a line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// The run's row (with trailing newline).
pub fn row(r: &RunResult, o: &RunOptions) -> String {
    let req = DistributionSummary::from_histogram(&r.request_time);
    let con = DistributionSummary::from_histogram(&r.connect_time);
    let ttfb = DistributionSummary::from_histogram(&r.ttfb);
    let rps = DistributionSummary::from_samples(&r.client_rps);
    let q = &r.requests;
    let st = &r.status;
    let t = &r.traffic;
    let mut cells: Vec<String> = vec![
        field(o.uris.first().map(String::as_str).unwrap_or("")),
        field(r.app_protocol.map(|p| p.as_str()).unwrap_or("")),
        o.clients.to_string(),
        o.max_concurrent_streams.to_string(),
        o.threads.to_string(),
        format!("{:.6}", r.elapsed.as_secs_f64()),
        q.total.to_string(),
        q.started.to_string(),
        q.done.to_string(),
        q.succeeded.to_string(),
        q.failed.to_string(),
        q.errored.to_string(),
        q.timeout.to_string(),
        st.s1xx.to_string(),
        st.s2xx.to_string(),
        st.s3xx.to_string(),
        st.s4xx.to_string(),
        st.s5xx.to_string(),
        t.bytes_total.to_string(),
        t.bytes_head.to_string(),
        t.bytes_head_decomp.to_string(),
        t.bytes_body.to_string(),
        format!("{:.2}", requests_per_second(r)),
        bytes_per_second(r).to_string(),
        us(req.min),
        us(req.max),
        us(req.mean),
        us(req.sd),
        us(req.percentiles[0]),
        us(req.percentiles[1]),
        us(req.percentiles[2]),
        us(req.percentiles[3]),
        us(con.min),
        us(con.max),
        us(con.mean),
        us(con.percentiles[0]),
        us(con.percentiles[2]),
        us(ttfb.min),
        us(ttfb.max),
        us(ttfb.mean),
        us(ttfb.percentiles[0]),
        us(ttfb.percentiles[2]),
        format!("{:.2}", rps.min),
        format!("{:.2}", rps.max),
        format!("{:.2}", rps.mean),
        format!("{:.2}", rps.sd),
        r.goaways.to_string(),
        r.reconnects.to_string(),
        r.errors.total().to_string(),
        r.protocol_fallback.to_string(),
        r.interrupted.to_string(),
    ];
    cells.extend(quic_cells(r.quic.as_ref()));
    debug_assert_eq!(cells.len(), COLUMNS.len());
    let mut s = cells.join(",");
    s.push('\n');
    s
}

/// Errors writing the CSV file.
#[derive(Debug)]
pub enum CsvError {
    /// Reading or writing failed.
    Io(io::Error),
    /// The existing file has another header (written by another version, or not ours).
    HeaderMismatch,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsvError::Io(e) => write!(f, "{e}"),
            CsvError::HeaderMismatch => {
                f.write_str("the existing file has a different header; not appending to it")
            }
        }
    }
}

impl std::error::Error for CsvError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CsvError::Io(e) => Some(e),
            CsvError::HeaderMismatch => None,
        }
    }
}

impl From<io::Error> for CsvError {
    fn from(e: io::Error) -> Self {
        CsvError::Io(e)
    }
}

/// Writes the run's row to `path`: a new file gets the header first; an existing file with the
/// same header gets the row appended; any other existing file is left alone
/// ([`CsvError::HeaderMismatch`]). The file is replaced atomically.
pub fn write(path: &Path, r: &RunResult, o: &RunOptions) -> Result<(), CsvError> {
    let head = header();
    let mut content = match fs::read_to_string(path) {
        Ok(existing) if existing.is_empty() => head.clone(),
        Ok(existing) => {
            if !existing.starts_with(&head) {
                return Err(CsvError::HeaderMismatch);
            }
            let mut e = existing;
            if !e.ends_with('\n') {
                e.push('\n');
            }
            e
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => head.clone(),
        Err(e) => return Err(e.into()),
    };
    content.push_str(&row(r, o));
    crate::atomic::write_atomic(path, content.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{empty_result, AppProtocol, RequestCounts};
    use std::time::Duration;

    fn run() -> RunResult {
        let mut r = RunResult {
            elapsed: Duration::from_secs(1),
            requests: RequestCounts {
                total: 10,
                started: 10,
                done: 10,
                succeeded: 10,
                completed: 10,
                ..Default::default()
            },
            app_protocol: Some(AppProtocol::H2c),
            client_rps: vec![10.0],
            ..empty_result()
        };
        r.request_time.record(1500).unwrap();
        r
    }

    #[test]
    fn row_has_one_cell_per_column() {
        let o = RunOptions {
            uris: vec!["http://h/a,b".into()],
            clients: 1,
            max_concurrent_streams: 1,
            threads: 1,
            ..Default::default()
        };
        let line = row(&run(), &o);
        assert!(line.starts_with("\"http://h/a,b\",h2c,1,1,1,1.000000,10,10,10,10,0,0,0,"));
        assert!(line.contains(",10.00,0,1.500,1.500,1.500,0.000,1.500,"));
        // The h2load-style columns, then the QUIC ones (empty: no QUIC figures).
        assert!(line.contains(",0,0,0,false,false,"));
        assert!(line.ends_with(",false,false,,,,,,,,\n"), "{line}");
        // Unquoted cells + the one quoted cell containing a comma.
        assert_eq!(line.trim_end().split(',').count(), COLUMNS.len() + 1);
        assert_eq!(field("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn http3_runs_fill_the_quic_columns() {
        let mut r = run();
        r.app_protocol = Some(AppProtocol::H3);
        r.quic = Some(h2lab_engine::QuicStats {
            datagrams_sent: 120,
            datagrams_recv: 130,
            min_rtt: vec![0.0002, 0.0004, 0.0003],
            smoothed_rtt: vec![0.001, 0.002, 0.0015],
            packets_sent: vec![40, 40, 41],
            packets_recv: vec![43, 43, 44],
            packets_lost: vec![0, 1, 0],
            gro_counts: vec![0, 6, 2],
        });
        let line = row(&r, &RunOptions::default());
        let cells: Vec<&str> = line.trim_end().split(',').collect();
        assert_eq!(cells.len(), COLUMNS.len());
        let at = |name: &str| cells[COLUMNS.iter().position(|c| *c == name).unwrap()];
        assert_eq!(at("quic_min_rtt_us"), "300.000");
        assert_eq!(at("quic_smoothed_rtt_us"), "1500.000");
        assert_eq!(at("quic_packets_sent"), "121");
        assert_eq!(at("quic_packets_recv_datagrams"), "130");
        assert_eq!(at("quic_packets_lost"), "1");
        assert_eq!(at("udp_datagrams_sent"), "120");
        assert_eq!(at("udp_datagrams_recv"), "130");
        // 6 reads of 1 datagram, 2 of 2: 10 / 8.
        assert_eq!(at("gro_datagrams_per_read"), "1.25");
        // The h2load-style columns keep their places.
        assert_eq!(COLUMNS[COLUMNS.len() - 9], "interrupted");
        assert_eq!(at("protocol"), "h3");
    }

    #[test]
    fn write_creates_then_appends() {
        let dir = std::env::temp_dir().join(format!("h2lab-csv-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("runs.csv");
        let _ = fs::remove_file(&p);
        let o = RunOptions::default();
        write(&p, &run(), &o).unwrap();
        write(&p, &run(), &o).unwrap();
        let text = fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], COLUMNS.join(","));
        assert_eq!(lines[1], lines[2]);
        fs::write(&p, "something,else\n1,2\n").unwrap();
        assert!(matches!(
            write(&p, &run(), &o),
            Err(CsvError::HeaderMismatch)
        ));
        assert_eq!(fs::read_to_string(&p).unwrap(), "something,else\n1,2\n");
        fs::remove_dir_all(&dir).unwrap();
    }
}
