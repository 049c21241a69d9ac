//! One accepted connection: the transport (TCP or TLS over TCP), its input and output
//! buffers, and the protocol driving it (detection, HTTP/1.1 or HTTP/2).

use std::io::{self, Read, Write};
use std::net::{Shutdown as SockShutdown, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use crate::ctx::{Ctx, InBuf, Io, Next};
use crate::log::warn;
use crate::out::{Out, MAX_IOV, OWNED_HIGH_WATER};
use crate::proto::{Handshake, Protocol};

/// Buffer limit of a TLS connection's encrypted output (records not yet written).
const TLS_BUFFER_LIMIT: usize = 128 * 1024;
/// How long a closing connection keeps reading (and discarding) before the socket is
/// dropped, so a late request does not turn into a RST that destroys the response.
const LINGER: Duration = Duration::from_secs(2);

/// Connection life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Open,
    /// Write what is queued, then linger.
    Closing,
    /// Our side is shut down; discarding input until EOF or the deadline.
    Lingering(Instant),
    /// To be removed.
    Dead,
}

/// An accepted connection.
pub struct Conn {
    sock: TcpStream,
    tls: Option<Box<rustls::ServerConnection>>,
    inbuf: InBuf,
    out: Out,
    proto: Protocol,
    want_read: bool,
    read_eof: bool,
    write_blocked: bool,
    /// TLS close_notify to send once the queued output is in rustls (so that a GOAWAY
    /// queued before closing reaches the client ahead of it).
    close_notify: bool,
    /// TLS 1.3 early data was accepted on this connection (`--0rtt`).
    early_seen: bool,
    life: Life,
    last_active: Instant,
    /// Unread input and the consumed count when it was first seen not moving (sampled at
    /// each timeout check).
    stall: Option<(u64, Instant)>,
    /// Queued on the worker's dirty list (flush at the end of the turn).
    pub dirty: bool,
    peer: SocketAddr,
}

impl Conn {
    /// Wraps an accepted socket. `tls`: the rustls server config for a TLS listener.
    pub fn new(
        sock: TcpStream,
        peer: SocketAddr,
        tls: Option<&std::sync::Arc<rustls::ServerConfig>>,
        max_input: usize,
        now: Instant,
    ) -> io::Result<Self> {
        let tls = match tls {
            Some(cfg) => {
                let mut c = rustls::ServerConnection::new(cfg.clone()).map_err(io::Error::other)?;
                c.set_buffer_limit(Some(TLS_BUFFER_LIMIT));
                Some(Box::new(c))
            }
            None => None,
        };
        Ok(Conn {
            sock,
            tls,
            inbuf: InBuf::new(max_input),
            out: Out::default(),
            proto: Protocol::Detect,
            want_read: true,
            read_eof: false,
            write_blocked: false,
            close_notify: false,
            early_seen: false,
            life: Life::Open,
            last_active: now,
            stall: None,
            dirty: false,
            peer,
        })
    }

    /// The socket (for registration).
    pub fn socket(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    /// Whether the connection should be removed.
    pub fn is_dead(&self) -> bool {
        self.life == Life::Dead
    }

    /// Records a readiness event.
    pub fn on_event(&mut self, readable: bool, writable: bool) {
        if readable {
            self.want_read = true;
        }
        if writable {
            self.write_blocked = false;
        }
    }

    /// Bytes queued and not yet written.
    fn pending_out(&self) -> usize {
        self.out.len()
            + self
                .tls
                .as_ref()
                .map_or(0, |t| if t.wants_write() { 1 } else { 0 })
            + usize::from(self.close_notify)
    }

    /// Reads and processes as much as possible without blocking.
    pub fn drive(&mut self, ctx: &mut Ctx<'_>) {
        loop {
            if self.life == Life::Dead {
                return;
            }
            if let Life::Lingering(_) = self.life {
                self.discard_input();
                return;
            }
            let mut progressed = false;
            if self.want_read && !self.read_eof && !self.inbuf.is_full() && !self.out.is_full() {
                match self.read_some() {
                    Ok(0) => {}
                    Ok(_) => {
                        progressed = true;
                        self.last_active = ctx.now;
                    }
                    Err(e) => {
                        if e.kind() != io::ErrorKind::ConnectionReset {
                            self.log_once(format_args!("read error: {e}"));
                        }
                        self.life = Life::Dead;
                        return;
                    }
                }
            }
            if self.life == Life::Open {
                let before = (self.inbuf.len(), self.out.len());
                let next = self.process(ctx);
                progressed |= before != (self.inbuf.len(), self.out.len());
                match next {
                    Next::Continue => {}
                    Next::CloseAfterFlush => {
                        self.life = Life::Closing;
                    }
                    Next::CloseNow => {
                        self.life = Life::Dead;
                        return;
                    }
                }
            }
            if !progressed {
                break;
            }
        }
    }

    /// One read (plain) or one TLS read step; returns plaintext bytes added (0 with
    /// `want_read` cleared on WouldBlock, or `read_eof` set).
    fn read_some(&mut self) -> io::Result<usize> {
        match &mut self.tls {
            None => {
                let spare = self.inbuf.spare();
                match self.sock.read(spare) {
                    Ok(0) => {
                        self.read_eof = true;
                        Ok(0)
                    }
                    Ok(n) => {
                        self.inbuf.commit(n);
                        Ok(n)
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.want_read = false;
                        Ok(0)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                    Err(e) => Err(e),
                }
            }
            Some(tls) => {
                // Early data comes before anything sent after the handshake.
                if let Some(n) = read_early(tls, &mut self.inbuf) {
                    self.early_seen = true;
                    return Ok(n);
                }
                // Plaintext already decrypted but not yet taken comes first.
                match tls.reader().read(self.inbuf.spare()) {
                    Ok(0) => {
                        // close_notify received.
                        self.read_eof = true;
                        return Ok(0);
                    }
                    Ok(n) => {
                        self.inbuf.commit(n);
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        self.read_eof = true;
                        return Ok(0);
                    }
                    Err(e) => return Err(e),
                }
                match tls.read_tls(&mut self.sock) {
                    Ok(0) => {
                        self.read_eof = true;
                        Ok(0)
                    }
                    Ok(_) => {
                        if let Err(e) = tls.process_new_packets() {
                            // A client may close with close_notify before the handshake ends
                            // (a load generator stopping mid-handshake): rustls reports that as
                            // an alert error, but it is an orderly end, not a read error.
                            if e == rustls::Error::AlertReceived(
                                rustls::AlertDescription::CloseNotify,
                            ) {
                                self.read_eof = true;
                                return Ok(0);
                            }
                            // Queue the alert rustls prepared; best effort.
                            let _ = tls.write_tls(&mut self.sock);
                            return Err(io::Error::other(format!("TLS: {e}")));
                        }
                        if let Some(n) = read_early(tls, &mut self.inbuf) {
                            self.early_seen = true;
                            return Ok(n);
                        }
                        // Handshake messages to send.
                        Ok(match tls.reader().read(self.inbuf.spare()) {
                            Ok(0) => {
                                self.read_eof = true;
                                0
                            }
                            Ok(n) => {
                                self.inbuf.commit(n);
                                n
                            }
                            Err(_) => 0,
                        }
                        .max(1))
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.want_read = false;
                        Ok(0)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// What protocol code sees of this connection.
    fn io(&mut self) -> (Io<'_>, &mut Protocol) {
        let io = Io {
            inbuf: &mut self.inbuf,
            out: &mut self.out,
            read_eof: self.read_eof,
            tls: self.tls.is_some(),
            early: self.early_seen && self.tls.as_ref().is_some_and(|t| t.is_handshaking()),
            peer: self.peer,
        };
        (io, &mut self.proto)
    }

    /// Runs the protocol over the buffered input.
    fn process(&mut self, ctx: &mut Ctx<'_>) -> Next {
        let handshake = match &self.tls {
            None => Handshake::Cleartext,
            // With early data the ALPN choice is made (the ClientHello was processed): the
            // protocol starts on the early data, its answers go out as half-RTT data.
            Some(tls) if tls.is_handshaking() && !self.early_seen => Handshake::TlsPending,
            Some(tls) => Handshake::TlsDone {
                h2: tls.alpn_protocol() == Some(b"h2"),
            },
        };
        let (mut io, proto) = self.io();
        let next = proto.process(&mut io, ctx, handshake);
        if let Some(lowat) = self.proto.take_lowat() {
            // Best effort: priorities still work without it, on less data.
            let _ = socket2::SockRef::from(&self.sock).set_tcp_notsent_lowat(lowat);
        }
        next
    }

    /// A timer armed through [`Ctx`] fired.
    pub fn on_timer(&mut self, tag: u32, ctx: &mut Ctx<'_>) {
        if self.life != Life::Open {
            return;
        }
        let (mut io, proto) = self.io();
        proto.on_timer(tag, &mut io, ctx);
        // The response may unblock pipelined input.
        self.drive(ctx);
    }

    /// Whether processing could make progress without new input (a body to stream, more
    /// input buffered) once the queue is written.
    pub fn has_pending_work(&self) -> bool {
        if self.life != Life::Open || self.write_blocked {
            return false;
        }
        let input = self.want_read || !self.inbuf.is_empty();
        self.proto.has_pending_work(input)
    }

    /// Writes the queue (`writev`, or rustls write steps). Handles the closing states.
    pub fn flush(&mut self, now: Instant) {
        if self.life == Life::Dead {
            return;
        }
        if !self.write_blocked {
            let before = self.pending_out();
            let r = self.write_out();
            if self.pending_out() < before {
                // Write progress counts as activity: a client reading a long body is not idle.
                self.last_active = now;
            }
            if let Err(e) = r {
                if !matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                ) {
                    self.log_once(format_args!("write error: {e}"));
                }
                self.life = Life::Dead;
                return;
            }
        }
        if self.life == Life::Closing && self.pending_out() == 0 {
            let _ = self.sock.shutdown(SockShutdown::Write);
            self.life = if self.read_eof {
                Life::Dead
            } else {
                Life::Lingering(now + LINGER)
            };
            if !self.read_eof {
                self.discard_input();
            }
        }
    }

    fn write_out(&mut self) -> io::Result<()> {
        match &mut self.tls {
            None => {
                while !self.out.is_empty() {
                    let mut iov = [io::IoSlice::new(&[]); MAX_IOV];
                    let k = self.out.io_slices(&mut iov);
                    match self.sock.write_vectored(&iov[..k]) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => self.out.advance(n),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            self.write_blocked = true;
                            break;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Some(tls) => loop {
                if !self.out.is_empty() && (!tls.is_handshaking() || self.early_seen) {
                    // rustls encrypts straight from the slices (no plaintext copy of ours);
                    // it takes what fits under its buffer limit.
                    let mut iov = [io::IoSlice::new(&[]); MAX_IOV];
                    let k = self.out.io_slices(&mut iov);
                    let n = tls.writer().write_vectored(&iov[..k])?;
                    self.out.advance(n);
                }
                if self.close_notify && self.out.is_empty() {
                    // After everything queued (a GOAWAY), not before it.
                    tls.send_close_notify();
                    self.close_notify = false;
                }
                if !tls.wants_write() {
                    break;
                }
                match tls.write_tls(&mut self.sock) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.write_blocked = true;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            },
        }
        self.out.compact(OWNED_HIGH_WATER);
        Ok(())
    }

    /// Lingering close: read and drop input until EOF.
    fn discard_input(&mut self) {
        let mut scratch = [0u8; 4096];
        loop {
            let r = match &mut self.tls {
                None => self.sock.read(&mut scratch),
                Some(tls) => match tls.read_tls(&mut self.sock) {
                    Ok(0) => Ok(0),
                    Ok(n) => {
                        let _ = tls.process_new_packets();
                        while let Ok(m) = tls.reader().read(&mut scratch) {
                            if m == 0 {
                                break;
                            }
                        }
                        Ok(n)
                    }
                    Err(e) => Err(e),
                },
            };
            match r {
                Ok(0) => {
                    self.life = Life::Dead;
                    return;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.life = Life::Dead;
                    return;
                }
            }
        }
    }

    /// Timeout check (called about once a second): idle connections, slow request heads,
    /// slow TLS handshakes and finished lingering are closed.
    pub fn check_timeout(&mut self, ctx: &mut Ctx<'_>) {
        let idle = ctx.shared.config.idle_timeout;
        match self.life {
            Life::Lingering(deadline) if ctx.now >= deadline => {
                self.life = Life::Dead;
                return;
            }
            // A peer that stopped reading keeps the queue from draining, so a closing
            // connection would be held forever (slow-read attack): without write progress for
            // another idle period, drop it.
            Life::Closing if ctx.now.duration_since(self.last_active) >= idle * 2 => {
                self.life = Life::Dead;
                return;
            }
            Life::Open => {}
            _ => return,
        }
        let stalled = input_stalled(&mut self.stall, &self.inbuf, ctx.now, idle);
        let last_active = self.last_active;
        let (mut io, proto) = self.io();
        let expired = proto.check_timeout(&mut io, ctx.now, last_active, idle, stalled);
        if expired {
            self.life = Life::Closing;
            self.close_notify = self.tls.is_some();
        }
    }

    /// Server shutdown: a GOAWAY for HTTP/2, then close.
    pub fn on_shutdown(&mut self) {
        let (mut io, proto) = self.io();
        proto.on_shutdown(&mut io);
        self.close_notify = self.tls.is_some();
        self.life = Life::Closing;
    }

    fn log_once(&self, args: std::fmt::Arguments<'_>) {
        warn!("{}: {}", self.peer, args);
    }
}

/// Moves accepted TLS 1.3 early data into `inbuf`: `Some(n)` when bytes came.
fn read_early(tls: &mut rustls::ServerConnection, inbuf: &mut crate::ctx::InBuf) -> Option<usize> {
    let mut early = tls.early_data()?;
    match early.read(inbuf.spare()) {
        Ok(n) if n > 0 => {
            inbuf.commit(n);
            Some(n)
        }
        _ => None,
    }
}

/// Whether unread input has sat in `inbuf` without any of it being consumed for `idle`
/// (sampled at each timeout check; `stall` remembers where the input stood).
fn input_stalled(
    stall: &mut Option<(u64, Instant)>,
    inbuf: &InBuf,
    now: Instant,
    idle: Duration,
) -> bool {
    if inbuf.is_empty() {
        *stall = None;
        return false;
    }
    match *stall {
        Some((consumed, since)) if consumed == inbuf.consumed => now.duration_since(since) >= idle,
        _ => {
            *stall = Some((inbuf.consumed, now));
            false
        }
    }
}
