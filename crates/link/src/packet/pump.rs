//! The I/O shell of packet mode: one thread holding both TUN devices, reading IP packets from
//! each, asking the [`PacketShaper`] of that direction what becomes of them, and writing them
//! into the other device when they are due.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::shaper::{DelayQueue, Fate, PacketShaper};
use super::sys;
use super::{PacketDirStats, PacketStats};

/// Largest packet read from a device (an MTU of up to 9000 bytes fits).
const SLOT: usize = 9216;

/// Packets read from one device per turn before the other gets its turn.
const BATCH: usize = 64;

/// Longest the thread polls ahead of a packet at low load (see [`Pump::run`]).
const MAX_LEAD_NS: u64 = 150_000;

/// The counters of one direction, shared with readers on other threads.
#[derive(Debug, Default)]
pub(super) struct DirCounters {
    packets_in: AtomicU64,
    bytes_in: AtomicU64,
    packets_out: AtomicU64,
    bytes_out: AtomicU64,
    queue_drops: AtomicU64,
    lost: AtomicU64,
    write_errors: AtomicU64,
    max_queue_bytes: AtomicU64,
    late_ns_total: AtomicU64,
    late_ns_max: AtomicU64,
}

impl DirCounters {
    fn snapshot(&self) -> PacketDirStats {
        PacketDirStats {
            packets_in: self.packets_in.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            packets_out: self.packets_out.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            queue_drops: self.queue_drops.load(Relaxed),
            lost: self.lost.load(Relaxed),
            write_errors: self.write_errors.load(Relaxed),
            max_queue_bytes: self.max_queue_bytes.load(Relaxed),
            late_ns_total: self.late_ns_total.load(Relaxed),
            late_ns_max: self.late_ns_max.load(Relaxed),
        }
    }
}

/// Both directions' counters: `[up, down]`.
#[derive(Debug, Default)]
pub(super) struct Counters {
    dirs: [DirCounters; 2],
}

impl Counters {
    pub(super) fn snapshot(&self) -> PacketStats {
        PacketStats {
            up: self.dirs[0].snapshot(),
            down: self.dirs[1].snapshot(),
        }
    }
}

/// Packet buffers, reused: a slot is taken when a packet is read and returned when it is
/// written or dropped, so the steady state allocates nothing.
struct Slots {
    bufs: Vec<Box<[u8]>>,
    lens: Vec<usize>,
    free: Vec<u32>,
}

impl Slots {
    fn take(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            return i;
        }
        self.bufs.push(vec![0u8; SLOT].into_boxed_slice());
        self.lens.push(0);
        (self.bufs.len() - 1) as u32
    }
}

/// The link thread's state.
pub(super) struct Pump {
    /// `[client side, server side]`: up reads the client's device and writes the server's.
    pub(super) devices: [OwnedFd; 2],
    pub(super) wake: Arc<OwnedFd>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) shapers: [PacketShaper; 2],
    pub(super) counters: Arc<Counters>,
    /// How long before a packet is due the thread stops sleeping and polls (ns).
    pub(super) spin_ns: u64,
}

impl Pump {
    /// Runs until `stop` is set (and the wake descriptor signalled). It sleeps in `ppoll` on
    /// both devices, the wake descriptor and a timer armed at the absolute time the next
    /// packet is due (less `spin_ns`, which it polls). At low load — one packet held in both
    /// directions together — it wakes earlier by one and a half times its timer's typical
    /// lateness (a moving average, at most [`MAX_LEAD_NS`]) and polls the rest: a packet
    /// then leaves on time although the timer wakes late, and the CPU spent is bounded by that
    /// lead per packet, at packet rates where it is small. Under a steady stream (more than
    /// one packet held) it sleeps until each is due, as `spin_ns` asks.
    pub(super) fn run(self) -> io::Result<()> {
        let _ = crate::sched::tight_timers();
        let timer = sys::timerfd()?;
        let Pump {
            devices,
            wake,
            stop,
            mut shapers,
            counters,
            spin_ns,
        } = self;
        let fds = [
            devices[0].as_raw_fd(),
            devices[1].as_raw_fd(),
            wake.as_raw_fd(),
            timer.as_raw_fd(),
        ];
        let mut queues: [DelayQueue<u32>; 2] = [DelayQueue::new(), DelayQueue::new()];
        let mut slots = Slots {
            bufs: Vec::new(),
            lens: Vec::new(),
            free: Vec::new(),
        };
        // The shapers' clock is CLOCK_MONOTONIC itself, so due times are the timer's deadlines.
        let clock = sys::mono_ns;
        let mut ready = [true; 4];
        let mut drain = [0u8; 8];
        let mut armed = 0u64;
        // Moving average of how late the timer woke the thread (ns).
        let mut timer_late = 0u64;
        while !stop.load(Relaxed) {
            let mut now = clock();
            // Deliver what is due: direction d writes into device 1 - d.
            for d in 0..2 {
                while let Some((at, i)) = queues[d].pop_due_at(now) {
                    let len = slots.lens[i as usize];
                    let c = &counters.dirs[d];
                    if sys::write_packet(fds[1 - d], &slots.bufs[i as usize][..len]) {
                        c.packets_out.fetch_add(1, Relaxed);
                        c.bytes_out.fetch_add(len as u64, Relaxed);
                        let late = now.saturating_sub(at);
                        c.late_ns_total.fetch_add(late, Relaxed);
                        c.late_ns_max.fetch_max(late, Relaxed);
                    } else {
                        c.write_errors.fetch_add(1, Relaxed);
                    }
                    slots.free.push(i);
                }
            }
            // Read what arrived.
            for d in 0..2 {
                if !ready[d] {
                    continue;
                }
                for _ in 0..BATCH {
                    let i = slots.take();
                    let Some(len) = sys::read_packet(fds[d], &mut slots.bufs[i as usize])? else {
                        slots.free.push(i);
                        break;
                    };
                    now = clock();
                    let c = &counters.dirs[d];
                    c.packets_in.fetch_add(1, Relaxed);
                    c.bytes_in.fetch_add(len as u64, Relaxed);
                    match shapers[d].offer(now, len) {
                        Fate::Deliver(at) => {
                            slots.lens[i as usize] = len;
                            queues[d].push(at, i);
                            let q = shapers[d].queued(now) as u64;
                            c.max_queue_bytes.fetch_max(q, Relaxed);
                        }
                        Fate::QueueDrop => {
                            c.queue_drops.fetch_add(1, Relaxed);
                            slots.free.push(i);
                        }
                        Fate::Lost => {
                            c.lost.fetch_add(1, Relaxed);
                            slots.free.push(i);
                        }
                    }
                }
            }
            if ready[2] {
                let _ = sys::read_packet(fds[2], &mut drain);
            }
            if ready[3] {
                let _ = sys::read_packet(fds[3], &mut drain);
                armed = 0;
            }
            let now = clock();
            let next = queues.iter().filter_map(DelayQueue::next_at).min();
            let lead = match queues[0].len() + queues[1].len() {
                0 | 1 => spin_ns.max((timer_late + timer_late / 2).min(MAX_LEAD_NS)),
                _ => spin_ns,
            };
            match next.map(|at| (at, at.saturating_sub(now))) {
                Some((_, 0)) => ready = [true, true, false, false],
                // The last stretch before a packet is due is polled without sleeping: waking
                // from a timer on this VM cost ~250 µs more than the delay asked for.
                Some((_, t)) if t <= lead => sys::poll(&fds, Some(0), &mut ready)?,
                Some((at, _)) => {
                    let wake_at = at - lead;
                    if wake_at != armed {
                        sys::arm_timer(fds[3], wake_at)?;
                        armed = wake_at;
                    }
                    sys::poll(&fds, None, &mut ready)?;
                    if ready[3] {
                        let late = clock().saturating_sub(wake_at).min(MAX_LEAD_NS);
                        timer_late = (timer_late * 7 + late) / 8;
                    }
                }
                None if spin_ns == u64::MAX => sys::poll(&fds, Some(0), &mut ready)?,
                None => sys::poll(&fds, None, &mut ready)?,
            }
        }
        Ok(())
    }
}
