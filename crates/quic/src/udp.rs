//! The UDP half of the QUIC shell: one non-blocking mio socket read in batches (recvmmsg,
//! GRO) and written with GSO through `quinn-udp`, which also carries ECN both ways.
//!
//! A send that would block keeps its datagrams ([`UdpIo::has_pending`]) until the socket is
//! writable again; meanwhile the shell stops asking connections for more, so QUIC's own
//! pacing and congestion control see the back-pressure instead of losses.
//!
//! The receive slots (eight 64 KiB buffers for one `recvmmsg`) are only used during a
//! receive call, whose callers copy or hand on what they need before it returns. A server
//! socket owns its slots ([`UdpIo::new`]); a client has one socket per connection, all
//! driven by one event loop per thread, so its sockets use the slots of their thread
//! ([`UdpIo::client`]): a worker with 1,000 QUIC connections holds one set of slots, not
//! 1,000 (half a gigabyte), and they go when the thread ends. The same holds for the
//! buffer transmits are built in ([`with_thread_send_buf`]).

use std::cell::Cell;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};

use bytes::BytesMut;
use mio::net::UdpSocket;
use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState, BATCH_SIZE};

/// Receive buffer per batch slot: the largest GRO super-datagram Linux builds (64 KiB).
const SLOT: usize = 64 * 1024;
/// Slots per receive call (`recvmmsg` batch).
const SLOTS: usize = if BATCH_SIZE < 8 { BATCH_SIZE } else { 8 };
/// Socket buffers asked for (the kernel may cap them): a 10 MB response in flight on a fast
/// path must not be dropped by a full send queue.
const SOCKET_BUFFER: usize = 4 * 1024 * 1024;
/// The most payload one `sendmsg` may carry, GSO batches included: an IPv4 datagram's
/// 65,535 octets less the IP (20) and UDP (8) headers (IPv6 allows 65,527; the smaller
/// bound serves both). A larger GSO batch fails with EMSGSIZE and every datagram in it is
/// lost, which QUIC repairs only after a probe timeout.
pub const MAX_GSO_PAYLOAD: usize = 65_535 - 20 - 8;

/// One datagram (or GRO batch of equal-sized datagrams) received.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Sender.
    pub from: SocketAddr,
    /// Our address it was sent to, when the platform says.
    pub to_ip: Option<IpAddr>,
    /// ECN bits.
    pub ecn: Option<quinn_proto::EcnCodepoint>,
    /// Size of each datagram in the batch (the last may be shorter).
    pub stride: usize,
    /// Datagrams in the message this one came in (more than 1 with GRO).
    pub segments: usize,
    /// This datagram's position in its message (0 for the first).
    pub index: usize,
}

fn received(meta: &RecvMeta) -> Received {
    Received {
        from: meta.addr,
        to_ip: meta.dst_ip,
        ecn: meta
            .ecn
            .and_then(|e| quinn_proto::EcnCodepoint::from_bits(e as u8)),
        stride: meta.stride.max(1),
        segments: meta.len.div_ceil(meta.stride.max(1)),
        index: 0,
    }
}

/// What the send path did with the transmits it was given (beyond the datagrams sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendCounts {
    /// Sends that found the socket buffer full (kept until the socket was writable).
    pub blocked: u64,
    /// Sends the kernel refused for another reason (their datagrams lost).
    pub failed: u64,
}

/// A transmit that hit a full socket buffer.
#[derive(Debug)]
struct Pending {
    to: SocketAddr,
    src_ip: Option<IpAddr>,
    ecn: Option<quinn_proto::EcnCodepoint>,
    segment: Option<usize>,
    bytes: Vec<u8>,
}

/// The buffers one receive call fills: eight slots (fewer where `quinn-udp` batches
/// fewer) of 64 KiB and their metadata.
pub struct RecvSlots {
    bufs: Vec<u8>,
    metas: [RecvMeta; SLOTS],
}

impl RecvSlots {
    fn new() -> Box<RecvSlots> {
        Box::new(RecvSlots {
            bufs: vec![0; SLOT * SLOTS],
            metas: [RecvMeta::default(); SLOTS],
        })
    }

    /// The bytes the slots hold (their capacity).
    pub fn capacity(&self) -> usize {
        self.bufs.len()
    }
}

thread_local! {
    /// The receive slots of this thread's client sockets ([`UdpIo::client`]): made at the
    /// first receive, freed with the thread.
    static THREAD_SLOTS: Cell<Option<Box<RecvSlots>>> = const { Cell::new(None) };
}

thread_local! {
    /// The transmit buffer of this thread's client connections ([`with_thread_send_buf`]).
    static THREAD_SEND_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's transmit buffer, for the client connections the thread
/// drives: quinn-proto reserves room for a whole GSO batch (up to 64 KiB) in the buffer
/// it is given at every `poll_transmit`, so a buffer per connection would hold that much
/// per connection. Whatever `f` puts in it must be sent (or copied, as
/// [`UdpIo::send`] does when the socket is full) before `f` returns.
pub fn with_thread_send_buf<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut buf = THREAD_SEND_BUF.with(Cell::take);
    let r = f(&mut buf);
    THREAD_SEND_BUF.with(|c| c.set(buf));
    r
}

/// Whether this thread has made its client sockets' receive slots ([`UdpIo::client`]).
pub fn thread_has_recv_slots() -> bool {
    THREAD_SLOTS.with(|c| {
        let s = c.take();
        let has = s.is_some();
        c.set(s);
        has
    })
}

/// The socket, its `quinn-udp` state, the receive batch buffers and counters.
pub struct UdpIo {
    socket: UdpSocket,
    state: UdpSocketState,
    /// Its own receive slots, or `None`: the thread's ([`UdpIo::client`]).
    slots: Option<Box<RecvSlots>>,
    pending: Option<Pending>,
    gso: bool,
    /// Datagrams received (GRO batches split).
    pub datagrams_in: u64,
    /// Receive calls that returned data.
    pub reads: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Sends that found the socket buffer full (kept until it is writable).
    pub blocked_sends: u64,
    /// Sends the kernel refused for another reason (EMSGSIZE for an MTU probe larger than
    /// the path, a GSO batch larger than [`MAX_GSO_PAYLOAD`]): their datagrams are lost, as
    /// on the wire, and QUIC's loss recovery resends what they carried.
    pub failed_sends: u64,
    /// A receive reported ECONNREFUSED (an ICMP port unreachable: on a connected socket,
    /// the peer's port is closed). A server ignores it; a client's connection has failed.
    pub refused: bool,
}

impl UdpIo {
    /// Wraps a bound socket (made non-blocking here), with receive slots of its own. `gso`:
    /// batch sends with UDP GSO when the kernel supports it.
    pub fn new(socket: std::net::UdpSocket, gso: bool) -> io::Result<UdpIo> {
        UdpIo::with_slots(socket, gso, Some(RecvSlots::new()))
    }

    /// As [`UdpIo::new`], for one of many sockets the same thread drives (a client's, one
    /// per connection): it receives into the thread's slots, made at the thread's first
    /// receive and shared by all its client sockets. Receive only on the thread that drives
    /// the socket.
    pub fn client(socket: std::net::UdpSocket, gso: bool) -> io::Result<UdpIo> {
        UdpIo::with_slots(socket, gso, None)
    }

    fn with_slots(
        socket: std::net::UdpSocket,
        gso: bool,
        slots: Option<Box<RecvSlots>>,
    ) -> io::Result<UdpIo> {
        socket.set_nonblocking(true)?;
        let state = UdpSocketState::new(UdpSockRef::from(&socket))?;
        let _ = state.set_send_buffer_size(UdpSockRef::from(&socket), SOCKET_BUFFER);
        let _ = state.set_recv_buffer_size(UdpSockRef::from(&socket), SOCKET_BUFFER);
        Ok(UdpIo {
            socket: UdpSocket::from_std(socket),
            state,
            slots,
            pending: None,
            gso,
            datagrams_in: 0,
            reads: 0,
            datagrams_out: 0,
            blocked_sends: 0,
            failed_sends: 0,
            refused: false,
        })
    }

    /// Bytes of receive slots this socket holds itself: none for a client socket
    /// ([`UdpIo::client`]), whose thread holds them.
    pub fn own_slot_bytes(&self) -> usize {
        self.slots.as_ref().map_or(0, |s| s.capacity())
    }

    /// Sets the socket's send and receive buffer sizes (the kernel doubles and caps them),
    /// replacing the 4 MiB asked for at creation: for tests that need a full buffer.
    pub fn set_buffer_sizes(&self, send: usize, recv: usize) -> io::Result<()> {
        let sock = UdpSockRef::from(&self.socket);
        self.state.set_send_buffer_size(sock, send)?;
        self.state
            .set_recv_buffer_size(UdpSockRef::from(&self.socket), recv)
    }

    /// The mio source to register.
    pub fn socket(&mut self) -> &mut UdpSocket {
        &mut self.socket
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Most datagrams one transmit may carry (1 without GSO): the kernel's GSO segment limit,
    /// and no more `segment_size`-octet datagrams than fit in one send
    /// ([`MAX_GSO_PAYLOAD`]). Pass the connection's current MTU
    /// (`Connection::current_mtu`), the size quinn-proto gives each datagram of a batch:
    /// 64 datagrams of 1,452 octets (92,928) would be refused whole.
    pub fn max_segments(&self, segment_size: u16) -> usize {
        if self.gso {
            gso_segments(self.state.max_gso_segments(), segment_size)
        } else {
            1
        }
    }

    /// Reads one batch; calls `on_datagram(meta, bytes)` for each datagram. Returns `false`
    /// when the socket has nothing more: it would block, or the batch was not full (see
    /// [`UdpIo::recv_batch_owned`]).
    pub fn recv_batch(&mut self, mut on_datagram: impl FnMut(Received, &[u8])) -> io::Result<bool> {
        self.recv_with(|io, slots, n| {
            for (meta, slot) in slots.metas.iter().zip(slots.bufs.chunks(SLOT)).take(n) {
                let mut info = received(meta);
                let data = slot.get(..meta.len).unwrap_or_default();
                for (i, d) in data.chunks(info.stride).enumerate() {
                    io.datagrams_in += 1;
                    info.index = i;
                    on_datagram(info, d);
                }
            }
        })
    }

    /// As [`UdpIo::recv_batch`], but each datagram comes as its own `BytesMut` (what
    /// `quinn_proto::Endpoint::handle` takes): one allocation and one copy per received
    /// buffer (a GRO batch of up to 64 datagrams), split without copying, instead of one per
    /// datagram.
    ///
    /// A batch that did not fill every slot means the socket's queue was empty when the
    /// kernel stopped reading, so `false` is returned without another (empty) receive call:
    /// a datagram arriving later raises a new readiness event (Linux queues an epoll event
    /// on every datagram enqueued, edge-triggered or not).
    pub fn recv_batch_owned(
        &mut self,
        mut on_datagram: impl FnMut(Received, BytesMut),
    ) -> io::Result<bool> {
        self.recv_with(|io, slots, n| {
            for (meta, slot) in slots.metas.iter().zip(slots.bufs.chunks(SLOT)).take(n) {
                let mut info = received(meta);
                let mut data = BytesMut::from(slot.get(..meta.len).unwrap_or_default());
                while !data.is_empty() {
                    let d = data.split_to(info.stride.min(data.len()));
                    io.datagrams_in += 1;
                    on_datagram(info, d);
                    info.index += 1;
                }
            }
        })
    }

    /// One `recvmmsg` into the slots (the socket's own or its thread's); `handle(self,
    /// slots, n)` sees the `n` filled ones.
    fn recv_with(
        &mut self,
        handle: impl FnOnce(&mut UdpIo, &RecvSlots, usize),
    ) -> io::Result<bool> {
        if let Some(mut own) = self.slots.take() {
            let r = self.recv_into(&mut own, handle);
            self.slots = Some(own);
            return r;
        }
        // Taken out of the thread's cell for the call (a receive inside `handle`, which no
        // caller does, would make a set of its own rather than alias this one).
        let mut slots = THREAD_SLOTS.with(Cell::take).unwrap_or_else(RecvSlots::new);
        let r = self.recv_into(&mut slots, handle);
        THREAD_SLOTS.with(|c| c.set(Some(slots)));
        r
    }

    fn recv_into(
        &mut self,
        slots: &mut RecvSlots,
        handle: impl FnOnce(&mut UdpIo, &RecvSlots, usize),
    ) -> io::Result<bool> {
        let mut iovs: [IoSliceMut<'_>; SLOTS] = {
            let mut chunks = slots.bufs.chunks_mut(SLOT);
            std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()))
        };
        let n = match self
            .state
            .recv(UdpSockRef::from(&self.socket), &mut iovs, &mut slots.metas)
        {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(true),
            // ICMP errors (a peer gone) surface here on some kernels: not fatal for a server.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                self.refused = true;
                return Ok(true);
            }
            Err(e) => return Err(e),
        };
        self.reads += 1;
        handle(self, slots, n);
        // Fewer than `SLOTS`: recvmmsg stopped because the queue was empty (Linux; elsewhere
        // quinn-udp may read one datagram per call).
        Ok(n == SLOTS || !cfg!(any(target_os = "linux", target_os = "android")))
    }

    /// The blocked and failed sends so far.
    pub fn send_counts(&self) -> SendCounts {
        SendCounts {
            blocked: self.blocked_sends,
            failed: self.failed_sends,
        }
    }

    /// Whether a blocked transmit waits for the socket to become writable.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Sends `bytes` (one datagram, or `segment`-sized datagrams with GSO). On a full socket
    /// buffer the datagrams are kept and `false` returned: call [`UdpIo::retry`] when the
    /// socket is writable.
    pub fn send(&mut self, t: &quinn_proto::Transmit, bytes: &[u8]) -> bool {
        debug_assert!(self.pending.is_none());
        if self.try_send(t.destination, t.src_ip, t.ecn, t.segment_size, bytes) {
            return true;
        }
        self.blocked_sends += 1;
        self.pending = Some(Pending {
            to: t.destination,
            src_ip: t.src_ip,
            ecn: t.ecn,
            segment: t.segment_size,
            bytes: bytes.to_vec(),
        });
        false
    }

    /// Retries the blocked transmit; `true` when nothing is pending any more.
    pub fn retry(&mut self) -> bool {
        let Some(p) = self.pending.take() else {
            return true;
        };
        if self.try_send(p.to, p.src_ip, p.ecn, p.segment, &p.bytes) {
            return true;
        }
        self.pending = Some(p);
        false
    }

    fn try_send(
        &mut self,
        to: SocketAddr,
        src_ip: Option<IpAddr>,
        ecn: Option<quinn_proto::EcnCodepoint>,
        segment: Option<usize>,
        bytes: &[u8],
    ) -> bool {
        let t = Transmit {
            destination: to,
            ecn: ecn.and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
            contents: bytes,
            segment_size: segment,
            src_ip,
        };
        // `try_send`, not `send`: `send` reports every error but WouldBlock as success (an
        // EMSGSIZE batch would be counted as sent). Its GSO fallback (EIO/EINVAL turn GSO
        // off for the socket) happens in both.
        match self.state.try_send(UdpSockRef::from(&self.socket), &t) {
            Ok(()) => {
                self.datagrams_out += segment.map_or(1, |s| bytes.len().div_ceil(s.max(1))) as u64;
                true
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            // Lost, as a datagram on the wire may be: not kept, counted.
            Err(_) => {
                self.failed_sends += 1;
                true
            }
        }
    }
}

/// Datagrams of `segment_size` octets per GSO send: at most `kernel_max` (the socket's GSO
/// segment limit) and at most [`MAX_GSO_PAYLOAD`] octets in all; at least 1.
pub fn gso_segments(kernel_max: usize, segment_size: u16) -> usize {
    let fit = MAX_GSO_PAYLOAD / usize::from(segment_size.max(1));
    kernel_max.min(fit).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_sockets_share_their_threads_receive_slots() {
        // A server socket owns its slots.
        let own = UdpIo::new(std::net::UdpSocket::bind("127.0.0.1:0").unwrap(), false).unwrap();
        assert_eq!(own.own_slot_bytes(), SLOT * SLOTS);
        // A thread's client sockets hold none: the thread makes one set at its first
        // receive, and every socket receives into it.
        std::thread::spawn(|| {
            let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut clients: Vec<UdpIo> = (0..64)
                .map(|_| {
                    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                    s.connect(peer.local_addr().unwrap()).unwrap();
                    UdpIo::client(s, false).unwrap()
                })
                .collect();
            assert!(!thread_has_recv_slots());
            for (i, c) in clients.iter().enumerate() {
                let to = c.local_addr().unwrap();
                peer.send_to(format!("to {i}").as_bytes(), to).unwrap();
            }
            for (i, c) in clients.iter_mut().enumerate() {
                let mut got = Vec::new();
                // Loopback queues a datagram before `send_to` returns; the bound is for a
                // kernel that does not.
                for _ in 0..1000 {
                    c.recv_batch(|_, d| got.push(d.to_vec())).unwrap();
                    if !got.is_empty() {
                        break;
                    }
                    std::thread::yield_now();
                }
                assert_eq!(got, vec![format!("to {i}").into_bytes()]);
                assert_eq!(c.own_slot_bytes(), 0);
            }
            assert!(thread_has_recv_slots());
        })
        .join()
        .unwrap();
        // Another thread has made none.
        assert!(!thread_has_recv_slots());
    }

    #[test]
    fn a_gso_batch_fits_in_one_datagram_send() {
        // quinn-udp's Linux limit is 64 segments; after MTU discovery quinn-proto's
        // datagrams on loopback are 1,452 octets.
        assert_eq!(gso_segments(64, 1452), 45);
        const { assert!(45 * 1452 <= MAX_GSO_PAYLOAD && 46 * 1452 > MAX_GSO_PAYLOAD) };
        assert_eq!(gso_segments(64, 1200), 54);
        assert_eq!(gso_segments(64, 1000), 64);
        assert_eq!(gso_segments(10, 1200), 10);
        // A datagram larger than a send's limit still goes (alone; the kernel decides).
        assert_eq!(gso_segments(64, u16::MAX), 1);
        assert_eq!(gso_segments(0, 1200), 1);
    }
}
