//! The event-loop threads' CPU clocks, each read by its own thread on request.
//!
//! A thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) includes its current time slice, which
//! makes it tight at the edges of short measured periods; but only the thread itself can read
//! it through a safe call (rustix reads the calling thread's clock; another thread's clock id
//! would have to be built by hand and read with a raw `clock_gettime`). So each event loop
//! keeps a [`ThreadClock`]: at every loop turn it looks whether its clock was asked for (one
//! atomic load) and, when it was, reads its own clock and hands the value over.
//!
//! Asking and collecting are apart: [`ask`] (at the edge of a measured period) only counts
//! the request up and wakes the loop, so the asking thread, a measuring client, is not held
//! up for the length of a server loop's turn inside its own measured period; [`collect`]
//! (after the run) waits, bounded, for the answers. A thread that does not answer (it is no
//! event loop, or it has exited) reads as `None`; the caller decides what to fall back to.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mio::Waker;

/// Answers a thread keeps (the requests of a run's two edges, with room to spare).
const KEPT_ANSWERS: usize = 8;

/// One registered thread: its id, the last request and its answers.
struct Slot {
    tid: u32,
    /// The newest request (a counter; 0: never asked).
    asked: AtomicU64,
    /// The latest answers, oldest first: (the newest request answered, the thread's CPU
    /// time in ns when it answered). An answer covers every request up to its number.
    answers: Mutex<VecDeque<(u64, u64)>>,
    /// Wakes the thread's loop so that an idle loop answers at once.
    waker: Option<Arc<Waker>>,
}

impl Slot {
    /// The answer to request `n`: the first answer given at or after it.
    fn answer(&self, n: u64) -> Option<u64> {
        let a = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        a.iter().find(|(r, _)| *r >= n).map(|(_, ns)| *ns)
    }
}

/// Every event-loop thread of this process that answers [`ask`].
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
                answers: Mutex::new(VecDeque::with_capacity(KEPT_ANSWERS)),
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
                let mut a = s.answers.lock().unwrap_or_else(PoisonError::into_inner);
                if a.len() == KEPT_ANSWERS {
                    a.pop_front();
                }
                a.push_back((asked, ns));
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

/// A request for one thread's clock ([`ask`]), answered at its loop's next turn.
pub struct Ticket {
    slot: Arc<Slot>,
    n: u64,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("tid", &self.slot.tid)
            .field("n", &self.n)
            .finish()
    }
}

/// Asks each thread of `tids` for its CPU clock and wakes its loop, without waiting: a
/// ticket per thread, `None` for a thread that is no registered event loop.
pub fn ask(tids: &[u32]) -> Vec<Option<Ticket>> {
    let tickets: Vec<Option<Ticket>> = {
        let all = slots();
        tids.iter()
            .map(|t| {
                let slot = all.iter().find(|s| s.tid == *t)?.clone();
                let n = slot.asked.fetch_add(1, Ordering::AcqRel) + 1;
                Some(Ticket { slot, n })
            })
            .collect()
    };
    for t in tickets.iter().flatten() {
        if let Some(w) = &t.slot.waker {
            // A failed wake means the loop is gone: it will not answer.
            let _ = w.wake();
        }
    }
    tickets
}

/// The answers to `tickets` (the CPU time in ns each thread read at its first loop turn
/// after it was asked), waiting for them at most `timeout`; `None` for a missing ticket or
/// one not answered in time.
pub fn collect(tickets: &[Option<Ticket>], timeout: Duration) -> Vec<Option<u64>> {
    let deadline = Instant::now() + timeout;
    let answered = |t: &Ticket| t.slot.answer(t.n).is_some();
    while !tickets.iter().flatten().all(answered) && Instant::now() < deadline {
        std::thread::yield_now();
    }
    tickets
        .iter()
        .map(|t| t.as_ref().and_then(|t| t.slot.answer(t.n)))
        .collect()
}

/// [`ask`] and [`collect`] at once: each thread's CPU time (ns), read by the thread itself.
pub fn read(tids: &[u32], timeout: Duration) -> Vec<Option<u64>> {
    collect(&ask(tids), timeout)
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

    /// Asking does not wait for the loop: the answer comes at the loop's next turn and is
    /// collected afterwards; two requests before one turn get the same answer, and a later
    /// request a later one.
    #[test]
    fn a_ticket_is_answered_at_the_next_turn_and_collected_later() {
        if crate::current_tid().is_none() {
            return; // thread ids need Linux
        }
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (turn_tx, turn_rx) = std::sync::mpsc::channel::<bool>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let mut clock = ThreadClock::here(None);
            tid_tx.send(crate::current_tid().unwrap()).unwrap();
            // One loop turn per message; `false` ends the loop.
            while turn_rx.recv().unwrap_or(false) {
                let mut x = 0u64;
                for i in 0..100_000u64 {
                    x = x.wrapping_mul(31).wrapping_add(i);
                }
                std::hint::black_box(x);
                clock.turn();
                done_tx.send(()).unwrap();
            }
        });
        let tid = tid_rx.recv().unwrap();
        let first = ask(&[tid]);
        let second = ask(&[tid]);
        assert!(first[0].is_some() && second[0].is_some());
        // The loop has not turned: nothing to collect yet.
        assert_eq!(collect(&first, Duration::ZERO), vec![None]);
        turn_tx.send(true).unwrap();
        done_rx.recv().unwrap();
        let a = collect(&first, Duration::ZERO)[0].expect("answered at the turn");
        assert_eq!(collect(&second, Duration::ZERO), vec![Some(a)]);
        let third = ask(&[tid]);
        turn_tx.send(true).unwrap();
        done_rx.recv().unwrap();
        let b = collect(&third, Duration::ZERO)[0].expect("answered at the next turn");
        assert!(b > a, "{a} {b}");
        turn_tx.send(false).unwrap();
        t.join().unwrap();
    }
}
