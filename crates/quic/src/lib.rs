//! h2lab's QUIC shell, shared by `h2lab serve --h3` and `h2lab bench --h3`: a thin shell
//! around `quinn-proto` (sans-IO QUIC) for a mio event loop: a UDP socket
//! ([`udp::UdpIo`], GSO/GRO/ECN through `quinn-udp`), the `quinn_proto::Endpoint`, and the
//! table of connections, each paired with the protocol state that uses it (a [`ConnApp`]:
//! the server's HTTP/3 half, or the engine's client half). A server shell accepts
//! connections ([`Shell::read`]); a client shell opens them ([`Shell::connect`]).

pub mod h3;
pub mod hash;
pub mod udp;

use std::sync::Arc;
use std::time::Instant;

use quinn_proto::{
    ClientConfig, ConnectError, Connection, ConnectionHandle, DatagramEvent, Endpoint,
    EndpointConfig, ServerConfig, VarInt,
};

pub use quinn_proto;

pub use udp::UdpIo;

/// The protocol state paired with one QUIC connection.
pub trait ConnApp {
    /// What every connection's application may use besides its own state (shared by the
    /// loop's connections: caches, scratch buffers).
    type Ctx;
    /// Handles the connection's events ([`Connection::poll`]) and writes what can be written.
    fn drive(&mut self, conn: &mut Connection, ctx: &mut Self::Ctx, now: Instant);
    /// The application's next timer (e.g. a delayed response), if any.
    fn deadline(&self) -> Option<Instant>;
    /// The server is stopping: say so on the wire (HTTP/3 GOAWAY) before the close.
    fn on_shutdown(&mut self, conn: &mut Connection, now: Instant);
    /// Whether a stopping server may close this connection without losing anything: no
    /// request still being answered and every finished response acknowledged by the peer
    /// (QUIC's reliability lives in this process: data not yet acknowledged when the
    /// connection closes is never retransmitted). The default has nothing to wait for.
    fn settled(&self) -> bool {
        true
    }
}

struct Entry<A> {
    conn: Connection,
    app: A,
    dirty: bool,
}

/// Counters of one shell (for logs and benchmarks).
#[derive(Debug, Default, Clone, Copy)]
pub struct ShellStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connection attempts refused (limit reached or a bad Initial).
    pub refused: u64,
    /// Client role: receives that reported the server's port closed (ICMP port
    /// unreachable on a connected socket), each ending every open connection.
    pub icmp_refused: u64,
}

/// The socket, the QUIC endpoint and its connections (see the module docs).
pub struct Shell<A> {
    io: UdpIo,
    endpoint: Endpoint,
    server_config: Option<Arc<ServerConfig>>,
    conns: Vec<Option<Entry<A>>>,
    dirty: Vec<usize>,
    send_buf: Vec<u8>,
    resp_buf: Vec<u8>,
    max_conns: usize,
    live: usize,
    /// Counters.
    pub stats: ShellStats,
}

impl<A: ConnApp> Shell<A> {
    /// A shell on `io`; `server_config` accepts incoming connections (server role), at most
    /// `max_conns` at once.
    pub fn new(io: UdpIo, server_config: Option<Arc<ServerConfig>>, max_conns: usize) -> Self {
        let endpoint = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            server_config.clone(),
            true,
            None,
        );
        Shell {
            io,
            endpoint,
            server_config,
            conns: Vec::new(),
            dirty: Vec::new(),
            send_buf: Vec::with_capacity(64 * 1024),
            resp_buf: Vec::new(),
            max_conns,
            live: 0,
            stats: ShellStats::default(),
        }
    }

    /// The socket (to register with the loop's poll).
    pub fn io(&mut self) -> &mut UdpIo {
        &mut self.io
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.live
    }

    /// Connections marked to run that [`Shell::drive`] has not run yet: the loop must not
    /// sleep while there are any.
    pub fn has_work(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Opens a client connection to `addr` (`server_name`: TLS SNI) paired with `app`.
    /// The handshake starts on the next [`Shell::drive`].
    pub fn connect(
        &mut self,
        config: ClientConfig,
        addr: std::net::SocketAddr,
        server_name: &str,
        now: Instant,
        app: A,
    ) -> Result<ConnectionHandle, ConnectError> {
        let (ch, conn) = self.endpoint.connect(now, config, addr, server_name)?;
        if self.conns.len() <= ch.0 {
            self.conns.resize_with(ch.0 + 1, || None);
        }
        self.conns[ch.0] = Some(Entry {
            conn,
            app,
            dirty: false,
        });
        self.live += 1;
        if let Some(Some(e)) = self.conns.get_mut(ch.0) {
            mark(e, ch.0, &mut self.dirty);
        }
        Ok(ch)
    }

    /// The connection `ch` and its application, while it exists.
    pub fn get_mut(&mut self, ch: ConnectionHandle) -> Option<(&mut Connection, &mut A)> {
        match self.conns.get_mut(ch.0) {
            Some(Some(e)) => Some((&mut e.conn, &mut e.app)),
            _ => None,
        }
    }

    /// Every live connection with its handle.
    pub fn iter_mut(
        &mut self,
    ) -> impl Iterator<Item = (ConnectionHandle, &mut Connection, &mut A)> {
        self.conns.iter_mut().enumerate().filter_map(|(i, e)| {
            e.as_mut()
                .map(|e| (ConnectionHandle(i), &mut e.conn, &mut e.app))
        })
    }

    /// Asks for connection `ch` to be run on the next [`Shell::drive`] (its application
    /// has new work, e.g. requests to submit).
    pub fn wake(&mut self, ch: ConnectionHandle) {
        if let Some(Some(e)) = self.conns.get_mut(ch.0) {
            mark(e, ch.0, &mut self.dirty);
        }
    }

    /// Forgets connection `ch` at once (its application is returned): for a client that
    /// gave up on it after closing.
    pub fn remove(&mut self, ch: ConnectionHandle) -> Option<A> {
        let e = self.conns.get_mut(ch.0)?.take()?;
        let mut conn = e.conn;
        while let Some(ev) = conn.poll_endpoint_events() {
            let _ = self.endpoint.handle_event(ch, ev);
        }
        self.live -= 1;
        Some(e.app)
    }

    /// Reads what the socket has (a bounded number of batches, so timers and output keep
    /// their turn) and hands each datagram to QUIC; `new_app` makes the application state
    /// of an accepted connection. Returns whether the socket may have more.
    ///
    /// While a connection is handshaking its application runs (with `ctx`) between two of
    /// its datagrams that arrive in one batch: what came in 0-RTT is read before the
    /// datagram that completes the handshake, so the application sees it as early data.
    pub fn read(
        &mut self,
        now: Instant,
        ctx: &mut A::Ctx,
        mut new_app: impl FnMut(&Connection) -> A,
    ) -> std::io::Result<bool> {
        let Shell {
            io,
            endpoint,
            server_config,
            conns,
            dirty,
            resp_buf,
            max_conns,
            live,
            stats,
            ..
        } = self;
        let mut responses: Vec<(quinn_proto::Transmit, Vec<u8>)> = Vec::new();
        let mut more = false;
        for _ in 0..16 {
            more = io.recv_batch_owned(|r, data| {
                resp_buf.clear();
                let ev = endpoint.handle(now, r.from, r.to_ip, r.ecn, data, resp_buf);
                match ev {
                    Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                        if let Some(Some(e)) = conns.get_mut(ch.0) {
                            if e.dirty && e.conn.is_handshaking() {
                                // The application only reads and writes streams here (it
                                // raises no endpoint events); `drive` sends its output.
                                e.app.drive(&mut e.conn, ctx, now);
                            }
                            e.conn.handle_event(ev);
                            mark(e, ch.0, dirty);
                        }
                    }
                    Some(DatagramEvent::NewConnection(incoming)) => {
                        if *live >= *max_conns {
                            stats.refused += 1;
                            resp_buf.clear();
                            let t = endpoint.refuse(incoming, resp_buf);
                            responses.push((t, resp_buf.clone()));
                            return;
                        }
                        resp_buf.clear();
                        match endpoint.accept(incoming, now, resp_buf, server_config.clone()) {
                            Ok((ch, conn)) => {
                                stats.accepted += 1;
                                *live += 1;
                                let app = new_app(&conn);
                                if conns.len() <= ch.0 {
                                    conns.resize_with(ch.0 + 1, || None);
                                }
                                conns[ch.0] = Some(Entry {
                                    conn,
                                    app,
                                    dirty: false,
                                });
                                if let Some(Some(e)) = conns.get_mut(ch.0) {
                                    mark(e, ch.0, dirty);
                                }
                            }
                            Err(e) => {
                                stats.refused += 1;
                                if let Some(t) = e.response {
                                    responses.push((t, resp_buf.clone()));
                                }
                            }
                        }
                    }
                    Some(DatagramEvent::Response(t)) => {
                        responses.push((t, resp_buf.clone()));
                    }
                    None => {}
                }
            })?;
            if !more {
                break;
            }
        }
        // RFC 9000 §14.2.1 lets an endpoint treat an ICMP error as a path failure; a
        // client's socket connected to its server (the only peer it has) reports the ICMP
        // port unreachable of a closed server port as ECONNREFUSED: nobody will answer, so
        // its connections end now instead of after the idle timeout. A server ignores it
        // (one client gone must not end the others).
        if std::mem::take(&mut io.refused) && server_config.is_none() {
            stats.icmp_refused += 1;
            for (i, e) in conns.iter_mut().enumerate() {
                if let Some(e) = e {
                    if !e.conn.is_closed() {
                        e.conn
                            .close(now, VarInt::from_u32(0x0), "ICMP port unreachable".into());
                    }
                    mark(e, i, dirty);
                }
            }
        }
        // Stateless answers (version negotiation, retry, refusal, stateless reset): best
        // effort, as UDP.
        for (t, bytes) in responses {
            if !io.has_pending() {
                io.send(&t, bytes.get(..t.size).unwrap_or_default());
            }
        }
        Ok(more)
    }

    /// The socket became writable: sends what was blocked, then lets every connection
    /// write again.
    pub fn on_writable(&mut self) {
        // Writable edges also come when nothing was blocked: then there is nothing to resume.
        if self.io.has_pending() && self.io.retry() {
            for i in 0..self.conns.len() {
                if let Some(Some(e)) = self.conns.get_mut(i) {
                    mark(e, i, &mut self.dirty);
                }
            }
        }
    }

    /// The earliest QUIC or application timer.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for e in self.conns.iter_mut().flatten() {
            for t in [e.conn.poll_timeout(), e.app.deadline()]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    /// Fires expired timers, runs the applications of connections with news, sends what
    /// QUIC has to send and forgets drained connections.
    pub fn drive(&mut self, now: Instant, ctx: &mut A::Ctx) {
        for i in 0..self.conns.len() {
            if let Some(Some(e)) = self.conns.get_mut(i) {
                if e.conn.poll_timeout().is_some_and(|t| t <= now) {
                    e.conn.handle_timeout(now);
                    mark(e, i, &mut self.dirty);
                } else if e.app.deadline().is_some_and(|t| t <= now) {
                    mark(e, i, &mut self.dirty);
                }
            }
        }
        let mut dirty = std::mem::take(&mut self.dirty);
        // A connection may be marked again while others run (it is pushed to `self.dirty`).
        for &i in &dirty {
            if let Some(Some(e)) = self.conns.get_mut(i) {
                e.dirty = false;
            }
            self.run_one(i, now, ctx);
        }
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }

    fn run_one(&mut self, i: usize, now: Instant, ctx: &mut A::Ctx) {
        let Some(Some(e)) = self.conns.get_mut(i) else {
            return;
        };
        let ch = ConnectionHandle(i);
        e.app.drive(&mut e.conn, ctx, now);
        let mut answered = false;
        while let Some(ev) = e.conn.poll_endpoint_events() {
            if let Some(cev) = self.endpoint.handle_event(ch, ev) {
                e.conn.handle_event(cev);
                answered = true;
            }
        }
        // Events raised by the endpoint's answers (new connection IDs). Without one nothing
        // changed since the first run (the application's own calls raise no events), so the
        // second run, which would find nothing to do, is skipped.
        if answered {
            e.app.drive(&mut e.conn, ctx, now);
        }
        transmit(&mut self.io, &mut e.conn, &mut self.send_buf, now);
        if self.io.has_pending() {
            // Resumed by `on_writable`.
            return;
        }
        if e.conn.is_drained() {
            while let Some(ev) = e.conn.poll_endpoint_events() {
                let _ = self.endpoint.handle_event(ch, ev);
            }
            self.conns[i] = None;
            self.live -= 1;
        }
    }

    /// Graceful stop in one step: [`Shell::goaway`], then [`Shell::close_all`] at once
    /// (what is not acknowledged by then is lost; a server drains in between instead).
    pub fn shutdown(&mut self, now: Instant, code: u64) {
        self.goaway(now);
        self.close_all(now, code);
    }

    /// Every application says goodbye (HTTP/3 GOAWAY), and that is sent; from now on new
    /// connections are refused (a client that reconnects after the GOAWAY finds the server
    /// gone, not still draining).
    pub fn goaway(&mut self, now: Instant) {
        self.max_conns = 0;
        for e in self.conns.iter_mut().flatten() {
            e.app.on_shutdown(&mut e.conn, now);
            transmit(&mut self.io, &mut e.conn, &mut self.send_buf, now);
        }
    }

    /// Whether every open connection's application is [`ConnApp::settled`] (closed and
    /// draining connections count as settled).
    pub fn settled(&self) -> bool {
        self.conns
            .iter()
            .flatten()
            .all(|e| e.conn.is_closed() || e.app.settled())
    }

    /// Closes every connection with `code` and sends the CONNECTION_CLOSE (best effort).
    pub fn close_all(&mut self, now: Instant, code: u64) {
        for e in self.conns.iter_mut().flatten() {
            e.conn.close(
                now,
                VarInt::from_u64(code).unwrap_or(VarInt::MAX),
                "".into(),
            );
            let _ = self.io.retry();
            transmit(&mut self.io, &mut e.conn, &mut self.send_buf, now);
        }
    }
}

fn mark<A>(e: &mut Entry<A>, i: usize, dirty: &mut Vec<usize>) {
    if !e.dirty {
        e.dirty = true;
        dirty.push(i);
    }
}

/// Sends what `conn` has, until QUIC has nothing more or the socket is full.
fn transmit(io: &mut UdpIo, conn: &mut Connection, buf: &mut Vec<u8>, now: Instant) {
    while !io.has_pending() {
        buf.clear();
        let Some(t) = conn.poll_transmit(now, io.max_segments(conn.current_mtu()), buf) else {
            break;
        };
        io.send(&t, buf.get(..t.size).unwrap_or_default());
    }
}
