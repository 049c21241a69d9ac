//! The I/O shell of `h2lab link`: one mio event loop that accepts client connections, connects
//! each to the upstream, and moves bytes according to the [`shaper`](super::shaper) core.
//!
//! Timing: the loop keeps a min-heap of deadlines (a connection's next delivery, a direction's
//! next room in its queue, a handshake step) and polls with the time left to the earliest one.
//! `epoll` only sleeps whole milliseconds (mio rounds up), so the loop polls for the whole
//! milliseconds left (rounded down) and sleeps the sub-millisecond rest with `nanosleep`,
//! which is precise to tens of microseconds, instead of spinning: the link shares the machine
//! with the client and the server it measures.
//!
//! Per connection and direction the bytes sit in a [`Ring`] in stream order. Its front part has
//! entered the bottleneck (the matching [`DelayLine`] says how much of it is due); its back part
//! is the *pre-queue*: bytes read from the source socket that wait for room in the direction's
//! queue, as they would wait in the sender's socket buffer. When the queue fills, the
//! direction's waiting connections are admitted round-robin, one chunk each, as room appears;
//! when a pre-queue fills, the relay stops reading that socket and TCP flow control pushes back
//! on the sender. So memory is bounded everywhere.
//!
//! Before a chunk enters the queue, the connection-direction's emulated congestion window
//! ([`tcp_model`](super::tcp_model)) must have room for it, at the chunk's virtual time; a
//! connection held back by its window waits on its own timer (the next acknowledgement), not in
//! the lane's line, so it never holds up the connections that wait for queue room.
//!
//! Why a pre-queue rather than reading the socket only when the queue has room (the first
//! design, which lost 2-7% of the configured rate at 10-100 Mbit/s with link stalls of up to
//! 190 ms on a loaded 2-core machine):
//! - bytes waiting in the pre-queue have a known read time, so admission can be dated in
//!   virtual time (see [`admit`](transfer::admit)): a wake-up that comes late because the machine is busy no
//!   longer leaves the emulated link idle;
//! - the socket is read in large steps (the pre-queue is refilled only once it is half empty).
//!   Reading a full socket a few kilobytes at a time also produced stalls that disappeared
//!   with a larger kernel receive buffer, which points at the receive window reopening in
//!   small steps (Linux withholds window updates smaller than one MSS, 64 KiB on loopback).
//!
//! With both, measured rates are within 0.1% of the configured ones from 1 to 1000 Mbit/s.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Poll, Token};

use super::config::{Direction, LinkConfig, PRE_QUEUE_BYTES};
use super::ring::Ring;
use super::shaper::{DelayLine, Handshake, Nanos, Shaper};
use super::stats::{Counters, DirCounters};
use super::tcp_model::{TcpModel, TcpModelKind};
use super::Shutdown;

mod event_loop;
mod transfer;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
/// Tokens from here on: `FIRST_CONN + 2 * slot` is the client socket, `+ 1` the upstream one.
const FIRST_CONN: usize = 2;

const UP: usize = 0;
const DOWN: usize = 1;

const MILLI: Nanos = 1_000_000;

/// How long before a sparse deadline the loop stops sleeping and spins (see `Relay::wait`).
const SPIN: Nanos = 60_000;

/// Capacity of a connection-direction's pre-queue (bytes read, not yet admitted to the
/// bottleneck queue).
const PRE_QUEUE: usize = PRE_QUEUE_BYTES;

/// The pre-queue is refilled from the socket only when at least this much of it is free, so that
/// the kernel sees large reads (see the module documentation).
const REFILL_AT: usize = PRE_QUEUE / 2;

/// Fill/admit rounds per service call; a connection that still has work after them is
/// serviced again after the others (fairness).
const ROUNDS: usize = 4;

/// Monotonic time as [`Nanos`] since the loop started.
struct Clock(Instant);

impl Clock {
    fn now(&self) -> Nanos {
        Nanos::try_from(self.0.elapsed().as_nanos()).unwrap_or(Nanos::MAX)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKind {
    Conn { slot: usize, gen: u64 },
    Lane(usize),
}

type Timers = BinaryHeap<Reverse<(Nanos, TimerKind)>>;

/// One direction of the link: the shared shaper and the connections waiting for queue room.
struct Lane {
    index: usize,
    shaper: Shaper,
    waiters: VecDeque<(usize, u64)>,
    armed: Option<Nanos>,
    /// Room worth waking up for: one chunk (or the whole queue if smaller).
    want: usize,
    /// Ring limit of each connection in this direction.
    ring_limit: usize,
}

impl Lane {
    /// Puts a connection-direction at the back of the line for queue room.
    fn join(&mut self, slot: usize, gen: u64, side: &mut Side, now: Nanos, timers: &mut Timers) {
        if !side.waiting {
            side.waiting = true;
            self.waiters.push_back((slot, gen));
        }
        self.arm(now, timers);
    }

    /// Makes sure a timer fires when the queue has room for the first waiter.
    fn arm(&mut self, now: Nanos, timers: &mut Timers) {
        if self.waiters.is_empty() {
            return;
        }
        let at = self.shaper.room_at(now, self.want);
        if self.armed.is_some_and(|a| a <= at) {
            return;
        }
        self.armed = Some(at);
        timers.push(Reverse((at, TimerKind::Lane(self.index))));
    }
}

/// One direction of one connection.
struct Side {
    ring: Ring,
    line: DelayLine,
    /// The source may have bytes (edge-triggered readiness not yet consumed).
    src_ready: bool,
    /// The source reached EOF (`Some(false)`) or failed (`Some(true)`).
    src_end: Option<bool>,
    /// When the source ended.
    end_at: Nanos,
    /// When the pre-queued bytes were read: (stream offset just past the read, time), oldest
    /// first. Admission never dates bytes before their read.
    reads: VecDeque<(u64, Nanos)>,
    /// Bytes read from the source so far.
    read_total: u64,
    /// The FIN/RST is scheduled on the delay line (after the pre-queue drained).
    src_done: bool,
    /// The destination may accept bytes.
    dst_ready: bool,
    /// The FIN was delivered (`shutdown(Write)` on the destination).
    fin_sent: bool,
    /// In its lane's line for queue room.
    waiting: bool,
    /// The destination failed: bytes are dropped and the source is no longer read.
    broken: bool,
    /// The read budget ran out with the source still readable: come back soon.
    more: bool,
    /// The emulated sender's congestion window (`None`: `--tcp-model none` or no RTT).
    tcp: Option<TcpModel>,
    /// The window is full until this instant: come back then (not in the lane's line).
    window_at: Option<Nanos>,
}

impl Side {
    fn new(limit: usize, model: Option<TcpModelKind>) -> Self {
        Side {
            tcp: model.map(TcpModel::new),
            window_at: None,
            ring: Ring::new(limit),
            line: DelayLine::new(),
            src_ready: false,
            src_end: None,
            end_at: 0,
            reads: VecDeque::new(),
            read_total: 0,
            src_done: false,
            dst_ready: false,
            fin_sent: false,
            waiting: false,
            broken: false,
            more: false,
        }
    }

    fn finished(&self) -> bool {
        self.fin_sent || self.broken
    }

    /// Bytes read from the source and not yet admitted to the bottleneck.
    fn pre_queued(&self) -> usize {
        usize::try_from(self.read_total - self.line.pushed()).unwrap_or(usize::MAX)
    }

    /// The oldest pre-queued read: bytes left in it and when it was read.
    fn front_read(&mut self) -> Option<(usize, Nanos)> {
        let admitted = self.line.pushed();
        while self.reads.front().is_some_and(|r| r.0 <= admitted) {
            self.reads.pop_front();
        }
        let &(end, at) = self.reads.front()?;
        Some((usize::try_from(end - admitted).unwrap_or(usize::MAX), at))
    }
}

/// A relayed connection.
struct Conn {
    gen: u64,
    client: TcpStream,
    upstream: Option<TcpStream>,
    connected: bool,
    hs: Handshake,
    sides: [Side; 2],
    /// The earliest timer this connection has in the heap.
    armed: Option<Nanos>,
}

/// What servicing a connection concluded.
enum Verdict {
    /// Keep it; wake it at this time (if any).
    Alive(Option<Nanos>),
    /// Both FINs delivered: close.
    Done,
    /// A reset, an error or a failed destination: close with RST.
    Abort,
}

/// The event loop.
pub(crate) struct Relay {
    poll: Poll,
    events: Events,
    listener: TcpListener,
    upstream: SocketAddr,
    rtt: Nanos,
    emulate_handshake: bool,
    tcp_model: Option<TcpModelKind>,
    lanes: [Lane; 2],
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    next_gen: u64,
    timers: Timers,
    clock: Clock,
    counters: Arc<Counters>,
    stop: Shutdown,
    touched: Vec<usize>,
    /// The deadline being waited for and since when (to tell sparse deadlines from dense).
    idle_since: Option<(Nanos, Nanos)>,
}

fn lane(config: &LinkConfig, dir: Direction, seed: u64) -> Lane {
    let params = config.direction_params(dir);
    let want = match params.bps {
        Some(_) => params.chunk_bytes.min(params.queue_bytes.max(1)),
        None => params.chunk_bytes,
    };
    Lane {
        index: dir.index(),
        shaper: Shaper::new(params, seed),
        waiters: VecDeque::new(),
        armed: None,
        want,
        ring_limit: config.buffer_limit(dir),
    }
}

/// Sends an RST instead of a FIN when the socket is closed.
fn set_abortive(stream: &TcpStream) {
    let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
}
