//! Moving bytes for one connection: the handshake steps, reads into the pre-queue, admission
//! into the bottleneck queue (dated in virtual time), writes of due bytes, FINs and failures.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown as HalfClose, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;

use mio::{Interest, Poll};

use super::*;
use crate::shaper::MSS;

/// Advances one connection at `now`: handshake steps, writes of due bytes, reads within the
/// queue's room, FINs; returns when to come back.
#[allow(clippy::too_many_arguments)] // the relay's hot loop: disjoint borrows of its fields
pub(super) fn service_conn(
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
        if let Some(t) = side.window_at {
            soonest(t);
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
pub(super) enum Admission {
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
pub(super) fn admit(
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
    side.window_at = None;
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
        let mut n = left.min(lane.want).min(budget);
        let mut from = read_at;
        if let Some(model) = side.tcp.as_mut() {
            // The emulated sender's window: at most cwnd bytes in flight.
            let open = model.ready_at(read_at, n.min(MSS));
            dc.window_cuts.fetch_add(model.take_new_cuts(), Relaxed);
            if open > now {
                // Not in the lane's line: the window, not the queue, holds it back.
                side.window_at = Some(open);
                return admitted;
            }
            n = n.min(model.window(open));
            from = open;
        }
        let at = lane.shaper.room_at(from, n);
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
        if let Some(model) = side.tcp.as_mut() {
            model.on_send(at, n, pushed.ack_at, pushed.loss_seen_at);
        }
        dc.chunks.fetch_add(pushed.chunks, Relaxed);
        dc.segments.fetch_add(pushed.segments, Relaxed);
        if pushed.lost > 0 {
            dc.lost_chunks.fetch_add(pushed.lost, Relaxed);
            dc.lost_segments.fetch_add(pushed.lost_segments, Relaxed);
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
