//! One worker: a mio event loop owning its client connections, its upstream connections
//! and pools, and its counters (nothing shared with other workers until a snapshot).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_wire::h1::{BodyEvent, Framing, Parsed, Version};
use h2lab_wire::h2::{ErrorCode, HeaderEncoder, StreamId};
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::config::{ProxyConfig, UpstreamProtocol};
use crate::fields::{ip_text, Forward};
use crate::front::{write_error, FState, Front, Link, Resp};
use crate::io::FrontIo;
use crate::slab::Slab;
use crate::stats::{Stats, StatsHandle};
use crate::upstream::{Up, UpKind};

mod h2;
mod pool;
mod up;

use pool::{acquire, looks_like_http1, push_body};

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
                let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
                if t.0 & 1 == 0 {
                    if let Some(f) = self.fronts.at(i) {
                        f.want_read |= readable;
                        self.queue_front(i);
                    }
                } else if let Some(u) = self.ups.at(i) {
                    u.want_read |= readable;
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

    // ----- client side -----

    fn drive_front(&mut self, i: usize) {
        let now = self.now;
        let Some(f) = self.fronts.at(i) else { return };
        let backlogged = f.h2.as_ref().is_some_and(|h| h.backlogged);
        if f.want_read && !f.read_eof && f.inbuf.len() < FRONT_MAX_IN && !backlogged {
            match f.io.fill(&mut f.inbuf, FRONT_MAX_IN) {
                Ok(fill) => {
                    if fill.got > 0 {
                        f.last_active = now;
                    }
                    f.read_eof |= fill.eof;
                    if fill.blocked {
                        f.want_read = false;
                    }
                }
                Err(_) => return self.kill_front(i),
            }
        }
        if f.io.handshaking() {
            if f.read_eof || f.io.flush(&mut f.out).is_err() {
                self.kill_front(i);
            }
            return;
        }
        if f.fresh {
            // HTTP/2 by ALPN (TLS) or by the connection preface (cleartext).
            const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
            let h2 = if f.io.is_tls() {
                f.io.alpn() == Some(b"h2")
            } else {
                let d = f.inbuf.data();
                if d.len() < PREFACE.len() && PREFACE.starts_with(d) && !f.read_eof {
                    // Not enough bytes to tell yet.
                    return self.flush_front(i);
                }
                d.starts_with(PREFACE)
            };
            f.fresh = false;
            if h2 {
                let h = crate::front_h2::H2Front::new(&self.shared.config.front, &mut f.out);
                f.h2 = Some(Box::new(h));
                f.state = FState::Exchange;
            }
        }
        if f.h2.is_some() {
            if f.read_eof {
                return self.kill_front(i);
            }
            self.drive_h2(i);
            self.flush_front(i);
            if let Some(f) = self.fronts.at(i) {
                let backlogged = f.h2.as_ref().is_some_and(|h| h.backlogged);
                if f.want_read && !f.read_eof && f.inbuf.len() < FRONT_MAX_IN && !backlogged {
                    self.queue_front(i);
                }
            }
            return;
        }
        self.process_front(i);
        if let Some(f) = self.fronts.at(i) {
            if f.read_eof && f.state == FState::Exchange && !f.resp.done {
                // The client went away: cancel the upstream request.
                return self.kill_front(i);
            }
        }
        self.flush_front(i);
        // Readiness not used up (the input buffer was full) and room again: go on reading.
        if let Some(f) = self.fronts.at(i) {
            if f.want_read
                && !f.read_eof
                && f.inbuf.len() < FRONT_MAX_IN
                && f.state != FState::Closing
            {
                self.queue_front(i);
            }
        }
    }

    fn flush_front(&mut self, i: usize) {
        let Some(f) = self.fronts.at(i) else { return };
        if let Some((p, pg)) = f.parent {
            // A stream of an HTTP/2 connection: that connection moves the bytes (and reads
            // again once request bodies drained below the backlog).
            let drained = f.inbuf.len() <= crate::front_h2::BACKLOG;
            let wake = !f.out.is_empty()
                || (drained
                    && self
                        .fronts
                        .get(p, pg)
                        .and_then(|pf| pf.h2.as_ref())
                        .is_some_and(|h| h.backlogged));
            if wake {
                self.queue_front(p);
            }
            return;
        }
        let was_high = f.out.len() > HIGH;
        if f.io.flush(&mut f.out).is_err() {
            return self.kill_front(i);
        }
        let link = f.link;
        if f.state == FState::Closing && f.out.is_empty() && !f.io.wants_write() {
            f.io.shutdown_write();
            return self.kill_front(i);
        }
        if f.state == FState::Head && f.read_eof && f.inbuf.is_empty() && f.out.is_empty() {
            return self.kill_front(i);
        }
        if let Some(l) = link {
            if was_high && f.out.len() <= HIGH {
                // The upstream stopped reading for this client: it may go on.
                self.queue_up(l.up);
            }
        }
    }

    fn kill_front(&mut self, i: usize) {
        let Some(f) = self.fronts.remove(i) else {
            return;
        };
        if let Some(h2) = f.h2 {
            for st in h2.streams {
                if self.fronts.get(st.child.0, st.child.1).is_some() {
                    self.kill_front(st.child.0);
                }
            }
        }
        if let Some(link) = f.link {
            if !f.resp.done {
                self.stats.client_cancels += 1;
            }
            self.cancel(link);
        }
    }

    /// Stops the upstream side of an exchange (client gone, timeout).
    fn cancel(&mut self, link: Link) {
        let Some(u) = self.ups.get(link.up, link.gen) else {
            return;
        };
        match &mut u.kind {
            UpKind::H1 { .. } => self.fail_up(link.up, false),
            UpKind::H2 { conn, streams } => {
                conn.reset(StreamId::new(link.stream), ErrorCode::CANCEL, u.out.tail());
                streams.retain(|s| s.0 != link.stream);
                self.queue_up(link.up);
                self.after_stream_end(link.up);
            }
        }
    }

    fn process_front(&mut self, i: usize) {
        loop {
            let Some(f) = self.fronts.at(i) else { return };
            match f.state {
                FState::Closing => return,
                FState::Head => {
                    if f.waiting || f.out.len() > HIGH {
                        return;
                    }
                    if f.inbuf.is_empty() {
                        if f.read_eof {
                            f.state = FState::Closing;
                        }
                        f.head_started = None;
                        return;
                    }
                    if f.head_started.is_none() {
                        f.head_started = Some(self.now);
                    }
                    if !self.start_exchange(i) {
                        return;
                    }
                }
                FState::Exchange => {
                    let progress = self.forward_body(i);
                    let Some(f) = self.fronts.at(i) else { return };
                    if f.resp.done && (f.req_done || f.link.is_none()) {
                        if !f.req_done {
                            // The rest of the request body was not read.
                            f.persist = false;
                        }
                        f.state = if f.persist {
                            FState::Head
                        } else {
                            FState::Closing
                        };
                        f.body = None;
                        f.pending.clear();
                        f.body_ended = false;
                        f.req_done = false;
                        f.resp = Resp::default();
                        f.is_head = false;
                        f.link = None;
                        f.deadline = None;
                        continue;
                    }
                    if !progress {
                        return;
                    }
                }
            }
        }
    }

    /// Parses a request head and sends it upstream. False: nothing more to do now.
    fn start_exchange(&mut self, i: usize) -> bool {
        let cfg = &self.shared.config;
        let now = self.now;
        let fgen = self.fronts.gen(i);
        let Some(f) = self.fronts.at(i) else {
            return false;
        };
        let head = match f.parser.parse(f.inbuf.data()) {
            Ok(Parsed::NeedMore) => {
                if f.read_eof {
                    f.state = FState::Closing;
                }
                return false;
            }
            Err(e) => {
                if !looks_like_http1(f.inbuf.data()) {
                    // Not HTTP/1.x at all (a broken HTTP/2 preface, TLS on the cleartext
                    // port): an HTTP/1.1 error page would be garbage to such a peer; close
                    // (RFC 9113 §3.4: an invalid preface is a connection error).
                    f.state = FState::Closing;
                    f.inbuf.clear();
                    return false;
                }
                write_error(f.out.tail(), e.status_code(), false, false);
                f.inbuf.clear();
                f.persist = false;
                f.state = FState::Closing;
                self.stats.responses += 1;
                return false;
            }
            Ok(Parsed::Complete(h)) => h,
        };
        let (has_body, body_len) = match head.framing {
            Framing::ContentLength(n) => (n > 0, Some(n)),
            Framing::Chunked => (true, None),
            Framing::None | Framing::CloseDelimited => (false, Some(0)),
        };
        let is_head = head.method == "HEAD";
        let fw = Forward {
            method: head.method.as_bytes(),
            target: head.target.as_bytes(),
            host: head.host.unwrap_or_default(),
            headers: head.headers,
            https: f.io.is_tls(),
            body_len,
            has_body,
        };
        let mut ipb = [0u8; 48];
        let ip = ip_text(f.peer.ip(), &mut ipb);

        let acq = acquire(
            &mut self.ups,
            &mut self.idle,
            cfg,
            &self.registry,
            &mut self.stats,
            &mut self.rr,
        );
        let (uj, ug) = match acq {
            Ok(x) => x,
            Err(Acq::Wait) => {
                f.waiting = true;
                self.waiting.push_back((i, fgen));
                return false;
            }
            Err(Acq::Refused) => {
                self.stats.requests += 1;
                self.stats.bad_gateway_refused += 1;
                f.http10 = head.version == Version::Http10;
                f.is_head = is_head;
                f.persist = head.keep_alive && !has_body && cfg.front.keep_alive;
                let n = head.head_len;
                f.inbuf.consume(n);
                f.state = FState::Exchange;
                f.req_done = true;
                f.resp_fail(502, &mut self.stats);
                return true;
            }
        };
        let Some(u) = self.ups.get(uj, ug) else {
            return false;
        };
        let mut stream = 0;
        let sent = match &mut u.kind {
            UpKind::H1 {
                parser,
                link,
                req_done,
            } => {
                let ok = fw.write_h1(cfg.protocol == UpstreamProtocol::H10, ip, u.out.tail());
                if ok {
                    parser.start(!is_head);
                    *link = Some((i, fgen));
                    *req_done = !has_body;
                    u.chunked_request = has_body && body_len.is_none();
                }
                ok
            }
            UpKind::H2 { conn, streams } => {
                let scratch = &mut self.scratch;
                let r = conn.send_request(
                    |enc, buf| {
                        fw.with_h2_fields(ip, scratch, |fields| {
                            enc.encoder().encode(fields.iter().copied(), buf)
                        })
                    },
                    !has_body,
                    u.out.tail(),
                );
                match r {
                    Ok(id) => {
                        stream = id.get();
                        streams.push((stream, i, fgen));
                        true
                    }
                    Err(_) => false,
                }
            }
        };
        self.stats.requests += 1;
        f.http10 = head.version == Version::Http10;
        f.is_head = is_head;
        f.persist = head.keep_alive && cfg.front.keep_alive;
        f.body = has_body.then(|| f.parser.body_decoder(&head));
        let expect_continue = head.expect_continue;
        let n = head.head_len;
        f.inbuf.consume(n);
        f.head_started = None;
        f.state = FState::Exchange;
        f.req_done = !has_body;
        f.body_ended = false;
        if !sent {
            // Chunked body to an HTTP/1.0 upstream, or no stream could be opened.
            let status = if cfg.protocol == UpstreamProtocol::H10 {
                411
            } else {
                502
            };
            f.resp_fail(status, &mut self.stats);
            self.release(uj);
            return true;
        }
        if has_body && expect_continue && f.inbuf.is_empty() {
            f.out.tail().extend_from_slice(h2lab_wire::h1::CONTINUE_100);
        }
        f.link = Some(Link {
            up: uj,
            gen: ug,
            stream,
        });
        f.deadline = Some(now + cfg.upstream_timeout);
        self.stats.upstream_requests += 1;
        if u.used > 0 {
            self.stats.upstream_connections_reused += 1;
        }
        u.used += 1;
        u.idle = false;
        self.stats.max_streams_per_connection = self
            .stats
            .max_streams_per_connection
            .max(u.in_flight() as u64);
        self.queue_up(uj);
        true
    }

    /// Moves request body bytes from the client to the upstream. True when something moved.
    fn forward_body(&mut self, i: usize) -> bool {
        let Some(f) = self.fronts.at(i) else {
            return false;
        };
        if f.req_done {
            return false;
        }
        let Some(link) = f.link else { return false };
        let Some(u) = self.ups.get(link.up, link.gen) else {
            return false;
        };
        let mut progress = false;
        loop {
            if !f.pending.is_empty() || f.body_ended {
                let (n, fin) = push_body(u, link.stream, f.pending.data(), f.body_ended);
                f.pending.consume(n);
                progress |= n > 0 || fin;
                if fin {
                    f.req_done = true;
                    break;
                }
                if !f.pending.is_empty() || f.body_ended {
                    break;
                }
            }
            let Some(dec) = f.body.as_mut() else { break };
            if f.inbuf.is_empty() && !dec.is_done() {
                break;
            }
            match dec.decode(f.inbuf.data()) {
                Ok((n, BodyEvent::Data(b))) => {
                    f.pending.tail().extend_from_slice(b);
                    f.inbuf.consume(n);
                }
                Ok((n, BodyEvent::NeedMore)) => {
                    f.inbuf.consume(n);
                    if n == 0 {
                        break;
                    }
                }
                Ok((n, BodyEvent::Trailers { .. })) => f.inbuf.consume(n),
                Ok((n, BodyEvent::End)) => {
                    f.inbuf.consume(n);
                    f.body = None;
                    f.body_ended = true;
                }
                Err(e) => {
                    f.link = None;
                    f.body = None;
                    f.req_done = true;
                    f.inbuf.clear();
                    f.resp_fail(e.status_code(), &mut self.stats);
                    f.persist = false;
                    self.cancel(link);
                    return true;
                }
            }
            progress = true;
        }
        if progress {
            self.queue_up(link.up);
        }
        progress
    }

    /// Upstream timeouts (504) and idle clients.
    fn sweep(&mut self) {
        let now = self.now;
        let idle = self.shared.config.front.idle_timeout;
        let mut timed_out = Vec::new();
        let mut idle_out = Vec::new();
        for (i, f) in self.fronts.iter_mut() {
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
        for i in idle_out {
            self.kill_front(i);
        }
    }
}
