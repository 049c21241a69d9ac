//! Live progress while a run is under way.
//!
//! - [`ProgressMode::Lines`] prints h2load's `progress: N% done` lines (each tenth of the
//!   requests, on stdout in the CLI). Like h2load, nothing is printed in duration mode.
//! - [`ProgressMode::Live`] keeps a single updating line (on stderr in the CLI): requests done,
//!   current req/s, errors, elapsed time; redrawn at most every 100 ms and erased by
//!   [`Progress::finish`].
//! - [`ProgressMode::Off`] prints nothing.
//!
//! [`Progress`] is `Sync`: engine worker threads may report concurrently.

use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use h2lab_engine::{IntervalRow, Observer, TimedRunPhase};

use crate::model::{AppProtocol, TlsInfo};
use crate::text::{app_protocol_line, phase_lines, progress_line, tls_lines};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// h2load's `progress: N% done` lines.
    Lines,
    /// One updating line (for a terminal).
    Live,
    /// Nothing.
    Off,
}

/// Minimum time between two redraws of the live line.
const LIVE_REDRAW: Duration = Duration::from_millis(100);

/// Progress printer. See the module documentation.
pub struct Progress<W: Write + Send> {
    mode: ProgressMode,
    duration: Option<Duration>,
    inner: Mutex<Inner<W>>,
}

struct Inner<W> {
    out: W,
    /// Progress steps already printed in lines mode.
    last_step: u64,
    /// Elapsed time at the last live redraw, and the `done` count then.
    last_draw: Option<(Duration, u64)>,
    /// Current rate estimate for the live line.
    rate: f64,
    /// The live line is on screen.
    drawn: bool,
}

impl<W: Write + Send> Progress<W> {
    /// A progress printer writing to `out`. `duration` is the `-D` main duration, if any: the
    /// live line then shows time rather than request progress, and lines mode stays silent.
    pub fn new(mode: ProgressMode, duration: Option<Duration>, out: W) -> Self {
        Progress {
            mode,
            duration,
            inner: Mutex::new(Inner {
                out,
                last_step: 0,
                last_draw: None,
                rate: 0.0,
                drawn: false,
            }),
        }
    }

    /// The mode this printer was created with.
    pub fn mode(&self) -> ProgressMode {
        self.mode
    }

    /// Reports that `done` of `total` requests are done after `elapsed`, with `errors` errors
    /// so far. Output errors are ignored (progress is best effort).
    pub fn update(&self, done: u64, total: u64, elapsed: Duration, errors: u64) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        match self.mode {
            ProgressMode::Off => {}
            ProgressMode::Lines => {
                if total == 0 || self.duration.is_some() {
                    return;
                }
                // h2load: a line each time `done` reaches a multiple of max(1, total / 10),
                // showing done * 100 / total (so -n 4 prints 25%, 50%, 75%, 100%).
                let interval = (total / 10).max(1);
                let step = done.min(total) / interval;
                while inner.last_step < step {
                    inner.last_step += 1;
                    let at = u128::from(inner.last_step) * u128::from(interval);
                    let pct = (at * 100 / u128::from(total)) as u64;
                    let _ = inner.out.write_all(progress_line(pct).as_bytes());
                }
                let _ = inner.out.flush();
            }
            ProgressMode::Live => {
                let finished = total > 0 && done >= total;
                if let Some((at, _)) = inner.last_draw {
                    if elapsed < at + LIVE_REDRAW && !finished {
                        return;
                    }
                }
                let (prev_at, prev_done) = inner.last_draw.unwrap_or((Duration::ZERO, 0));
                let dt = elapsed.saturating_sub(prev_at).as_secs_f64();
                if dt > 0.0 {
                    inner.rate = done.saturating_sub(prev_done) as f64 / dt;
                }
                inner.last_draw = Some((elapsed, done));
                let line = live_line(done, total, elapsed, self.duration, inner.rate, errors);
                let _ = write!(inner.out, "\r\x1b[2K{line}");
                let _ = inner.out.flush();
                inner.drawn = true;
            }
        }
    }

    /// Ends progress reporting: erases the live line if one is on screen.
    pub fn finish(&self) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.drawn {
            let _ = inner.out.write_all(b"\r\x1b[2K");
            let _ = inner.out.flush();
            inner.drawn = false;
        }
    }

    /// Erases the live line if one is on screen (before other output goes to the terminal); the
    /// next update draws it again.
    pub fn suspend(&self) {
        self.finish();
    }

    /// Consumes the printer and returns its writer (for tests).
    pub fn into_inner(self) -> W {
        match self.inner.into_inner() {
            Ok(inner) => inner.out,
            Err(poisoned) => poisoned.into_inner().out,
        }
    }
}

/// The engine observer of the CLI: prints the TLS lines and the `Application protocol:` line (once
/// each, on `out`, as h2load does before its progress lines) and forwards progress to a
/// [`Progress`] printer.
pub struct Console<O: Write + Send, E: Write + Send> {
    out: Mutex<ConsoleOut<O>>,
    progress: Progress<E>,
}

struct ConsoleOut<O> {
    out: O,
    tls_done: bool,
    protocol: Option<AppProtocol>,
}

impl<O: Write + Send, E: Write + Send> Console<O, E> {
    /// An observer printing to `out` with `progress` for the progress display.
    pub fn new(out: O, progress: Progress<E>) -> Self {
        Console {
            out: Mutex::new(ConsoleOut {
                out,
                tls_done: false,
                protocol: None,
            }),
            progress,
        }
    }

    /// The progress printer.
    pub fn progress(&self) -> &Progress<E> {
        &self.progress
    }

    /// The application protocol reported so far, if any.
    pub fn protocol(&self) -> Option<AppProtocol> {
        self.out.lock().ok().and_then(|o| o.protocol)
    }

    /// Erases the live progress line and writes `text` to `out`.
    pub fn print(&self, text: &str) {
        self.progress.suspend();
        if let Ok(mut o) = self.out.lock() {
            let _ = o.out.write_all(text.as_bytes());
            let _ = o.out.flush();
        }
    }

    /// Consumes the observer, returning its writers (for tests).
    pub fn into_inner(self) -> (O, E) {
        let out = match self.out.into_inner() {
            Ok(o) => o.out,
            Err(p) => p.into_inner().out,
        };
        (out, self.progress.into_inner())
    }
}

impl<O: Write + Send, E: Write + Send> Observer for Console<O, E> {
    fn progress(&self, done: u64, total: u64, elapsed: Duration, errors: u64) {
        self.progress.update(done, total, elapsed, errors);
    }

    fn tls_info(&self, info: &TlsInfo) {
        let first = match self.out.lock() {
            Ok(mut o) => !std::mem::replace(&mut o.tls_done, true),
            Err(_) => false,
        };
        if first {
            self.print(&tls_lines(info));
        }
    }

    fn protocol(&self, p: AppProtocol) {
        let first = match self.out.lock() {
            Ok(mut o) => o.protocol.replace(p).is_none(),
            Err(_) => false,
        };
        if first {
            self.print(&app_protocol_line(p));
        }
    }

    fn phase(&self, thread: u32, phase: TimedRunPhase) {
        if let Some(lines) = phase_lines(thread, phase) {
            self.print(&lines);
        }
    }

    /// Time-series rows are not printed while the run goes (the `--timeseries` file gets them
    /// as they come, the report's table at the end).
    fn interval(&self, _row: &IntervalRow) {}
}

/// The text of the live line (without the leading carriage return / erase sequence).
pub fn live_line(
    done: u64,
    total: u64,
    elapsed: Duration,
    duration: Option<Duration>,
    rate: f64,
    errors: u64,
) -> String {
    let secs = elapsed.as_secs_f64();
    match duration {
        Some(d) => format!(
            "{secs:.1}s/{:.1}s, {done} done, {rate:.0} req/s, {errors} errors",
            d.as_secs_f64()
        ),
        None => {
            let pct = if total > 0 {
                (u128::from(done) * 100 / u128::from(total)) as u64
            } else {
                0
            };
            format!("{done}/{total} done ({pct}%), {rate:.0} req/s, {errors} errors, {secs:.1}s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn lines_mode_prints_each_tenth_once() {
        let p = Progress::new(ProgressMode::Lines, None, Vec::new());
        p.update(5, 100, ms(1), 0);
        p.update(10, 100, ms(2), 0);
        p.update(19, 100, ms(3), 0);
        p.update(35, 100, ms(4), 0); // jumps over 30%: 20% and 30% both printed
        p.update(100, 100, ms(5), 0);
        p.update(100, 100, ms(6), 0);
        p.finish();
        let out = String::from_utf8(p.into_inner()).unwrap();
        let expected: String = (1..=10)
            .map(|d| format!("progress: {}% done\n", d * 10))
            .collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn lines_mode_small_totals_like_h2load() {
        let p = Progress::new(ProgressMode::Lines, None, Vec::new());
        p.update(3, 4, ms(1), 0);
        p.update(4, 4, ms(2), 0);
        let out = String::from_utf8(p.into_inner()).unwrap();
        assert_eq!(
            out,
            "progress: 25% done\nprogress: 50% done\nprogress: 75% done\nprogress: 100% done\n"
        );
        let p = Progress::new(ProgressMode::Lines, None, Vec::new());
        p.update(15, 15, ms(1), 0);
        let out = String::from_utf8(p.into_inner()).unwrap();
        assert_eq!(out.lines().count(), 15);
        assert_eq!(out.lines().next(), Some("progress: 6% done"));
    }

    #[test]
    fn lines_mode_is_silent_in_duration_mode() {
        let p = Progress::new(ProgressMode::Lines, Some(ms(1000)), Vec::new());
        p.update(50, 100, ms(500), 0);
        assert!(p.into_inner().is_empty());
    }

    #[test]
    fn live_mode_redraws_one_line_and_erases_it() {
        let p = Progress::new(ProgressMode::Live, None, Vec::new());
        p.update(100, 1000, ms(100), 0);
        p.update(150, 1000, ms(150), 0); // throttled
        p.update(300, 1000, ms(200), 2);
        p.finish();
        let out = String::from_utf8(p.into_inner()).unwrap();
        assert_eq!(
            out,
            "\r\x1b[2K100/1000 done (10%), 1000 req/s, 0 errors, 0.1s\
             \r\x1b[2K300/1000 done (30%), 2000 req/s, 2 errors, 0.2s\
             \r\x1b[2K"
        );
    }

    #[test]
    fn live_line_duration_mode() {
        assert_eq!(
            live_line(5000, 0, ms(2500), Some(ms(10_000)), 2000.4, 1),
            "2.5s/10.0s, 5000 done, 2000 req/s, 1 errors"
        );
    }

    #[test]
    fn console_prints_tls_and_protocol_once_then_progress() {
        let c = Console::new(
            Vec::new(),
            Progress::new(ProgressMode::Lines, None, Vec::new()),
        );
        let info = TlsInfo {
            protocol: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            server_temp_key: Some("X25519 253 bits".into()),
            alpn: Some("h2".into()),
        };
        let obs: &dyn Observer = &c;
        obs.tls_info(&info);
        obs.protocol(AppProtocol::H2);
        obs.tls_info(&info);
        obs.protocol(AppProtocol::H2);
        obs.progress(10, 10, ms(5), 0);
        assert_eq!(c.protocol(), Some(AppProtocol::H2));
        let (out, progress) = c.into_inner();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TLS Protocol: TLSv1.3\nCipher: TLS_AES_128_GCM_SHA256\n\
             Server Temp Key: X25519 253 bits\nApplication protocol: h2\n"
        );
        assert_eq!(String::from_utf8(progress).unwrap().lines().count(), 10);
    }

    #[test]
    fn off_prints_nothing() {
        let p = Progress::new(ProgressMode::Off, None, Vec::new());
        p.update(100, 100, ms(1), 0);
        p.finish();
        assert!(p.into_inner().is_empty());
    }
}
