//! One accepted connection: the transport (TCP or TLS over TCP), its input and output
//! buffers, and the protocol driving it (detection, HTTP/1.1 or HTTP/2).

use std::io::{self, Read, Write};
use std::net::{Shutdown as SockShutdown, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use crate::http1::H1;
use crate::http2::H2;
use crate::log::warn;
use crate::out::{Out, MAX_IOV, OWNED_HIGH_WATER};
use crate::worker::Ctx;

/// Buffer limit of a TLS connection's encrypted output (records not yet written).
const TLS_BUFFER_LIMIT: usize = 128 * 1024;
/// Read granularity.
const READ_CHUNK: usize = 16 * 1024;
/// How long a closing connection keeps reading (and discarding) before the socket is
/// dropped, so a late request does not turn into a RST that destroys the response.
const LINGER: Duration = Duration::from_secs(2);

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Input buffer: initialised bytes `buf[start..end]` are unread input.
#[derive(Debug, Default)]
pub struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    max: usize,
    /// Bytes consumed so far (input progress, for the stalled-input check).
    consumed: u64,
}

impl InBuf {
    /// An empty buffer that never grows beyond `max` bytes.
    pub fn new(max: usize) -> Self {
        InBuf {
            buf: Vec::new(),
            start: 0,
            end: 0,
            max: max.max(READ_CHUNK),
            consumed: 0,
        }
    }

    /// Unread input.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks `n` bytes as read.
    pub fn consume(&mut self, n: usize) {
        self.consumed += n.min(self.len()) as u64;
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Unread byte count.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether there is no unread input.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Whether no more input fits (the protocol must consume first).
    pub fn is_full(&self) -> bool {
        self.len() >= self.max
    }

    /// Free space to read into (compacting or growing as needed); empty when full.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.buf.len() - self.end < READ_CHUNK / 2 && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK / 2 && self.buf.len() < self.max {
            let new = (self.buf.len() * 2).clamp(READ_CHUNK, self.max);
            self.buf.resize(new, 0);
        }
        let end = self.end;
        &mut self.buf[end..]
    }

    /// Marks `n` bytes of [`InBuf::spare`] as filled.
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }
}

/// What the protocol layer sees of the connection.
pub struct Io<'a> {
    /// Unread input.
    pub inbuf: &'a mut InBuf,
    /// Output queue (written at the end of the loop turn).
    pub out: &'a mut Out,
    /// The peer closed its sending side (no more input will come).
    pub read_eof: bool,
    /// The connection is TLS.
    pub tls: bool,
    /// Peer address (for logs).
    pub peer: SocketAddr,
}

/// What the protocol asks the connection to do after processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Keep going.
    Continue,
    /// Send what is queued, then close (lingering).
    CloseAfterFlush,
    /// Drop the connection now.
    CloseNow,
}

/// The protocol running on a connection.
#[allow(clippy::large_enum_variant)] // one per connection; boxing would add a pointer chase per event
pub enum Protocol {
    /// Cleartext: waiting for enough bytes to tell the HTTP/2 preface from HTTP/1.1.
    /// TLS: waiting for the handshake (ALPN) to finish.
    Detect,
    /// HTTP/1.1 (and 1.0).
    H1(H1),
    /// HTTP/2.
    H2(Box<H2>),
}

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
                            // Queue the alert rustls prepared; best effort.
                            let _ = tls.write_tls(&mut self.sock);
                            return Err(io::Error::other(format!("TLS: {e}")));
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

    /// Runs the protocol over the buffered input.
    fn process(&mut self, ctx: &mut Ctx<'_>) -> Next {
        if let Protocol::Detect = self.proto {
            match &self.tls {
                Some(tls) => {
                    if tls.is_handshaking() {
                        return if self.read_eof {
                            Next::CloseNow
                        } else {
                            Next::Continue
                        };
                    }
                    if tls.alpn_protocol() == Some(b"h2") {
                        self.start_h2(ctx, None);
                    } else {
                        self.proto = Protocol::H1(H1::new(ctx.shared));
                    }
                }
                None => {
                    let data = self.inbuf.data();
                    let n = data.len().min(PREFACE.len());
                    if data[..n] != PREFACE[..n] {
                        self.proto = Protocol::H1(H1::new(ctx.shared));
                    } else if n == PREFACE.len() {
                        self.start_h2(ctx, None);
                    } else {
                        return if self.read_eof {
                            Next::CloseAfterFlush
                        } else {
                            Next::Continue
                        };
                    }
                }
            }
        }
        let tls = self.tls.is_some();
        let mut io = Io {
            inbuf: &mut self.inbuf,
            out: &mut self.out,
            read_eof: self.read_eof,
            tls,
            peer: self.peer,
        };
        match &mut self.proto {
            Protocol::Detect => Next::Continue,
            Protocol::H1(h1) => match h1.process(&mut io, ctx) {
                crate::http1::Step::Next(n) => n,
                crate::http1::Step::Upgrade(up) => {
                    self.start_h2(ctx, Some(up));
                    self.process(ctx)
                }
            },
            Protocol::H2(h2) => {
                let next = h2.process(&mut io, ctx);
                if let Some(lowat) = h2.take_lowat() {
                    // Best effort: priorities still work without it, on less data.
                    let _ = socket2::SockRef::from(&self.sock).set_tcp_notsent_lowat(lowat);
                }
                next
            }
        }
    }

    fn start_h2(&mut self, ctx: &mut Ctx<'_>, upgrade: Option<Box<crate::http1::Upgrade>>) {
        let h2 = H2::new(ctx, &mut self.out, upgrade);
        self.proto = Protocol::H2(Box::new(h2));
    }

    /// A timer armed through [`Ctx`] fired.
    pub fn on_timer(&mut self, tag: u32, ctx: &mut Ctx<'_>) {
        if self.life != Life::Open {
            return;
        }
        let tls = self.tls.is_some();
        let mut io = Io {
            inbuf: &mut self.inbuf,
            out: &mut self.out,
            read_eof: self.read_eof,
            tls,
            peer: self.peer,
        };
        match &mut self.proto {
            Protocol::H1(h1) => h1.on_timer(&mut io, ctx),
            Protocol::H2(h2) => h2.on_timer(tag, &mut io, ctx),
            Protocol::Detect => {}
        }
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
        match &self.proto {
            Protocol::Detect => false,
            Protocol::H1(h1) => h1.has_pending_work() || (input && h1.accepts_input()),
            Protocol::H2(h2) => h2.has_pending_work() || input,
        }
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
                if !self.out.is_empty() && !tls.is_handshaking() {
                    // rustls encrypts straight from the slices (no plaintext copy of ours);
                    // it takes what fits under its buffer limit.
                    let mut iov = [io::IoSlice::new(&[]); MAX_IOV];
                    let k = self.out.io_slices(&mut iov);
                    let n = tls.writer().write_vectored(&iov[..k])?;
                    self.out.advance(n);
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
        let tls = self.tls.is_some();
        let stalled = input_stalled(&mut self.stall, &self.inbuf, ctx.now, idle);
        let expired = match &mut self.proto {
            Protocol::Detect => ctx.now.duration_since(self.last_active) >= idle,
            Protocol::H1(h1) => h1.timed_out(ctx.now, self.last_active, idle),
            Protocol::H2(h2) => {
                // Slowloris over HTTP/2: a frame trickled in more slowly than it would take
                // to time out, byte by byte, keeps the connection active but never
                // completes. Like an HTTP/1.1 request head, unread input must be consumed
                // within the idle timeout.
                if stalled || h2.timed_out(ctx.now, self.last_active, idle) {
                    let mut io = Io {
                        inbuf: &mut self.inbuf,
                        out: &mut self.out,
                        read_eof: self.read_eof,
                        tls,
                        peer: self.peer,
                    };
                    h2.on_idle_timeout(&mut io);
                    true
                } else {
                    false
                }
            }
        };
        if expired {
            self.life = Life::Closing;
            if let Some(tls) = &mut self.tls {
                tls.send_close_notify();
            }
        }
    }

    /// Server shutdown: a GOAWAY for HTTP/2, then close.
    pub fn on_shutdown(&mut self) {
        if let Protocol::H2(h2) = &mut self.proto {
            let tls = self.tls.is_some();
            let mut io = Io {
                inbuf: &mut self.inbuf,
                out: &mut self.out,
                read_eof: self.read_eof,
                tls,
                peer: self.peer,
            };
            h2.on_idle_timeout(&mut io);
        }
        if let Some(tls) = &mut self.tls {
            tls.send_close_notify();
        }
        self.life = Life::Closing;
    }

    fn log_once(&self, args: std::fmt::Arguments<'_>) {
        warn!("{}: {}", self.peer, args);
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
