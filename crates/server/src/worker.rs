//! Worker threads (one mio event loop each, connections pinned to a worker), the acceptor
//! that hands new connections to the least-loaded worker, and the per-loop timer heap.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::config::ServerConfig;
use crate::conn::Conn;
use crate::cpu_clock::ThreadClock;
use crate::ctx::Timers;
pub(crate) use crate::ctx::{Ctx, Shared};
use crate::date::DateCache;
use crate::log::warn;
use crate::shutdown::Shutdown;

/// A connection handed from the acceptor to a worker.
pub struct NewConn {
    /// The accepted socket.
    pub stream: std::net::TcpStream,
    /// Peer address.
    pub peer: SocketAddr,
    /// Accepted on a TLS listener.
    pub tls: bool,
}

/// Handle the acceptor uses to reach a worker.
pub struct WorkerHandle {
    /// New connections.
    pub tx: Sender<NewConn>,
    /// Wakes the worker's loop.
    pub waker: Arc<Waker>,
    /// Open connections on that worker.
    pub load: Arc<AtomicUsize>,
}

const WAKER: Token = Token(usize::MAX);
const LISTENER_BASE: usize = usize::MAX - 1024;
/// How often idle/slowloris deadlines are checked.
const SWEEP: Duration = Duration::from_millis(250);

struct Slot {
    conn: Option<Conn>,
    gen: u32,
}

/// One worker: an event loop and its connections.
pub struct Worker {
    poll: Poll,
    rx: Receiver<NewConn>,
    listeners: Vec<(TcpListener, bool)>,
    shared: Arc<Shared>,
    load: Arc<AtomicUsize>,
    /// Wakes this loop (also when its CPU clock is asked for: [`ThreadClock`]).
    waker: Arc<Waker>,
}

impl Worker {
    /// Creates a worker (its poll and waker) and the handle the acceptor keeps.
    /// `listeners`: accept directly in this loop (single-worker mode).
    pub fn new(
        shared: Arc<Shared>,
        listeners: Vec<(TcpListener, bool)>,
    ) -> io::Result<(Worker, WorkerHandle)> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        shared.shutdown.register(waker.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let load = Arc::new(AtomicUsize::new(0));
        let mut w = Worker {
            poll,
            rx,
            listeners,
            shared,
            load: load.clone(),
            waker: waker.clone(),
        };
        for (i, (l, _)) in w.listeners.iter_mut().enumerate() {
            w.poll
                .registry()
                .register(l, Token(LISTENER_BASE + i), Interest::READABLE)?;
        }
        Ok((w, WorkerHandle { tx, waker, load }))
    }

    /// Runs the loop until shutdown.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut slots: Vec<Slot> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut timers = Timers::default();
        let mut date = DateCache::default();
        let mut dirty: Vec<usize> = Vec::new();
        let mut ready: Vec<usize> = Vec::new();
        let mut ready_now: Vec<usize> = Vec::new();
        let mut next_sweep = Instant::now() + SWEEP;
        let shared = self.shared.clone();
        let max_input = input_limit(&shared.config);
        let mut clock = ThreadClock::here(Some(self.waker.clone()));

        // The context a connection's callbacks get: this worker's shared state, clock, date and
        // timers, and the slot (with its generation) the connection lives in.
        macro_rules! ctx {
            ($i:expr, $gen:expr, $now:expr) => {
                Ctx {
                    shared: &shared,
                    now: $now,
                    date: &date,
                    timers: &mut timers,
                    slot: $i,
                    gen: $gen,
                }
            };
        }

        macro_rules! mark_dirty {
            ($i:expr) => {
                if let Some(c) = slots.get_mut($i).and_then(|s| s.conn.as_mut()) {
                    if !c.dirty {
                        c.dirty = true;
                        dirty.push($i);
                    }
                }
            };
        }

        loop {
            let now = Instant::now();
            let timeout = if !ready.is_empty() {
                Duration::ZERO
            } else {
                let until = timers
                    .next_deadline()
                    .map_or(next_sweep, |t| t.min(next_sweep));
                until.saturating_duration_since(now)
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            clock.turn();
            if shared.shutdown.is_triggered() {
                break;
            }
            let now = Instant::now();
            date.update();

            for ev in events.iter() {
                match ev.token() {
                    WAKER => {
                        while let Ok(nc) = self.rx.try_recv() {
                            if let Some(i) = self.add_conn(
                                nc.stream, nc.peer, nc.tls, &mut slots, &mut free, max_input, now,
                            ) {
                                ready.push(i);
                            }
                        }
                    }
                    Token(t) if t >= LISTENER_BASE => {
                        let idx = t - LISTENER_BASE;
                        while let Some((l, tls)) = self.listeners.get(idx) {
                            let tls = *tls;
                            match l.accept() {
                                Ok((s, peer)) => {
                                    self.load.fetch_add(1, Ordering::Relaxed);
                                    if let Some(i) = self.add_mio_conn(
                                        s, peer, tls, &mut slots, &mut free, max_input, now,
                                    ) {
                                        ready.push(i);
                                    }
                                }
                                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                                Err(e) => {
                                    warn!("accept: {e}");
                                    break;
                                }
                            }
                        }
                    }
                    Token(i) => {
                        let Some(slot) = slots.get_mut(i) else {
                            continue;
                        };
                        let gen = slot.gen;
                        let Some(conn) = slot.conn.as_mut() else {
                            continue;
                        };
                        conn.on_event(
                            ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                            ev.is_writable() || ev.is_write_closed() || ev.is_error(),
                        );
                        let mut ctx = ctx!(i, gen, now);
                        conn.drive(&mut ctx);
                        mark_dirty!(i);
                    }
                }
            }

            while let Some((i, gen, tag)) = timers.pop_expired(now) {
                let Some(slot) = slots.get_mut(i) else {
                    continue;
                };
                if slot.gen != gen {
                    continue;
                }
                if let Some(conn) = slot.conn.as_mut() {
                    let mut ctx = ctx!(i, gen, now);
                    conn.on_timer(tag, &mut ctx);
                    mark_dirty!(i);
                }
            }

            std::mem::swap(&mut ready, &mut ready_now);
            for i in ready_now.drain(..) {
                let Some(slot) = slots.get_mut(i) else {
                    continue;
                };
                let gen = slot.gen;
                if let Some(conn) = slot.conn.as_mut() {
                    let mut ctx = ctx!(i, gen, now);
                    conn.drive(&mut ctx);
                    mark_dirty!(i);
                }
            }

            if now >= next_sweep {
                next_sweep = now + SWEEP;
                for i in 0..slots.len() {
                    let gen = slots[i].gen;
                    if let Some(conn) = slots[i].conn.as_mut() {
                        let mut ctx = ctx!(i, gen, now);
                        conn.check_timeout(&mut ctx);
                        mark_dirty!(i);
                    }
                }
            }

            for i in dirty.drain(..) {
                let Some(slot) = slots.get_mut(i) else {
                    continue;
                };
                let Some(conn) = slot.conn.as_mut() else {
                    continue;
                };
                conn.dirty = false;
                conn.flush(now);
                if conn.is_dead() {
                    self.remove(i, &mut slots, &mut free);
                } else if conn.has_pending_work() {
                    ready.push(i);
                }
            }
        }

        // Shutdown: a GOAWAY for HTTP/2 connections, a best-effort flush, then close.
        let now = Instant::now();
        for slot in slots.iter_mut() {
            if let Some(conn) = slot.conn.as_mut() {
                conn.on_shutdown();
                conn.flush(now);
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)] // hot path: borrows split per field, no context struct
    fn add_conn(
        &mut self,
        stream: std::net::TcpStream,
        peer: SocketAddr,
        tls: bool,
        slots: &mut Vec<Slot>,
        free: &mut Vec<usize>,
        max_input: usize,
        now: Instant,
    ) -> Option<usize> {
        if let Err(e) = stream.set_nonblocking(true) {
            warn!("{peer}: set_nonblocking: {e}");
            self.load.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        self.add_mio_conn(
            TcpStream::from_std(stream),
            peer,
            tls,
            slots,
            free,
            max_input,
            now,
        )
    }

    #[allow(clippy::too_many_arguments)] // hot path: borrows split per field, no context struct
    fn add_mio_conn(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        tls: bool,
        slots: &mut Vec<Slot>,
        free: &mut Vec<usize>,
        max_input: usize,
        now: Instant,
    ) -> Option<usize> {
        let _ = stream.set_nodelay(true);
        let tls_cfg = if tls {
            match &self.shared.tls {
                Some(c) => Some(c),
                None => {
                    self.load.fetch_sub(1, Ordering::Relaxed);
                    return None;
                }
            }
        } else {
            None
        };
        let i = free.pop().unwrap_or_else(|| {
            slots.push(Slot { conn: None, gen: 0 });
            slots.len() - 1
        });
        let slot = &mut slots[i];
        let mut conn = match Conn::new(stream, peer, tls_cfg, max_input, now) {
            Ok(c) => c,
            Err(e) => {
                warn!("{peer}: {e}");
                free.push(i);
                self.load.fetch_sub(1, Ordering::Relaxed);
                return None;
            }
        };
        if let Err(e) = self.poll.registry().register(
            conn.socket(),
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            warn!("{peer}: register: {e}");
            free.push(i);
            self.load.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        slot.conn = Some(conn);
        Some(i)
    }

    fn remove(&mut self, i: usize, slots: &mut [Slot], free: &mut Vec<usize>) {
        if let Some(slot) = slots.get_mut(i) {
            if let Some(mut conn) = slot.conn.take() {
                let _ = self.poll.registry().deregister(conn.socket());
                slot.gen = slot.gen.wrapping_add(1);
                free.push(i);
                self.load.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Largest input buffer per connection: a request head, or a whole HTTP/2 frame.
pub fn input_limit(config: &ServerConfig) -> usize {
    (config.max_frame_size as usize + 9 + 4096)
        .max(config.max_header_list_size as usize + 4096)
        .max(64 * 1024)
}

/// Acceptor loop (multi-worker mode): accepts on every listener and hands each connection
/// to the worker with the fewest open connections.
pub fn run_acceptor(
    mut listeners: Vec<(TcpListener, bool)>,
    workers: Vec<WorkerHandle>,
    shutdown: Shutdown,
) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let mut clock = ThreadClock::here(Some(waker.clone()));
    shutdown.register(waker);
    for (i, (l, _)) in listeners.iter_mut().enumerate() {
        poll.registry()
            .register(l, Token(LISTENER_BASE + i), Interest::READABLE)?;
    }
    let mut events = Events::with_capacity(64);
    let mut next = 0usize;
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        clock.turn();
        if shutdown.is_triggered() {
            return Ok(());
        }
        for ev in events.iter() {
            let Some(idx) = ev.token().0.checked_sub(LISTENER_BASE) else {
                continue;
            };
            let Some((l, tls)) = listeners.get(idx) else {
                continue;
            };
            loop {
                match l.accept() {
                    Ok((s, peer)) => {
                        // Least loaded; ties rotate so equal workers share the work.
                        let n = workers.len();
                        let mut best = next % n;
                        for k in 0..n {
                            let j = (next + k) % n;
                            if workers[j].load.load(Ordering::Relaxed)
                                < workers[best].load.load(Ordering::Relaxed)
                            {
                                best = j;
                            }
                        }
                        next = next.wrapping_add(1);
                        let w = &workers[best];
                        // mio sockets are non-blocking std sockets underneath.
                        let std_stream = into_std(s);
                        w.load.fetch_add(1, Ordering::Relaxed);
                        if w.tx
                            .send(NewConn {
                                stream: std_stream,
                                peer,
                                tls: *tls,
                            })
                            .is_ok()
                        {
                            let _ = w.waker.wake();
                        } else {
                            w.load.fetch_sub(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        warn!("accept: {e}");
                        break;
                    }
                }
            }
        }
    }
}

fn into_std(s: TcpStream) -> std::net::TcpStream {
    std::net::TcpStream::from(std::os::fd::OwnedFd::from(s))
}
