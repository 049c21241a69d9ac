//! The load-shape options of `h2lab bench` (open model, stages, h2load's pacing flags, time
//! series, thresholds): from flags to the engine's [`LoadShape`](h2lab_engine::LoadShape), the timing-script reader, and
//! the observer that writes time-series rows as the engine produces them.

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use h2lab_engine::{AppProtocol, BenchConfig, IntervalRow, Observer, Profile, TlsInfo};
use h2lab_report::timeseries::SeriesWriter;

use crate::args::LoadArgs;

/// The default time-series interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// A parsed `--timing-script-file`: offsets and URIs, one per line.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingScript {
    /// Offset of each request from the client's start.
    pub offsets: Vec<Duration>,
    /// The URI of each request.
    pub uris: Vec<String>,
}

/// Reads h2load's timing script format: `OFFSET-MS<TAB>URI` per line (offset in milliseconds,
/// fractions allowed); empty lines are skipped; `-` reads stdin.
pub fn read_timing_script(path: &Path) -> Result<TimingScript, String> {
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        File::open(path).and_then(|mut f| f.read_to_string(&mut text).map(|_| ()))
    };
    read.map_err(|e| format!("--timing-script-file: cannot read {}: {e}", path.display()))?;
    parse_timing_script(&text)
}

/// Parses the text of a timing script (see [`read_timing_script`]).
pub fn parse_timing_script(text: &str) -> Result<TimingScript, String> {
    let mut s = TimingScript {
        offsets: Vec::new(),
        uris: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let (t, uri) = line.split_once('\t').ok_or_else(|| {
            format!("--timing-script-file: no tab character at line {n}: {line:?}")
        })?;
        let ms: f64 = t
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("--timing-script-file: time value error at line {n}: {t:?}"))?;
        s.offsets
            .push(Duration::try_from_secs_f64(ms / 1e3).map_err(|e| format!("line {n}: {e}"))?);
        s.uris.push(uri.trim().to_string());
    }
    if s.uris.is_empty() {
        return Err("--timing-script-file: the script has no lines".into());
    }
    Ok(s)
}

/// Fills `cfg.load` (and `-n` for timing scripts) from the flags. `requests` is `-n` if given;
/// `series` asks for a time series even without `--timeseries` (for `--json`).
pub fn apply(
    a: &LoadArgs,
    cfg: &mut BenchConfig,
    requests: Option<u64>,
    script: Option<&TimingScript>,
    series: bool,
) -> Result<(), String> {
    let l = &mut cfg.load;
    l.arrival_rate = a.arrival_rate;
    l.stages = a.stages.clone().map(|s| s.0).unwrap_or_default();
    l.queue_limit = a.queue_limit;
    l.rps = a.rps;
    l.connection_rate = a.rate.map(|r| (r, a.rate_period));
    if let Some(s) = script {
        l.timing_script = Some(s.offsets.clone().into());
        let lines = s.offsets.len() as u64;
        cfg.requests = match requests {
            Some(n) if n > lines => {
                eprintln!(
                    "-n: the number of requests must be less than or equal to the number of \
                     timing script entries. Setting number of requests to {lines}"
                );
                lines
            }
            Some(n) => n,
            None => lines,
        };
    }
    if a.timeseries.is_some() || a.interval.is_some() || series {
        cfg.load.interval = Some(a.interval.unwrap_or(DEFAULT_INTERVAL));
    }
    Ok(())
}

/// The duration the run will have: `-D`, or the total of the stages.
pub fn run_duration(cfg: &BenchConfig) -> Option<Duration> {
    cfg.duration.or_else(|| {
        (!cfg.load.stages.is_empty())
            .then(|| Profile::stages(0.0, &cfg.load.stages).duration())
            .flatten()
    })
}

/// The series file and its first write error.
type SeriesFile = (SeriesWriter<BufWriter<File>>, Option<io::Error>);

/// An [`Observer`] that forwards to `inner` and writes each time-series row to a file,
/// flushed at once.
pub struct SeriesObserver<'a> {
    inner: &'a dyn Observer,
    writer: Option<Mutex<SeriesFile>>,
    path: Option<PathBuf>,
}

impl<'a> SeriesObserver<'a> {
    /// Opens `path` (truncating it) if given.
    pub fn new(inner: &'a dyn Observer, path: Option<&Path>) -> Result<Self, String> {
        let writer = match path {
            Some(p) => Some(Mutex::new((
                SeriesWriter::create(p)
                    .map_err(|e| format!("--timeseries {}: {e}", p.display()))?,
                None,
            ))),
            None => None,
        };
        Ok(SeriesObserver {
            inner,
            writer,
            path: path.map(Path::to_path_buf),
        })
    }

    /// The first write error, as a one-line message.
    pub fn error(&self) -> Option<String> {
        let w = self.writer.as_ref()?;
        let g = w.lock().ok()?;
        let e = g.1.as_ref()?;
        let p = self.path.as_deref().unwrap_or(Path::new(""));
        Some(format!("--timeseries {}: {e}", p.display()))
    }
}

impl Observer for SeriesObserver<'_> {
    fn progress(&self, done: u64, total: u64, elapsed: Duration, errors: u64) {
        self.inner.progress(done, total, elapsed, errors);
    }

    fn tls_info(&self, info: &TlsInfo) {
        self.inner.tls_info(info);
    }

    fn protocol(&self, p: AppProtocol) {
        self.inner.protocol(p);
    }

    fn phase(&self, thread: u32, phase: h2lab_engine::TimedRunPhase) {
        self.inner.phase(thread, phase);
    }

    fn interval(&self, row: &IntervalRow) {
        self.inner.interval(row);
        if let Some(w) = &self.writer {
            if let Ok(mut g) = w.lock() {
                if g.1.is_none() {
                    if let Err(e) = g.0.write(row) {
                        g.1 = Some(e);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_scripts_like_h2load() {
        let s = parse_timing_script("0.0\thttp://h/a\n\n10.5\thttp://h/b\r\n1000\t/c\n").unwrap();
        assert_eq!(
            s.offsets,
            vec![
                Duration::ZERO,
                Duration::from_micros(10_500),
                Duration::from_secs(1)
            ]
        );
        assert_eq!(s.uris, vec!["http://h/a", "http://h/b", "/c"]);
        for bad in ["", "10 http://h/", "-1\thttp://h/", "x\thttp://h/"] {
            let e = parse_timing_script(bad).unwrap_err();
            assert!(e.starts_with("--timing-script-file"), "{bad:?}: {e}");
        }
    }
}
