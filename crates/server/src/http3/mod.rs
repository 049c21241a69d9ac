//! HTTP/3 for `h2lab serve` (RFC 9114): QUIC on UDP on the TLS port number, the same
//! certificate (ALPN `h3`), the same endpoints and router as HTTP/1.1 and HTTP/2.
//!
//! One thread runs a mio loop over the UDP socket and the QUIC shell ([`crate::quic`]);
//! each connection's HTTP/3 state is an [`conn::H3Conn`] (control and QPACK streams, request
//! streams in [`request`]). Framing, QPACK and the stream rules are the wire crate's
//! (`h2lab_wire::{h3, qpack}`); the QUIC transport (flow control, MAX_STREAMS, loss
//! recovery, TLS 1.3) is `quinn-proto`'s.

pub mod conn;
pub mod head;
pub mod request;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token, Waker};
use quinn_proto::{IdleTimeout, TransportConfig, VarInt};

use crate::config::ServerConfig;
use crate::date::DateCache;
use crate::endpoints::Router;
use crate::quic::{Shell, UdpIo};
use crate::shutdown::Shutdown;
use crate::{tls, ServerError};

/// ALPN of HTTP/3.
pub const ALPN: &[u8] = b"h3";
/// Most QUIC connections served at once; more are refused (CONNECTION_REFUSED).
const MAX_CONNECTIONS: usize = 10_000;
/// Unidirectional streams a client may open: control, QPACK encoder and decoder, and a few
/// reserved (grease) ones.
const MAX_UNI_STREAMS: u32 = 16;
/// QUIC send buffer per connection (unacknowledged plus queued): bounds what a large body
/// holds in memory.
const SEND_WINDOW: u64 = 4 * 1024 * 1024;

const SOCKET: Token = Token(0);
const WAKER: Token = Token(1);

/// What every connection of the loop shares.
pub struct Ctx {
    /// Endpoint routing (the same table as TCP).
    pub router: Router,
    /// Cached `date` value.
    pub date: DateCache,
    /// File-read buffer.
    pub scratch: Vec<u8>,
    /// Largest request body (413 beyond).
    pub max_request_body: u64,
    /// Largest decoded request header section (SETTINGS_MAX_FIELD_SECTION_SIZE).
    pub max_field_section: usize,
}

/// The QUIC server configuration: the TLS certificate of the TCP port with ALPN `h3`
/// (TLS 1.3), and transport limits from `config` (streams, windows, idle timeout).
pub fn quic_server_config(
    config: &ServerConfig,
) -> Result<Arc<quinn_proto::ServerConfig>, ServerError> {
    let paths = tls::ensure_certificate(config)?;
    let h3 = ServerConfig {
        alpn: vec![ALPN.to_vec()],
        ..config.clone()
    };
    let mut rustls = tls::server_config(&paths, &h3)?;
    if config.zero_rtt {
        // quinn requires 0 or u32::MAX (QUIC flow control limits 0-RTT, not TLS).
        if let Some(c) = Arc::get_mut(&mut rustls) {
            c.max_early_data_size = u32::MAX;
        }
    }
    let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(rustls)
        .map_err(|e| ServerError::Tls(format!("QUIC: {e}")))?;
    let mut sc = quinn_proto::ServerConfig::with_crypto(Arc::new(crypto));
    let mut tc = TransportConfig::default();
    tc.max_concurrent_bidi_streams(VarInt::from_u32(config.max_concurrent_streams));
    tc.max_concurrent_uni_streams(VarInt::from_u32(MAX_UNI_STREAMS));
    let stream_window = config.initial_stream_window.max(64 * 1024);
    tc.stream_receive_window(VarInt::from_u32(stream_window));
    tc.receive_window(VarInt::from_u32(
        config.initial_connection_window.max(stream_window),
    ));
    tc.send_window(SEND_WINDOW);
    let idle = IdleTimeout::try_from(config.idle_timeout.min(Duration::from_secs(3600)))
        .map_err(|e| ServerError::Config(format!("idle timeout: {e}")))?;
    tc.max_idle_timeout(Some(idle));
    sc.transport_config(Arc::new(tc));
    Ok(Arc::new(sc))
}

/// Binds the HTTP/3 UDP socket on `addr` (the TLS listener's address). With `group` (more
/// than one HTTP/3 thread) it is bound with SO_REUSEPORT on Linux, so that [`bind_more`] can
/// add sockets on the same address (the kernel requires every socket of the group to have
/// it, and the same user). Without, it is bound alone: no other socket, of this process or
/// another program of the same user, can join the port and take some of its clients'
/// datagrams (their connections would then be served by whatever listens there).
pub fn bind(addr: SocketAddr, group: bool) -> io::Result<std::net::UdpSocket> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        s.set_reuse_port(group)?;
        s.bind(&addr.into())?;
        Ok(s.into())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = group;
        std::net::UdpSocket::bind(addr)
    }
}

/// `n - 1` more sockets on `first`'s address (SO_REUSEPORT, Linux), one per extra HTTP/3
/// thread: the kernel spreads datagrams over the group by a hash of the 4-tuple, so every
/// datagram of a client address lands on one socket, i.e. one thread and its QUIC endpoint.
/// Elsewhere there is one socket and one thread; on Linux a refused bind is an error.
pub fn bind_more(first: &std::net::UdpSocket, n: usize) -> io::Result<Vec<std::net::UdpSocket>> {
    let mut more = Vec::new();
    if cfg!(any(target_os = "linux", target_os = "android")) {
        let addr = first.local_addr()?;
        for _ in 1..n {
            more.push(bind(addr, true)?);
        }
    }
    Ok(more)
}

/// Longest a stopping server waits, after its GOAWAY, for the requests it accepted to be
/// answered and acknowledged (a client reading nothing would hold it forever).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// Serves HTTP/3 on `socket` until `shutdown`; then sends GOAWAY, refuses new connections,
/// lets the open ones settle (requests answered and acknowledged; at most [`DRAIN_LIMIT`])
/// and closes every connection with H3_NO_ERROR.
pub fn run(
    socket: std::net::UdpSocket,
    config: &ServerConfig,
    server: Arc<quinn_proto::ServerConfig>,
    shutdown: &Shutdown,
) -> io::Result<()> {
    run_on(UdpIo::new(socket, config.h3_gso)?, config, server, shutdown).map(|_| ())
}

/// As [`run`], on a socket already wrapped (tests shrink its buffers to force full-buffer
/// sends). Returns what the send path did: sends that found the socket buffer full, and
/// sends the kernel refused.
pub fn run_on(
    io: UdpIo,
    config: &ServerConfig,
    server: Arc<quinn_proto::ServerConfig>,
    shutdown: &Shutdown,
) -> io::Result<crate::quic::udp::SendCounts> {
    let mut poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let mut clock = crate::cpu_clock::ThreadClock::here(Some(waker.clone()));
    shutdown.register(waker);
    let mut shell: Shell<conn::H3Conn> = Shell::new(io, Some(server), MAX_CONNECTIONS);
    // Writable interest only while a send waits: on Linux every datagram sent raises a
    // writable edge (its memory returns to the socket), a loop turn per send for nothing.
    poll.registry()
        .register(shell.io().socket(), SOCKET, Interest::READABLE)?;
    let mut write_interest = false;
    let mut ctx = Ctx {
        router: Router::new(config)?,
        date: DateCache::default(),
        scratch: Vec::with_capacity(64 * 1024),
        max_request_body: config.max_request_body,
        max_field_section: config.max_header_list_size as usize,
    };
    let max_field_section = ctx.max_field_section;
    let dynamic_table = config.h3_qpack_dynamic_table;
    let max_requests = config.max_requests_per_connection;
    let mut events = Events::with_capacity(64);
    let mut more = false;
    // Set once `shutdown` is seen: GOAWAY sent, connections drain until then (see below).
    let mut drain_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let timeout = if more || shell.has_work() {
            Duration::ZERO
        } else {
            shell
                .next_deadline()
                .into_iter()
                .chain(drain_until)
                .min()
                .map_or(Duration::from_secs(1), |t| t.saturating_duration_since(now))
                .min(Duration::from_secs(1))
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        clock.turn();
        let now = Instant::now();
        if drain_until.is_none() && shutdown.is_triggered() {
            // RFC 9114 §5.2: GOAWAY first, then answer what was accepted before closing.
            // QUIC's retransmissions live in this process, so closing at once would lose
            // whatever the client has not acknowledged yet — the GOAWAY itself when its
            // datagram was dropped, the last responses' tails.
            shell.goaway(now);
            drain_until = Some(now + DRAIN_LIMIT);
        }
        ctx.date.update();
        let mut readable = more;
        for ev in events.iter() {
            if ev.token() == SOCKET {
                readable |= ev.is_readable() || ev.is_error();
                if ev.is_writable() {
                    shell.on_writable();
                }
            }
        }
        more = false;
        if readable {
            more = shell.read(now, &mut ctx, |_| {
                conn::H3Conn::new(max_field_section, dynamic_table, max_requests)
            })?;
        }
        shell.drive(now, &mut ctx);
        if drain_until.is_some_and(|t| now >= t || shell.settled()) {
            shell.close_all(now, h2lab_wire::h3::ErrorCode::H3_NO_ERROR.0);
            return Ok(shell.io().send_counts());
        }
        let pending = shell.io().has_pending();
        if pending != write_interest {
            let interest = if pending {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            poll.registry()
                .reregister(shell.io().socket(), SOCKET, interest)?;
            write_interest = pending;
        }
    }
}
