//! The sender's congestion window for relayed TCP connections: sans-IO, a pure function of
//! virtual time.
//!
//! # Why
//!
//! `h2lab link` relays TCP by terminating it on both sides on loopback, so neither endpoint's
//! kernel ever sees the emulated RTT or loss: the loopback TCP starts with a huge window and
//! never slows down. The [`shaper`](super::shaper) delays lost chunks by a retransmission round
//! trip (head-of-line blocking), but without this module the *sending rate* would never react to
//! loss, while QUIC datagrams relayed over UDP are really dropped and quinn's congestion control
//! does react. HTTP/1.1 and HTTP/2 would then look far better under loss than real TCP would.
//!
//! # The model (one [`TcpModel`] per relayed connection and direction)
//!
//! The relay asks the model before it admits a chunk into the bottleneck queue: at most `cwnd`
//! bytes may be in flight (admitted and not yet acknowledged). The rest waits in the relay's
//! pre-queue and then in the sender's kernel buffer, exactly as unsent data waits in a real
//! sender whose window is full.
//!
//! - **Acknowledgements.** A chunk the shaper delivers at `d` is acknowledged at `d + rtt / 2`
//!   (the ACK's trip back; ACKs are not serialized or jittered). A chunk marked lost is
//!   acknowledged when its retransmission arrives (the shaper's late delivery), so it stays in
//!   flight meanwhile; the chunks behind it are acknowledged at their own times (SACK).
//! - **Initial window** 10 × [`MSS`] (RFC 6928). **Slow start**: each acknowledged byte grows
//!   the window by one byte (doubling per RTT) while `cwnd < ssthresh` (initially unbounded).
//! - **Loss** is detected one round trip after the lost chunk was sent (the duplicate ACKs'
//!   trip): `cwnd` and `ssthresh` become `cwnd × beta` (at least 2 × MSS). NewReno-style,
//!   there is one decrease per window of data: a loss of a chunk sent before the previous
//!   decrease (the same window) does not cut again.
//! - **Congestion avoidance** above `ssthresh`: `alpha` × MSS per RTT (`alpha × MSS × acked /
//!   cwnd` per acknowledged byte), and no growth from chunks sent before the last decrease.
//! - **Window validation** (RFC 7661, as Linux does): the window grows only while the sender
//!   uses it: in slow start when at least half the window was in flight, in congestion
//!   avoidance when it was nearly full, at some send within the last two round trips (as the
//!   ACK measures them: queueing delay included). A request/response connection does not
//!   inflate its window without ever filling it.
//!
//! [`TcpModelKind::Cubic`] (the default) is Linux's default CUBIC in its *TCP-friendly region*:
//! beta 0.7 and `alpha = 3 (1 - beta) / (1 + beta)` ≈ 0.53 (RFC 9438 §4.3), the region CUBIC
//! is in on the lab's lossy paths: with a loss every few round trips (1% loss, 40 ms, a window
//! of about 15 segments), the cubic curve's plateau `K = cbrt(W_max (1 - beta) / C)` is about
//! 2 s away and the curve grows slower than the Reno-friendly estimate, which CUBIC then
//! follows. The cubic growth curve itself is not modelled. [`TcpModelKind::Reno`] is NewReno:
//! beta 0.5, alpha 1. Both follow the Mathis formula, throughput ≈ `MSS / RTT × 1.22 /
//! sqrt(p)` (0.86 to 1.01 of it at 0.5-3% loss in the unit tests' simulation).
//!
//! Not modelled: retransmission timeouts (a tail loss costs one RTT, not an RTO), the window
//! reset after an idle period, the receiver's window, pacing, and the CUBIC curve.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;

use super::shaper::{Nanos, MSS};

/// The initial window: 10 segments (RFC 6928, Linux's default).
pub const INITIAL_WINDOW: usize = 10 * MSS;

/// The smallest window after a decrease: 2 segments.
pub const MIN_WINDOW: usize = 2 * MSS;

/// Which congestion window the link emulates for relayed TCP connections (`--tcp-model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TcpModelKind {
    /// CUBIC's TCP-friendly region: beta 0.7, about 0.53 MSS of growth per RTT (the default).
    #[default]
    Cubic,
    /// NewReno: beta 0.5, 1 MSS of growth per RTT.
    Reno,
    /// No window: the relayed connections send as fast as the loopback TCP lets them (the link
    /// before the model existed; loss only delays bytes).
    None,
}

impl TcpModelKind {
    /// Every kind, the default first.
    pub const ALL: [TcpModelKind; 3] =
        [TcpModelKind::Cubic, TcpModelKind::Reno, TcpModelKind::None];

    /// The flag value: `cubic`, `reno` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            TcpModelKind::Cubic => "cubic",
            TcpModelKind::Reno => "reno",
            TcpModelKind::None => "none",
        }
    }

    /// The multiplicative decrease: the window after a loss is `beta` times the window before.
    pub fn beta(self) -> f64 {
        match self {
            TcpModelKind::Cubic => 0.7,
            TcpModelKind::Reno | TcpModelKind::None => 0.5,
        }
    }

    /// The additive increase in congestion avoidance, in segments per RTT.
    pub fn alpha(self) -> f64 {
        let beta = self.beta();
        match self {
            TcpModelKind::Cubic => 3.0 * (1.0 - beta) / (1.0 + beta),
            TcpModelKind::Reno | TcpModelKind::None => 1.0,
        }
    }
}

impl fmt::Display for TcpModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `--tcp-model` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTcpModel(pub String);

impl fmt::Display for UnknownTcpModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown TCP model {:?} (expected cubic, reno or none)",
            self.0
        )
    }
}

impl std::error::Error for UnknownTcpModel {}

impl FromStr for TcpModelKind {
    type Err = UnknownTcpModel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TcpModelKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownTcpModel(s.to_owned()))
    }
}

/// Something the model learns at a given instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A chunk sent at `sent` was found lost (duplicate ACKs).
    Lost { sent: Nanos },
    /// `bytes` sent at `sent` were acknowledged.
    Acked { sent: Nanos, bytes: usize },
}

/// The congestion window of one relayed connection in one direction. See the module
/// documentation.
#[derive(Debug, Clone)]
pub struct TcpModel {
    kind: TcpModelKind,
    cwnd: f64,
    ssthresh: f64,
    in_flight: usize,
    /// Pending acknowledgements and loss detections, earliest first (ties: losses first).
    events: BinaryHeap<Reverse<(Nanos, Event)>>,
    /// The model's virtual time: nothing is sent before it.
    clock: Nanos,
    /// When the last decrease happened: losses of chunks sent before it are the same window.
    recovery_start: Option<Nanos>,
    /// The last send that found the window in use (see *window validation*).
    limited_at: Option<Nanos>,
    cuts: u64,
    /// Cuts already returned by [`take_new_cuts`](Self::take_new_cuts).
    reported: u64,
}

impl TcpModel {
    /// A model of `kind` at the initial window. (It needs no RTT: the acknowledgement times
    /// the caller passes to [`on_send`](Self::on_send) carry it.)
    pub fn new(kind: TcpModelKind) -> Self {
        TcpModel {
            kind,
            cwnd: INITIAL_WINDOW as f64,
            ssthresh: f64::INFINITY,
            in_flight: 0,
            events: BinaryHeap::new(),
            clock: 0,
            recovery_start: None,
            limited_at: None,
            cuts: 0,
            reported: 0,
        }
    }

    /// The congestion window in bytes.
    pub fn cwnd(&self) -> usize {
        self.cwnd as usize
    }

    /// The slow-start threshold in bytes (`usize::MAX` before the first loss).
    pub fn ssthresh(&self) -> usize {
        if self.ssthresh.is_finite() {
            self.ssthresh as usize
        } else {
            usize::MAX
        }
    }

    /// Bytes sent and not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// How many times a loss cut the window.
    pub fn cuts(&self) -> u64 {
        self.cuts
    }

    /// The cuts since the last call (for the link's counters).
    pub fn take_new_cuts(&mut self) -> u64 {
        let new = self.cuts - self.reported;
        self.reported = self.cuts;
        new
    }

    /// Applies every acknowledgement and loss detection due at or before `now`.
    pub fn advance(&mut self, now: Nanos) {
        while let Some(&Reverse((at, event))) = self.events.peek() {
            if at > now {
                break;
            }
            self.events.pop();
            self.apply(at, event);
        }
        self.clock = self.clock.max(now);
    }

    /// The bytes the window lets the sender add at `now` (at least the model's clock).
    pub fn window(&mut self, now: Nanos) -> usize {
        self.advance(now);
        (self.cwnd as usize).saturating_sub(self.in_flight)
    }

    /// The earliest instant at or after `now` (and the model's clock) when the window lets
    /// `want` more bytes out (`want` is capped at the window itself, so the answer exists).
    pub fn ready_at(&mut self, now: Nanos, want: usize) -> Nanos {
        let mut t = now.max(self.clock);
        self.advance(t);
        loop {
            let want = want.min(self.cwnd as usize);
            if (self.cwnd as usize).saturating_sub(self.in_flight) >= want {
                return t;
            }
            let Some(Reverse((at, _))) = self.events.peek() else {
                return t;
            };
            t = t.max(*at);
            self.advance(t);
        }
    }

    /// Records `bytes` sent at `at`, acknowledged at `ack_at`; `loss_seen_at` is when the
    /// sender learns they were lost (`None`: not lost).
    pub fn on_send(&mut self, at: Nanos, bytes: usize, ack_at: Nanos, loss_seen_at: Option<Nanos>) {
        let at = at.max(self.clock);
        self.advance(at);
        self.in_flight += bytes;
        let cwnd = self.cwnd as usize;
        let using = if self.cwnd < self.ssthresh {
            2 * self.in_flight >= cwnd
        } else {
            self.in_flight + MSS >= cwnd
        };
        if using {
            self.limited_at = Some(at);
        }
        self.events
            .push(Reverse((ack_at.max(at), Event::Acked { sent: at, bytes })));
        if let Some(seen) = loss_seen_at {
            self.events
                .push(Reverse((seen.max(at), Event::Lost { sent: at })));
        }
    }

    fn apply(&mut self, at: Nanos, event: Event) {
        match event {
            Event::Lost { sent } => {
                if self.recovery_start.is_some_and(|r| sent < r) {
                    return; // the same window: one decrease only
                }
                self.cwnd = (self.cwnd * self.kind.beta()).max(MIN_WINDOW as f64);
                self.ssthresh = self.cwnd;
                self.recovery_start = Some(at);
                self.cuts += 1;
            }
            Event::Acked { sent, bytes } => {
                self.in_flight = self.in_flight.saturating_sub(bytes);
                if self.recovery_start.is_some_and(|r| sent < r) {
                    return; // acknowledgements of the window that saw the loss
                }
                let used = self
                    .limited_at
                    .is_some_and(|l| at.saturating_sub(l) <= 2 * at.saturating_sub(sent));
                if !used {
                    return;
                }
                let b = bytes as f64;
                if self.cwnd < self.ssthresh {
                    self.cwnd = (self.cwnd + b).min(self.ssthresh);
                } else {
                    self.cwnd += self.kind.alpha() * MSS as f64 * b / self.cwnd;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
