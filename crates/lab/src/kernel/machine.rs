//! Facts about the machine and the clock, for every experiment's report.

use std::time::{Duration, Instant};

use serde::Serialize;

/// Facts about the machine, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available.
    pub cpus: usize,
    /// `linux`, `macos`, ...
    pub os: &'static str,
    /// `x86_64`, `aarch64`, ...
    pub arch: &'static str,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
        }
    }
}

/// Seconds since the Unix epoch (for result metadata).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Measures how long `f` takes.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let v = f();
    (v, start.elapsed())
}
