//! Per-thread CPU clocks and the edges of a run's measured period: [`RunObserver`] records
//! the engine's progress as a time series, the CPU time of the server's threads and of each
//! client worker over the measured period, and when the run's phases began.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use h2lab_engine::{AppProtocol, IntervalRow, Observer, TimedRunPhase, TlsInfo};

use super::wall::RunEdges;
use crate::host::thread_run_delay_ns;
use crate::os::thread_cpu_ns;

/// Records the engine's progress as a time series and the CPU clocks at the edges of the
/// measured period.
pub struct RunObserver {
    timeline: Mutex<Vec<(f64, u64)>>,
    server_tids: Vec<u32>,
    /// Server threads' CPU (ns) when worker 0 entered and left the measured period.
    server: Mutex<(Option<u64>, Option<u64>)>,
    /// Each client worker's own CPU (ns) at the same edges.
    client: Mutex<Vec<(Option<u64>, Option<u64>)>>,
    /// Run delay (ns waiting for a CPU while ready) of each client worker and then of each
    /// server thread, at the same edges ([`crate::host::thread_run_delay_ns`]).
    delay: Mutex<Vec<(Option<u64>, Option<u64>)>>,
    /// When worker 0 began the run, the measured period, and ended it.
    edges: Mutex<RunEdges>,
}

impl RunObserver {
    /// An observer reading the CPU clocks of `server_tids` (none: an external server) and
    /// of `threads` client workers.
    pub fn new(server_tids: Vec<u32>, threads: u32) -> RunObserver {
        let delay = Mutex::new(vec![(None, None); threads as usize + server_tids.len()]);
        RunObserver {
            timeline: Mutex::new(Vec::new()),
            delay,
            server_tids,
            server: Mutex::new((None, None)),
            client: Mutex::new(vec![(None, None); threads as usize]),
            edges: Mutex::new(RunEdges::default()),
        }
    }

    /// The server threads' CPU time (ns) over the measured period.
    pub fn server_ns(&self) -> Option<u64> {
        if self.server_tids.is_empty() {
            return None;
        }
        match *self.server.lock().ok()? {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        }
    }

    /// The client workers' CPU time (ns) over the measured period.
    pub fn client_ns(&self) -> Option<u64> {
        let v = self.client.lock().ok()?;
        v.iter()
            .map(|c| match c {
                (Some(a), Some(b)) => Some(b.saturating_sub(*a)),
                _ => None,
            })
            .sum()
    }

    /// The largest share of the measured period that one measured thread (a client worker
    /// or a server thread) spent waiting for a CPU while it was ready to run: the machine
    /// took that share of the window from the run. `None` when unknown.
    pub fn starved(&self) -> Option<f64> {
        let e = self.edges();
        let period = e.over?.checked_duration_since(e.main?)?.as_nanos() as f64;
        if period <= 0.0 {
            return None;
        }
        let v = self.delay.lock().ok()?;
        v.iter()
            .filter_map(|d| match d {
                (Some(a), Some(b)) => Some(b.saturating_sub(*a) as f64 / period),
                _ => None,
            })
            .reduce(f64::max)
    }

    /// Rates between samples taken during the measured period (the final progress call,
    /// moments after the previous one, and the samples after the end are left out).
    pub fn rates(&self, warm_up: Duration, duration: Duration) -> Vec<(f64, f64)> {
        let v = self.timeline.lock().map(|v| v.clone()).unwrap_or_default();
        let (w, d) = (warm_up.as_secs_f64(), duration.as_secs_f64());
        let inside: Vec<(f64, u64)> = v
            .into_iter()
            .filter(|(t, _)| *t >= w && *t <= w + d + 0.02)
            .collect();
        inside
            .windows(2)
            .filter_map(|p| {
                let (t0, d0) = p[0];
                let (t1, d1) = p[1];
                let dt = t1 - t0;
                (dt > 0.05 && d1 >= d0).then(|| (t1 - w, (d1 - d0) as f64 / dt))
            })
            .collect()
    }
}

impl Observer for RunObserver {
    fn progress(&self, done: u64, _total: u64, elapsed: Duration, _errors: u64) {
        if let Ok(mut v) = self.timeline.lock() {
            v.push((elapsed.as_secs_f64(), done));
        }
    }
    fn tls_info(&self, _info: &TlsInfo) {}
    fn protocol(&self, _p: AppProtocol) {}
    // The cells run without a time series and h2load's phase lines are not shown.
    fn interval(&self, _row: &IntervalRow) {}
    fn phase(&self, thread: u32, phase: TimedRunPhase) {
        if thread == 0 {
            if let Ok(mut e) = self.edges.lock() {
                let now = Some(Instant::now());
                match phase {
                    TimedRunPhase::WarmUpStarted => e.warm_up = now,
                    TimedRunPhase::MainStarted => e.main = now,
                    TimedRunPhase::MainOver => e.over = now,
                    _ => {}
                }
            }
        }
        let edge = match phase {
            TimedRunPhase::MainStarted => 0,
            TimedRunPhase::MainOver => 1,
            _ => return,
        };
        // Called from the worker's own thread: its clock is the calling thread's.
        let own = thread_cpu_ns(None);
        let own_delay = thread_run_delay_ns(None);
        let server_delays: Vec<Option<u64>> = if thread == 0 {
            self.server_tids
                .iter()
                .map(|&t| thread_run_delay_ns(Some(t)))
                .collect()
        } else {
            Vec::new()
        };
        if let Ok(mut v) = self.delay.lock() {
            let workers = v.len() - self.server_tids.len();
            let at = |d: &mut (Option<u64>, Option<u64>), x: Option<u64>| {
                if edge == 0 {
                    d.0 = x;
                } else {
                    d.1 = x;
                }
            };
            if let Some(d) = v.get_mut(thread as usize).filter(|_| (thread as usize) < workers) {
                at(d, own_delay);
            }
            for (i, x) in server_delays.into_iter().enumerate() {
                if let Some(d) = v.get_mut(workers + i) {
                    at(d, x);
                }
            }
        }
        if let Ok(mut v) = self.client.lock() {
            if let Some(c) = v.get_mut(thread as usize) {
                if edge == 0 {
                    c.0 = own;
                } else {
                    c.1 = own;
                }
            }
        }
        if thread == 0 && !self.server_tids.is_empty() {
            let ns = Some(
                self.server_tids
                    .iter()
                    .filter_map(|&t| thread_cpu_ns(Some(t)))
                    .sum(),
            );
            if let Ok(mut s) = self.server.lock() {
                if edge == 0 {
                    s.0 = ns;
                } else {
                    s.1 = ns;
                }
            }
        }
    }
}

impl RunObserver {
    /// When worker 0 began the run, its measured period, and ended it.
    pub fn edges(&self) -> RunEdges {
        self.edges.lock().map(|e| *e).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::thread_cpu_ns;

    #[test]
    fn thread_clocks_read_this_and_other_threads() {
        let me = crate::host::current_tid().unwrap();
        let a = thread_cpu_ns(Some(me)).expect("own clock by tid");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = thread_cpu_ns(None).expect("own clock");
        assert!(b > a, "{a} {b}");
        // Another thread's clock, read from here.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(crate::host::current_tid().unwrap()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        assert!(thread_cpu_ns(Some(tid)).is_some());
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
