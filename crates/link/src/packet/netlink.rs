//! The two route-netlink requests of packet mode, built by hand (as `ip link set … txqueuelen`
//! and `ip route replace … congctl` send them): a device's transmit queue length, and the TCP
//! congestion control of the route across the path.
//!
//! Netlink, not ioctls: inside a user namespace the kernel refuses `SIOCSIFTXQLEN` but accepts
//! the netlink request from the namespace's root; and a route's congestion control has no
//! ioctl at all.
#![allow(unsafe_code)] // netlink sockets have no safe wrapper in std

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// From linux/rtnetlink.h (not all of them are in the libc crate).
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTAX_CC_ALGO: u16 = 16;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_BOOT: u8 = 3;
const RT_SCOPE_LINK: u8 = 253;
const RTN_UNICAST: u8 = 1;
const IFLA_TXQLEN: u16 = 13;

/// One netlink message: the header, the family's fixed header, then attributes, each padded
/// to four bytes (`NLMSG_ALIGN`, `RTA_ALIGN`).
struct Message {
    buf: Vec<u8>,
}

impl Message {
    fn new(kind: u16, flags: u16, family_header: &[u8]) -> Message {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&0u32.to_ne_bytes()); // length, set in `send`
        buf.extend_from_slice(&kind.to_ne_bytes());
        let flags = flags | (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
        buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
        buf.extend_from_slice(family_header);
        Message { buf }
    }

    fn pad(&mut self) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }

    fn attr(&mut self, kind: u16, data: &[u8]) {
        let len = u16::try_from(4 + data.len()).expect("a short attribute");
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.pad();
    }

    /// An attribute whose payload is attributes (`RTA_METRICS`).
    fn nested(&mut self, kind: u16, inner: impl FnOnce(&mut Message)) {
        let start = self.buf.len();
        self.attr(kind, &[]);
        inner(self);
        let len = u16::try_from(self.buf.len() - start).expect("a short attribute");
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
    }

    /// Sends the request to the kernel and reads its acknowledgement: an `NLMSG_ERROR`
    /// message whose first field is 0 or -errno.
    fn send(mut self) -> io::Result<()> {
        let len = u32::try_from(self.buf.len()).expect("a short message");
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        // SAFETY: socket() has no memory effects.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sends bytes from a live buffer to the kernel (netlink's default destination).
        let sent = unsafe {
            libc::send(
                sock.as_raw_fd(),
                self.buf.as_ptr().cast(),
                self.buf.len(),
                0,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ack = [0u8; 256];
        // SAFETY: receives into a live buffer of `ack.len()` bytes.
        let n = unsafe { libc::recv(sock.as_raw_fd(), ack.as_mut_ptr().cast(), ack.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let kind = u16::from_ne_bytes([ack[4], ack[5]]);
        if n < 20 || kind != libc::NLMSG_ERROR as u16 {
            return Err(io::Error::other("unexpected netlink reply"));
        }
        match i32::from_ne_bytes([ack[16], ack[17], ack[18], ack[19]]) {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(-errno)),
        }
    }
}

fn index_of(name: &str) -> io::Result<u32> {
    let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated name; no other memory effects.
    match unsafe { libc::if_nametoindex(cname.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        index => Ok(index),
    }
}

/// Sets interface `name`'s transmit queue length (`RTM_NEWLINK` with `IFLA_TXQLEN`).
pub fn set_txqueuelen(name: &str, qlen: u32) -> io::Result<()> {
    // ifinfomsg: family, padding, type, index, flags, change.
    let mut ifinfo = [0u8; 16];
    ifinfo[4..8].copy_from_slice(&(index_of(name)? as i32).to_ne_bytes());
    let mut m = Message::new(libc::RTM_NEWLINK, 0, &ifinfo);
    m.attr(IFLA_TXQLEN, &qlen.to_ne_bytes());
    m.send()
}

/// Replaces the route to `net`/`prefix` over interface `name` (the one the kernel made when
/// the address was set) by one that gives TCP connections across it the congestion control
/// `cc` (`RTAX_CC_ALGO`, as `ip route replace … congctl cc`). Both ends of a connection take
/// it from their route: the connecting side at connect, the accepting side at accept. Unlike
/// the namespace's default (`net.ipv4.tcp_congestion_control`), which outside the initial
/// namespace may only name what the host allows (`tcp_allowed_congestion_control`), a route
/// may name any algorithm the kernel has (`tcp_available_congestion_control`).
pub fn set_route_congestion_control(
    name: &str,
    net: Ipv4Addr,
    prefix: u8,
    src: Ipv4Addr,
    cc: &str,
) -> io::Result<()> {
    let index = index_of(name)?;
    // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
    let mut rtmsg = [0u8; 12];
    rtmsg[0] = libc::AF_INET as u8;
    rtmsg[1] = prefix;
    rtmsg[4] = RT_TABLE_MAIN;
    rtmsg[5] = RTPROT_BOOT;
    rtmsg[6] = RT_SCOPE_LINK;
    rtmsg[7] = RTN_UNICAST;
    let flags = (libc::NLM_F_CREATE | libc::NLM_F_REPLACE) as u16;
    let mut m = Message::new(libc::RTM_NEWROUTE, flags, &rtmsg);
    m.attr(RTA_DST, &net.octets());
    m.attr(RTA_PREFSRC, &src.octets());
    m.attr(RTA_OIF, &index.to_ne_bytes());
    let mut algo = cc.as_bytes().to_vec();
    algo.push(0);
    m.nested(RTA_METRICS, |m| m.attr(RTAX_CC_ALGO, &algo));
    m.send()
}
