//! The QUIC transport of one client connection: its own UDP socket (quinn-udp: GSO, GRO,
//! ECN, through the shared shell's [`UdpIo`]), a client-only `quinn_proto::Endpoint` and
//! the connection, plus a timerfd armed for quinn-proto's `poll_timeout`.
//!
//! One UDP socket per connection (as h2load does): the socket and the timer are registered
//! with the client's own poll token, so the worker loop drives a QUIC connection exactly as
//! a TCP one (readiness → read turn → submit → end-of-turn write) with no demultiplexing
//! of its own; the kernel does it by port. Timers need no loop hook either: the timerfd
//! wakes the client's token. Before the session starts the connection lives here; then
//! it moves into the HTTP/3 session ([`crate::h3::H3Conn`]), which hands it back for every
//! read and write.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_quic::quinn_proto::{
    congestion::CubicConfig, ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint,
    EndpointConfig, QlogConfig, TransportConfig,
};
use h2lab_quic::UdpIo;
use mio::{Interest, Registry, Token};

use super::Establish;
use crate::error::TransportError;
use crate::h3::stats::{LinkCounters, QuicConnSample};

/// quinn-proto's figures of `conn` as h2load reports them per client.
pub(crate) fn conn_sample(conn: &Connection) -> QuicConnSample {
    let st = conn.stats();
    QuicConnSample {
        min_rtt: st.path.min_rtt,
        smoothed_rtt: st.path.rtt,
        packets_sent: st.path.sent_packets,
        packets_recv: st.udp_rx.datagrams,
        packets_lost: st.path.lost_packets,
    }
}

/// When a send found the socket buffer full, it is tried again this much later (the socket
/// is registered readable only; see [`QuicLink::connect`]). A client's datagrams are small
/// (requests and ACKs) and its send buffer large, so this is rare.
const SEND_RETRY: Duration = Duration::from_micros(500);

/// How to open QUIC connections (`-p h3`).
#[derive(Debug, Clone)]
pub(crate) struct QuicDial {
    /// quinn-proto's client configuration (rustls with ALPN `h3`, transport parameters).
    pub config: ClientConfig,
    /// The TLS server name (SNI).
    pub server_name: String,
    /// Send with UDP GSO when the kernel supports it (`--no-udp-gso` turns it off).
    pub gso: bool,
    /// `--max-udp-payload-size` (a connection with its own transport configuration, for
    /// qlog, is configured the same).
    pub max_udp_payload_size: Option<u16>,
    /// `--qlog-file-base`: one qlog file per connection.
    pub qlog: Option<QlogFiles>,
}

/// Where the qlog files of a worker's connections go: `BASE.<worker>.<client>.sqlog`, as
/// h2load names them (a client's reconnection overwrites its file, as h2load's does).
#[derive(Debug, Clone)]
pub(crate) struct QlogFiles {
    /// `--qlog-file-base`.
    pub base: std::path::PathBuf,
    /// The worker (thread) id.
    pub worker: u32,
}

impl QlogFiles {
    /// The file of client `client`.
    pub(crate) fn path(&self, client: usize) -> std::path::PathBuf {
        let mut p = self.base.clone().into_os_string();
        p.push(format!(".{}.{client}.sqlog", self.worker));
        p.into()
    }
}

/// The QUIC transport configuration of a client connection.
///
/// `--max-udp-payload-size N` fixes the datagram size (the initial MTU, with path MTU
/// discovery off); the peer's `max_udp_payload_size` transport parameter still caps it once
/// the handshake has it (quinn-proto; h2lab serve and quinn advertise 1,472 bytes). The
/// initial congestion window follows RFC 9002 §7.2 for that size (`min(10·N, max(14,720,
/// 2·N))`, as ngtcp2 computes it for h2load) above 1,472 bytes: quinn-proto's fixed 14,720
/// bytes would be less than one datagram above 14,720 bytes and the handshake would never be
/// sent. Up to 1,472 bytes the window stays quinn-proto's default.
pub(crate) fn transport_config(max_udp_payload_size: Option<u16>) -> TransportConfig {
    let mut tc = TransportConfig::default();
    // The server's push and QPACK streams, and its control stream.
    tc.max_concurrent_uni_streams(16u32.into());
    // Request streams are ours: the server opens none.
    tc.max_concurrent_bidi_streams(0u32.into());
    if let Some(size) = max_udp_payload_size {
        let size = size.max(1200);
        tc.initial_mtu(size);
        tc.mtu_discovery_config(None);
        if size > 1472 {
            let mut cc = CubicConfig::default();
            cc.initial_window(initial_window(size));
            tc.congestion_controller_factory(Arc::new(cc));
        }
    }
    tc
}

/// RFC 9002 §7.2's initial congestion window for `max_datagram_size`.
pub(crate) fn initial_window(max_datagram_size: u16) -> u64 {
    let s = u64::from(max_datagram_size);
    (10 * s).min(14_720u64.max(2 * s))
}

/// The largest UDP payload the path of the connected socket `sock` carries without
/// fragmentation (QUIC sets don't-fragment): the route's MTU less the IP and UDP headers,
/// and never more than an IP packet holds. `None` where the platform does not say.
pub(crate) fn path_max_payload(sock: &std::net::UdpSocket, v4: bool) -> Option<u16> {
    #[cfg(target_os = "linux")]
    {
        let (mtu, headers, most) = if v4 {
            (rustix::net::sockopt::ip_mtu(sock).ok()?, 28, 65_507)
        } else {
            (rustix::net::sockopt::ipv6_mtu(sock).ok()?, 48, 65_527)
        };
        let payload = mtu.saturating_sub(headers).min(most);
        u16::try_from(payload).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (sock, v4);
        None
    }
}

/// The client configuration of one connection: `dial`'s, unless the connection needs its
/// own transport configuration: a qlog writer to `qlog` (quinn-proto's qlog: JSON-SEQ with
/// packet_sent, packet_received, packet_lost and metrics_updated events), or a
/// `--max-udp-payload-size` lowered to `path_max` (what the socket's path carries: a larger
/// datagram would be refused by the kernel at every send, and the handshake would hang).
fn conn_config(
    dial: &QuicDial,
    qlog: Option<&std::path::Path>,
    path_max: Option<u16>,
    now: Instant,
) -> io::Result<ClientConfig> {
    let size = match (dial.max_udp_payload_size, path_max) {
        (Some(n), Some(max)) if n > max => Some(max.max(1200)),
        (n, _) => n,
    };
    if qlog.is_none() && size == dial.max_udp_payload_size {
        return Ok(dial.config.clone());
    }
    let mut tc = transport_config(size);
    if let Some(path) = qlog {
        let file = std::fs::File::create(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create qlog file {}: {e}", path.display()),
            )
        })?;
        let mut q = QlogConfig::default();
        q.writer(Box::new(io::BufWriter::new(file)))
            .title(Some("h2lab bench".into()))
            .start_time(now);
        tc.qlog_stream(q.into_stream());
    }
    let mut config = dial.config.clone();
    config.transport_config(Arc::new(tc));
    Ok(config)
}

/// The transport half of a QUIC connection (see the module docs).
pub(crate) struct QuicLink {
    io: UdpIo,
    endpoint: Endpoint,
    pub(crate) handle: ConnectionHandle,
    /// The connection until the session takes it.
    pub(crate) conn: Option<Connection>,
    timer: crate::timer::DeadlineTimer,
    /// The deadline the timer is armed for (re-armed only for an earlier one).
    timer_at: Option<Instant>,
    resp_buf: Vec<u8>,
    /// Receive calls by datagrams returned (h2load's "GRO packets").
    gro: LinkCounters,
}

impl std::fmt::Debug for QuicLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuicLink")
    }
}

impl QuicLink {
    /// Binds a UDP socket for `addr`'s family, starts the handshake and registers the socket
    /// and the timer with `token`.
    pub(crate) fn connect(
        dial: &QuicDial,
        addr: SocketAddr,
        registry: &Registry,
        token: Token,
        now: Instant,
    ) -> io::Result<QuicLink> {
        let bind: SocketAddr = if addr.is_ipv4() {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = std::net::UdpSocket::bind(bind)?;
        // Connected, so that an ICMP port unreachable (nobody listens: a stopped server)
        // comes back as ECONNREFUSED at once instead of after the idle timeout.
        sock.connect(addr)?;
        let path_max = dial
            .max_udp_payload_size
            .and_then(|_| path_max_payload(&sock, addr.is_ipv4()));
        // The worker's thread drives all its connections' sockets: they share its receive
        // slots instead of holding half a megabyte each.
        let mut io = UdpIo::client(sock, dial.gso)?;
        // Readable only on Linux: there every datagram sent raises a writable edge (the
        // skb's memory returns to the socket), which would cost the worker a turn per send.
        // A send that would block is retried by the timerfd instead ([`SEND_RETRY`]).
        let interest = if cfg!(target_os = "linux") {
            Interest::READABLE
        } else {
            Interest::READABLE | Interest::WRITABLE
        };
        registry.register(io.socket(), token, interest)?;
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        // The client's index is the low half of its token (see the worker).
        let qlog = dial.qlog.as_ref().map(|q| q.path(token.0 & 0xffff_ffff));
        let config = conn_config(dial, qlog.as_deref(), path_max, now)?;
        let (handle, conn) = endpoint
            .connect(now, config, addr, &dial.server_name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let timer = crate::timer::DeadlineTimer::with_token(registry, token);
        let mut link = QuicLink {
            io,
            endpoint,
            handle,
            conn: None,
            timer,
            timer_at: None,
            resp_buf: Vec::new(),
            gro: LinkCounters::default(),
        };
        // The first flight (the client's Initial) goes now, as a TCP connect sends its SYN:
        // with readable interest only, nothing else would wake the client to send it. The
        // server's answer (or the loss timer) wakes it next.
        let mut conn = conn;
        link.transmit(&mut conn, now);
        link.conn = Some(conn);
        Ok(link)
    }

    /// Reads every datagram the socket has into `conn` and fires its expired timers.
    /// Returns the UDP payload bytes received.
    pub(crate) fn recv(&mut self, conn: &mut Connection, now: Instant) -> io::Result<usize> {
        let mut total = 0;
        let QuicLink {
            io,
            endpoint,
            resp_buf,
            gro,
            ..
        } = self;
        loop {
            let more = io.recv_batch_owned(|r, data| {
                if r.index == 0 {
                    gro.on_receive(r.segments);
                }
                total += data.len();
                resp_buf.clear();
                if let Some(DatagramEvent::ConnectionEvent(_, ev)) =
                    endpoint.handle(now, r.from, r.to_ip, r.ecn, data, resp_buf)
                {
                    conn.handle_event(ev);
                }
            })?;
            if !more {
                break;
            }
        }
        if io.refused {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "connection refused (ICMP port unreachable)",
            ));
        }
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        self.timer.expire(now);
        if self.timer_at.is_some_and(|a| a <= now) {
            self.timer_at = None;
        }
        Ok(total)
    }

    /// One step of the handshake: datagrams in, timers, datagrams out.
    pub(crate) fn handshake(&mut self, now: Instant) -> Result<Establish, TransportError> {
        let Some(mut conn) = self.conn.take() else {
            return Ok(Establish::Waiting);
        };
        let read = self.recv(&mut conn, now);
        self.transmit(&mut conn, now);
        let res = match read {
            Err(e) => Err(TransportError::HandshakeRead(e)),
            Ok(_) if conn.is_closed() => Err(TransportError::Handshake(rustls::Error::General(
                "QUIC handshake failed (connection closed)".into(),
            ))),
            Ok(_) if !conn.is_handshaking() => Ok(Establish::Ready),
            Ok(_) => Ok(Establish::Progressed),
        };
        self.conn = Some(conn);
        res
    }

    /// A send waits for the socket to become writable.
    pub(crate) fn has_pending(&self) -> bool {
        self.io.has_pending()
    }

    /// Sends what `conn` has (until the socket is full), hands endpoint events over, and
    /// arms the timer for the connection's next deadline. Returns the bytes sent.
    pub(crate) fn transmit(&mut self, conn: &mut Connection, now: Instant) -> usize {
        let mut sent = 0;
        // The worker writes at a later instant than it read: a QUIC timer (loss detection,
        // a delayed ACK) may have come due in between. Fired here, its packets go out now;
        // left alone, its deadline would be in the past below and no timer would wake the
        // connection for it (a lost wake-up: a stall until a datagram arrives, if one does).
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(cev) = self.endpoint.handle_event(self.handle, ev) {
                conn.handle_event(cev);
            }
        }
        if !self.io.has_pending() || self.io.retry() {
            // The thread's transmit buffer, not one per connection (quinn-proto reserves a
            // whole GSO batch in it): every transmit is sent, or copied when the socket is
            // full, before the next one is built.
            let io = &mut self.io;
            sent += h2lab_quic::udp::with_thread_send_buf(|send_buf| {
                let mut sent = 0;
                while !io.has_pending() {
                    send_buf.clear();
                    let Some(t) =
                        conn.poll_transmit(now, io.max_segments(conn.current_mtu()), send_buf)
                    else {
                        break;
                    };
                    io.send(&t, send_buf.get(..t.size).unwrap_or_default());
                    sent += t.size;
                }
                sent
            });
        }
        // quinn-proto's deadline moves at nearly every packet (idle, loss detection and ACK
        // timers restart): re-arming the timerfd for each would cost a system call per turn.
        // Armed only when nothing earlier is: a wake-up before the real deadline finds
        // nothing due and re-arms for it here.
        let retry = self.io.has_pending().then(|| now + SEND_RETRY);
        if let Some(t) = [conn.poll_timeout(), retry].into_iter().flatten().min() {
            // A deadline that is already due (none should be, after the timers fired above)
            // still gets a wake-up: at once rather than never.
            let t = t.max(now + Duration::from_micros(1));
            let earlier = match self.timer_at {
                Some(a) => t < a,
                None => true,
            };
            if earlier {
                self.timer.arm(t, now);
                self.timer_at = Some(t);
            }
        }
        sent
    }

    /// The datagram counters of this connection's socket (read when it goes away).
    pub(crate) fn counters(&self) -> LinkCounters {
        LinkCounters {
            datagrams_sent: self.io.datagrams_out,
            datagrams_recv: self.io.datagrams_in,
            gro: self.gro.gro,
        }
    }

    /// Deregisters the socket (the timer closes with its fd).
    pub(crate) fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(self.io.socket());
        self.timer.deregister(registry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_window_is_rfc_9002s_for_the_datagram_size() {
        assert_eq!(initial_window(1472), 14_720);
        assert_eq!(initial_window(9000), 18_000);
        assert_eq!(initial_window(65_527), 131_054);
    }

    #[test]
    fn path_max_payload_of_loopback_fits_an_ip_packet() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(sock.local_addr().unwrap()).unwrap();
        if let Some(max) = path_max_payload(&sock, true) {
            assert!((1200..=65_507).contains(&max), "{max}");
        }
    }
}
