//! The relay's event loop: polling with sub-millisecond deadlines, accepting, timers, and
//! servicing the connections that something happened to.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use super::transfer::{admit, service_conn, Admission};
use super::*;

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
            tcp_model: config.effective_tcp_model(),
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

    /// Runs until the shutdown is triggered, at real-time priority where permitted (as the
    /// packet link's thread: a loaded machine must not delay deliveries by scheduler slices).
    pub(crate) fn run(mut self) -> io::Result<()> {
        let _ = crate::sched::tight_timers();
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
                Side::new(self.lanes[UP].ring_limit, self.tcp_model),
                Side::new(self.lanes[DOWN].ring_limit, self.tcp_model),
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
