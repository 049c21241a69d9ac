//! Run wrk (4.1) and parse the numbers of its report that comparisons need.

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

use crate::h2load::parse_duration;
use crate::{which, Error};

/// What one wrk run printed, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WrkOutput {
    /// Exit code (None if killed by a signal).
    pub exit_code: Option<i32>,
    /// Raw stdout.
    pub stdout: String,
    /// Raw stderr.
    pub stderr: String,
    /// `N requests in T, X read`: completed requests.
    pub requests: Option<u64>,
    /// `N requests in T`: the measured duration.
    pub elapsed: Option<Duration>,
    /// `Requests/sec:`.
    pub req_per_sec: Option<f64>,
    /// `Non-2xx or 3xx responses:` (0 when the line is absent).
    pub non_2xx_3xx: u64,
    /// `Socket errors:` connect, read, write, timeout (zeros when the line is absent).
    pub socket_errors: [u64; 4],
}

impl WrkOutput {
    /// Parses wrk's stdout.
    pub fn parse(stdout: &str, stderr: &str, exit_code: Option<i32>) -> Self {
        let mut out = WrkOutput {
            exit_code,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            ..Self::default()
        };
        for line in stdout.lines().map(str::trim) {
            if let Some((n, rest)) = line.split_once(" requests in ") {
                out.requests = n.parse().ok();
                out.elapsed = rest.split(',').next().and_then(parse_wrk_time);
            } else if let Some(v) = line.strip_prefix("Requests/sec:") {
                out.req_per_sec = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
                out.non_2xx_3xx = v.trim().parse().unwrap_or(0);
            } else if let Some(v) = line.strip_prefix("Socket errors:") {
                for (i, item) in v.split(',').take(4).enumerate() {
                    if let Some(n) = item.split_whitespace().nth(1).and_then(|n| n.parse().ok()) {
                        out.socket_errors[i] = n;
                    }
                }
            }
        }
        out
    }
}

/// wrk's elapsed time: `2.01s`, `1.00m`, or h2load-style `ms`/`us`.
fn parse_wrk_time(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Some(m) = v.strip_suffix('m') {
        let x: f64 = m.parse().ok()?;
        return (x.is_finite() && x >= 0.0).then(|| Duration::from_secs_f64(x * 60.0));
    }
    if let Some(h) = v.strip_suffix('h') {
        let x: f64 = h.parse().ok()?;
        return (x.is_finite() && x >= 0.0).then(|| Duration::from_secs_f64(x * 3600.0));
    }
    parse_duration(v)
}

/// Runs wrk (found with [`which`]) with `args` and parses its output.
pub fn wrk<I, S>(args: I) -> Result<WrkOutput, Error>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let bin = which("wrk").ok_or(Error::MissingBinary("wrk"))?;
    let out = Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| Error::io("run wrk", e))?;
    Ok(WrkOutput::parse(
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        out.status.code(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str) -> WrkOutput {
        let (o, e, code) = crate::captures::read(name);
        WrkOutput::parse(&o, &e, code)
    }

    #[test]
    fn parses_captures() {
        let w = parse("wrk-nginx-h1");
        assert_eq!(w.requests, Some(114193));
        assert_eq!(w.elapsed, Some(Duration::from_millis(2010)));
        assert_eq!(w.req_per_sec, Some(56874.52));
        assert_eq!(w.non_2xx_3xx, 0);
        let w = parse("wrk-404-nginx-h1");
        assert_eq!(w.non_2xx_3xx, 86096);
        let w = parse("wrk-latency-nginx-h1");
        assert_eq!(w.requests, Some(165568));
    }

    #[test]
    fn socket_errors_line() {
        let w = WrkOutput::parse(
            "  Socket errors: connect 1, read 2, write 3, timeout 4\n",
            "",
            Some(0),
        );
        assert_eq!(w.socket_errors, [1, 2, 3, 4]);
        assert_eq!(parse_wrk_time("0.92m"), Some(Duration::from_secs_f64(55.2)));
    }
}
