//! Transports: the client side (TCP, or TLS over TCP with rustls) and the upstream side
//! (TCP or a UNIX stream socket), each reading into and writing from a [`Buf`].

use std::io::{self, Read, Write};
use std::sync::Arc;

use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use crate::buf::{Buf, InBuf};

/// Read granularity.
pub const READ_CHUNK: usize = 16 * 1024;

/// What a [`FrontIo::fill`] or [`UpSock::fill`] call saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Fill {
    /// Bytes added.
    pub got: usize,
    /// The peer closed its sending side.
    pub eof: bool,
    /// The socket would block, or a read returned less than it had room for (TCP and UNIX
    /// stream sockets: the receive queue was emptied): readiness consumed.
    pub blocked: bool,
}

/// A client connection.
pub enum FrontIo {
    /// Cleartext TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(TcpStream, Box<rustls::ServerConnection>),
    /// No socket: one stream of an HTTP/2 client connection (`true`: over TLS); its bytes
    /// are moved by the HTTP/2 connection.
    Virtual(bool),
}

impl FrontIo {
    /// Wraps an accepted socket (`tls`: the listener's rustls configuration).
    pub fn new(sock: TcpStream, tls: Option<&Arc<rustls::ServerConfig>>) -> io::Result<Self> {
        Ok(match tls {
            None => FrontIo::Plain(sock),
            Some(cfg) => {
                let mut c = rustls::ServerConnection::new(cfg.clone()).map_err(io::Error::other)?;
                c.set_buffer_limit(Some(128 * 1024));
                FrontIo::Tls(sock, Box::new(c))
            }
        })
    }

    /// Registers the socket.
    pub fn register(&mut self, r: &Registry, t: Token) -> io::Result<()> {
        match self {
            FrontIo::Plain(s) | FrontIo::Tls(s, _) => {
                r.register(s, t, Interest::READABLE | Interest::WRITABLE)
            }
            FrontIo::Virtual(_) => Ok(()),
        }
    }

    /// The ALPN protocol negotiated (TLS).
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            FrontIo::Tls(_, c) => c.alpn_protocol(),
            _ => None,
        }
    }

    /// Whether the TLS handshake is still going on.
    pub fn handshaking(&self) -> bool {
        matches!(self, FrontIo::Tls(_, c) if c.is_handshaking())
    }

    /// Whether this is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, FrontIo::Tls(..) | FrontIo::Virtual(true))
    }

    /// Reads until the socket would block or `inbuf` holds `max` bytes. A read that does
    /// not fill the buffer ends it (edge-triggered readiness: new bytes bring a new event)
    /// unless `to_eof`: the peer's FIN was already signalled, so read until it shows.
    pub fn fill(&mut self, inbuf: &mut InBuf, max: usize, to_eof: bool) -> io::Result<Fill> {
        let mut f = Fill::default();
        while inbuf.len() < max {
            match self {
                FrontIo::Virtual(_) => {
                    f.blocked = true;
                    break;
                }
                FrontIo::Plain(s) => match inbuf.read_from(s, READ_CHUNK) {
                    Ok(0) => {
                        f.eof = true;
                        break;
                    }
                    Ok(n) => {
                        f.got += n;
                        if !to_eof && inbuf.spare() > 0 {
                            f.blocked = true;
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        f.blocked = true;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                },
                FrontIo::Tls(s, c) => {
                    // Plaintext already decrypted first.
                    match inbuf.read_from(&mut c.reader(), READ_CHUNK) {
                        Ok(0) => {
                            f.eof = true;
                            break;
                        }
                        Ok(n) => {
                            f.got += n;
                            continue;
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                            f.eof = true;
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                    match c.read_tls(s) {
                        Ok(0) => {
                            f.eof = true;
                            break;
                        }
                        Ok(_) => {
                            if let Err(e) = c.process_new_packets() {
                                let _ = c.write_tls(s);
                                return Err(io::Error::other(format!("TLS: {e}")));
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            f.blocked = true;
                            break;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(f)
    }

    /// Writes as much of `out` as the socket takes; `Ok(true)` when it would block.
    pub fn flush(&mut self, out: &mut Buf) -> io::Result<bool> {
        match self {
            FrontIo::Virtual(_) => Ok(false),
            FrontIo::Plain(s) => write_plain(s, out),
            FrontIo::Tls(s, c) => loop {
                if !out.is_empty() && !c.is_handshaking() {
                    let n = c.writer().write(out.data())?;
                    out.consume(n);
                }
                if !c.wants_write() {
                    return Ok(false);
                }
                match c.write_tls(s) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            },
        }
    }

    /// Writes what `out` holds and then `data` in as few `writev` calls as the socket takes
    /// (cleartext TCP only), so that a large body chunk goes from the upstream's input buffer
    /// straight to the socket instead of being copied into `out` first. Returns how much of
    /// `data` was written; the caller queues the rest in `out`. The bytes leave in exactly
    /// the order queuing would have sent them; errors are left for the next
    /// [`FrontIo::flush`] to find.
    pub fn write_through(&mut self, out: &mut Buf, data: &[u8]) -> usize {
        let FrontIo::Plain(s) = self else { return 0 };
        let mut done = 0;
        while done < data.len() {
            let bufs = [
                io::IoSlice::new(out.data()),
                io::IoSlice::new(&data[done..]),
            ];
            match s.write_vectored(&bufs) {
                Ok(0) => break,
                Ok(n) => {
                    let from_out = n.min(out.len());
                    out.consume(from_out);
                    done += n - from_out;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        done
    }

    /// Whether bytes wait in the transport (TLS records not yet written).
    pub fn wants_write(&self) -> bool {
        matches!(self, FrontIo::Tls(_, c) if c.wants_write())
    }

    /// Shuts the sending side of the socket.
    pub fn shutdown_write(&mut self) {
        if let FrontIo::Plain(s) | FrontIo::Tls(s, _) = self {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
    }
}

fn write_plain(s: &mut impl Write, out: &mut Buf) -> io::Result<bool> {
    while !out.is_empty() {
        match s.write(out.data()) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => out.consume(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// An upstream connection's socket.
pub enum UpSock {
    /// TCP.
    Tcp(TcpStream),
    /// UNIX stream socket.
    Unix(UnixStream),
}

impl UpSock {
    /// Starts a non-blocking connect.
    pub fn connect(addr: &crate::config::UpstreamAddr) -> io::Result<Self> {
        Ok(match addr {
            crate::config::UpstreamAddr::Tcp(a) => {
                let s = TcpStream::connect(*a)?;
                let _ = s.set_nodelay(true);
                UpSock::Tcp(s)
            }
            crate::config::UpstreamAddr::Unix(p) => UpSock::Unix(UnixStream::connect(p)?),
        })
    }

    /// Registers the socket.
    pub fn register(&mut self, r: &Registry, t: Token) -> io::Result<()> {
        let i = Interest::READABLE | Interest::WRITABLE;
        match self {
            UpSock::Tcp(s) => r.register(s, t, i),
            UpSock::Unix(s) => r.register(s, t, i),
        }
    }

    /// `Ok(true)` once the connect completed, `Ok(false)` while it is in progress, the
    /// error when it failed.
    pub fn check_connected(&mut self) -> io::Result<bool> {
        let (err, peer) = match self {
            UpSock::Tcp(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            UpSock::Unix(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
        };
        if let Some(e) = err {
            return Err(e);
        }
        match peer {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads until the socket would block or `inbuf` holds `max` bytes (a short read ends
    /// it unless `to_eof`, as in [`FrontIo::fill`]), `chunk` bytes of room at least per read.
    pub fn fill(
        &mut self,
        inbuf: &mut InBuf,
        max: usize,
        chunk: usize,
        to_eof: bool,
    ) -> io::Result<Fill> {
        let mut f = Fill::default();
        while inbuf.len() < max {
            match inbuf.read_from(self, chunk) {
                Ok(0) => {
                    f.eof = true;
                    break;
                }
                Ok(n) => {
                    f.got += n;
                    if !to_eof && inbuf.spare() > 0 {
                        f.blocked = true;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    f.blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(f)
    }

    /// Writes as much of `out` as the socket takes; `Ok(true)` when it would block.
    pub fn flush(&mut self, out: &mut Buf) -> io::Result<bool> {
        write_plain(self, out)
    }
}

impl Read for UpSock {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            UpSock::Tcp(s) => s.read(b),
            UpSock::Unix(s) => s.read(b),
        }
    }
}

impl Write for UpSock {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            UpSock::Tcp(s) => s.write(b),
            UpSock::Unix(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
