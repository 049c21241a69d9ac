//! The one client connection driver, shared by the bench worker
//! ([`crate::run`]) and the page fetcher ([`crate::fetch`]): connect (walking
//! the address list), TLS handshake, ALPN → protocol → session, one read turn,
//! one flush, and how the connection ended ([`ConnEnd`]).
//!
//! The driver owns no request policy: the caller decides what to submit (a
//! plan and pacing, or a queue of URLs) and does the accounting through its
//! own [`SessionEvents`](crate::session::SessionEvents). Everything is static
//! dispatch: the session is an enum ([`AnySession`]) and the caller's
//! callbacks are generic.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use mio::{Interest, Registry, Token};
use rustls::pki_types::ServerName;
use rustls::ClientConfig;

use crate::config::AppProtocol;
use crate::error::{ProtocolError, TransportError};
use crate::h1::H1Session;
use crate::h2::{H2Session, H2Settings};
use crate::h3::{H3Conn, H3Session};
use crate::request::Prepared;
use crate::session::{Session, SessionError, SessionEvents};
use crate::transport::{Endpoint, Handshake, ReadEnd, Socket, Transport};
use h2lab_wire::qpack::{EncoderConfig, RequestTemplate};

mod early;
mod protocol;
pub(crate) mod quic;
#[cfg(test)]
mod tests;

pub(crate) use protocol::AnySession;

/// Plaintext (and TLS ciphertext) read buffer size.
pub(crate) const READ_BUF: usize = 64 * 1024;

/// Which ALPN protocols were offered, and so what a TLS connection may speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AlpnOffer {
    /// `h2` is in the offered list.
    pub h2: bool,
    /// `http/1.1` is in the offered list (the fallback when nothing is selected).
    pub http11: bool,
}

impl AlpnOffer {
    /// The offer of an ALPN list.
    pub(crate) fn of(alpn: &[String]) -> AlpnOffer {
        AlpnOffer {
            h2: alpn.iter().any(|p| p == "h2"),
            http11: alpn.iter().any(|p| p == "http/1.1"),
        }
    }

    /// The protocol for what the server selected (`None`: nothing), and whether it
    /// is a fallback from `h2` to `http/1.1`.
    pub(crate) fn choose(
        self,
        selected: Option<&[u8]>,
    ) -> Result<(AppProtocol, bool), ProtocolError> {
        match selected {
            Some(b"h2") => Ok((AppProtocol::H2, false)),
            Some(b"http/1.1") => Ok((AppProtocol::Http11, self.h2)),
            None if self.http11 => Ok((AppProtocol::Http11, self.h2)),
            None => Err(ProtocolError::NoAlpn),
            Some(p) => Err(ProtocolError::UnsupportedAlpn(p.to_vec())),
        }
    }
}

/// How to open connections to one server, and the sessions to run on them.
#[derive(Debug)]
pub(crate) struct Dialer {
    /// Where to connect (address list or UNIX socket).
    pub endpoint: Endpoint,
    /// TLS configuration and server name (SNI); `None` for cleartext.
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// The ALPN offer (TLS only).
    pub alpn: AlpnOffer,
    /// The protocol spoken without TLS.
    pub cleartext: AppProtocol,
    /// The prepared requests.
    pub prep: Arc<Prepared>,
    /// Most requests in flight per connection.
    pub max_streams: u32,
    /// HTTP/2 windows, header table sizes, push.
    pub h2: H2Settings,
    /// HTTP/3: the QPACK tables (ours and the encoder's).
    pub qpack: crate::h3::QpackSettings,
    /// `-v`: sessions print what they receive.
    pub verbose: bool,
    /// HTTP/3: connections are QUIC (ALPN `h3`) instead of TCP.
    pub quic: Option<quic::QuicDial>,
    /// `--0rtt`: resumed connections start their session in early data / 0-RTT.
    pub zero_rtt: bool,
    /// The protocol the last TLS handshake chose: what an early session speaks (the server
    /// accepts early data only for the ALPN of the resumed session, RFC 8446 §4.2.10).
    pub early_proto: std::cell::Cell<Option<AppProtocol>>,
    /// `--reconnect-every N` (0: off): requests per connection before it is replaced.
    pub reconnect_every: u64,
    /// Sessions resume (`--tls-resume`, `--0rtt`): handshakes are counted.
    pub resumes: bool,
}

/// The step a connection is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnState {
    /// The TCP (or UNIX) connect is in progress.
    Connecting,
    /// The TLS handshake is in progress.
    Handshaking,
    /// The transport is ready (a session runs once [`Dialer::start_session`] was called).
    Open,
}

/// What [`Connection::establish`] got done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Establish {
    /// Nothing happened yet (still connecting).
    Waiting,
    /// Some progress (connected, handshake messages exchanged): the connection is active.
    Progressed,
    /// The transport is ready: negotiate and start the session.
    Ready,
}

/// How a connection ended (or failed to start).
#[derive(Debug)]
pub(crate) enum ConnEnd {
    /// The server closed or announced closing (EOF between responses,
    /// `Connection: close`, GOAWAY drained).
    ServerClosed,
    /// The connect to address `addr_idx` failed.
    Connect {
        /// Index into the endpoint's addresses.
        addr_idx: usize,
        /// The socket error.
        source: io::Error,
    },
    /// TLS setup or handshake failed.
    Tls(TransportError),
    /// The server's protocol choice cannot be used.
    Negotiation(ProtocolError),
    /// Reading or writing an established connection failed.
    Transport(TransportError),
    /// The session failed while reading.
    Session(SessionError),
    /// The connection ended in the middle of a response.
    Truncated(SessionError),
}

impl ConnEnd {
    /// A protocol violation (counted as h2load's protocol errors), as opposed to a
    /// lost connection.
    pub(crate) fn is_protocol(&self) -> bool {
        match self {
            ConnEnd::Session(e) => e.is_protocol(),
            ConnEnd::Transport(e) => e.is_tls_record(),
            ConnEnd::Negotiation(_) => true,
            _ => false,
        }
    }

    /// The protocol error this end carries, if [`ConnEnd::is_protocol`].
    pub(crate) fn into_protocol(self) -> Option<ProtocolError> {
        match self {
            ConnEnd::Session(e) if e.is_protocol() => Some(ProtocolError::Session(e)),
            ConnEnd::Transport(e) if e.is_tls_record() => Some(ProtocolError::Tls(e)),
            ConnEnd::Negotiation(e) => Some(e),
            _ => None,
        }
    }
}

impl std::fmt::Display for ConnEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnEnd::ServerClosed => f.write_str("connection closed by the server"),
            ConnEnd::Connect { source, .. } => write!(f, "{source}"),
            ConnEnd::Tls(e) => write!(f, "TLS handshake failed: {e}"),
            ConnEnd::Negotiation(e) => write!(f, "{e}"),
            ConnEnd::Transport(e) => write!(f, "{e}"),
            ConnEnd::Session(e) | ConnEnd::Truncated(e) => write!(f, "{e}"),
        }
    }
}

/// Reusable read buffers (one set per event loop).
pub(crate) struct ReadBufs {
    plain: Box<[u8]>,
    /// TLS ciphertext (empty for cleartext).
    raw: Box<[u8]>,
}

impl ReadBufs {
    /// Buffers for cleartext, or for TLS (a second buffer for ciphertext).
    pub(crate) fn new(tls: bool) -> ReadBufs {
        ReadBufs {
            plain: vec![0u8; READ_BUF].into_boxed_slice(),
            raw: vec![0u8; if tls { READ_BUF } else { 0 }].into_boxed_slice(),
        }
    }
}

/// How [`Connection::read`] ended.
#[derive(Debug)]
pub(crate) enum ReadTurn {
    /// Everything available was read.
    Drained,
    /// The peer closed: call [`Connection::eof`].
    Eof,
    /// The connection failed.
    Ended(ConnEnd),
}

/// Hooks around the writes of [`Connection::flush`].
pub(crate) trait WriteHooks {
    /// Just before a write is attempted.
    fn before_write(&mut self);
    /// `n` bytes were written.
    fn written(&mut self, n: usize);
}

/// One client connection: the transport, where it is in its setup, and the session.
#[derive(Debug)]
pub(crate) struct Connection {
    /// The socket (with TLS).
    pub transport: Transport,
    state: ConnState,
    /// The protocol session (once open).
    pub session: Option<AnySession>,
    /// When data last moved (the caller keeps it up to date).
    pub last_activity: Instant,
    /// Index of the endpoint address in use.
    pub addr_idx: usize,
    /// Early data (0-RTT) is wanted / was offered on this connection (see `early.rs`).
    early: early::Early,
}

impl Dialer {
    /// Number of alternative addresses.
    pub(crate) fn addresses(&self) -> usize {
        self.endpoint.len()
    }

    /// A printable form of address `idx`.
    pub(crate) fn describe(&self, idx: usize) -> String {
        self.endpoint.describe(idx)
    }

    /// Starts a non-blocking connect, trying addresses from `from` on until one
    /// accepts the attempt (like h2load walking getaddrinfo's list), and registers
    /// the socket with `token`.
    pub(crate) fn connect(
        &self,
        registry: &Registry,
        token: Token,
        from: usize,
        now: Instant,
    ) -> Result<Connection, ConnEnd> {
        let mut last_err = None;
        if let (Some(dial), Endpoint::Tcp(addrs)) = (&self.quic, &self.endpoint) {
            for (i, addr) in addrs.iter().enumerate().skip(from) {
                match quic::QuicLink::connect(dial, *addr, registry, token, now) {
                    Ok(link) => {
                        return Ok(Connection {
                            transport: Transport::plain(Socket::Quic(Box::new(link))),
                            state: ConnState::Handshaking,
                            session: None,
                            last_activity: now,
                            addr_idx: i,
                            early: early::Early::wanted(self.zero_rtt),
                        })
                    }
                    Err(e) => last_err = Some((i, e)),
                }
            }
        }
        for i in from..self.endpoint.len() {
            if self.quic.is_some() {
                break;
            }
            let mut sock = match Socket::connect(&self.endpoint, i) {
                Ok(s) => s,
                Err(e) => {
                    last_err = Some((i, e));
                    continue;
                }
            };
            if let Err(e) =
                registry.register(&mut sock, token, Interest::READABLE | Interest::WRITABLE)
            {
                last_err = Some((i, e));
                continue;
            }
            let transport = match &self.tls {
                None => Transport::plain(sock),
                Some((cfg, name)) => Transport::tls(sock, cfg, name).map_err(ConnEnd::Tls)?,
            };
            return Ok(Connection {
                transport,
                state: ConnState::Connecting,
                session: None,
                last_activity: now,
                addr_idx: i,
                early: early::Early::wanted(self.zero_rtt),
            });
        }
        let (addr_idx, source) = last_err.unwrap_or_else(|| {
            (
                from,
                io::Error::new(io::ErrorKind::NotFound, "no address to connect to"),
            )
        });
        Err(ConnEnd::Connect { addr_idx, source })
    }

    /// The protocol to speak on an established transport, and whether it is a
    /// fallback from `h2` (TLS: ALPN; cleartext: what was configured).
    pub(crate) fn negotiate(
        &self,
        conn: &Connection,
    ) -> Result<(AppProtocol, bool), ProtocolError> {
        if matches!(conn.transport.socket, Socket::Quic(_)) {
            // quinn-proto fails the handshake unless the server selected `h3`.
            Ok((AppProtocol::H3, false))
        } else if let Some(p) = conn
            .transport
            .in_early_phase()
            .then(|| self.early_proto.get())
        {
            // Early data: the resumed session's protocol (no ALPN answer yet).
            p.map(|p| (p, false)).ok_or(ProtocolError::NoAlpn)
        } else if conn.transport.is_tls() {
            self.alpn.choose(conn.transport.alpn())
        } else {
            Ok((self.cleartext, false))
        }
    }

    /// Starts the session for `proto` on `conn` and queues its preface into `out`.
    pub(crate) fn start_session(
        &self,
        conn: &mut Connection,
        proto: AppProtocol,
        out: &mut Vec<u8>,
    ) {
        let mut session = match proto {
            AppProtocol::Http11 => AnySession::H1(H1Session::new(
                Arc::clone(&self.prep),
                self.max_streams,
                self.verbose,
            )),
            AppProtocol::H2 | AppProtocol::H2c => AnySession::H2(Box::new(H2Session::new(
                Arc::clone(&self.prep),
                self.max_streams,
                &self.h2,
                self.verbose,
            ))),
            AppProtocol::H3 => {
                let Some(quic) = conn.quic().and_then(|l| l.conn.take()) else {
                    return;
                };
                AnySession::H3(Box::new(H3Conn {
                    quic,
                    session: H3Session::new(
                        h3_template(&self.prep, self.qpack.encoder_config()),
                        self.max_streams,
                    )
                    .with_qpack(self.qpack)
                    .with_body(self.prep.body.clone()),
                }))
            }
        };
        session.on_connect(out);
        conn.session = Some(session);
        conn.state = ConnState::Open;
    }
}

/// The QPACK request template of the prepared requests: the fields of the first, then
/// each request's `:path` (h2load sends one host; only the path varies). With a dynamic
/// table in `config` the template inserts its fixed fields (and paths) once the server's
/// SETTINGS allow it, and then sends sections referencing them (as nghttp3 does).
fn h3_template(prep: &Prepared, config: EncoderConfig) -> RequestTemplate {
    let first = prep.h2.first().map(Vec::as_slice).unwrap_or_default();
    let fixed = first
        .iter()
        .filter(|(n, _)| &**n != b":path")
        .map(|(n, v)| (&**n, &**v));
    let paths = prep.h2.iter().filter_map(|fields| {
        fields
            .iter()
            .find(|(n, _)| &**n == b":path")
            .map(|(_, v)| &**v)
    });
    RequestTemplate::new(fixed, paths, config)
        .or_else(|_| RequestTemplate::new([], [&b"/"[..]], config))
        .unwrap_or_else(|_| unreachable_template())
}

fn unreachable_template() -> RequestTemplate {
    panic!("a template with one path and no fields is always valid")
}

impl Connection {
    /// The QUIC transport, for an HTTP/3 connection.
    pub(crate) fn quic(&mut self) -> Option<&mut quic::QuicLink> {
        match &mut self.transport.socket {
            Socket::Quic(l) => Some(l),
            _ => None,
        }
    }

    /// The transport is ready and a session runs on it.
    pub(crate) fn is_open(&self) -> bool {
        self.state == ConnState::Open
    }

    /// Drives the connect and the TLS handshake as far as the socket allows.
    pub(crate) fn establish(&mut self) -> Result<Establish, ConnEnd> {
        let addr_idx = self.addr_idx;
        if self.start_early() {
            return Ok(Establish::Ready);
        }
        if let Some(link) = self.quic() {
            return link.handshake(Instant::now()).map_err(|e| match e {
                // Nobody listens on the server's UDP port: a failed connect, as on TCP.
                TransportError::HandshakeRead(source)
                    if source.kind() == io::ErrorKind::ConnectionRefused =>
                {
                    ConnEnd::Connect { addr_idx, source }
                }
                e => ConnEnd::Tls(e),
            });
        }
        let mut progressed = false;
        if self.state == ConnState::Connecting {
            match self.transport.socket.check_connected() {
                Ok(false) => return Ok(Establish::Waiting),
                Ok(true) => {
                    if !self.transport.is_tls() {
                        return Ok(Establish::Ready);
                    }
                    self.state = ConnState::Handshaking;
                    progressed = true;
                    if self.start_early() {
                        return Ok(Establish::Ready);
                    }
                }
                Err(source) => {
                    return Err(ConnEnd::Connect {
                        addr_idx: self.addr_idx,
                        source,
                    })
                }
            }
        }
        if self.state == ConnState::Handshaking {
            return match self.transport.handshake() {
                Ok(Handshake::InProgress) => Ok(Establish::Progressed),
                Ok(Handshake::Done) => Ok(Establish::Ready),
                Err(e) => Err(ConnEnd::Tls(e)),
            };
        }
        Ok(if progressed {
            Establish::Progressed
        } else {
            Establish::Ready
        })
    }

    /// Reads everything available and hands it to the session through `on_input`
    /// (which builds the caller's events and calls [`Session::on_read`]).
    #[inline]
    pub(crate) fn read<F>(
        &mut self,
        bufs: &mut ReadBufs,
        read_closed: bool,
        mut on_input: F,
    ) -> ReadTurn
    where
        F: FnMut(&mut AnySession, &[u8]) -> Result<(), SessionError>,
    {
        let Some(session) = self.session.as_mut() else {
            return ReadTurn::Drained;
        };
        if let (Socket::Quic(link), AnySession::H3(h3)) =
            (&mut self.transport.socket, &mut *session)
        {
            let mut left = match link.recv(&mut h3.quic, Instant::now()) {
                Ok(n) => n,
                Err(e) => return ReadTurn::Ended(ConnEnd::Transport(TransportError::Read(e))),
            };
            // The session reads from QUIC itself; `input` stands for the UDP payload received
            // (its length is what the caller counts as traffic, as h2load counts for QUIC).
            loop {
                let n = left.min(bufs.plain.len());
                if let Err(e) = on_input(session, bufs.plain.get(..n).unwrap_or_default()) {
                    return ReadTurn::Ended(ConnEnd::Session(e));
                }
                left -= n;
                if left == 0 {
                    break;
                }
            }
            return match session {
                AnySession::H3(h3) if h3.session.is_closed() => ReadTurn::Eof,
                _ => ReadTurn::Drained,
            };
        }
        let mut sess_err = None;
        let r = self
            .transport
            .read_with(
                &mut bufs.plain,
                &mut bufs.raw,
                read_closed,
                |input| match on_input(session, input) {
                    Ok(()) => true,
                    Err(e) => {
                        sess_err = Some(e);
                        false
                    }
                },
            );
        match r {
            Ok(ReadEnd::Drained) => ReadTurn::Drained,
            Ok(ReadEnd::Stopped) => match sess_err {
                Some(e) => ReadTurn::Ended(ConnEnd::Session(e)),
                None => ReadTurn::Drained,
            },
            Ok(ReadEnd::Eof) => ReadTurn::Eof,
            Err(e) => ReadTurn::Ended(ConnEnd::Transport(e)),
        }
    }

    /// The peer closed: let the session complete a close-delimited response or
    /// report the truncation.
    pub(crate) fn eof(&mut self, ev: &mut dyn SessionEvents) -> ConnEnd {
        match self.session.as_mut().map(|s| s.on_eof(ev)) {
            Some(Err(e)) => ConnEnd::Truncated(e),
            _ => ConnEnd::ServerClosed,
        }
    }

    /// One write of the pending output `out[*pos..]` (the session's held-back
    /// output first). `Some` when the connection is over: a write failed, or
    /// the protocol is done with it ([`ConnEnd::ServerClosed`]).
    #[inline]
    pub(crate) fn flush<H: WriteHooks>(
        &mut self,
        out: &mut Vec<u8>,
        pos: &mut usize,
        hooks: &mut H,
    ) -> Option<ConnEnd> {
        let session = self.session.as_mut()?;
        session.on_write(out);
        if let (Socket::Quic(link), AnySession::H3(h3)) =
            (&mut self.transport.socket, &mut *session)
        {
            hooks.before_write();
            let sent = link.transmit(&mut h3.quic, Instant::now());
            if sent > 0 {
                hooks.written(sent);
            }
            out.clear();
            *pos = 0;
            return (h3.quic.is_drained() || (h3.session.is_closed() && !link.has_pending()))
                .then_some(ConnEnd::ServerClosed);
        }
        let mut write_err = None;
        while *pos < out.len() {
            let pending = out.get(*pos..).unwrap_or_default();
            hooks.before_write();
            match self.transport.write(pending) {
                Ok(n) => {
                    *pos += n;
                    hooks.written(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    write_err = Some(e);
                    break;
                }
            }
        }
        if *pos >= out.len() {
            out.clear();
            *pos = 0;
            if let Err(e) = self.transport.flush() {
                write_err.get_or_insert(e);
            }
        }
        if let Some(e) = write_err {
            return Some(ConnEnd::Transport(TransportError::Write(e)));
        }
        (session.wants_close() && out.is_empty()).then_some(ConnEnd::ServerClosed)
    }

    /// Writes `out` once, best effort (a GOAWAY before closing).
    pub(crate) fn write_best_effort(&mut self, out: &[u8]) {
        let _ = self.transport.write(out);
    }

    /// Says goodbye (HTTP/2 GOAWAY) and writes what is pending, best effort.
    pub(crate) fn goodbye(&mut self, out: &mut Vec<u8>, pos: usize) {
        if let Some(session) = self.session.as_mut() {
            session.terminate(out);
            if let (Socket::Quic(link), AnySession::H3(h3)) =
                (&mut self.transport.socket, &mut *session)
            {
                link.transmit(&mut h3.quic, Instant::now());
                return;
            }
            let _ = self.transport.write(out.get(pos..).unwrap_or_default());
        }
    }

    /// Output the session or TLS holds back, or a close to carry out.
    pub(crate) fn wants_write(&self) -> bool {
        self.transport.wants_write()
            || self
                .session
                .as_ref()
                .is_some_and(|s| s.wants_write() || s.wants_close())
    }

    /// HTTP/3: quinn-proto's figures of the connection (when it got that far) and the
    /// socket's counters; `None` for TCP. Read once, when the connection goes away.
    pub(crate) fn quic_figures(
        &mut self,
    ) -> Option<(
        Option<crate::h3::stats::QuicConnSample>,
        crate::h3::stats::LinkCounters,
    )> {
        let Socket::Quic(link) = &mut self.transport.socket else {
            return None;
        };
        let sample = match (&self.session, &link.conn) {
            (Some(AnySession::H3(h3)), _) => Some(quic::conn_sample(&h3.quic)),
            (_, Some(c)) => Some(quic::conn_sample(c)),
            _ => None,
        };
        Some((sample, link.counters()))
    }

    /// Drops a connection whose connect failed: deregisters the socket (nothing to say
    /// goodbye to).
    pub(crate) fn discard(mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.transport.socket);
    }

    /// Sends close_notify (TLS), half-closes and deregisters the socket.
    pub(crate) fn close(mut self, registry: &Registry) {
        self.transport.close();
        let _ = registry.deregister(&mut self.transport.socket);
    }
}
