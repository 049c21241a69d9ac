//! One worker: a mio event loop owning its client connections, its upstream connections
//! and pools, and its counters (nothing shared with other workers until a snapshot).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::buf::SparePool;
use crate::config::ProxyConfig;
use crate::front::{FState, Front};
use crate::io::FrontIo;
use crate::slab::Slab;
use crate::stats::{Stats, StatsHandle};
use crate::upstream::Up;

mod exchange;
mod front;
mod h2;
mod pool;
mod up;

/// Read-only state shared by the workers.
pub struct Shared {
    /// Configuration.
    pub config: ProxyConfig,
    /// rustls configuration of the TLS listeners.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Stop handle.
    pub shutdown: h2lab_server::Shutdown,
    /// Counter snapshots.
    pub stats: StatsHandle,
}

const WAKER: Token = Token(usize::MAX);
const LISTENER_BASE: usize = usize::MAX - 64;
/// Output queued beyond this stops the other side from producing more.
const HIGH: usize = 64 * 1024;
/// Most unread client input.
const FRONT_MAX_IN: usize = 64 * 1024;
/// Most unread upstream input (holds any HTTP/2 frame we accept).
const UP_MAX_IN: usize = 128 * 1024;
/// Room offered to each upstream read: large response bodies come in few reads (and leave
/// by write-through in few writes).
const UP_READ_CHUNK: usize = 64 * 1024;

fn ftoken(i: usize) -> Token {
    Token(i << 1)
}

fn utoken(i: usize) -> Token {
    Token((i << 1) | 1)
}

/// Why no upstream connection was handed out.
enum Acq {
    /// Connecting failed at once.
    Refused,
    /// h2c-mux: every connection is at its stream limit and the pool is full.
    Wait,
    /// h2c-mux: the request waited for a stream slot for the upstream timeout (not asked of
    /// the pool: decided before).
    WaitedTooLong,
}

/// One event loop.
pub struct Worker {
    poll: Poll,
    registry: Registry,
    listeners: Vec<(TcpListener, bool)>,
    shared: Arc<Shared>,
    slot: usize,
    published: u64,
    fronts: Slab<Front>,
    ups: Slab<Up>,
    /// Per upstream: idle connections (h1, h2c) or every open connection (h2c-mux).
    idle: Vec<Vec<(usize, u32)>>,
    waiting: VecDeque<(usize, u32)>,
    rr: usize,
    stats: Stats,
    fwork: Vec<usize>,
    uwork: Vec<usize>,
    touched: Vec<usize>,
    scratch: Vec<u8>,
    lines: Vec<u8>,
    /// Storage of empty upstream input buffers, lent to the next upstream read.
    spare: SparePool,
    now: Instant,
}

impl Worker {
    /// A worker accepting on `listeners` (clones of the bound sockets).
    pub fn new(
        shared: Arc<Shared>,
        listeners: Vec<(std::net::TcpListener, bool)>,
    ) -> io::Result<Worker> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        shared.shutdown.register(waker.clone());
        let slot = shared.stats.add_worker(waker);
        let registry = poll.registry().try_clone()?;
        let mut ls = Vec::new();
        for (k, (l, tls)) in listeners.into_iter().enumerate() {
            l.set_nonblocking(true)?;
            let mut l = TcpListener::from_std(l);
            registry.register(&mut l, Token(LISTENER_BASE + k), Interest::READABLE)?;
            ls.push((l, tls));
        }
        let n = shared.config.upstreams.len();
        Ok(Worker {
            poll,
            registry,
            listeners: ls,
            shared,
            slot,
            published: 0,
            fronts: Slab::default(),
            ups: Slab::default(),
            idle: vec![Vec::new(); n],
            waiting: VecDeque::new(),
            rr: 0,
            stats: Stats::default(),
            fwork: Vec::new(),
            uwork: Vec::new(),
            touched: Vec::new(),
            scratch: Vec::new(),
            lines: Vec::new(),
            spare: SparePool::default(),
            now: Instant::now(),
        })
    }

    /// Runs until shutdown; returns this worker's counters.
    pub fn run(mut self) -> io::Result<Stats> {
        let mut events = Events::with_capacity(1024);
        let sweep_every = (self.shared.config.upstream_timeout / 4)
            .clamp(Duration::from_millis(5), Duration::from_millis(250));
        let mut next_sweep = Instant::now() + sweep_every;
        loop {
            let timeout = next_sweep.saturating_duration_since(Instant::now());
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            if self.shared.shutdown.is_triggered() {
                break;
            }
            self.now = Instant::now();
            for ev in events.iter() {
                let t = ev.token();
                if t == WAKER {
                    continue;
                }
                if t.0 >= LISTENER_BASE {
                    self.accept(t.0 - LISTENER_BASE);
                    continue;
                }
                let i = t.0 >> 1;
                let hup = ev.is_read_closed() || ev.is_error();
                let readable = ev.is_readable() || hup;
                if t.0 & 1 == 0 {
                    if let Some(f) = self.fronts.at(i) {
                        f.want_read |= readable;
                        f.hup |= hup;
                        self.queue_front(i);
                    }
                } else if let Some(u) = self.ups.at(i) {
                    u.want_read |= readable;
                    u.hup |= hup;
                    self.queue_up(i);
                }
            }
            self.drain();
            if self.now >= next_sweep {
                self.sweep();
                self.drain();
                next_sweep = self.now + sweep_every;
            }
            let asked = self.shared.stats.asked();
            if asked > self.published {
                self.published = asked;
                let snap = self.snapshot();
                self.shared.stats.publish(self.slot, asked, snap);
            }
        }
        let s = self.snapshot();
        self.shared.stats.publish(self.slot, u64::MAX, s);
        Ok(s)
    }

    fn snapshot(&mut self) -> Stats {
        let mut s = self.stats;
        s.open_exchanges = self
            .fronts
            .iter_mut()
            .filter(|(_, f)| f.link.is_some() || f.waiting)
            .count() as u64;
        s.open_upstream_connections = self.ups.len() as u64;
        s.open_upstream_streams = self.ups.iter_mut().map(|(_, u)| u.in_flight() as u64).sum();
        s.largest_client_queue = self
            .fronts
            .iter_mut()
            .map(|(_, f)| {
                let spill: usize =
                    f.h2.as_ref()
                        .map_or(0, |h| h.streams.iter().map(|st| st.spill.len()).sum());
                (f.out.len() + spill) as u64
            })
            .max()
            .unwrap_or(0);
        s
    }

    fn accept(&mut self, k: usize) {
        loop {
            let Some((l, tls)) = self.listeners.get(k) else {
                return;
            };
            let tls = *tls;
            match l.accept() {
                Ok((sock, peer)) => {
                    let _ = sock.set_nodelay(true);
                    let cfg = if tls { self.shared.tls.as_ref() } else { None };
                    let Ok(io) = FrontIo::new(sock, cfg) else {
                        continue;
                    };
                    let f = Front::new(io, peer, &self.shared.config.front, self.now);
                    let (i, _) = self.fronts.insert(f);
                    let ok = self
                        .fronts
                        .at(i)
                        .map(|f| f.io.register(&self.registry, ftoken(i)).is_ok());
                    if ok != Some(true) {
                        self.fronts.remove(i);
                        continue;
                    }
                    self.queue_front(i);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return, // WouldBlock, or out of descriptors: try at the next event
            }
        }
    }

    fn queue_front(&mut self, i: usize) {
        if let Some(f) = self.fronts.at(i) {
            if !f.queued {
                f.queued = true;
                self.fwork.push(i);
            }
        }
    }

    fn queue_up(&mut self, j: usize) {
        if let Some(u) = self.ups.at(j) {
            if !u.queued {
                u.queued = true;
                self.uwork.push(j);
            }
        }
    }

    fn drain(&mut self) {
        loop {
            if let Some(i) = self.fwork.pop() {
                if let Some(f) = self.fronts.at(i) {
                    f.queued = false;
                    self.drive_front(i);
                }
            } else if let Some(j) = self.uwork.pop() {
                if let Some(u) = self.ups.at(j) {
                    u.queued = false;
                    self.drive_up(j);
                }
            } else {
                return;
            }
        }
    }

    fn queue_touched(&mut self) {
        let t = std::mem::take(&mut self.touched);
        for &i in &t {
            self.queue_front(i);
        }
        self.touched = t;
        self.touched.clear();
    }

    /// Upstream timeouts (504) and idle clients.
    fn sweep(&mut self) {
        let now = self.now;
        let idle = self.shared.config.front.idle_timeout;
        let mut timed_out = Vec::new();
        let mut idle_out = Vec::new();
        let upstream_timeout = self.shared.config.upstream_timeout;
        let mut stale = Vec::new();
        let mut waited = Vec::new();
        for (i, f) in self.fronts.iter_mut() {
            if f.waiting && f.wait_deadline.is_some_and(|d| now >= d) {
                waited.push(i);
            }
            if std::mem::take(&mut f.wrote) {
                f.last_write = now;
            }
            // Neither input nor output for the idle timeout while an exchange is open:
            // stalled if the proxy holds output for it (checked below). Not a slow upstream.
            let quiet = f.last_active.max(f.last_write);
            if f.parent.is_none()
                && now.duration_since(quiet) >= idle
                && (f.link.is_some() || f.h2.as_ref().is_some_and(|h| !h.streams.is_empty()))
            {
                stale.push(i);
            }
            if f.deadline.is_some() && f.out.len() > HIGH {
                // The proxy holds the upstream back (its client reads slowly): not the
                // upstream's delay.
                f.deadline = Some(now + upstream_timeout);
            }
            if let (Some(d), Some(_)) = (f.deadline, f.link) {
                if now >= d && !f.resp.done {
                    timed_out.push(i);
                }
            }
            // An HTTP/2 connection with no stream open is idle too.
            let idle_h2 = f.h2.as_ref().is_some_and(|h| h.streams.is_empty());
            let waiting_head = (f.state == FState::Head && !f.waiting) || idle_h2;
            let head_slow = f
                .head_started
                .is_some_and(|t| now.duration_since(t) >= idle);
            if waiting_head && (head_slow || now.duration_since(f.last_active) >= idle) {
                idle_out.push(i);
            }
        }
        for i in timed_out {
            let Some(f) = self.fronts.at(i) else { continue };
            let Some(link) = f.link.take() else { continue };
            if !f.resp.started {
                self.stats.gateway_timeout += 1;
            }
            f.resp_fail(504, &mut self.stats);
            self.cancel(link);
            self.queue_front(i);
        }
        for i in waited {
            // No stream slot within the upstream timeout: out of the queue (its entry there
            // is skipped), and its 504 when its head is processed again (`start_exchange`).
            if let Some(f) = self.fronts.at(i) {
                f.waiting = false;
            }
            self.queue_front(i);
        }
        for i in idle_out {
            self.kill_front(i);
        }
        for i in stale {
            if self.holds_output(i) {
                // A client that takes nothing (a zero window that never opens, a socket
                // never read): cut off as `serve` does, its upstream requests cancelled.
                self.kill_front(i);
            }
        }
    }

    /// Whether response bytes wait for client connection `i` (or, over HTTP/2, for one
    /// of its streams: behind the client's flow control or in the stream's connection).
    fn holds_output(&self, i: usize) -> bool {
        let Some(f) = self.fronts.peek(i) else {
            return false;
        };
        if !f.out.is_empty() || f.io.wants_write() {
            return true;
        }
        f.h2.as_ref().is_some_and(|h| {
            h.streams.iter().any(|s| {
                !s.spill.is_empty()
                    || self
                        .fronts
                        .peek_gen(s.child.0, s.child.1)
                        .is_some_and(|c| !c.out.is_empty())
            })
        })
    }
}
