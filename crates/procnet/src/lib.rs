//! The kernel's socket tables, `/proc/net/{tcp,udp}{,6}`, and the sockets a process holds
//! (`/proc/PID/fd`): one parser for everything that asks which socket is bound where and by
//! whom (the lab's readiness check of the servers it starts, the test kit's anchors, tests
//! that count connections from outside a client or server).
//!
//! Linux only in effect: elsewhere the tables cannot be read ([`has_proc`] is `false`) and
//! every reader returns nothing.

use std::fs;
use std::io;

/// TCP state `LISTEN` in the tables' `st` column (the kernel's `TCP_LISTEN`).
pub const TCP_LISTEN: u8 = 0x0A;
/// TCP state `ESTABLISHED`.
pub const TCP_ESTABLISHED: u8 = 0x01;
/// TCP state `CLOSE_WAIT`: the peer closed, this end has not.
pub const TCP_CLOSE_WAIT: u8 = 0x08;

/// Which tables to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// `/proc/net/tcp` and `/proc/net/tcp6`.
    Tcp,
    /// `/proc/net/udp` and `/proc/net/udp6`.
    Udp,
}

impl Proto {
    /// The IPv4 and IPv6 table paths.
    pub fn tables(self) -> [&'static str; 2] {
        match self {
            Proto::Tcp => ["/proc/net/tcp", "/proc/net/tcp6"],
            Proto::Udp => ["/proc/net/udp", "/proc/net/udp6"],
        }
    }
}

/// One line of a socket table (the columns the callers need).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Local port.
    pub local_port: u16,
    /// Remote port (0 for a listening or unconnected socket).
    pub remote_port: u16,
    /// Whether the remote address is all zeros (a listening or unconnected socket).
    pub remote_unspecified: bool,
    /// The `st` column: a TCP state ([`TCP_LISTEN`], ...); for UDP 07 unconnected, 01
    /// connected.
    pub state: u8,
    /// The socket's inode, as `/proc/PID/fd` links name it (`socket:[INODE]`).
    pub inode: u64,
    /// UDP tables: datagrams the kernel dropped at this socket (a full receive buffer);
    /// 0 in TCP tables, which have no such column.
    pub drops: u64,
}

/// The entries of one table's text, a table of `proto` (the header line skipped; malformed
/// lines too).
pub fn parse(proto: Proto, table: &str) -> impl Iterator<Item = Entry> + '_ {
    table.lines().skip(1).filter_map(move |line| {
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout
        // inode ...; addresses as HEXIP:HEXPORT. UDP goes on with "ref pointer drops".
        let mut f = line.split_whitespace();
        let local = f.nth(1)?;
        let remote = f.next()?;
        let state = u8::from_str_radix(f.next()?, 16).ok()?;
        let inode = f.nth(5)?.parse().ok()?;
        let drops = match proto {
            Proto::Udp => f.nth(2)?.parse().ok()?,
            Proto::Tcp => 0,
        };
        let port = |a: &str| u16::from_str_radix(a.rsplit(':').next()?, 16).ok();
        let remote_ip = remote.rsplit_once(':')?.0;
        Some(Entry {
            local_port: port(local)?,
            remote_port: port(remote)?,
            remote_unspecified: remote_ip.bytes().all(|b| b == b'0'),
            state,
            inode,
            drops,
        })
    })
}

/// Whether this system has the socket tables (Linux).
pub fn has_proc() -> bool {
    std::path::Path::new("/proc/net/tcp").exists()
}

/// The entries of both tables (IPv4 and IPv6) of `proto`; empty where they cannot be read.
pub fn entries(proto: Proto) -> Vec<Entry> {
    proto
        .tables()
        .iter()
        .filter_map(|t| fs::read_to_string(t).ok())
        .flat_map(|text| parse(proto, &text).collect::<Vec<_>>())
        .collect()
}

/// The entries of both tables of `proto` in process `pid`'s network namespace
/// (`/proc/PID/net/…`): a server started inside another namespace than the reader's thread
/// (`/proc/net` is the namespace of the process's main thread). Falls back to
/// [`entries`] where the process's tables cannot be read.
pub fn entries_of(pid: u32, proto: Proto) -> Vec<Entry> {
    let texts: Vec<String> = proto
        .tables()
        .iter()
        .filter_map(|t| {
            let rel = t.strip_prefix("/proc/")?;
            fs::read_to_string(format!("/proc/{pid}/{rel}")).ok()
        })
        .collect();
    if texts.is_empty() {
        return entries(proto);
    }
    texts
        .iter()
        .flat_map(|text| parse(proto, text).collect::<Vec<_>>())
        .collect()
}

/// The inodes of the sockets process `pid` holds (its `/proc/PID/fd` links to
/// `socket:[INODE]`). An error of kind `PermissionDenied` means the process exists but its
/// descriptors cannot be read (it changed user, or is not dumpable); `NotFound`, that it is
/// gone.
pub fn socket_inodes_of(pid: u32) -> io::Result<Vec<u64>> {
    Ok(fs::read_dir(format!("/proc/{pid}/fd"))?
        .flatten()
        .filter_map(|fd| {
            let target = fs::read_link(fd.path()).ok()?;
            let t = target.to_str()?;
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream, UdpSocket};

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
        \x20  1: 0100007F:B044 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 33350321 1\n\
        \x20  2: 0100007F:B045 0100007F:B044 01 00000000:00000000 00:00000000 00000000     0        0 42 1\n\
        \x20  3: garbage\n";

    #[test]
    fn parses_ports_state_and_inode() {
        let v: Vec<Entry> = parse(Proto::Tcp, TABLE).collect();
        assert_eq!(
            v,
            vec![
                Entry {
                    local_port: 0xB044,
                    remote_port: 0,
                    remote_unspecified: true,
                    state: TCP_LISTEN,
                    inode: 33350321,
                    drops: 0,
                },
                Entry {
                    local_port: 0xB045,
                    remote_port: 0xB044,
                    remote_unspecified: false,
                    state: TCP_ESTABLISHED,
                    inode: 42,
                    drops: 0,
                },
            ]
        );
        let udp = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
            \x20  18: 0100007F:E04A 0100007F:8D03 01 00000000:00009000 00:00000000 00000000     0        0 1377205 2 00000000366101db 17\n";
        let v: Vec<Entry> = parse(Proto::Udp, udp).collect();
        assert_eq!(
            v,
            vec![Entry {
                local_port: 0xE04A,
                remote_port: 0x8D03,
                remote_unspecified: false,
                state: 1,
                inode: 1377205,
                drops: 17,
            }]
        );
    }

    #[test]
    fn this_process_sockets_are_in_the_tables_and_its_descriptors() {
        if !has_proc() {
            return;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mine = socket_inodes_of(std::process::id()).unwrap();
        let tcp = entries(Proto::Tcp);
        let listen = tcp
            .iter()
            .find(|e| e.local_port == port && e.state == TCP_LISTEN)
            .unwrap();
        assert!(mine.contains(&listen.inode));
        // The same listener in this process's own namespace's table.
        assert!(entries_of(std::process::id(), Proto::Tcp)
            .iter()
            .any(|e| e.inode == listen.inode && e.state == TCP_LISTEN));
        let out = c.local_addr().unwrap().port();
        // (An ephemeral port can serve connections to other destinations too.)
        let conn = tcp
            .iter()
            .find(|e| e.local_port == out && e.remote_port == port)
            .unwrap();
        assert_eq!(conn.state, TCP_ESTABLISHED);
        assert!(mine.contains(&conn.inode));
        let uport = u.local_addr().unwrap().port();
        let udp = entries(Proto::Udp);
        let e = udp.iter().find(|e| e.local_port == uport).unwrap();
        assert!(e.remote_unspecified);
        assert!(mine.contains(&e.inode));
    }
}
