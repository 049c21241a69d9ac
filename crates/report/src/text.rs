//! h2load-compatible text output.
//!
//! Every line h2load prints is reproduced in h2load's format (units, decimals, column widths), so
//! scripts that parse h2load's output keep working. h2lab's additions come where h2load has no
//! line: four percentile columns appended at the end of each latency row, and a few lines after
//! the table (protocol fallback, GOAWAY/reconnect counts, errors by kind, interruption).

use std::fmt::Write as _;
use std::time::Duration;

use h2lab_engine::Phase;

use crate::layout::OutputFormat;
use crate::model::{h2_error_name, is_paced, AppProtocol, ErrorCounts, RunResult, TlsInfo};
use crate::stats::{bytes_per_second, requests_per_second, DistributionSummary, QUANTILE_LABELS};
use crate::units::{dtos, format_duration_ns, format_duration_us, utos_funit};

/// h2load's latency table header line (its columns only).
pub const H2LOAD_TABLE_HEADER: &str =
    "                     min         max         mean         sd        +/- sd";

/// `starting benchmark...`, printed by h2load before anything else.
pub fn starting_line() -> &'static str {
    "starting benchmark...\n"
}

/// h2load's per-thread line, e.g. `spawning thread #0: 10 total client(s). 1000 total requests`,
/// or its timing-based variant when `duration` is set.
pub fn spawning_line(
    thread: u32,
    clients: u64,
    requests: u64,
    warm_up: Option<Duration>,
    duration: Option<Duration>,
) -> String {
    match duration {
        Some(d) => format!(
            "spawning thread #{thread}: {clients} total client(s). Timing-based test with {}s of \
             warm-up time and {}s of main duration for measurements.\n",
            warm_up.unwrap_or(Duration::ZERO).as_secs_f64(),
            d.as_secs_f64()
        ),
        None => format!(
            "spawning thread #{thread}: {clients} total client(s). {requests} total requests\n"
        ),
    }
}

/// h2load's rate-mode addition to the per-thread line (`-r`): inserts ` Up to R client(s) will
/// be created every PERIOD` before ` N total requests` when the thread has more clients than
/// its rate.
pub fn with_rate_mode(line: &str, clients: u64, rate: u64, period: Duration) -> String {
    if clients <= rate {
        return line.to_string();
    }
    match line.rfind(". ") {
        Some(i) if line.ends_with(" total requests\n") => format!(
            "{}. Up to {rate} client(s) will be created every {}{}",
            &line[..i],
            duration_str(period),
            &line[i + 1..]
        ),
        _ => line.to_string(),
    }
}

/// nghttp2's `util::duration_str`: `1h`, `2m`, `30s` or `500ms`.
fn duration_str(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        "0".to_string()
    } else if ms % 3_600_000 == 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The TLS lines h2load prints once per run (`TLS Protocol:`, `Cipher:`, `Server Temp Key:`).
pub fn tls_lines(info: &TlsInfo) -> String {
    let mut s = format!("TLS Protocol: {}\nCipher: {}\n", info.protocol, info.cipher);
    if let Some(key) = &info.server_temp_key {
        let _ = writeln!(s, "Server Temp Key: {key}");
    }
    s
}

/// `Application protocol: h2`.
pub fn app_protocol_line(p: AppProtocol) -> String {
    format!("Application protocol: {p}\n")
}

/// h2load's `progress: N% done` line.
pub fn progress_line(percent: u64) -> String {
    format!("progress: {percent}% done\n")
}

/// The lines h2load prints when a timing-based (`-D`) run reaches `phase` in worker `thread`;
/// `None` when it prints nothing. Client starts are reported by thread 0 only, every tenth of
/// its clients (`progress: 50% of clients started`).
pub fn phase_lines(thread: u32, phase: Phase) -> Option<String> {
    Some(match phase {
        Phase::WarmUpStarted => format!("Warm-up started for thread #{thread}.\n"),
        Phase::ClientStarted { started, total } => {
            let interval = (total / 10).max(1);
            if thread != 0 || started % interval != 0 || total == 0 {
                return None;
            }
            let pct = u64::from(started) * 100 / u64::from(total);
            format!("progress: {pct}% of clients started\n")
        }
        Phase::MainStarted => format!(
            "Warm-up phase is over for thread #{thread}.\n\
             Main benchmark duration is started for thread #{thread}.\n"
        ),
        Phase::MainOver => {
            format!("Main benchmark duration is over for thread #{thread}. Stopping all clients.\n")
        }
        Phase::Stopped => format!("Stopped all clients for thread #{thread}\n"),
    })
}

/// The warning printed when `h2` was offered but the server selected `http/1.1`.
pub const FALLBACK_WARNING: &str = "warning: h2 was offered but the server selected http/1.1; \
     these results are for HTTP/1.1 (use --require-protocol h2 to make this an error)";

/// Everything h2load prints after the progress lines: a blank line, `finished in`, `requests:`,
/// `status codes:`, `traffic:`, the latency table (with h2lab's percentile columns appended), and
/// h2lab's extra lines.
pub fn summary(r: &RunResult) -> String {
    summary_as(r, OutputFormat::H2load152, false)
}

/// [`summary`] with the latency table of `format`, and h2load's histogram under each latency
/// row when `histogram` is set.
pub fn summary_as(r: &RunResult, format: OutputFormat, histogram: bool) -> String {
    let mut s = String::with_capacity(1024);
    s.push('\n');
    s.push_str(&counters(r));
    s.push_str(&match format {
        OutputFormat::H2load152 => latency_table_with(r, histogram),
        _ => crate::layout::latency_table(r, format, histogram),
    });
    let extra = extra_lines(r);
    if format == OutputFormat::H2load152 {
        s.push_str(&extra);
    } else {
        // The newer tables have one request row, and it is the corrected one.
        s.push_str(&extra.replace(CORRECTED_NOTE, crate::layout::CORRECTED_NOTE));
    }
    s
}

/// The `finished in`, `requests:`, `status codes:` and `traffic:` lines.
pub fn counters(r: &RunResult) -> String {
    let q = &r.requests;
    let st = &r.status;
    let t = &r.traffic;
    let elapsed_us = u64::try_from(r.elapsed.as_micros()).unwrap_or(u64::MAX);
    format!(
        "finished in {}, {:.2} req/s, {}B/s\n\
         requests: {} total, {} started, {} done, {} succeeded, {} failed, {} errored, {} timeout\n\
         status codes: {} 2xx, {} 3xx, {} 4xx, {} 5xx\n\
         traffic: {}B ({}) total, {}B ({}) headers (space savings {:.2}%), {}B ({}) data\n",
        format_duration_us(elapsed_us),
        requests_per_second(r),
        utos_funit(bytes_per_second(r)),
        q.total,
        q.started,
        q.done,
        q.succeeded,
        q.failed,
        q.errored,
        q.timeout,
        st.s2xx,
        st.s3xx,
        st.s4xx,
        st.s5xx,
        utos_funit(t.bytes_total),
        t.bytes_total,
        utos_funit(t.bytes_head),
        t.bytes_head,
        t.header_space_savings() * 100.0,
        utos_funit(t.bytes_body),
        t.bytes_body,
    )
}

/// The latency table: h2load's header and four rows, each extended with p50, p90, p99, p99.9.
pub fn latency_table(r: &RunResult) -> String {
    latency_table_with(r, false)
}

/// [`latency_table`], with h2load's histogram under each row when `histogram` is set.
pub fn latency_table_with(r: &RunResult, histogram: bool) -> String {
    let mut s = String::with_capacity(512);
    s.push_str(H2LOAD_TABLE_HEADER);
    for label in QUANTILE_LABELS {
        let _ = write!(s, "{label:>12}");
    }
    s.push('\n');
    let mut rows = vec![("time for request: ", &r.request_time)];
    if is_paced(r) {
        // Corrected first: from each request's intended start, then from the send.
        rows = vec![
            ("time for request: ", &r.request_time_corrected),
            ("time from send  : ", &r.request_time),
        ];
    }
    rows.push(("time for connect: ", &r.connect_time));
    rows.push(("time to 1st byte: ", &r.ttfb));
    for (label, h) in rows {
        let sum = DistributionSummary::from_histogram(h);
        row(&mut s, label, &sum, &format_duration_ns);
        if histogram {
            crate::layout::histogram_of(h, &mut s, &format_duration_ns, false);
        }
    }
    let rps = DistributionSummary::from_samples(&r.client_rps);
    row(&mut s, "req/s           : ", &rps, &|v| format!("{v:.2}"));
    if histogram {
        crate::layout::plot_samples(&mut s, &r.client_rps, &dtos, false);
    }
    s
}

/// One table row: label, then min, max, mean, sd right-aligned in 10 columns separated by two
/// spaces, then `+/- sd` right-aligned in 9 columns followed by `%` (h2load's layout), then the
/// percentile columns, each two spaces and 10 columns wide.
fn row(s: &mut String, label: &str, sum: &DistributionSummary, fmt: &dyn Fn(f64) -> String) {
    let _ = write!(
        s,
        "{label}{:>10}  {:>10}  {:>10}  {:>10}{:>9}%",
        fmt(sum.min),
        fmt(sum.max),
        fmt(sum.mean),
        fmt(sum.sd),
        dtos(sum.within_sd),
    );
    for p in sum.percentiles {
        let _ = write!(s, "  {:>10}", fmt(p));
    }
    s.push('\n');
}

/// The note under the table of paced runs.
pub const CORRECTED_NOTE: &str = "latency: \"time for request\" is measured from each request's \
     intended start (corrected for coordinated omission), \"time from send\" from its first byte \
     sent";

/// The open model's line: what happened to the scheduled requests.
pub fn pacing_line(p: &crate::model::PacingCounts) -> String {
    format!(
        "open model: {} scheduled, {} sent on time, {} late (waited for a free slot), {} not sent \
         on time ({} dropped with the queue of {} full, {} still queued at the end)\n",
        p.scheduled,
        p.on_time,
        p.late,
        p.not_sent(),
        p.dropped,
        p.queue_limit,
        p.unsent
    )
}

/// h2lab's lines after the table; empty when there is nothing to say.
pub fn extra_lines(r: &RunResult) -> String {
    let mut s = String::new();
    if is_paced(r) {
        s.push_str(CORRECTED_NOTE);
        s.push('\n');
    }
    if let Some(p) = &r.pacing {
        s.push_str(&pacing_line(p));
    }
    if r.protocol_fallback {
        s.push_str(FALLBACK_WARNING);
        s.push('\n');
    }
    if r.tls_resumed > 0 {
        let _ = writeln!(
            s,
            "TLS: {} of {} handshakes resumed a session",
            r.tls_resumed,
            r.connect_time.len()
        );
    }
    if r.pushed_streams > 0 || r.pushed_bytes > 0 {
        let _ = writeln!(
            s,
            "push: {} streams pushed, {} bytes pushed (all unused)",
            r.pushed_streams, r.pushed_bytes
        );
    }
    if r.goaways > 0 || r.reconnects > 0 {
        let _ = writeln!(
            s,
            "connections: {} GOAWAY received, {} reconnects",
            r.goaways, r.reconnects
        );
    }
    if let Some(line) = errors_line(&r.errors) {
        s.push_str(&line);
        for m in &r.errors.messages {
            let _ = writeln!(s, "error: {m}");
        }
    }
    if r.interrupted {
        s.push_str("interrupted: the run was stopped by a signal; the numbers above cover the work done until then\n");
    }
    s
}

/// `errors: 2 connect, 1 tls, 3 stream reset (REFUSED_STREAM)`: the non-zero error kinds, or
/// `None` when there were none.
pub fn errors_line(e: &ErrorCounts) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for (n, kind) in [
        (e.connect, "connect"),
        (e.tls, "tls"),
        (e.timeout, "timeout"),
        (e.protocol, "protocol"),
        (e.io, "io"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {kind}"));
        }
    }
    for (code, n) in &e.stream_resets {
        if *n > 0 {
            parts.push(format!("{n} stream reset ({})", h2_error_name(*code)));
        }
    }
    for (code, n) in &e.goaway_errors {
        if *n > 0 {
            parts.push(format!("{n} GOAWAY ({})", h2_error_name(*code)));
        }
    }
    if e.push_refused > 0 {
        parts.push(format!("{} push refused", e.push_refused));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!("errors: {}\n", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{empty_result, RequestCounts, StatusCounts, Traffic};

    #[test]
    fn tls_and_protocol_lines() {
        let info = TlsInfo {
            protocol: "TLSv1.3".into(),
            cipher: "TLS_AES_256_GCM_SHA384".into(),
            server_temp_key: Some("X25519 253 bits".into()),
            alpn: Some("h2".into()),
        };
        assert_eq!(
            tls_lines(&info),
            "TLS Protocol: TLSv1.3\nCipher: TLS_AES_256_GCM_SHA384\nServer Temp Key: X25519 253 bits\n"
        );
        assert_eq!(
            app_protocol_line(AppProtocol::H2c),
            "Application protocol: h2c\n"
        );
        assert_eq!(
            app_protocol_line(AppProtocol::Http11),
            "Application protocol: http/1.1\n"
        );
        assert_eq!(progress_line(30), "progress: 30% done\n");
    }

    #[test]
    fn phase_lines_like_h2load() {
        // From testdata/anchors/captures/h2load-duration-warmup.txt (-c 2).
        let mut out = String::new();
        let phases = [
            Phase::WarmUpStarted,
            Phase::ClientStarted {
                started: 1,
                total: 2,
            },
            Phase::ClientStarted {
                started: 2,
                total: 2,
            },
            Phase::MainStarted,
            Phase::MainOver,
            Phase::Stopped,
        ];
        for p in phases {
            out.extend(phase_lines(0, p));
        }
        assert_eq!(
            out,
            "Warm-up started for thread #0.\n\
             progress: 50% of clients started\n\
             progress: 100% of clients started\n\
             Warm-up phase is over for thread #0.\n\
             Main benchmark duration is started for thread #0.\n\
             Main benchmark duration is over for thread #0. Stopping all clients.\n\
             Stopped all clients for thread #0\n"
        );
        // Every tenth of the clients (integer percent), thread 0 only.
        let pcts: Vec<String> = (1..=25)
            .filter_map(|i| {
                phase_lines(
                    0,
                    Phase::ClientStarted {
                        started: i,
                        total: 25,
                    },
                )
            })
            .collect();
        assert_eq!(pcts.len(), 12);
        assert_eq!(pcts[0], "progress: 8% of clients started\n");
        assert_eq!(pcts[11], "progress: 96% of clients started\n");
        let eight: Vec<String> = (1..=8)
            .filter_map(|i| {
                phase_lines(
                    0,
                    Phase::ClientStarted {
                        started: i,
                        total: 8,
                    },
                )
            })
            .collect();
        assert_eq!(eight[0], "progress: 12% of clients started\n");
        assert_eq!(eight.len(), 8);
        assert_eq!(
            phase_lines(
                1,
                Phase::ClientStarted {
                    started: 2,
                    total: 2
                }
            ),
            None
        );
        assert_eq!(
            phase_lines(3, Phase::Stopped).as_deref(),
            Some("Stopped all clients for thread #3\n")
        );
    }

    #[test]
    fn spawning_lines() {
        assert_eq!(
            spawning_line(0, 10, 1000, None, None),
            "spawning thread #0: 10 total client(s). 1000 total requests\n"
        );
        assert_eq!(
            spawning_line(
                0,
                2,
                0,
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(2))
            ),
            "spawning thread #0: 2 total client(s). Timing-based test with 1s of warm-up time \
             and 2s of main duration for measurements.\n"
        );
    }

    #[test]
    fn rate_mode_spawning_line() {
        let line = spawning_line(0, 10, 100, None, None);
        assert_eq!(
            with_rate_mode(&line, 10, 2, Duration::from_secs(1)),
            "spawning thread #0: 10 total client(s). Up to 2 client(s) will be created every 1s \
             100 total requests\n"
        );
        assert_eq!(
            with_rate_mode(&line, 10, 3, Duration::from_millis(1500)),
            "spawning thread #0: 10 total client(s). Up to 3 client(s) will be created every \
             1500ms 100 total requests\n"
        );
        assert_eq!(with_rate_mode(&line, 10, 10, Duration::from_secs(1)), line);
    }

    /// A paced (open-model) run: the corrected row first, then the row from the send, the
    /// note and the open-model line.
    #[test]
    fn paced_summary() {
        let mut r = RunResult {
            elapsed: Duration::from_secs(1),
            pacing: Some(crate::model::PacingCounts {
                scheduled: 100,
                on_time: 90,
                late: 5,
                dropped: 3,
                unsent: 2,
                queue_limit: 40,
            }),
            ..empty_result()
        };
        r.request_time.record(1_000_000).unwrap();
        r.request_time_corrected.record(400_000_000).unwrap();
        let t = latency_table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[1].starts_with("time for request:   399.90ms"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("time from send  :     1.00ms"),
            "{}",
            lines[2]
        );
        assert!(lines[3].starts_with("time for connect:"));
        assert_eq!(lines.len(), 6);
        let extra = extra_lines(&r);
        assert!(extra.starts_with(CORRECTED_NOTE));
        assert!(extra.contains(
            "open model: 100 scheduled, 90 sent on time, 5 late (waited for a free slot), 5 not \
             sent on time (3 dropped with the queue of 40 full, 2 still queued at the end)\n"
        ));
    }

    /// A real h2load 1.52 run (`h2load -n1000 -c10 -m10 http://127.0.0.1:18081/a` against
    /// nghttpd, 653-byte body) printed:
    /// ```text
    /// finished in 8.94ms, 111869.34 req/s, 72.86MB/s
    /// requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored, 0 timeout
    /// status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx
    /// traffic: 666.96KB (682970) total, 11.46KB (11730) headers (space savings 92.43%), 637.70KB (653000) data
    /// ```
    #[test]
    fn counters_match_real_h2load_output() {
        let r = RunResult {
            elapsed: Duration::from_micros(8939),
            requests: RequestCounts {
                total: 1000,
                started: 1000,
                done: 1000,
                succeeded: 1000,
                completed: 1000,
                ..Default::default()
            },
            status: StatusCounts {
                s2xx: 1000,
                ..Default::default()
            },
            traffic: Traffic {
                bytes_total: 682_970,
                bytes_head: 11_730,
                bytes_head_decomp: 155_000,
                bytes_body: 653_000,
            },
            ..empty_result()
        };
        assert_eq!(
            counters(&r),
            "finished in 8.94ms, 111869.34 req/s, 72.86MB/s\n\
             requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored, 0 timeout\n\
             status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx\n\
             traffic: 666.96KB (682970) total, 11.46KB (11730) headers (space savings 92.43%), 637.70KB (653000) data\n"
        );
    }

    /// The same run's table rows, from h2load's statistics, must come out with h2load's columns
    /// unchanged and the percentile columns appended.
    #[test]
    fn rows_match_real_h2load_output() {
        let req = DistributionSummary {
            count: 1000,
            min: 39_000.0,
            max: 4_310_000.0,
            mean: 752_000.0,
            sd: 1_180_000.0,
            within_sd: 90.0,
            percentiles: [120_000.0, 3_900_000.0, 4_250_000.0, 4_300_000.0],
        };
        let mut s = String::new();
        row(&mut s, "time for request: ", &req, &format_duration_ns);
        assert_eq!(
            s,
            concat!(
                "time for request:       39us      4.31ms       752us      1.18ms    90.00%",
                "       120us      3.90ms      4.25ms      4.30ms\n"
            )
        );
        let rps = DistributionSummary {
            count: 10,
            min: 11723.01,
            max: 12947.89,
            mean: 12106.89,
            sd: 338.30,
            within_sd: 80.0,
            percentiles: [12000.0, 12500.0, 12947.89, 12947.89],
        };
        let mut s = String::new();
        row(&mut s, "req/s           : ", &rps, &|v| format!("{v:.2}"));
        assert_eq!(
            s,
            concat!(
                "req/s           :   11723.01    12947.89    12106.89      338.30    80.00%",
                "    12000.00    12500.00    12947.89    12947.89\n"
            )
        );
    }

    #[test]
    fn table_header_extends_h2loads() {
        let t = latency_table(&empty_result());
        let header = t.lines().next().unwrap();
        assert_eq!(
            header,
            concat!(
                "                     min         max         mean         sd        +/- sd",
                "         p50         p90         p99       p99.9"
            )
        );
        // Columns are right-aligned: every row ends where the header ends.
        for line in t.lines() {
            assert_eq!(line.len(), header.len(), "{line:?}");
        }
    }

    #[test]
    fn push_line_only_when_pushed() {
        let mut r = empty_result();
        assert!(!extra_lines(&r).contains("push:"));
        r.pushed_streams = 2;
        r.pushed_bytes = 300;
        assert_eq!(
            extra_lines(&r),
            "push: 2 streams pushed, 300 bytes pushed (all unused)\n"
        );
    }

    #[test]
    fn resumed_handshakes_line() {
        let mut r = empty_result();
        assert!(!extra_lines(&r).contains("TLS:"));
        r.tls_resumed = 2;
        for _ in 0..3 {
            r.connect_time.record(1000).unwrap();
        }
        assert_eq!(
            extra_lines(&r),
            "TLS: 2 of 3 handshakes resumed a session\n"
        );
    }

    /// A whole summary, golden, with distributions whose statistics are exact.
    #[test]
    fn full_summary_golden() {
        let mut r = RunResult {
            elapsed: Duration::from_millis(2000),
            requests: RequestCounts {
                total: 100,
                started: 100,
                done: 100,
                succeeded: 97,
                failed: 3,
                errored: 2,
                timeout: 1,
                completed: 97,
            },
            status: StatusCounts {
                s2xx: 97,
                s4xx: 1,
                ..Default::default()
            },
            traffic: Traffic {
                bytes_total: 70_000,
                bytes_head: 1_000,
                bytes_head_decomp: 4_000,
                bytes_body: 65_300,
            },
            client_rps: vec![20.0, 30.0],
            protocol_fallback: true,
            goaways: 1,
            reconnects: 1,
            interrupted: true,
            ..empty_result()
        };
        for _ in 0..97 {
            r.request_time.record(2_000_000).unwrap();
        }
        r.connect_time.record(100_000).unwrap();
        r.connect_time.record(100_000).unwrap();
        r.ttfb.record(3_000_000).unwrap();
        r.ttfb.record(3_000_000).unwrap();
        r.errors.connect = 2;
        r.errors.timeout = 1;
        r.errors.stream_resets.insert(7, 3);
        r.errors.goaway_errors.insert(0x1, 1);
        r.errors.goaway_errors.insert(0x42, 0);
        r.errors
            .messages
            .push("connect to 127.0.0.1:1: Connection refused (os error 111)".into());
        let expected = "\n\
finished in 2.00s, 48.50 req/s, 34.18KB/s
requests: 100 total, 100 started, 100 done, 97 succeeded, 3 failed, 2 errored, 1 timeout
status codes: 97 2xx, 0 3xx, 1 4xx, 0 5xx
traffic: 68.36KB (70000) total, 1000B (1000) headers (space savings 75.00%), 63.77KB (65300) data
                     min         max         mean         sd        +/- sd         p50         p90         p99       p99.9
time for request:     2.00ms      2.00ms      2.00ms         0us   100.00%      2.00ms      2.00ms      2.00ms      2.00ms
time for connect:      100us       100us       100us         0us   100.00%       100us       100us       100us       100us
time to 1st byte:     3.00ms      3.00ms      3.00ms         0us   100.00%      3.00ms      3.00ms      3.00ms      3.00ms
req/s           :      20.00       30.00       25.00        7.07   100.00%       20.00       30.00       30.00       30.00
warning: h2 was offered but the server selected http/1.1; these results are for HTTP/1.1 (use --require-protocol h2 to make this an error)
connections: 1 GOAWAY received, 1 reconnects
errors: 2 connect, 1 timeout, 3 stream reset (REFUSED_STREAM), 1 GOAWAY (PROTOCOL_ERROR)
error: connect to 127.0.0.1:1: Connection refused (os error 111)
interrupted: the run was stopped by a signal; the numbers above cover the work done until then
";
        assert_eq!(summary(&r), expected);
    }
}
