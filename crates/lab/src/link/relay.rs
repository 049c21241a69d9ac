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
//! Why a pre-queue rather than reading the socket only when the queue has room (the first
//! design, which lost 2-7% of the configured rate at 10-100 Mbit/s with link stalls of up to
//! 190 ms on a loaded 2-core machine):
//! - bytes waiting in the pre-queue have a known read time, so admission can be dated in
//!   virtual time (see [`admit`]): a wake-up that comes late because the machine is busy no
//!   longer leaves the emulated link idle;
//! - the socket is read in large steps (the pre-queue is refilled only once it is half empty).
//!   Reading a full socket a few kilobytes at a time also produced stalls that disappeared
//!   with a larger kernel receive buffer, which points at the receive window reopening in
//!   small steps (Linux withholds window updates smaller than one MSS, 64 KiB on loopback).
//!
//! With both, measured rates are within 0.1% of the configured ones from 1 to 1000 Mbit/s.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown as HalfClose, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use super::config::{Direction, LinkConfig, PRE_QUEUE_BYTES};
use super::ring::Ring;
use super::shaper::{DelayLine, Handshake, Nanos, Shaper};
use super::stats::{Counters, DirCounters};
use super::Shutdown;

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
}

impl Side {
    fn new(limit: usize) -> Self {
        Side {
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

impl Relay {
    /// Sets up the loop on `listener` (already bound; made non-blocking here).
    pub(crate) fn new(
        listener: std::net::TcpListener,
        config: &LinkConfig,
        counters: Arc<Counters>,
        stop: Shutdown,
    ) -> io::Result<Relay> {
        listener.set_nonblocking(true)?;
        let mut listener = TcpListener::from_std(listener);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        stop.install(waker);
        let rtt = Nanos::try_from(config.rtt.as_nanos()).unwrap_or(Nanos::MAX);
        Ok(Relay {
            poll,
            events: Events::with_capacity(1024),
            listener,
            upstream: config.upstream,
            rtt,
            emulate_handshake: config.emulate_handshake,
            lanes: [
                lane(config, Direction::Up, config.seed),
                lane(config, Direction::Down, config.seed ^ 0x5bd1_e995_d0d0_cafe),
            ],
            conns: Vec::new(),
            free: Vec::new(),
            next_gen: 0,
            timers: BinaryHeap::new(),
            clock: Clock(Instant::now()),
            counters,
            stop,
            touched: Vec::new(),
            idle_since: None,
        })
    }

    /// Runs until the shutdown is triggered.
    pub(crate) fn run(mut self) -> io::Result<()> {
        let result = self.run_loop();
        for slot in 0..self.conns.len() {
            self.close(slot, false);
        }
        let _ = self.poll.registry().deregister(&mut self.listener);
        result
    }

    fn run_loop(&mut self) -> io::Result<()> {
        loop {
            if self.stop.is_triggered() {
                return Ok(());
            }
            let deadline = self.timers.peek().map(|t| t.0 .0);
            self.wait(deadline)?;
            self.dispatch_events()?;
            self.fire_timers();
            self.service_touched();
        }
    }

    /// Polls for events until `deadline`, precisely: whole milliseconds in `epoll_wait` (minus
    /// its slack), the sub-millisecond rest in `nanosleep`. When the loop has been idle for a millisecond or
    /// more before a deadline (sparse, latency-sensitive traffic such as request/response
    /// exchanges), the last [`SPIN`] nanoseconds are spun instead, which removes most of the
    /// wake-up latency (about 0.1 ms per hop otherwise) for at most 6% of a core; dense
    /// deadlines (bulk transfers, whose rate is exact in virtual time anyway) never spin.
    fn wait(&mut self, deadline: Option<Nanos>) -> io::Result<()> {
        let now = self.clock.now();
        let Some(d) = deadline else {
            self.idle_since = None;
            return self.poll_once(None);
        };
        if d <= now {
            return self.poll_once(Some(Duration::ZERO));
        }
        let since = match self.idle_since {
            Some((for_deadline, since)) if for_deadline == d => since,
            _ => {
                self.idle_since = Some((d, now));
                now
            }
        };
        // epoll_wait may overshoot by its timer slack (0.1% of the timeout, at least 50 us):
        // aim that much early and finish below.
        let left = d - now;
        let early = left - (left / 1000 + 100_000).min(left);
        if early >= MILLI {
            return self.poll_once(Some(Duration::from_millis(early / MILLI)));
        }
        self.poll_once(Some(Duration::ZERO))?;
        if !self.events.is_empty() {
            return Ok(());
        }
        let spin = if d - since >= MILLI { SPIN } else { 0 };
        let left = d.saturating_sub(self.clock.now());
        if left > spin {
            std::thread::sleep(Duration::from_nanos(left - spin));
        }
        while self.clock.now() < d {
            std::hint::spin_loop();
        }
        Ok(())
    }

    fn poll_once(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                self.events.clear();
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn dispatch_events(&mut self) -> io::Result<()> {
        let mut accept = false;
        let Relay {
            events,
            conns,
            touched,
            ..
        } = self;
        for event in events.iter() {
            match event.token() {
                LISTENER => accept = true,
                WAKER => {}
                Token(t) => {
                    let slot = (t - FIRST_CONN) / 2;
                    let is_upstream = (t - FIRST_CONN) % 2 == 1;
                    let Some(conn) = conns.get_mut(slot).and_then(Option::as_mut) else {
                        continue;
                    };
                    let readable =
                        event.is_readable() || event.is_read_closed() || event.is_error();
                    let writable =
                        event.is_writable() || event.is_write_closed() || event.is_error();
                    let (src_of, dst_of) = if is_upstream { (DOWN, UP) } else { (UP, DOWN) };
                    if readable {
                        conn.sides[src_of].src_ready = true;
                    }
                    if writable {
                        conn.sides[dst_of].dst_ready = true;
                    }
                    touched.push(slot);
                }
            }
        }
        if accept {
            self.accept_all()?;
        }
        Ok(())
    }

    fn accept_all(&mut self) -> io::Result<()> {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => self.add_conn(stream)?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                // Out of file descriptors and the like: leave the rest in the backlog.
                Err(_) => return Ok(()),
            }
        }
    }

    fn add_conn(&mut self, mut client: TcpStream) -> io::Result<()> {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        let token = Token(FIRST_CONN + 2 * slot);
        if self
            .poll
            .registry()
            .register(&mut client, token, Interest::READABLE | Interest::WRITABLE)
            .is_err()
        {
            self.free.push(slot);
            return Ok(());
        }
        let _ = client.set_nodelay(true);
        let now = self.clock.now();
        self.next_gen += 1;
        self.conns[slot] = Some(Conn {
            gen: self.next_gen,
            client,
            upstream: None,
            connected: false,
            hs: Handshake::new(now, self.rtt, self.emulate_handshake),
            sides: [
                Side::new(self.lanes[UP].ring_limit),
                Side::new(self.lanes[DOWN].ring_limit),
            ],
            armed: None,
        });
        self.counters.connections.fetch_add(1, Relaxed);
        self.counters.active.fetch_add(1, Relaxed);
        self.touched.push(slot);
        Ok(())
    }

    fn fire_timers(&mut self) {
        let now = self.clock.now();
        while let Some(&Reverse((at, kind))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            match kind {
                TimerKind::Conn { slot, gen } => {
                    if let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) {
                        if conn.gen == gen && conn.armed == Some(at) {
                            conn.armed = None;
                            self.touched.push(slot);
                        }
                    }
                }
                TimerKind::Lane(d) => {
                    if self.lanes[d].armed == Some(at) {
                        self.lanes[d].armed = None;
                        self.serve_lane(d);
                    }
                }
            }
        }
    }

    /// Room appeared in direction `d`'s queue: let the waiting connections read, one chunk
    /// each, in turn.
    fn serve_lane(&mut self, d: usize) {
        let now = self.clock.now();
        let Relay {
            lanes,
            conns,
            timers,
            counters,
            touched,
            ..
        } = self;
        let lane = &mut lanes[d];
        for _ in 0..lane.waiters.len() {
            let Some((slot, gen)) = lane.waiters.pop_front() else {
                break;
            };
            let Some(conn) = conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            if conn.gen != gen || !conn.sides[d].waiting {
                continue;
            }
            conn.sides[d].waiting = false;
            let budget = lane.want;
            let outcome = admit(
                conn,
                slot,
                d,
                lane,
                &counters.dirs[d],
                timers,
                now,
                budget,
                true,
            );
            touched.push(slot);
            if outcome == Admission::NoRoom {
                // No room for its chunk yet: it stays first in line.
                break;
            }
        }
        lane.arm(now, timers);
    }

    fn service_touched(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        let mut touched = std::mem::take(&mut self.touched);
        touched.sort_unstable();
        touched.dedup();
        for &slot in &touched {
            self.service(slot);
        }
        touched.clear();
        // Keep the allocation; anything pushed meanwhile is serviced next round.
        touched.append(&mut self.touched);
        self.touched = touched;
    }

    fn service(&mut self, slot: usize) {
        let now = self.clock.now();
        let verdict = {
            let Relay {
                poll,
                upstream,
                lanes,
                conns,
                timers,
                counters,
                ..
            } = self;
            let Some(conn) = conns.get_mut(slot).and_then(Option::as_mut) else {
                return;
            };
            service_conn(conn, slot, *upstream, poll, lanes, timers, counters, now)
        };
        match verdict {
            Verdict::Alive(next) => {
                if let (Some(at), Some(conn)) =
                    (next, self.conns.get_mut(slot).and_then(Option::as_mut))
                {
                    if conn.armed.map_or(true, |a| at < a) {
                        conn.armed = Some(at);
                        self.timers.push(Reverse((
                            at,
                            TimerKind::Conn {
                                slot,
                                gen: conn.gen,
                            },
                        )));
                    }
                }
            }
            Verdict::Done => self.close(slot, false),
            Verdict::Abort => self.close(slot, true),
        }
    }

    fn close(&mut self, slot: usize, abort: bool) {
        let Some(mut conn) = self.conns.get_mut(slot).and_then(Option::take) else {
            return;
        };
        let registry = self.poll.registry();
        let _ = registry.deregister(&mut conn.client);
        if abort {
            set_abortive(&conn.client);
        }
        if let Some(up) = conn.upstream.as_mut() {
            let _ = registry.deregister(up);
            if abort {
                set_abortive(up);
            }
        }
        for (d, side) in conn.sides.iter_mut().enumerate() {
            let dropped = side.pre_queued() as u64 + side.line.discard();
            if dropped > 0 {
                self.counters.dirs[d]
                    .bytes_dropped
                    .fetch_add(dropped, Relaxed);
            }
        }
        if abort {
            self.counters.resets.fetch_add(1, Relaxed);
        }
        self.counters.active.fetch_sub(1, Relaxed);
        self.free.push(slot);
    }
}

/// Advances one connection at `now`: handshake steps, writes of due bytes, reads within the
/// queue's room, FINs; returns when to come back.
#[allow(clippy::too_many_arguments)] // the relay's hot loop: disjoint borrows of its fields
fn service_conn(
    conn: &mut Conn,
    slot: usize,
    upstream_addr: SocketAddr,
    poll: &Poll,
    lanes: &mut [Lane; 2],
    timers: &mut Timers,
    counters: &Counters,
    now: Nanos,
) -> Verdict {
    // Handshake: open the upstream connection when a real server would accept it.
    if conn.upstream.is_none() && now >= conn.hs.connect_at {
        let token = Token(FIRST_CONN + 2 * slot + 1);
        let opened = TcpStream::connect(upstream_addr).and_then(|mut s| {
            poll.registry()
                .register(&mut s, token, Interest::READABLE | Interest::WRITABLE)?;
            Ok(s)
        });
        match opened {
            Ok(s) => conn.upstream = Some(s),
            Err(_) => {
                counters.connect_failures.fetch_add(1, Relaxed);
                return Verdict::Abort;
            }
        }
    }
    if let (Some(up), false) = (conn.upstream.as_ref(), conn.connected) {
        match connect_state(up) {
            Ok(true) => {
                let _ = up.set_nodelay(true);
                conn.connected = true;
                conn.sides[UP].dst_ready = true;
                conn.sides[DOWN].src_ready = true;
            }
            Ok(false) => {}
            Err(_) => {
                counters.connect_failures.fetch_add(1, Relaxed);
                return Verdict::Abort;
            }
        }
    }

    let mut next: Option<Nanos> = None;
    let mut soonest = |t: Nanos| next = Some(next.map_or(t, |n| n.min(t)));
    for d in [UP, DOWN] {
        let lane = &mut lanes[d];
        let dc = &counters.dirs[d];
        conn.sides[d].more = false;
        let can_read = conn.connected || d == UP;
        let gate_open = d == DOWN || now >= conn.hs.read_from;
        if !write_side(conn, d, dc, now) {
            return Verdict::Abort;
        }
        if can_read {
            let mut progress = true;
            for _ in 0..ROUNDS {
                let read = fill(conn, d, dc, now);
                let admitted = gate_open
                    && admit(conn, slot, d, lane, dc, timers, now, usize::MAX, false)
                        == Admission::Progress;
                progress = read > 0 || admitted;
                if !progress {
                    break;
                }
            }
            if progress {
                conn.sides[d].more = true;
            }
        }
        if !write_side(conn, d, dc, now) {
            return Verdict::Abort;
        }
        let side = &conn.sides[d];
        let has_dst = conn.connected || d == DOWN;
        if has_dst && side.dst_ready && !side.broken {
            if let Some(t) = side.line.next_after(now) {
                soonest(t);
            }
        }
        if side.more {
            soonest(now);
        }
        if !gate_open {
            soonest(conn.hs.read_from);
        }
    }
    if conn.upstream.is_none() {
        soonest(conn.hs.connect_at);
    }
    if conn.sides.iter().all(Side::finished) {
        if conn.sides.iter().any(|s| s.broken) {
            return Verdict::Abort;
        }
        return Verdict::Done;
    }
    Verdict::Alive(next)
}

/// Whether a non-blocking connect has completed (`Ok(false)`: still in progress).
fn connect_state(stream: &TcpStream) -> io::Result<bool> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e),
    }
}

/// What [`admit`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admission {
    /// Some bytes entered the queue.
    Progress,
    /// Nothing to admit (or nothing allowed), not for lack of room.
    Idle,
    /// Called from the line, admitted nothing for lack of room; it kept its place in line.
    NoRoom,
}

/// Refills direction `d`'s pre-queue from its source socket, in large reads. Returns the bytes
/// read.
fn fill(conn: &mut Conn, d: usize, dc: &DirCounters, now: Nanos) -> usize {
    let Conn {
        client,
        upstream,
        sides,
        ..
    } = conn;
    let src = if d == UP {
        &*client
    } else {
        match upstream.as_ref() {
            Some(s) => s,
            None => return 0,
        }
    };
    let side = &mut sides[d];
    let mut total = 0;
    loop {
        if !side.src_ready || side.src_end.is_some() || side.broken {
            return total;
        }
        let pre = side.pre_queued();
        let space = PRE_QUEUE.saturating_sub(pre).min(side.ring.free());
        if space == 0 || (pre > 0 && space < REFILL_AT) {
            return total;
        }
        let window = side.ring.write_window(space);
        let mut reader = src;
        match reader.read(window) {
            Ok(0) => {
                side.src_end = Some(false);
                side.end_at = now;
                return total;
            }
            Ok(n) => {
                side.ring.commit(n);
                total += n;
                side.read_total += n as u64;
                match side.reads.back_mut() {
                    Some(last) if last.1 == now => last.0 = side.read_total,
                    _ => side.reads.push_back((side.read_total, now)),
                }
                dc.bytes_in.fetch_add(n as u64, Relaxed);
                dc.max_conn_held.fetch_max(side.ring.len() as u64, Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                side.src_ready = false;
                return total;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                side.src_ready = false;
                side.src_end = Some(true);
                side.end_at = now;
                return total;
            }
        }
    }
}

/// Moves pre-queued bytes of direction `d` into the bottleneck queue, one chunk at a time,
/// while it has room and the budget lasts; schedules the FIN/RST once the pre-queue is empty
/// after the source ended. When the queue is full the connection joins the lane's line.
/// `in_line`: called from the lane's round-robin, which puts a connection whose budget ran out
/// back in line.
///
/// Each chunk enters the queue at the virtual instant it would have on a real path: when it was
/// read or when the queue had room for it, whichever is later, not when this loop happens to
/// run. A wake-up delayed by a busy machine therefore does not leave the emulated link idle;
/// the bytes it held back are simply written late (in a burst) and the average rate stays
/// exact. The instant is never before the read, so delays are never shortened.
#[allow(clippy::too_many_arguments)] // the relay's hot loop: disjoint borrows of its fields
fn admit(
    conn: &mut Conn,
    slot: usize,
    d: usize,
    lane: &mut Lane,
    dc: &DirCounters,
    timers: &mut Timers,
    now: Nanos,
    mut budget: usize,
    in_line: bool,
) -> Admission {
    let gen = conn.gen;
    let side = &mut conn.sides[d];
    let mut admitted = Admission::Idle;
    loop {
        if side.waiting || side.broken || side.src_done {
            return admitted;
        }
        let Some((left, read_at)) = side.front_read() else {
            if let Some(reset) = side.src_end {
                // A FIN or reset travels behind the bytes that preceded it.
                side.src_done = true;
                lane.shaper.push_fin(side.end_at, &mut side.line, reset);
            }
            return admitted;
        };
        if budget == 0 {
            if in_line {
                lane.join(slot, gen, side, now, timers);
            } else {
                side.more = true;
            }
            return admitted;
        }
        if !in_line && !lane.waiters.is_empty() {
            // Others are waiting for room: queue up behind them (fair shares).
            lane.join(slot, gen, side, now, timers);
            return admitted;
        }
        let n = left.min(lane.want).min(budget);
        let at = lane.shaper.room_at(read_at, n);
        if at > now {
            if in_line && admitted == Admission::Idle {
                // Served out of the line but the room is not there yet: keep its place.
                side.waiting = true;
                lane.waiters.push_front((slot, gen));
                lane.arm(now, timers);
                return Admission::NoRoom;
            } else {
                lane.join(slot, gen, side, now, timers);
            }
            return admitted;
        }
        budget -= n;
        let pushed = lane.shaper.push(at, n, &mut side.line);
        admitted = Admission::Progress;
        dc.chunks.fetch_add(pushed.chunks, Relaxed);
        if pushed.lost > 0 {
            dc.lost_chunks.fetch_add(pushed.lost, Relaxed);
        }
        dc.max_queue_bytes
            .fetch_max(pushed.queue_bytes as u64, Relaxed);
    }
}

/// Writes direction `d`'s due bytes and, once they are all out, its due FIN. Returns `false`
/// when the connection must be aborted (a reset arrived at its delivery time).
fn write_side(conn: &mut Conn, d: usize, dc: &DirCounters, now: Nanos) -> bool {
    let Conn {
        client,
        upstream,
        sides,
        connected,
        ..
    } = conn;
    let dst = if d == DOWN {
        &*client
    } else {
        match (upstream.as_ref(), *connected) {
            (Some(s), true) => s,
            _ => return true,
        }
    };
    let side = &mut sides[d];
    if side.broken || side.fin_sent {
        return true;
    }
    while side.dst_ready {
        let due = side.line.due(now);
        if due == 0 {
            break;
        }
        let (a, b) = side.ring.read_slices(due);
        let mut writer = dst;
        let result = if b.is_empty() {
            writer.write(a)
        } else {
            writer.write_vectored(&[IoSlice::new(a), IoSlice::new(b)])
        };
        match result {
            Ok(0) => return fail(side, dc),
            Ok(n) => {
                side.ring.consume(n);
                side.line.consume(n);
                dc.bytes_out.fetch_add(n as u64, Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => side.dst_ready = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return fail(side, dc),
        }
    }
    if let Some(fin) = side.line.fin_due(now) {
        if fin.reset {
            return false;
        }
        let _ = dst.shutdown(HalfClose::Write);
        side.fin_sent = true;
    }
    true
}

/// The destination of `side` failed: drop its bytes and stop reading its source. The other
/// direction still delivers what it holds; then the connection is reset.
fn fail(side: &mut Side, dc: &DirCounters) -> bool {
    side.broken = true;
    side.src_ready = false;
    let dropped = side.line.discard() + side.pre_queued() as u64;
    side.read_total = side.line.pushed();
    side.reads.clear();
    side.ring.clear();
    dc.bytes_dropped.fetch_add(dropped, Relaxed);
    true
}
