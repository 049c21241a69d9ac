//! h2load-compatible text output.
//!
//! Every line h2load prints is reproduced in h2load's format (units, decimals, column widths), so
//! scripts that parse h2load's output keep working. h2lab's additions come where h2load has no
//! line: four percentile columns appended at the end of each latency row, and a few lines after
//! the table (protocol fallback, GOAWAY/reconnect counts, errors by kind, interruption).

use std::fmt::Write as _;
use std::time::Duration;

use h2lab_engine::TimedRunPhase;

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
pub fn phase_lines(thread: u32, phase: TimedRunPhase) -> Option<String> {
    Some(match phase {
        TimedRunPhase::WarmUpStarted => format!("Warm-up started for thread #{thread}.\n"),
        TimedRunPhase::ClientStarted { started, total } => {
            let interval = (total / 10).max(1);
            if thread != 0 || started % interval != 0 || total == 0 {
                return None;
            }
            let pct = u64::from(started) * 100 / u64::from(total);
            format!("progress: {pct}% of clients started\n")
        }
        TimedRunPhase::MainStarted => format!(
            "Warm-up phase is over for thread #{thread}.\n\
             Main benchmark duration is started for thread #{thread}.\n"
        ),
        TimedRunPhase::MainOver => {
            format!("Main benchmark duration is over for thread #{thread}. Stopping all clients.\n")
        }
        TimedRunPhase::Stopped => format!("Stopped all clients for thread #{thread}\n"),
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
    if let Some(q) = &r.quic {
        s.push_str(&crate::quic::datagram_line(q));
    }
    s.push_str(&match format {
        OutputFormat::H2load152 => latency_table_with(r, histogram),
        _ => {
            let mut t = crate::layout::latency_table(r, format, histogram);
            if let Some(q) = &r.quic {
                t.push_str(&crate::quic::rows(q, format, histogram));
            }
            t
        }
    });
    let extra = extra_lines(r);
    if format == OutputFormat::H2load152 {
        if let Some(q) = &r.quic {
            s.push_str(&crate::quic::summary_line(q));
        }
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
    if let Some(line) = resumption_line(&r.resume) {
        s.push_str(&line);
    } else if r.tls_resumed > 0 {
        let _ = writeln!(
            s,
            "TLS: {} of {} handshakes resumed a session",
            r.tls_resumed,
            r.connect_time.len()
        );
    }
    if let Some(line) = informational_line(&r.informational) {
        s.push_str(&line);
    }
    if r.pushed_streams > 0 || r.pushed_bytes > 0 {
        let _ = writeln!(
            s,
            "push: {} streams pushed, {} bytes pushed (all unused), {} bytes of push frames \
             (not in traffic)",
            r.pushed_streams, r.pushed_bytes, r.pushed_frame_bytes
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

/// `TLS handshakes: 100, 99 resumed; early data: 99 offered, 98 accepted, 1 rejected, 2
/// requests replayed, 0 answered 425 Too Early`: what resumption and 0-RTT did
/// (`--tls-resume`, `--0rtt`), one informational line; `None` when nothing was counted.
pub fn resumption_line(r: &h2lab_engine::resume::ResumeStats) -> Option<String> {
    if r.is_empty() {
        return None;
    }
    let mut s = format!("TLS handshakes: {}, {} resumed", r.handshakes, r.resumed);
    if r.early_offered > 0 || r.too_early > 0 {
        let _ = write!(
            s,
            "; early data: {} offered, {} accepted, {} rejected, {} requests replayed, {} answered 425 Too Early",
            r.early_offered, r.early_accepted, r.early_rejected, r.replayed, r.too_early
        );
    }
    s.push('\n');
    Some(s)
}

/// `informational responses: 300 103 Early Hints, 2 100 Continue`: the interim (1xx)
/// responses received, per code (h2lab's line; h2load drops them uncounted), or `None`
/// when there were none. The final status codes are the `status codes:` line's.
pub fn informational_line(counts: &[(u16, u64)]) -> Option<String> {
    if counts.is_empty() {
        return None;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|&(code, n)| match h2lab_wire::h1::reason_phrase(code) {
            "" => format!("{n} {code}"),
            phrase => format!("{n} {code} {phrase}"),
        })
        .collect();
    Some(format!("informational responses: {}\n", parts.join(", ")))
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
mod tests;
