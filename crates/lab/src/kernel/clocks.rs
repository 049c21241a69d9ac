//! Per-thread CPU clocks and the edges of a run's measured period: [`RunObserver`] records
//! the engine's progress as a time series, the CPU time of the server's threads and of each
//! client worker over the measured period, and when the run's phases began.
//!
//! Every clock is read by its own thread: a client worker reads its own at the edges (the
//! engine calls [`Observer::phase`] from the worker's thread), and the built-in server's
//! event loops hand theirs over when asked ([`h2lab_server::cpu_clock`]): asked at the
//! edges, their answers collected after the run, so the measuring worker does not wait for
//! a server loop's turn inside its measured period.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use h2lab_engine::{AppProtocol, IntervalRow, Observer, TimedRunPhase, TlsInfo};
use h2lab_server::cpu_clock::Ticket;

use super::wall::RunEdges;
use crate::host::thread_schedstat;
use crate::os::thread_cpu_ns;

/// Records the engine's progress as a time series and the CPU clocks at the edges of the
/// measured period.
pub struct RunObserver {
    timeline: Mutex<Vec<(f64, u64)>>,
    server_tids: Vec<u32>,
    /// The server threads' clocks asked for when worker 0 entered and left the measured
    /// period ([`ServerEdge`]).
    server: Mutex<[Option<ServerEdge>; 2]>,
    /// Each client worker's own clocks at the same edges.
    client: Mutex<Vec<[Clocks; 2]>>,
    /// When worker 0 began the run, the measured period, and ended it.
    edges: Mutex<RunEdges>,
}

impl RunObserver {
    /// An observer reading the CPU clocks of `server_tids` (none: an external server) and
    /// of `threads` client workers.
    pub fn new(server_tids: Vec<u32>, threads: u32) -> RunObserver {
        RunObserver {
            timeline: Mutex::new(Vec::new()),
            server_tids,
            server: Mutex::new([None, None]),
            client: Mutex::new(vec![[Clocks::default(); 2]; threads as usize]),
            edges: Mutex::new(RunEdges::default()),
        }
    }

    /// The server threads' CPU time (ns) over the measured period (their answers are
    /// collected now, waiting at most 200 ms for a loop's answer).
    pub fn server_ns(&self) -> Option<u64> {
        if self.server_tids.is_empty() {
            return None;
        }
        let g = self.server.lock().ok()?;
        let [Some(a), Some(b)] = &*g else {
            return None;
        };
        let (a, b) = (a.values(), b.values());
        Some(
            a.iter()
                .zip(&b)
                .filter_map(|(x, y)| Some(y.as_ref()?.saturating_sub(*x.as_ref()?)))
                .sum(),
        )
    }

    /// The client workers' CPU time (ns) over the measured period.
    pub fn client_ns(&self) -> Option<u64> {
        let v = self.client.lock().ok()?;
        v.iter()
            .map(|[a, b]| Some(b.cpu?.saturating_sub(a.cpu?)))
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
        let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / period);
        let client: Vec<f64> = self
            .client
            .lock()
            .ok()?
            .iter()
            .filter_map(|[a, b]| delta(a.delay, b.delay))
            .collect();
        let server: Vec<f64> = match &*self.server.lock().ok()? {
            [Some(a), Some(b)] => a
                .delay
                .iter()
                .zip(&b.delay)
                .filter_map(|(x, y)| delta(*x, *y))
                .collect(),
            _ => Vec::new(),
        };
        client.into_iter().chain(server).reduce(f64::max)
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
        let own = Clocks {
            cpu: thread_cpu_ns(),
            delay: thread_schedstat(None).map(|(_, waited)| waited),
        };
        if let Ok(mut v) = self.client.lock() {
            if let Some(c) = v.get_mut(thread as usize) {
                c[edge] = own;
            }
        }
        if thread == 0 && !self.server_tids.is_empty() {
            let asked = ServerEdge::ask(&self.server_tids);
            if let Ok(mut s) = self.server.lock() {
                s[edge] = Some(asked);
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

/// How long the server threads' answers are waited for: an idle loop is woken and answers
/// in microseconds, a busy one at its next loop turn.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(200);

/// One client worker's clocks at an edge of the measured period (ns): its CPU time and its
/// run delay (time it waited for a CPU while ready, [`thread_schedstat`]).
#[derive(Debug, Clone, Copy, Default)]
struct Clocks {
    cpu: Option<u64>,
    delay: Option<u64>,
}

/// The server threads' clocks at one edge of a measured period: a ticket per event loop
/// for its CPU time, answered at its next turn; for a thread that is no event loop (the
/// server's main thread, which only waits for the others) its CPU time from schedstat, read
/// at once; and every thread's run delay from the same schedstat read.
struct ServerEdge {
    tickets: Vec<Option<Ticket>>,
    fallback: Vec<Option<u64>>,
    delay: Vec<Option<u64>>,
}

impl ServerEdge {
    fn ask(tids: &[u32]) -> ServerEdge {
        let tickets = h2lab_server::cpu_clock::ask(tids);
        let stats: Vec<Option<(u64, u64)>> =
            tids.iter().map(|&t| thread_schedstat(Some(t))).collect();
        let fallback = tickets
            .iter()
            .zip(&stats)
            .map(|(t, st)| match t {
                Some(_) => None,
                None => st.map(|(ran, _)| ran),
            })
            .collect();
        let delay = stats
            .iter()
            .map(|st| st.map(|(_, waited)| waited))
            .collect();
        ServerEdge {
            tickets,
            fallback,
            delay,
        }
    }

    /// Each thread's CPU time (ns) at this edge; `None` for one that did not answer.
    fn values(&self) -> Vec<Option<u64>> {
        h2lab_server::cpu_clock::collect(&self.tickets, ANSWER_TIMEOUT)
            .into_iter()
            .zip(&self.fallback)
            .map(|(ns, f)| ns.or(*f))
            .collect()
    }
}

/// The CPU time (ns) of the server threads `tids`, each event loop's read by the loop
/// itself ([`h2lab_server::cpu_clock::read`]); a thread that does not answer (the server's
/// main thread, which only waits for the others, or one that has exited) from `/proc`'s
/// schedstat, exact for a thread that is not running.
pub fn server_threads_cpu_ns(tids: &[u32]) -> u64 {
    h2lab_server::cpu_clock::read(tids, ANSWER_TIMEOUT)
        .into_iter()
        .zip(tids)
        .filter_map(|(ns, &t)| ns.or_else(|| crate::host::thread_cpu_ns(t)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{server_threads_cpu_ns, thread_cpu_ns};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A busy event-loop thread's clock, read through the server's hand-over: more than zero,
    /// growing, and not more than the whole process's CPU time; a thread that answers
    /// nothing (here: one blocked on a channel) reads from schedstat.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_busy_server_threads_clock_reads_its_work() {
        let a = thread_cpu_ns().expect("own clock");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns().unwrap() > a);
        if crate::host::current_tid().is_none() {
            return; // thread ids need Linux
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let s = stop.clone();
        let busy = std::thread::spawn(move || {
            let mut clock = h2lab_server::cpu_clock::ThreadClock::here(None);
            tx.send(crate::host::current_tid().unwrap()).unwrap();
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                for i in 0..10_000u64 {
                    x = x.wrapping_mul(31).wrapping_add(i);
                }
                std::hint::black_box(x);
                clock.turn();
            }
        });
        let tid = rx.recv().unwrap();
        let (idle_tx, idle_rx) = std::sync::mpsc::channel::<u32>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let idle = std::thread::spawn(move || {
            idle_tx.send(crate::host::current_tid().unwrap()).unwrap();
            let _ = done_rx.recv();
        });
        let idle_tid = idle_rx.recv().unwrap();
        let first = server_threads_cpu_ns(&[tid]);
        let mut later = first;
        while later == first {
            later = server_threads_cpu_ns(&[tid]);
        }
        assert!(first > 0 && later > first, "{first} {later}");
        // The idle thread answers nothing; schedstat reads it (it ran a little, or not at all).
        let both = server_threads_cpu_ns(&[tid, idle_tid]);
        let process = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let process_ns = process.tv_sec as u64 * 1_000_000_000 + process.tv_nsec as u64;
        assert!(later <= both, "{later} {both}");
        assert!(both <= process_ns, "{both} > the process's {process_ns}");
        done_tx.send(()).unwrap();
        idle.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        busy.join().unwrap();
    }
}
