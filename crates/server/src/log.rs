//! Rate-limited diagnostics on stderr: a flood of misbehaving clients must not turn the
//! server into a log writer. At most [`PER_SECOND`] lines per second are printed; the number
//! suppressed is reported with the next printed line.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Most lines printed per wall-clock second (process-wide).
pub const PER_SECOND: u64 = 20;

static WINDOW: AtomicU64 = AtomicU64::new(0);
static COUNT: AtomicU64 = AtomicU64::new(0);
static SUPPRESSED: AtomicU64 = AtomicU64::new(0);

/// Prints `h2lab serve: <msg>` unless the per-second budget is spent.
pub fn emit(args: std::fmt::Arguments<'_>) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let window = WINDOW.load(Ordering::Relaxed);
    if window != now
        && WINDOW
            .compare_exchange(window, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        COUNT.store(0, Ordering::Relaxed);
    }
    if COUNT.fetch_add(1, Ordering::Relaxed) >= PER_SECOND {
        SUPPRESSED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let suppressed = SUPPRESSED.swap(0, Ordering::Relaxed);
    let mut err = std::io::stderr().lock();
    if suppressed > 0 {
        let _ = writeln!(err, "h2lab serve: ({suppressed} similar lines suppressed)");
    }
    let _ = writeln!(err, "h2lab serve: {args}");
}

/// `warn!(...)`: format and print through [`emit`].
macro_rules! log_warn {
    ($($t:tt)*) => { $crate::log::emit(format_args!($($t)*)) };
}
pub(crate) use log_warn as warn;
