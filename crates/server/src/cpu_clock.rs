//! The event-loop threads' CPU clocks, each read by its own thread on request.
//!
//! A thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) includes its current time slice, which
//! makes it tight at the edges of short measured periods; but only the thread itself can read
//! it through a safe call (rustix reads the calling thread's clock; another thread's clock id
//! would have to be built by hand and read with a raw `clock_gettime`). So each event loop
//! keeps a [`ThreadClock`]: at every loop turn it looks whether its clock was asked for (one
//! atomic load) and, when it was, reads its own clock and hands the value over. [`read`]
//! asks the threads by kernel thread id, wakes their loops, and waits (bounded) for the
//! answers. A thread that does not answer (it is no event loop, or it has exited) reads as
//! `None`; the caller decides what to fall back to.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mio::Waker;

/// One registered thread: its id, the last request and its answer.
struct Slot {
    tid: u32,
    /// The newest request (a counter; 0: never asked).
    asked: AtomicU64,
    /// The request the thread last answered.
    answered: AtomicU64,
    /// The thread's CPU time (ns) when it answered `answered`.
    ns: AtomicU64,
    /// Wakes the thread's loop so that an idle loop answers at once.
    waker: Option<Arc<Waker>>,
}

/// Every event-loop thread of this process that answers [`read`].
static SLOTS: Mutex<Vec<Arc<Slot>>> = Mutex::new(Vec::new());

fn slots() -> std::sync::MutexGuard<'static, Vec<Arc<Slot>>> {
    SLOTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The calling thread's CPU time (ns), from its own CPU clock.
#[cfg(unix)]
pub fn own_cpu_ns() -> Option<u64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(u64::try_from(t.tv_sec).ok()? * 1_000_000_000 + u64::try_from(t.tv_nsec).ok()?)
}

/// The calling thread's CPU time (not available here).
#[cfg(not(unix))]
pub fn own_cpu_ns() -> Option<u64> {
    None
}

/// An event loop's side: registered for the calling thread, answered at each loop turn
/// ([`ThreadClock::turn`]), unregistered when dropped (when the loop ends).
pub struct ThreadClock {
    slot: Option<Arc<Slot>>,
    seen: u64,
}

impl ThreadClock {
    /// Registers the calling thread (by its kernel thread id; nothing where it has none);
    /// `waker` wakes its loop when the clock is asked for.
    pub fn here(waker: Option<Arc<Waker>>) -> ThreadClock {
        let slot = crate::current_tid().map(|tid| {
            let s = Arc::new(Slot {
                tid,
                asked: AtomicU64::new(0),
                answered: AtomicU64::new(0),
                ns: AtomicU64::new(0),
                waker,
            });
            slots().push(s.clone());
            s
        });
        ThreadClock { slot, seen: 0 }
    }

    /// Answers a request, if one came since the last turn: reads the calling thread's clock
    /// and hands it over. One atomic load when nothing was asked.
    #[inline]
    pub fn turn(&mut self) {
        let Some(s) = &self.slot else {
            return;
        };
        let asked = s.asked.load(Ordering::Acquire);
        if asked != self.seen {
            self.seen = asked;
            if let Some(ns) = own_cpu_ns() {
                s.ns.store(ns, Ordering::Relaxed);
                s.answered.store(asked, Ordering::Release);
            }
        }
    }
}

impl Drop for ThreadClock {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            slots().retain(|x| !Arc::ptr_eq(x, &s));
        }
    }
}

/// The CPU time (ns) of each thread of `tids`, each read by the thread itself (its loop is
/// woken and answers at its next turn), waiting for the answers at most `timeout`; `None`
/// for a thread that is not a registered event loop or did not answer in time.
pub fn read(tids: &[u32], timeout: Duration) -> Vec<Option<u64>> {
    let asked: Vec<Option<(Arc<Slot>, u64)>> = {
        let all = slots();
        tids.iter()
            .map(|t| {
                let s = all.iter().find(|s| s.tid == *t)?.clone();
                let n = s.asked.fetch_add(1, Ordering::AcqRel) + 1;
                Some((s, n))
            })
            .collect()
    };
    for (s, _) in asked.iter().flatten() {
        if let Some(w) = &s.waker {
            // A failed wake means the loop is gone: it will not answer.
            let _ = w.wake();
        }
    }
    let deadline = Instant::now() + timeout;
    let answered = |(s, n): &(Arc<Slot>, u64)| s.answered.load(Ordering::Acquire) >= *n;
    while !asked.iter().flatten().all(answered) && Instant::now() < deadline {
        std::thread::yield_now();
    }
    asked
        .iter()
        .map(|a| {
            a.as_ref()
                .filter(|a| answered(a))
                .map(|(s, _)| s.ns.load(Ordering::Relaxed))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A loop thread answers with its own clock: more than zero and than it read before,
    /// not more than the whole process's CPU time; an unknown thread reads as `None`, and a
    /// thread whose loop ended is no longer asked.
    #[test]
    fn a_busy_loop_thread_hands_over_its_own_clock() {
        if crate::current_tid().is_none() {
            return; // thread ids need Linux
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let s = stop.clone();
        let t = std::thread::spawn(move || {
            let mut clock = ThreadClock::here(None);
            tx.send(crate::current_tid().unwrap()).unwrap();
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
        let wait = Duration::from_secs(10);
        let a = read(&[tid], wait)[0].expect("the loop answers");
        // Busy for a while: its clock has moved on.
        let mut b = a;
        while b == a {
            b = read(&[tid], wait)[0].expect("the loop answers");
        }
        assert!(a > 0 && b > a, "{a} {b}");
        let process = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let process_ns = process.tv_sec as u64 * 1_000_000_000 + process.tv_nsec as u64;
        assert!(b <= process_ns, "{b} > the process's {process_ns}");
        // A thread id nobody registered.
        assert_eq!(read(&[u32::MAX], Duration::ZERO), vec![None]);
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        assert!(!slots().iter().any(|s| s.tid == tid));
        assert_eq!(read(&[tid], Duration::ZERO), vec![None]);
    }
}
