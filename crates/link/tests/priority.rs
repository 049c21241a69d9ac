//! The relay's threads run at real-time priority where the system permits it, as the packet
//! link's thread does: on a loaded machine a normal-priority relay was late by whole scheduler
//! slices (RTTs late, bulk TCP short of its rate). A file of its own, so that the only link
//! threads in the process are this test's.
#![allow(unsafe_code)] // sched_setscheduler has no safe wrapper in std

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use h2lab_link::{self as link, LinkConfig};

/// The scheduling policy (`/proc/.../stat` field 41) of each thread of this process named
/// `name`.
fn policies(name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        // The command may contain spaces: fields are counted after its closing parenthesis
        // (which ends field 2), so field 41 is the 39th after it.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        if let Some(p) = rest.split_whitespace().nth(38).and_then(|f| f.parse().ok()) {
            out.push(p);
        }
    }
    out
}

/// Whether this process may give a thread a real-time priority: tried on a thread of its own.
fn real_time_permitted() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: pid 0 is the calling (throwaway) thread; `param` is a live sched_param.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap()
}

#[test]
fn relay_threads_run_at_real_time_priority_where_permitted() {
    if !real_time_permitted() {
        eprintln!("skipped: this process may not use real-time priorities (no CAP_SYS_NICE)");
        return;
    }
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut c = LinkConfig::new(any, serve(echo));
    c.rtt = Duration::from_millis(2);
    let link = link::spawn(c).unwrap();
    // One round trip: the TCP loop is running.
    let mut s = connect(link.addr());
    round_trip(&mut s, b"ping").unwrap();
    // The UDP loop starts on its own thread; wait for it (a hang guard, not a timing).
    let cap = Instant::now() + Duration::from_secs(30);
    let fifo = libc::SCHED_FIFO as u32;
    loop {
        let tcp = policies("h2lab-link");
        let udp = policies("h2lab-link-udp");
        if tcp == [fifo] && udp == [fifo] {
            break;
        }
        assert!(
            Instant::now() < cap,
            "relay thread policies: TCP {tcp:?}, UDP {udp:?} (SCHED_FIFO is {fifo})"
        );
        std::thread::yield_now();
    }
}
