//! The transport table (like wrk's `sock` struct): TCP, TLS over TCP, UNIX
//! sockets and TLS over UNIX sockets, all non-blocking on mio.
//!
//! A `Transport` turns the socket into two plain operations the worker
//! drives — `read_with` (plaintext in, one read syscall per burst) and
//! `write` (plaintext out) — plus the connect/handshake steps. All sockets
//! are registered edge-triggered for both readable and writable, so unwritten
//! bytes are kept for the next writable event.
//!
//! Certificate verification is OFF by default, like h2load: [`AcceptAnyCert`]
//! accepts any certificate chain and any name, but still checks the handshake
//! signatures so the TLS protocol itself is run correctly (the CPU cost of
//! the handshake is the same as with OpenSSL's `SSL_VERIFY_NONE`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

use crate::error::TransportError;
use crate::result::TlsInfo;

mod early;
mod tls_config;
pub use crate::tls_opts::openssl_cipher_name;
pub(crate) use tls_config::{client_config, server_name};
pub use tls_config::{openssl_temp_key, AcceptAnyCert};

/// Where connections go.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// Resolved TCP addresses, tried in order (h2load walks getaddrinfo's list).
    Tcp(Vec<SocketAddr>),
    /// A UNIX domain socket path (`-B unix:/path`).
    Unix(PathBuf),
}

impl Endpoint {
    /// Number of alternative addresses.
    pub(crate) fn len(&self) -> usize {
        match self {
            Endpoint::Tcp(v) => v.len(),
            Endpoint::Unix(_) => 1,
        }
    }

    /// A printable form of address `idx`.
    pub(crate) fn describe(&self, idx: usize) -> String {
        match self {
            Endpoint::Tcp(v) => v.get(idx).map_or_else(|| "?".to_owned(), |a| a.to_string()),
            Endpoint::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

/// A connected (or connecting) stream socket.
#[derive(Debug)]
pub(crate) enum Socket {
    /// TCP.
    Tcp(TcpStream),
    /// UNIX domain stream socket.
    Unix(UnixStream),
    /// A QUIC connection's UDP socket, endpoint and timer (registered when it was made;
    /// it carries no byte stream: the HTTP/3 session reads and writes through it).
    Quic(Box<crate::conn::quic::QuicLink>),
}

impl Socket {
    /// Starts a non-blocking connect to address `idx` of `ep`.
    pub(crate) fn connect(ep: &Endpoint, idx: usize) -> io::Result<Socket> {
        match ep {
            Endpoint::Tcp(addrs) => {
                let addr = addrs
                    .get(idx)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
                let s = TcpStream::connect(*addr)?;
                // Requests are small and latency-sensitive; batching is done by us.
                let _ = s.set_nodelay(true);
                Ok(Socket::Tcp(s))
            }
            Endpoint::Unix(path) => Ok(Socket::Unix(connect_unix(path)?)),
        }
    }

    /// After a writable event during connect: `Ok(true)` once connected,
    /// `Ok(false)` while still in progress, `Err` if the connect failed.
    pub(crate) fn check_connected(&self) -> io::Result<bool> {
        // mio docs: on a writable event call take_error(), then peer_addr();
        // NotConnected means the connect is still in progress.
        match self {
            Socket::Tcp(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Socket::Unix(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(e) => Err(e),
                }
            }
            // The QUIC handshake is the connection's establishment.
            Socket::Quic(_) => Ok(true),
        }
    }

    /// Half-closes the write side (like h2load's `shutdown(fd, SHUT_WR)`).
    pub(crate) fn shutdown_write(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Socket::Unix(s) => s.shutdown(std::net::Shutdown::Write),
            Socket::Quic(_) => Ok(()),
        };
    }
}

fn connect_unix(path: &Path) -> io::Result<UnixStream> {
    UnixStream::connect(path)
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
            Socket::Quic(_) => Err(no_stream()),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
            Socket::Quic(_) => Err(no_stream()),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write_vectored(bufs),
            Socket::Unix(s) => s.write_vectored(bufs),
            Socket::Quic(_) => Err(no_stream()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Source for Socket {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.register(r, t, i),
            Socket::Unix(s) => s.register(r, t, i),
            Socket::Quic(_) => Ok(()),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.reregister(r, t, i),
            Socket::Unix(s) => s.reregister(r, t, i),
            Socket::Quic(_) => Ok(()),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.deregister(r),
            Socket::Unix(s) => s.deregister(r),
            Socket::Quic(q) => {
                q.deregister(r);
                Ok(())
            }
        }
    }
}

/// A QUIC socket carries no byte stream.
fn no_stream() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "QUIC: no byte stream")
}

/// How [`Transport::read_with`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    /// Nothing more to read for now.
    Drained,
    /// The peer closed the connection (TCP EOF or TLS close_notify).
    Eof,
    /// The callback asked to stop.
    Stopped,
}

/// Hands rustls' decrypted bytes to `on_data`. `Some` ends the read.
fn drain_plaintext(
    tls: &mut ClientConnection,
    plain: &mut [u8],
    on_data: &mut impl FnMut(&[u8]) -> bool,
) -> io::Result<Option<ReadEnd>> {
    loop {
        match tls.reader().read(plain) {
            Ok(0) => return Ok(Some(ReadEnd::Eof)), // close_notify
            Ok(n) => {
                if !on_data(plain.get(..n).unwrap_or_default()) {
                    return Ok(Some(ReadEnd::Stopped));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            // Peer closed the TCP connection without close_notify: many servers do.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Some(ReadEnd::Eof)),
            Err(e) => return Err(e),
        }
    }
}

/// An error of the TLS layer while reading: bad data (as before the engine had typed
/// errors, counted as a protocol error), or the socket's.
fn tls_read_error(e: io::Error) -> TransportError {
    if e.kind() == io::ErrorKind::InvalidData {
        TransportError::TlsRead(e)
    } else {
        TransportError::Read(e)
    }
}

/// Result of driving the TLS handshake.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// Waiting for the socket.
    InProgress,
    /// Done: application data can flow.
    Done,
}

/// A socket with an optional TLS layer on top.
#[derive(Debug)]
pub(crate) struct Transport {
    /// The socket (registered with the worker's poll).
    pub(crate) socket: Socket,
    tls: Option<Box<ClientConnection>>,
    /// Early data was offered and its fate is not known yet ([`Transport::early_outcome`]).
    early: bool,
}

impl Transport {
    /// A cleartext transport.
    pub(crate) fn plain(socket: Socket) -> Transport {
        Transport {
            socket,
            tls: None,
            early: false,
        }
    }

    /// A TLS transport; the handshake starts with [`Transport::handshake`].
    pub(crate) fn tls(
        socket: Socket,
        config: &Arc<ClientConfig>,
        server_name: &ServerName<'static>,
    ) -> Result<Transport, TransportError> {
        let conn = ClientConnection::new(Arc::clone(config), server_name.clone())
            .map_err(TransportError::Setup)?;
        Ok(Transport {
            socket,
            tls: Some(Box::new(conn)),
            early: false,
        })
    }

    /// Whether this transport runs TLS.
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Drives the TLS handshake as far as the socket allows. `Err` carries the
    /// reason (alert, certificate problem, EOF during handshake).
    pub(crate) fn handshake(&mut self) -> Result<Handshake, TransportError> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return Ok(Handshake::Done);
        };
        loop {
            while tls.wants_write() {
                match tls.write_tls(&mut self.socket) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(TransportError::HandshakeWrite(e)),
                }
            }
            if !tls.is_handshaking() {
                return Ok(Handshake::Done);
            }
            if tls.wants_write() {
                // Socket is full; wait for writable.
                return Ok(Handshake::InProgress);
            }
            match tls.read_tls(&mut self.socket) {
                Ok(0) => return Err(TransportError::HandshakeEof),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Send the alert we owe the peer, then report.
                        let _ = tls.write_tls(&mut self.socket);
                        return Err(TransportError::Handshake(e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(Handshake::InProgress)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TransportError::HandshakeRead(e)),
            }
        }
    }

    /// Reads everything available and hands the plaintext to `on_data`
    /// (which returns `false` to stop early).
    ///
    /// One `read` syscall per burst: cleartext is read straight into `plain`;
    /// TLS records are read into `raw` (up to its size, instead of rustls'
    /// 4 KiB reads) and fed to rustls from memory, and the decrypted bytes go
    /// through `plain`. A short read means the socket is drained (the next
    /// arrival raises a new edge), unless `read_closed` says the peer shut
    /// down, in which case reading continues until EOF is seen.
    pub(crate) fn read_with(
        &mut self,
        plain: &mut [u8],
        raw: &mut [u8],
        read_closed: bool,
        mut on_data: impl FnMut(&[u8]) -> bool,
    ) -> Result<ReadEnd, TransportError> {
        let Some(tls) = self.tls.as_deref_mut() else {
            loop {
                match self.socket.read(plain) {
                    Ok(0) => return Ok(ReadEnd::Eof),
                    Ok(n) => {
                        if !on_data(plain.get(..n).unwrap_or_default()) {
                            return Ok(ReadEnd::Stopped);
                        }
                        if n < plain.len() && !read_closed {
                            return Ok(ReadEnd::Drained);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(ReadEnd::Drained),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(TransportError::Read(e)),
                }
            }
        };
        // Plaintext already decrypted (e.g. data that came with the handshake).
        if let Some(end) = drain_plaintext(tls, plain, &mut on_data).map_err(tls_read_error)? {
            return Ok(end);
        }
        loop {
            let n = match self.socket.read(raw) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(ReadEnd::Drained),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(TransportError::Read(e)),
            };
            let mut rest = raw.get(..n).unwrap_or_default();
            loop {
                // Reading from a slice advances it; with n == 0 this tells
                // rustls about the TCP EOF.
                let used = tls.read_tls(&mut rest).map_err(tls_read_error)?;
                if let Err(e) = tls.process_new_packets() {
                    let _ = tls.write_tls(&mut self.socket);
                    return Err(TransportError::Record(e));
                }
                if let Some(end) =
                    drain_plaintext(tls, plain, &mut on_data).map_err(tls_read_error)?
                {
                    return Ok(end);
                }
                if rest.is_empty() || used == 0 {
                    break;
                }
            }
            if n == 0 {
                // TCP EOF without close_notify (drain_plaintext saw no more data).
                return Ok(ReadEnd::Eof);
            }
            if n < raw.len() && !read_closed {
                return Ok(ReadEnd::Drained);
            }
        }
    }

    /// Writes plaintext. For TLS the bytes are encrypted into rustls (as many
    /// as its buffer takes) and then flushed to the socket; the returned
    /// count is what was accepted. `Err(WouldBlock)` when nothing was accepted.
    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return loop {
                match self.socket.write(data) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
        };
        if self.early && tls.is_handshaking() {
            return early::write_early(tls, &mut self.socket, data);
        }
        let n = tls.writer().write(data)?;
        Self::flush_tls(tls, &mut self.socket)?;
        if n == 0 && !data.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Flushes TLS records already produced (after a writable event).
    /// Returns `true` when nothing is left pending inside the TLS layer.
    pub(crate) fn flush(&mut self) -> io::Result<bool> {
        match self.tls.as_deref_mut() {
            None => Ok(true),
            Some(tls) => {
                Self::flush_tls(tls, &mut self.socket)?;
                Ok(!tls.wants_write())
            }
        }
    }

    fn flush_tls(tls: &mut ClientConnection, socket: &mut Socket) -> io::Result<()> {
        while tls.wants_write() {
            match tls.write_tls(socket) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// TLS records are waiting to be written.
    pub(crate) fn wants_write(&self) -> bool {
        self.tls.as_deref().is_some_and(|t| t.wants_write())
    }

    /// The ALPN protocol the server selected.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        self.tls.as_deref().and_then(|t| t.alpn_protocol())
    }

    /// TLS details in h2load's wording (only after the handshake).
    pub(crate) fn tls_info(&self) -> Option<TlsInfo> {
        let tls = self.tls.as_deref()?;
        let protocol = match tls.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_owned(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_owned(),
            v => format!("{v:?}"),
        };
        let cipher = tls
            .negotiated_cipher_suite()
            .map(|s| openssl_cipher_name(s.suite()))
            .unwrap_or_default();
        let server_temp_key = tls
            .negotiated_key_exchange_group()
            .map(|g| openssl_temp_key(g.name()));
        Some(TlsInfo {
            protocol,
            cipher,
            server_temp_key,
            alpn: tls
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        })
    }

    /// Whether the TLS handshake resumed a session.
    pub(crate) fn resumed(&self) -> bool {
        self.tls.as_deref().and_then(|t| t.handshake_kind()) == Some(rustls::HandshakeKind::Resumed)
    }

    /// Sends close_notify (best effort) and half-closes the socket.
    pub(crate) fn close(&mut self) {
        if let Some(tls) = self.tls.as_deref_mut() {
            tls.send_close_notify();
            let _ = Self::flush_tls(tls, &mut self.socket);
        }
        self.socket.shutdown_write();
    }
}
