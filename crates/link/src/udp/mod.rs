//! The UDP half of `h2lab link` (HTTP/3 crosses the same emulated network as HTTP/1.1 and
//! HTTP/2): one mio event loop on its own thread that receives client datagrams on the link's
//! UDP socket, sends each from the upstream socket of its *flow* (one per client address and
//! port, closed after [`LinkConfig::udp_idle`] without traffic), and sends the upstream's
//! answers back to the client from the link's socket.
//!
//! Every datagram crosses its direction's [`Shaper`] with
//! [`push_datagram`](Shaper::push_datagram): the same RTT, rate, queue size, jitter and loss as
//! TCP, except that loss really drops the datagram and a full queue drops at the tail (QUIC
//! sees real loss and recovers from it itself). Deliveries wait in one FIFO per direction and
//! never overtake each other. The UDP shapers are the UDP relay's own: TCP and UDP traffic do
//! not share a direction's bandwidth (each gets the configured rate). Sharing one bottleneck
//! would be wrong the other way: the relayed TCP senders never see a drop, so a bulk TCP
//! transfer keeps the shared queue full and every datagram behind it would be dropped at the
//! tail, where real TCP would back off.
//!
//! Memory: a direction holds at most [`LinkConfig::buffer_limit`] bytes of delayed datagrams
//! (over it, datagrams are dropped as at a full queue); payload buffers are recycled.

mod flows;

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use super::config::{Direction, LinkConfig};
use super::shaper::{DatagramFate, Nanos, Shaper};
use super::stats::Counters;
use super::Shutdown;
use flows::{Flows, FIRST_FLOW};

const SOCKET: Token = Token(0);
const WAKER: Token = Token(1);

const UP: usize = 0;
const DOWN: usize = 1;

const MILLI: Nanos = 1_000_000;

/// Datagrams read from one socket before the loop delivers what is due and reads the others
/// (a flooding sender must not stall the deliveries).
const READ_BUDGET: usize = 64;

/// The largest UDP payload (IPv4).
const MAX_DATAGRAM: usize = 65_507;

/// A delayed datagram.
struct Pending {
    deliver: Nanos,
    slot: usize,
    gen: u64,
    /// The client it goes back to (down direction).
    client: SocketAddr,
    data: Vec<u8>,
}

/// One direction: its shaper and the datagrams on their way, in delivery order.
struct Lane {
    shaper: Shaper,
    queue: VecDeque<Pending>,
    held: usize,
    limit: usize,
}

/// The UDP relay's event loop.
pub(crate) struct UdpRelay {
    poll: Poll,
    events: Events,
    /// The tokens of the last poll's events.
    ready: Vec<Token>,
    /// Sockets whose read budget ran out: read again without waiting.
    again: Vec<Token>,
    socket: UdpSocket,
    upstream: SocketAddr,
    lanes: [Lane; 2],
    flows: Flows,
    idle: Nanos,
    next_sweep: Option<Nanos>,
    clock: Instant,
    counters: Arc<Counters>,
    stop: Shutdown,
    buf: Vec<u8>,
    pool: Vec<Vec<u8>>,
}

fn nanos(d: Duration) -> Nanos {
    Nanos::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

/// Socket buffers for bursts: a datagram the kernel drops because the relay was not scheduled
/// in time would be loss the user did not configure. The kernel caps the sizes
/// (`net.core.rmem_max`, `wmem_max`); failures are ignored.
pub(super) fn big_buffers(socket: &impl std::os::fd::AsFd) {
    let sock = socket2::SockRef::from(socket);
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
}

/// Requested size of each UDP socket buffer.
const SOCKET_BUFFER: usize = 4 << 20;

/// Whether a failed receive may be retried at once (as opposed to `WouldBlock` and real
/// failures, which end the reading).
fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
    )
}

fn lane(config: &LinkConfig, dir: Direction, seed: u64) -> Lane {
    Lane {
        shaper: Shaper::new(config.direction_params(dir), seed),
        queue: VecDeque::new(),
        held: 0,
        limit: config.buffer_limit(dir),
    }
}

impl UdpRelay {
    /// Sets up the loop on `socket` (already bound; made non-blocking here).
    pub(crate) fn new(
        socket: std::net::UdpSocket,
        config: &LinkConfig,
        counters: Arc<Counters>,
        stop: Shutdown,
    ) -> io::Result<UdpRelay> {
        socket.set_nonblocking(true)?;
        big_buffers(&socket);
        let mut socket = UdpSocket::from_std(socket);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE)?;
        stop.install(Arc::new(Waker::new(poll.registry(), WAKER)?));
        Ok(UdpRelay {
            poll,
            events: Events::with_capacity(256),
            ready: Vec::with_capacity(256),
            again: Vec::new(),
            socket,
            upstream: config.upstream,
            // Seeds of their own, so UDP draws do not mirror the TCP relay's.
            lanes: [
                lane(config, Direction::Up, config.seed ^ 0x7564_7075_7064_6f77),
                lane(config, Direction::Down, config.seed ^ 0x7564_7064_6f77_6e21),
            ],
            flows: Flows::default(),
            idle: nanos(config.udp_idle),
            next_sweep: None,
            clock: Instant::now(),
            counters,
            stop,
            buf: vec![0; MAX_DATAGRAM],
            pool: Vec::new(),
        })
    }

    fn now(&self) -> Nanos {
        nanos(self.clock.elapsed())
    }

    /// Runs until the shutdown is triggered, at real-time priority where permitted (as the
    /// TCP relay's thread).
    pub(crate) fn run(mut self) -> io::Result<()> {
        let _ = crate::sched::tight_timers();
        let result = self.run_loop();
        let registry = self.poll.registry();
        self.flows.close_all(registry, &self.counters.udp);
        let _ = registry.deregister(&mut self.socket);
        result
    }

    fn run_loop(&mut self) -> io::Result<()> {
        loop {
            if self.stop.is_triggered() {
                return Ok(());
            }
            self.wait(self.deadline())?;
            self.ready.clear();
            self.ready.append(&mut self.again);
            self.ready.extend(self.events.iter().map(|e| e.token()));
            self.ready.sort_unstable();
            self.ready.dedup();
            for i in 0..self.ready.len() {
                let token = self.ready[i];
                let more = match token {
                    SOCKET => self.receive_clients(),
                    WAKER => false,
                    Token(t) => self.receive_upstream(t - FIRST_FLOW),
                };
                if more {
                    self.again.push(token);
                }
            }
            self.deliver_due();
            self.sweep();
        }
    }

    /// The earliest delivery or idle sweep (now, when a socket's read budget ran out).
    fn deadline(&self) -> Option<Nanos> {
        if !self.again.is_empty() {
            return Some(0);
        }
        let deliveries = self.lanes.iter().filter_map(|l| l.queue.front());
        deliveries.map(|p| p.deliver).chain(self.next_sweep).min()
    }

    /// Polls until `deadline`: whole milliseconds in `epoll_wait` (aiming early by its timer
    /// slack), the sub-millisecond rest in `nanosleep` (the TCP relay's method, without its
    /// final spin).
    fn wait(&mut self, deadline: Option<Nanos>) -> io::Result<()> {
        let timeout = match deadline {
            None => None,
            Some(d) => {
                let now = self.now();
                let left = d.saturating_sub(now);
                let early = left - (left / 1000 + 100_000).min(left);
                if early >= MILLI {
                    Some(Duration::from_millis(early / MILLI))
                } else {
                    Some(Duration::ZERO)
                }
            }
        };
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => self.events.clear(),
            Err(e) => return Err(e),
        }
        if let (Some(d), Some(Duration::ZERO), true) = (deadline, timeout, self.events.is_empty()) {
            let left = d.saturating_sub(self.now());
            if left > 0 {
                std::thread::sleep(Duration::from_nanos(left));
            }
        }
        Ok(())
    }

    /// Reads the datagrams waiting on the link's socket, at most [`READ_BUDGET`]; returns
    /// whether there may be more.
    fn receive_clients(&mut self) -> bool {
        for _ in 0..READ_BUDGET {
            let (n, client) = match self.socket.recv_from(&mut self.buf) {
                Ok(r) => r,
                // ICMP errors for earlier sends to a client are reported once.
                Err(e) if retry(&e) => continue,
                Err(_) => return false,
            };
            let now = self.now();
            let counters = &self.counters.udp;
            counters.dirs[UP].datagrams_in.fetch_add(1, Relaxed);
            counters.dirs[UP].bytes_in.fetch_add(n as u64, Relaxed);
            let registry = self.poll.registry();
            match self
                .flows
                .get_or_open(client, self.upstream, registry, counters, now)
            {
                Ok((slot, gen)) => self.admit(UP, now, n, slot, gen, client),
                Err(_) => {
                    counters.flow_failures.fetch_add(1, Relaxed);
                }
            }
            if self.next_sweep.is_none() {
                self.next_sweep = Some(now.saturating_add(self.sweep_period()));
            }
        }
        true
    }

    /// Reads the datagrams waiting on the upstream socket of the flow in `slot`, at most
    /// [`READ_BUDGET`]; returns whether there may be more.
    fn receive_upstream(&mut self, slot: usize) -> bool {
        for _ in 0..READ_BUDGET {
            let now = nanos(self.clock.elapsed());
            let Some(flow) = self.flows.at(slot) else {
                return false;
            };
            let n = match flow.socket.recv(&mut self.buf) {
                Ok(n) => n,
                // The ICMP error of an earlier send (port unreachable) is reported once.
                Err(e) if retry(&e) => continue,
                Err(_) => return false,
            };
            flow.last = now;
            let (gen, client) = (flow.gen, flow.client);
            let d = &self.counters.udp.dirs[DOWN];
            d.datagrams_in.fetch_add(1, Relaxed);
            d.bytes_in.fetch_add(n as u64, Relaxed);
            self.admit(DOWN, now, n, slot, gen, client);
        }
        true
    }

    /// Puts the `n` bytes at the start of `buf` through direction `d`'s shaper.
    fn admit(&mut self, d: usize, now: Nanos, n: usize, slot: usize, gen: u64, client: SocketAddr) {
        let counters = &self.counters.udp.dirs[d];
        let lane = &mut self.lanes[d];
        if lane.held.saturating_add(n) > lane.limit {
            counters.queue_drops.fetch_add(1, Relaxed);
            return;
        }
        let deliver = match lane.shaper.push_datagram(now, n) {
            DatagramFate::Deliver(at) => at,
            DatagramFate::Lost => {
                counters.lost.fetch_add(1, Relaxed);
                return;
            }
            DatagramFate::QueueFull => {
                counters.queue_drops.fetch_add(1, Relaxed);
                return;
            }
        };
        // In order: a datagram never overtakes the one before it.
        let deliver = lane
            .queue
            .back()
            .map_or(deliver, |p| p.deliver.max(deliver));
        let mut data = self.pool.pop().unwrap_or_default();
        data.clear();
        data.extend_from_slice(&self.buf[..n]);
        lane.held += n;
        lane.queue.push_back(Pending {
            deliver,
            slot,
            gen,
            client,
            data,
        });
    }

    /// Sends every datagram whose time has come.
    fn deliver_due(&mut self) {
        let now = self.now();
        for d in [UP, DOWN] {
            while self.lanes[d]
                .queue
                .front()
                .is_some_and(|p| p.deliver <= now)
            {
                let Some(p) = self.lanes[d].queue.pop_front() else {
                    break;
                };
                self.lanes[d].held -= p.data.len();
                let sent = if d == UP {
                    match self.flows.get(p.slot, p.gen) {
                        Some(flow) => {
                            flow.last = now;
                            flow.socket.send(&p.data).is_ok()
                        }
                        None => false,
                    }
                } else {
                    self.socket.send_to(&p.data, p.client).is_ok()
                };
                let c = &self.counters.udp.dirs[d];
                if sent {
                    c.datagrams_out.fetch_add(1, Relaxed);
                    c.bytes_out.fetch_add(p.data.len() as u64, Relaxed);
                } else {
                    c.send_drops.fetch_add(1, Relaxed);
                }
                if self.pool.len() < 1024 {
                    self.pool.push(p.data);
                }
            }
        }
    }

    fn sweep_period(&self) -> Nanos {
        (self.idle / 4).max(MILLI)
    }

    /// Closes idle flows when the sweep is due.
    fn sweep(&mut self) {
        let now = self.now();
        let Some(at) = self.next_sweep else {
            return;
        };
        if at > now {
            return;
        }
        let registry = self.poll.registry();
        self.flows
            .expire(now, self.idle, registry, &self.counters.udp);
        self.next_sweep = if self.flows.is_empty() {
            None
        } else {
            Some(now.saturating_add(self.sweep_period()))
        };
    }
}
