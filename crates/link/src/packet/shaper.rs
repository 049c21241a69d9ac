//! The sans-IO core of packet mode: what happens to one IP packet on one direction of the path.
//!
//! Nothing here reads a device or a clock: time is a [`Nanos`] count chosen by the caller, and
//! packets are opaque tokens with a length, so every rule is tested exactly in virtual time.
//!
//! # The model (one [`PacketShaper`] per direction)
//!
//! 1. **Bottleneck queue (drop-tail).** Packets that arrived but are not serialized yet form the
//!    queue. Its depth at `t` is `(busy_until - t) * bps / 8` bytes. A packet that does not fit
//!    in `queue_bytes` is dropped at the tail ([`Fate::QueueDrop`]), as a router with a full
//!    buffer does: the senders' kernels see a real drop.
//! 2. **Serialization (rate).** The direction is one FIFO server at `bps`, shared by every flow
//!    that crosses it; a packet of `len` bytes (the whole IP packet, headers included) occupies
//!    it for `len * 8 / bps` seconds. The sub-nanosecond remainder is carried, so the rate is
//!    exact over any number of packets.
//! 3. **Loss.** After the bottleneck a packet is lost on the wire ([`Fate::Lost`]; it did use
//!    the bottleneck) with the [`LossModel`]'s probability: independent per packet, or the
//!    two-state Gilbert–Elliott chain for bursts.
//! 4. **Propagation.** It arrives `one_way` (half the RTT) after its last bit left, plus a
//!    jitter offset drawn uniformly from `[-jitter, +jitter]` (never below zero).
//! 5. **No reordering unless asked.** Arrival times are made monotonic per direction
//!    (`arrive = max(previous arrival, computed time)`), as on a single path where packets
//!    cannot overtake one another; with `reorder` the jittered times stand and the
//!    [`DelayQueue`] hands packets out by arrival time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::shaper::{serialization_nanos, Nanos, Rng, Serializer};

/// How packets are lost on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// Each packet independently with this probability, in `[0, 1)`.
    Iid(f64),
    /// The Gilbert–Elliott chain: before each packet the state moves Good → Bad with
    /// probability `p` and Bad → Good with `r`; a packet is then lost with `loss_good` or
    /// `loss_bad`. The mean loss is `(r * loss_good + p * loss_bad) / (p + r)`; the mean burst
    /// (time in Bad) is `1 / r` packets.
    GilbertElliott {
        /// Good → Bad transition probability per packet.
        p: f64,
        /// Bad → Good transition probability per packet.
        r: f64,
        /// Loss probability in the Good state.
        loss_good: f64,
        /// Loss probability in the Bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets lost.
    pub fn mean(&self) -> f64 {
        match *self {
            LossModel::Iid(p) => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r <= 0.0 {
                    loss_good
                } else {
                    (r * loss_good + p * loss_bad) / (p + r)
                }
            }
        }
    }
}

/// The parameters of one direction of a packet path.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketParams {
    /// One-way propagation delay (half the RTT).
    pub one_way: Nanos,
    /// Jitter amplitude: a uniform offset from `[-jitter, +jitter]` per packet.
    pub jitter: Nanos,
    /// Let jitter reorder packets (off: arrivals are kept in sending order).
    pub reorder: bool,
    /// Bottleneck rate in bits per second counting whole IP packets; `None`: unlimited.
    pub bps: Option<u64>,
    /// Drop-tail queue capacity in bytes (ignored when `bps` is `None`).
    pub queue_bytes: usize,
    /// Loss on the wire.
    pub loss: LossModel,
}

/// What became of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Deliver it at this instant.
    Deliver(Nanos),
    /// Dropped at the tail of the full bottleneck queue.
    QueueDrop,
    /// Serialized, then lost on the wire.
    Lost,
}

/// One direction of the packet path (see the module documentation).
#[derive(Debug, Clone)]
pub struct PacketShaper {
    params: PacketParams,
    serializer: Serializer,
    last_arrival: Nanos,
    bad: bool,
    rng: Rng,
}

impl PacketShaper {
    /// A shaper for one direction, its random draws seeded by `seed`.
    pub fn new(params: PacketParams, seed: u64) -> Self {
        PacketShaper {
            params,
            serializer: Serializer::default(),
            last_arrival: 0,
            bad: false,
            rng: Rng::new(seed),
        }
    }

    /// The parameters it was built with.
    pub fn params(&self) -> &PacketParams {
        &self.params
    }

    /// Bytes waiting in the bottleneck queue at `now`.
    pub fn queued(&self, now: Nanos) -> usize {
        match self.params.bps {
            Some(bps) => self.serializer.queued(now, bps),
            None => 0,
        }
    }

    /// Decides the fate of a packet of `len` bytes that arrived at the bottleneck at `now`.
    pub fn offer(&mut self, now: Nanos, len: usize) -> Fate {
        let sent = match self.params.bps {
            Some(bps) => {
                // A packet is admitted while the queue holds less than its capacity before it
                // (so a queue of one packet still passes one packet at a time).
                if self.queued(now) + len > self.params.queue_bytes.max(len) {
                    return Fate::QueueDrop;
                }
                self.serializer.serialize(now, bps, len)
            }
            None => now,
        };
        if self.lose() {
            return Fate::Lost;
        }
        let mut arrive = sent.saturating_add(self.one_way_sample());
        if !self.params.reorder {
            arrive = arrive.max(self.last_arrival);
        }
        self.last_arrival = self.last_arrival.max(arrive);
        Fate::Deliver(arrive)
    }

    fn one_way_sample(&mut self) -> Nanos {
        let (base, j) = (self.params.one_way, self.params.jitter);
        if j == 0 {
            return base;
        }
        let draw = self.rng.below(j.saturating_mul(2).saturating_add(1));
        base.saturating_add(draw).saturating_sub(j)
    }

    fn lose(&mut self) -> bool {
        match self.params.loss {
            LossModel::Iid(p) => p > 0.0 && self.rng.unit() < p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad { r } else { p };
                if self.rng.unit() < flip {
                    self.bad = !self.bad;
                }
                let loss = if self.bad { loss_bad } else { loss_good };
                loss > 0.0 && self.rng.unit() < loss
            }
        }
    }
}

/// The serialization time of `len` bytes at `bps` (for callers sizing queues in time).
pub fn packet_nanos(bps: u64, len: usize) -> Nanos {
    serialization_nanos(bps, len)
}

/// Packets in flight on one direction, handed out by arrival time (ties in sending order).
#[derive(Debug, Default)]
pub struct DelayQueue<T: Ord> {
    heap: BinaryHeap<Reverse<(Nanos, u64, T)>>,
    seq: u64,
}

impl<T: Ord> DelayQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        DelayQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Holds `item` until `at`.
    pub fn push(&mut self, at: Nanos, item: T) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, item)));
    }

    /// The earliest arrival time held.
    pub fn next_at(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// The next item due at `now`, if any.
    pub fn pop_due(&mut self, now: Nanos) -> Option<T> {
        if self.next_at()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse((_, _, item))| item)
    }

    /// The next item due at `now`, with the time it was due, if any.
    pub fn pop_due_at(&mut self, now: Nanos) -> Option<(Nanos, T)> {
        if self.next_at()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse((at, _, item))| (at, item))
    }

    /// Items held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests;
