//! Run h2load and parse its text report (format: docs/h2load-output-format.md, h2load 1.52).

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

use crate::{which, Error};

/// The `requests:` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Requests the run was asked for (`-n`, or what -D issued).
    pub total: u64,
    /// Requests sent.
    pub started: u64,
    /// Requests with a complete response or a failure.
    pub done: u64,
    /// Responses with a 2xx or 3xx status.
    pub succeeded: u64,
    /// Requests that failed (includes `errored`, and not-issued requests on refused connects).
    pub failed: u64,
    /// Requests that failed because of a connection/protocol error.
    pub errored: u64,
    /// Requests that timed out.
    pub timeout: u64,
}

/// The `status codes:` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// 2xx responses.
    pub s2xx: u64,
    /// 3xx responses.
    pub s3xx: u64,
    /// 4xx responses.
    pub s4xx: u64,
    /// 5xx responses.
    pub s5xx: u64,
}

/// The `traffic:` line (exact byte counts from the parentheses).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Traffic {
    /// All bytes received after TLS decryption.
    pub total: u64,
    /// Header bytes (compressed header blocks for h2, raw header bytes for HTTP/1.1).
    pub headers: u64,
    /// Header compression savings in percent.
    pub space_savings_pct: f64,
    /// Body bytes.
    pub data: u64,
}

/// One row of the statistics table. Time rows are in seconds; the `req/s` row in requests/s.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatRow {
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub sd: f64,
    /// Percentage of samples within mean ± sd.
    pub within_sd_pct: f64,
}

/// The summary h2load prints after `finished in` (absent when h2load failed before running).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct H2loadSummary {
    /// Wall time of the run (`finished in`).
    pub finished_in: Duration,
    /// Completed responses per second (all statuses).
    pub req_per_sec: f64,
    /// Throughput as printed (e.g. `180.52MB/s`).
    pub throughput: String,
    /// The `requests:` line.
    pub requests: RequestCounts,
    /// The `status codes:` line.
    pub status_codes: StatusCounts,
    /// The `traffic:` line.
    pub traffic: Traffic,
    /// `time for request:` row.
    pub time_for_request: Option<StatRow>,
    /// `time for connect:` row.
    pub time_for_connect: Option<StatRow>,
    /// `time to 1st byte:` row.
    pub time_to_first_byte: Option<StatRow>,
    /// `req/s           :` row (per-client request rates).
    pub req_per_sec_per_client: Option<StatRow>,
}

/// Everything one h2load run printed, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct H2loadOutput {
    /// Exit code (None if killed by a signal).
    pub exit_code: Option<i32>,
    /// Raw stdout.
    pub stdout: String,
    /// Raw stderr.
    pub stderr: String,
    /// `Application protocol:` (h2, h2c, http/1.1), if printed.
    pub application_protocol: Option<String>,
    /// `TLS Protocol:`, if printed.
    pub tls_protocol: Option<String>,
    /// `Cipher:`, if printed.
    pub cipher: Option<String>,
    /// `Server Temp Key:`, if printed.
    pub server_temp_key: Option<String>,
    /// The summary, if h2load got as far as printing it.
    pub summary: Option<H2loadSummary>,
}

impl H2loadOutput {
    /// Parses h2load's stdout (and keeps `stderr` and the exit code as given).
    pub fn parse(stdout: &str, stderr: &str, exit_code: Option<i32>) -> Self {
        let mut out = H2loadOutput {
            exit_code,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            ..Self::default()
        };
        let mut summary: Option<H2loadSummary> = None;
        for line in stdout.lines() {
            let field = |prefix: &str| line.strip_prefix(prefix).map(|v| v.trim().to_string());
            if let Some(v) = field("Application protocol:") {
                out.application_protocol.get_or_insert(v);
            } else if let Some(v) = field("TLS Protocol:") {
                out.tls_protocol.get_or_insert(v);
            } else if let Some(v) = field("Cipher:") {
                out.cipher.get_or_insert(v);
            } else if let Some(v) = field("Server Temp Key:") {
                out.server_temp_key.get_or_insert(v);
            } else if let Some(v) = line.strip_prefix("finished in ") {
                summary = parse_finished(v);
            } else if let Some(s) = summary.as_mut() {
                parse_summary_line(s, line);
            }
        }
        out.summary = summary;
        out
    }

    /// True when h2load exited 0 and printed a summary.
    pub fn ran(&self) -> bool {
        self.exit_code == Some(0) && self.summary.is_some()
    }
}

/// Runs h2load (found with [`which`]) with `args` and parses its output.
pub fn h2load<I, S>(args: I) -> Result<H2loadOutput, Error>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let bin = which("h2load").ok_or(Error::MissingBinary("h2load"))?;
    let out = Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| Error::io("run h2load", e))?;
    Ok(H2loadOutput::parse(
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        out.status.code(),
    ))
}

/// `7.21ms, 277354.04 req/s, 180.52MB/s`
fn parse_finished(v: &str) -> Option<H2loadSummary> {
    let mut parts = v.split(", ");
    let finished_in = parse_duration(parts.next()?)?;
    let req_per_sec = parts.next()?.strip_suffix(" req/s")?.parse().ok()?;
    let throughput = parts.next()?.trim().to_string();
    Some(H2loadSummary {
        finished_in,
        req_per_sec,
        throughput,
        ..H2loadSummary::default()
    })
}

fn parse_summary_line(s: &mut H2loadSummary, line: &str) {
    if let Some(v) = line.strip_prefix("requests: ") {
        // "2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout"
        let r = &mut s.requests;
        for item in v.split(", ") {
            let mut it = item.split(' ');
            let (Some(n), Some(name)) = (it.next().and_then(|n| n.parse().ok()), it.next()) else {
                continue;
            };
            match name {
                "total" => r.total = n,
                "started" => r.started = n,
                "done" => r.done = n,
                "succeeded" => r.succeeded = n,
                "failed" => r.failed = n,
                "errored" => r.errored = n,
                "timeout" => r.timeout = n,
                _ => {}
            }
        }
    } else if let Some(v) = line.strip_prefix("status codes: ") {
        let c = &mut s.status_codes;
        for item in v.split(", ") {
            let mut it = item.split(' ');
            let (Some(n), Some(name)) = (it.next().and_then(|n| n.parse().ok()), it.next()) else {
                continue;
            };
            match name {
                "2xx" => c.s2xx = n,
                "3xx" => c.s3xx = n,
                "4xx" => c.s4xx = n,
                "5xx" => c.s5xx = n,
                _ => {}
            }
        }
    } else if let Some(v) = line.strip_prefix("traffic: ") {
        // "1.30MB (1364970) total, 22.20KB (22730) headers (space savings 92.67%), 1.25MB (1306000) data"
        let t = &mut s.traffic;
        let mut rest = v;
        let mut exact = Vec::new();
        while let Some(open) = rest.find('(') {
            let Some(close) = rest[open..].find(')') else {
                break;
            };
            let inner = &rest[open + 1..open + close];
            if let Ok(n) = inner.parse::<u64>() {
                exact.push(n);
            } else if let Some(p) = inner
                .strip_prefix("space savings ")
                .and_then(|p| p.strip_suffix('%'))
            {
                t.space_savings_pct = p.parse().unwrap_or(0.0);
            }
            rest = &rest[open + close + 1..];
        }
        if let [total, headers, data] = exact[..] {
            t.total = total;
            t.headers = headers;
            t.data = data;
        }
    } else if let Some((label, values)) = line.split_once(':') {
        let row = match label.trim_end() {
            "time for request" => &mut s.time_for_request,
            "time for connect" => &mut s.time_for_connect,
            "time to 1st byte" => &mut s.time_to_first_byte,
            "req/s" => &mut s.req_per_sec_per_client,
            _ => return,
        };
        let is_rate = label.trim_end() == "req/s";
        let cols: Vec<&str> = values.split_whitespace().collect();
        if let [min, max, mean, sd, pct] = cols[..] {
            let num = |v: &str| {
                if is_rate {
                    v.parse::<f64>().ok()
                } else {
                    parse_duration(v).map(|d| d.as_secs_f64())
                }
            };
            if let (Some(min), Some(max), Some(mean), Some(sd), Some(pct)) = (
                num(min),
                num(max),
                num(mean),
                num(sd),
                pct.strip_suffix('%').and_then(|p| p.parse().ok()),
            ) {
                *row = Some(StatRow {
                    min,
                    max,
                    mean,
                    sd,
                    within_sd_pct: pct,
                });
            }
        }
    }
}

/// h2load durations: `514us`, `7.21ms`, `4.00s`.
pub fn parse_duration(v: &str) -> Option<Duration> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let x: f64 = num.parse().ok()?;
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(x * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(name: &str) -> (String, String) {
        let (o, e, _) = crate::captures::read(name);
        (o, e)
    }

    #[test]
    fn parses_h2c_capture() {
        let (o, e) = capture("h2load-h2c-nghttpd");
        let p = H2loadOutput::parse(&o, &e, Some(0));
        assert!(p.ran());
        assert_eq!(p.application_protocol.as_deref(), Some("h2c"));
        assert_eq!(p.tls_protocol, None);
        let s = p.summary.unwrap();
        assert_eq!(s.finished_in, Duration::from_micros(7210));
        assert_eq!(s.req_per_sec, 277354.04);
        assert_eq!(s.throughput, "180.52MB/s");
        assert_eq!(
            s.requests,
            RequestCounts {
                total: 2000,
                started: 2000,
                done: 2000,
                succeeded: 2000,
                failed: 0,
                errored: 0,
                timeout: 0
            }
        );
        assert_eq!(s.status_codes.s2xx, 2000);
        assert_eq!(s.traffic.total, 1364970);
        assert_eq!(s.traffic.headers, 22730);
        assert_eq!(s.traffic.data, 1306000);
        assert_eq!(s.traffic.space_savings_pct, 92.67);
        let r = s.time_for_request.unwrap();
        assert!((r.min - 133e-6).abs() < 1e-12 && (r.max - 546e-6).abs() < 1e-12);
        assert_eq!(r.within_sd_pct, 73.80);
        assert!(s.time_for_connect.is_some() && s.time_to_first_byte.is_some());
        assert_eq!(s.req_per_sec_per_client.unwrap().mean, 31119.28);
    }

    #[test]
    fn parses_tls_and_failure_captures() {
        let (o, e) = capture("h2load-h2-tls-nghttpd");
        let p = H2loadOutput::parse(&o, &e, Some(0));
        assert_eq!(p.application_protocol.as_deref(), Some("h2"));
        assert!(p.tls_protocol.is_some() && p.cipher.is_some() && p.server_temp_key.is_some());

        let (o, e) = capture("h2load-closed-port");
        let p = H2loadOutput::parse(&o, &e, Some(0));
        let s = p.summary.unwrap();
        assert_eq!(s.requests.succeeded, 0);
        assert!(s.requests.failed > 0);

        let (o, e) = capture("h2load-404-nghttpd");
        let s = H2loadOutput::parse(&o, &e, Some(0)).summary.unwrap();
        assert!(s.status_codes.s4xx > 0);

        let (o, e) = capture("h2load-bad-option");
        let p = H2loadOutput::parse(&o, &e, Some(1));
        assert!(!p.ran());
        assert!(p.summary.is_none());
    }

    #[test]
    fn every_capture_with_a_summary_parses_completely() {
        let dir = std::fs::read_dir(crate::captures::DIR).unwrap();
        let mut n = 0;
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".txt") else {
                continue;
            };
            if !stem.starts_with("h2load-") {
                continue;
            }
            let (o, e, code) = crate::captures::read(stem);
            if !o.contains("finished in ") {
                continue;
            }
            let s = H2loadOutput::parse(&o, &e, code).summary.unwrap();
            assert!(s.requests.total > 0, "{stem}");
            assert!(s.time_for_request.is_some(), "{stem}");
            assert!(s.req_per_sec_per_client.is_some(), "{stem}");
            n += 1;
        }
        assert!(n >= 10, "only {n} captures parsed");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("514us"), Some(Duration::from_micros(514)));
        assert_eq!(parse_duration("4.00s"), Some(Duration::from_secs(4)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("-1s"), None);
    }
}
