//! Spike: how much CPU per request does quiche's HTTP/3 client spend under
//! h2load's workload shape? Not part of h2lab: a standalone load generator to compare with
//! `h2lab bench --h3` against the same servers (see run.sh and docs/bench.md, "Why it works this way").
//!
//! `-c C` QUIC connections (one connected UDP socket each, as h2load and h2lab), `-m M`
//! concurrent request streams per connection, `-n N` GETs of one URL in total; a slot that
//! finishes takes the next request until N have been issued. One thread, one mio poll.
//! Certificate checks are off (loopback, self-signed). GSO on send (UDP_SEGMENT) and GRO on
//! receive (UDP_GRO) unless `--no-gso` / `--no-gro`.
//!
//! Output: h2load-style `finished in`, `requests:`, `status codes:`, `traffic:` lines (so
//! bench/lib.sh's `parse_client` reads them) and a `cpu:` line from getrusage.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use mio::{Events, Interest, Poll, Token};
use quiche::h3::NameValue;

const MAX_DATAGRAM: usize = 1452;
const BATCH: usize = 44 * MAX_DATAGRAM; // under 64 KiB, at most 64 segments
const SOL_UDP: libc::c_int = 17;
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

struct Args {
    conns: usize,
    streams: usize,
    total: u64,
    url: String,
    gso: bool,
    gro: bool,
    qpack_table: u64,
}

fn usage() -> ! {
    eprintln!(
        "usage: quiche-h3-spike [-c C] [-m M] [-n N] [--no-gso] [--no-gro] \
         [--qpack-table BYTES] https://HOST:PORT/PATH"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        conns: 1,
        streams: 1,
        total: 1,
        url: String::new(),
        gso: true,
        gro: true,
        qpack_table: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let num = |it: &mut dyn Iterator<Item = String>| -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match arg.as_str() {
            "-c" => a.conns = num(&mut it) as usize,
            "-m" => a.streams = num(&mut it) as usize,
            "-n" => a.total = num(&mut it),
            "--qpack-table" => a.qpack_table = num(&mut it),
            "--no-gso" => a.gso = false,
            "--no-gro" => a.gro = false,
            s if s.starts_with("https://") => a.url = s.to_owned(),
            _ => usage(),
        }
    }
    if a.url.is_empty() || a.conns == 0 || a.streams == 0 {
        usage()
    }
    a
}

/// `https://host:port/path` -> (address, authority, path). Numeric hosts only (a spike).
fn split_url(url: &str) -> (SocketAddr, String, String) {
    let rest = &url["https://".len()..];
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr: SocketAddr = authority
        .replace("localhost", "127.0.0.1")
        .parse()
        .unwrap_or_else(|_| usage());
    (addr, authority.to_owned(), path.to_owned())
}

#[derive(Default)]
struct Totals {
    issued: u64,
    done: u64,
    ok: u64,
    failed: u64,
    status: [u64; 6],
    body: u64,
    header_bytes: u64,
    datagrams_sent: u64,
    datagrams_recv: u64,
    send_calls: u64,
    recv_calls: u64,
}

struct Client {
    sock: mio::net::UdpSocket,
    local: SocketAddr,
    peer: SocketAddr,
    quic: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    in_flight: usize,
    /// The peer sent GOAWAY: quiche refuses new requests on this connection for good.
    goaway: bool,
    closed_counted: bool,
}

fn random_cid() -> [u8; quiche::MAX_CONN_ID_LEN] {
    let mut cid = [0u8; quiche::MAX_CONN_ID_LEN];
    // SAFETY: getrandom writes at most len bytes into the buffer.
    let n = unsafe { libc::getrandom(cid.as_mut_ptr().cast(), cid.len(), 0) };
    assert_eq!(n as usize, cid.len(), "getrandom");
    cid
}

fn main() {
    let args = parse_args();
    let (peer, authority, path) = split_url(&args.url);

    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    config.verify_peer(false);
    config
        .set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .expect("alpn");
    config.set_max_idle_timeout(30_000);
    // quinn-proto's defaults, which `h2lab bench --h3` uses: 1472-byte payloads announced,
    // datagrams of up to 1452 bytes sent.
    config.set_max_recv_udp_payload_size(1472);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM);
    config.set_initial_max_data(10_000_000);
    config.set_initial_max_stream_data_bidi_local(1_000_000);
    config.set_initial_max_stream_data_bidi_remote(1_000_000);
    config.set_initial_max_stream_data_uni(1_000_000);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.set_disable_active_migration(true);

    let mut h3_config = quiche::h3::Config::new().expect("h3 config");
    if args.qpack_table > 0 {
        // quiche's decoder has no dynamic table: announcing one would break on the first
        // dynamic reference. Kept only to show that (run.sh never passes it).
        h3_config.set_qpack_max_table_capacity(args.qpack_table);
        h3_config.set_qpack_blocked_streams(100);
    }

    let req = [
        quiche::h3::Header::new(b":method", b"GET"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", authority.as_bytes()),
        quiche::h3::Header::new(b":path", path.as_bytes()),
        quiche::h3::Header::new(b"user-agent", b"quiche-h3-spike"),
    ];

    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(1024);
    let mut clients = Vec::with_capacity(args.conns);
    let start = Instant::now();
    for i in 0..args.conns {
        let std_sock = UdpSocket::bind(if peer.is_ipv4() {
            "127.0.0.1:0"
        } else {
            "[::1]:0"
        })
        .expect("bind");
        std_sock.connect(peer).expect("connect");
        std_sock.set_nonblocking(true).expect("nonblocking");
        if args.gro {
            set_gro(&std_sock);
        }
        let local = std_sock.local_addr().expect("local addr");
        let mut sock = mio::net::UdpSocket::from_std(std_sock);
        poll.registry()
            .register(&mut sock, Token(i), Interest::READABLE)
            .expect("register");
        let cid = random_cid();
        let quic = quiche::connect(
            Some("localhost"),
            &quiche::ConnectionId::from_ref(&cid),
            local,
            peer,
            &mut config,
        )
        .expect("connect");
        clients.push(Client {
            sock,
            local,
            peer,
            quic,
            h3: None,
            in_flight: 0,
            goaway: false,
            closed_counted: false,
        });
    }

    let mut t = Totals::default();
    let mut rbuf = vec![0u8; 64 * 1024];
    let mut body = vec![0u8; 64 * 1024];
    let mut sbuf = vec![0u8; BATCH];
    let mut dirty = vec![true; args.conns];
    let mut finished_at = None;

    loop {
        // Drive every connection that has news: H3 events, new requests, transmits.
        for (i, c) in clients.iter_mut().enumerate() {
            if !std::mem::take(&mut dirty[i]) {
                continue;
            }
            drive(c, &h3_config, &req, &args, &mut t, &mut body);
            flush(c, &mut sbuf, args.gso, &mut t);
            if c.quic.is_closed() && !c.closed_counted {
                c.closed_counted = true;
                t.failed += c.in_flight as u64;
                t.done += c.in_flight as u64;
                c.in_flight = 0;
            }
        }
        if t.done >= args.total || clients.iter().all(|c| c.quic.is_closed()) {
            if finished_at.is_none() {
                finished_at = Some(start.elapsed());
                for c in clients.iter_mut() {
                    let _ = c.quic.close(true, 0x100, b"");
                    flush(c, &mut sbuf, args.gso, &mut t);
                }
            }
            break;
        }

        let now = Instant::now();
        let deadline = clients
            .iter()
            .filter_map(|c| c.quic.timeout_instant())
            .min();
        let timeout = deadline.map(|d| d.saturating_duration_since(now));
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                panic!("poll: {e}");
            }
        }
        for ev in events.iter() {
            let i = ev.token().0;
            dirty[i] = true;
            recv_all(&mut clients[i], &mut rbuf, args.gro, &mut t);
        }
        let now = Instant::now();
        for (i, c) in clients.iter_mut().enumerate() {
            if c.quic.timeout_instant().is_some_and(|d| d <= now) {
                c.quic.on_timeout();
                dirty[i] = true;
            }
        }
    }

    let secs = finished_at.unwrap_or_else(|| start.elapsed()).as_secs_f64();
    let (user, sys) = rusage();
    println!(
        "finished in {:.2}s, {:.2} req/s, {:.2}MB/s",
        secs,
        t.ok as f64 / secs,
        t.body as f64 / secs / 1e6
    );
    println!(
        "requests: {} total, {} started, {} done, {} succeeded, {} failed, 0 errored, 0 timeout",
        args.total, t.issued, t.done, t.ok, t.failed
    );
    println!(
        "status codes: {} 2xx, {} 3xx, {} 4xx, {} 5xx",
        t.status[2], t.status[3], t.status[4], t.status[5]
    );
    println!(
        "traffic: {} header-field bytes (decoded), body ({}) data",
        t.header_bytes, t.body
    );
    println!(
        "UDP datagram: {} sent, {} received; {} send calls, {} receive calls (gso {}, gro {})",
        t.datagrams_sent, t.datagrams_recv, t.send_calls, t.recv_calls, args.gso, args.gro
    );
    println!(
        "cpu: user {:.3} s, sys {:.3} s, {:.3} µs/request",
        user,
        sys,
        (user + sys) * 1e6 / t.ok.max(1) as f64
    );
    if t.done < args.total {
        std::process::exit(1);
    }
}

/// Handle HTTP/3 events of one connection, then fill its free request slots.
fn drive(
    c: &mut Client,
    h3_config: &quiche::h3::Config,
    req: &[quiche::h3::Header],
    args: &Args,
    t: &mut Totals,
    body: &mut [u8],
) {
    if c.h3.is_none() && c.quic.is_established() {
        c.h3 = Some(quiche::h3::Connection::with_transport(&mut c.quic, h3_config).expect("h3"));
    }
    let Some(h3) = c.h3.as_mut() else { return };
    loop {
        match h3.poll(&mut c.quic) {
            Ok((_, quiche::h3::Event::Headers { list, .. })) => {
                for h in &list {
                    t.header_bytes += (h.name().len() + h.value().len()) as u64;
                    if h.name() == b":status" {
                        let class = h.value().first().map_or(0, |d| d.wrapping_sub(b'0'));
                        if (class as usize) < t.status.len() {
                            t.status[class as usize] += 1;
                        }
                    }
                }
            }
            Ok((id, quiche::h3::Event::Data)) => {
                while let Ok(n) = h3.recv_body(&mut c.quic, id, body) {
                    t.body += n as u64;
                }
            }
            Ok((_, quiche::h3::Event::Finished)) => {
                c.in_flight -= 1;
                t.done += 1;
                t.ok += 1;
            }
            Ok((_, quiche::h3::Event::Reset(_))) => {
                c.in_flight -= 1;
                t.done += 1;
                t.failed += 1;
            }
            Ok((_, quiche::h3::Event::GoAway)) => c.goaway = true,
            Ok((_, quiche::h3::Event::PriorityUpdate)) => {}
            Err(quiche::h3::Error::Done) => break,
            Err(e) => {
                eprintln!("h3 error: {e:?}");
                let _ = c.quic.close(true, 0x102, b""); // H3_INTERNAL_ERROR
                return;
            }
        }
    }
    // A stream limit (quiche: StreamBlocked or StreamLimit) stops this turn; the slot is
    // tried again on the connection's next turn, after the peer's MAX_STREAMS.
    while !c.goaway && c.in_flight < args.streams && t.issued < args.total {
        match h3.send_request(&mut c.quic, req, true) {
            Ok(_) => {
                c.in_flight += 1;
                t.issued += 1;
            }
            Err(quiche::h3::Error::StreamBlocked)
            | Err(quiche::h3::Error::TransportError(quiche::Error::StreamLimit)) => break,
            Err(e) => {
                eprintln!("send_request: {e:?}");
                break;
            }
        }
    }
}

/// Read every datagram the socket holds and hand it to quiche.
fn recv_all(c: &mut Client, buf: &mut [u8], gro: bool, t: &mut Totals) {
    let info = quiche::RecvInfo {
        from: c.peer,
        to: c.local,
    };
    loop {
        let (len, seg) = match recv_gro(c.sock.as_raw_fd(), buf, gro) {
            Ok(v) => v,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => {
                eprintln!("recv: {e}");
                break;
            }
        };
        t.recv_calls += 1;
        let seg = if seg == 0 { len } else { seg };
        let mut off = 0;
        while off < len {
            let end = (off + seg).min(len);
            t.datagrams_recv += 1;
            let _ = c.quic.recv(&mut buf[off..end], info);
            off = end;
        }
    }
}

/// Send everything quiche has, as GSO batches of equal-sized datagrams (the last may be
/// shorter) when `gso`, one datagram per call otherwise.
fn flush(c: &mut Client, sbuf: &mut [u8], gso: bool, t: &mut Totals) {
    let fd = c.sock.as_raw_fd();
    let mut filled = 0;
    let mut seg = 0;
    loop {
        let room = if gso { sbuf.len() - filled } else { sbuf.len() };
        if room < MAX_DATAGRAM {
            send_batch(fd, &sbuf[..filled], seg, t);
            filled = 0;
            continue;
        }
        let at = if gso { filled } else { 0 };
        match c.quic.send(&mut sbuf[at..at + MAX_DATAGRAM]) {
            Ok((n, _)) => {
                if !gso {
                    send_batch(fd, &sbuf[..n], n, t);
                    continue;
                }
                if filled == 0 {
                    seg = n;
                    filled = n;
                } else if n == seg {
                    filled += n;
                } else if n < seg {
                    // A shorter datagram ends the batch.
                    filled += n;
                    send_batch(fd, &sbuf[..filled], seg, t);
                    filled = 0;
                } else {
                    // Larger than the batch's segment: send the batch, start a new one.
                    send_batch(fd, &sbuf[..filled], seg, t);
                    sbuf.copy_within(filled..filled + n, 0);
                    seg = n;
                    filled = n;
                }
            }
            Err(quiche::Error::Done) => break,
            Err(e) => {
                eprintln!("send: {e:?}");
                break;
            }
        }
    }
    if filled > 0 {
        send_batch(fd, &sbuf[..filled], seg, t);
    }
}

/// One `sendmsg` on the connected socket; with more than one segment, a UDP_SEGMENT cmsg.
fn send_batch(fd: libc::c_int, data: &[u8], seg: usize, t: &mut Totals) {
    let count = data.len().div_ceil(seg.max(1));
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut _,
        iov_len: data.len(),
    };
    let mut cbuf = [0u64; 4];
    // SAFETY: msghdr is plain data; the pointers outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if count > 1 {
        // SAFETY: cbuf is large and aligned enough for one cmsg carrying a u16.
        unsafe {
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(2) as _;
            let cm = libc::CMSG_FIRSTHDR(&msg);
            (*cm).cmsg_level = SOL_UDP;
            (*cm).cmsg_type = UDP_SEGMENT;
            (*cm).cmsg_len = libc::CMSG_LEN(2) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cm).cast::<u16>(), seg as u16);
        }
    }
    loop {
        // SAFETY: msg points at live buffers.
        let r = unsafe { libc::sendmsg(fd, &msg, 0) };
        if r >= 0 {
            t.send_calls += 1;
            t.datagrams_sent += count as u64;
            return;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            // Loopback: a full send buffer drops the batch; QUIC recovers (counted as loss).
            io::ErrorKind::WouldBlock => return,
            _ => {
                eprintln!("sendmsg: {e}");
                return;
            }
        }
    }
}

/// `recvmsg` returning (bytes, GRO segment size or 0).
fn recv_gro(fd: libc::c_int, buf: &mut [u8], gro: bool) -> io::Result<(usize, usize)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; the pointers outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if gro {
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    }
    // SAFETY: msg points at live buffers.
    let r = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut seg = 0;
    if gro {
        // SAFETY: walking the control messages the kernel wrote into cbuf.
        unsafe {
            let mut cm = libc::CMSG_FIRSTHDR(&msg);
            while !cm.is_null() {
                if (*cm).cmsg_level == SOL_UDP && (*cm).cmsg_type == UDP_GRO {
                    seg = std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast::<libc::c_int>())
                        as usize;
                }
                cm = libc::CMSG_NXTHDR(&msg, cm);
            }
        }
    }
    Ok((r as usize, seg))
}

fn set_gro(sock: &UdpSocket) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int option value.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            SOL_UDP,
            UDP_GRO,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as _,
        )
    };
    if r != 0 {
        eprintln!("UDP_GRO unavailable: {}", io::Error::last_os_error());
    }
}

fn rusage() -> (f64, f64) {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}
