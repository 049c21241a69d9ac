//! A run's `starved` share ([`RunObserver::starved`]) is the time the machine took from its
//! threads: a thread that had to share its CPU waited for it, a thread that slept (as one
//! waiting for the network does) did not.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_engine::{Observer, TimedRunPhase};
use h2lab_lab::host::{allowed_cpus, current_tid, pin};
use h2lab_lab::kernel::clocks::RunObserver;

/// Busy work for `d` of wall time.
fn spin(d: Duration) {
    let until = Instant::now() + d;
    let mut x = 0u64;
    while Instant::now() < until {
        for i in 0..1000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
    }
    std::hint::black_box(x);
}

#[test]
fn a_thread_that_shares_its_cpu_is_starved_and_a_sleeping_one_is_not() {
    let Some(cpu) = allowed_cpus().and_then(|c| c.first().copied()) else {
        eprintln!("skipped: the allowed CPUs are unknown here");
        return;
    };
    // The measured thread and a rival spinner on one CPU: the scheduler shares it.
    let me = current_tid().expect("tid");
    pin(me, &[cpu]).expect("pin the measured thread");
    let stop = Arc::new(AtomicBool::new(false));
    let rival = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let tid = current_tid().expect("tid");
            pin(tid, &[cpu]).expect("pin the rival");
            while !stop.load(Ordering::Relaxed) {
                spin(Duration::from_millis(1));
            }
        })
    };
    let shared = RunObserver::new(Vec::new(), 1);
    shared.phase(0, TimedRunPhase::MainStarted);
    spin(Duration::from_millis(200));
    shared.phase(0, TimedRunPhase::MainOver);
    stop.store(true, Ordering::Relaxed);
    rival.join().unwrap();
    let s = shared.starved().expect("schedstat is readable");
    assert!(s > 0.1, "sharing a CPU with a spinner: starved {s}");

    // Sleeping is waiting, not starving.
    let asleep = RunObserver::new(Vec::new(), 1);
    asleep.phase(0, TimedRunPhase::MainStarted);
    std::thread::sleep(Duration::from_millis(200));
    asleep.phase(0, TimedRunPhase::MainOver);
    let s = asleep.starved().expect("schedstat is readable");
    assert!(s < 0.1, "sleeping: starved {s}");
}
