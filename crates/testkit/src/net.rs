//! Free loopback ports and readiness polling.

use std::fmt;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use h2lab_procnet::{Proto, TCP_LISTEN};

use crate::Error;

/// `n` distinct free ports on 127.0.0.1, found by binding port 0 and releasing.
///
/// Racy by nature (another process may take a port before the server binds it); the anchor
/// start-up retries the whole start with fresh ports when the server exits early.
pub fn free_ports(n: usize) -> Result<Vec<u16>, Error> {
    // Hold every listener until all are chosen so the ports are distinct.
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let l = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("bind 127.0.0.1:0", e))?;
        held.push(l);
    }
    held.iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(|e| Error::io("local_addr", e))
        })
        .collect()
}

/// A port on 127.0.0.1 free for both TCP and UDP a moment ago (for a server that listens on
/// the same port number twice, e.g. HTTP/2 over TLS and HTTP/3). Racy like [`free_ports`].
pub fn free_port_tcp_udp() -> Result<u16, Error> {
    let mut last = None;
    for _ in 0..50 {
        let tcp = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("bind 127.0.0.1:0", e))?;
        let port = tcp
            .local_addr()
            .map_err(|e| Error::io("local_addr", e))?
            .port();
        match UdpSocket::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    Err(Error::io(
        "find a port free for TCP and UDP",
        last.unwrap_or_else(|| std::io::Error::other("no candidate")),
    ))
}

/// Which kind of socket [`held_sockets`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A TCP socket in LISTEN state.
    TcpListen,
    /// A UDP socket.
    Udp,
}

/// Whether one of `pids` holds a socket of kind `kind` bound to local port `port`
/// ([`held_sockets`] is not empty). Unlike a connection attempt, this cannot be fooled by
/// another process that took the port.
pub(crate) fn bound_by(pids: &[u32], kind: Bound, port: u16) -> bool {
    !held_sockets(pids, kind, port).is_empty()
}

/// The sockets (their inodes, each once) of kind `kind` bound to local port `port`, on any
/// address, that one of `pids` holds: from the kernel's tables (`/proc/net/{tcp,udp}{,6}`) and
/// the processes' descriptors (`/proc/PID/fd`), so that sockets of other processes on the port
/// are not counted (unless a process's descriptors cannot be read: then every such socket on
/// the port counts). Empty where there is no `/proc`.
pub fn held_sockets(pids: &[u32], kind: Bound, port: u16) -> Vec<u64> {
    let proto = match kind {
        Bound::TcpListen => Proto::Tcp,
        Bound::Udp => Proto::Udp,
    };
    let inodes: Vec<u64> = h2lab_procnet::entries(proto)
        .into_iter()
        .filter(|e| e.local_port == port && (kind == Bound::Udp || e.state == TCP_LISTEN))
        .map(|e| e.inode)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut held = Vec::new();
    for &pid in pids {
        let owned = match h2lab_procnet::socket_inodes_of(pid) {
            Ok(owned) => owned,
            // Not ours to read (a process that changed user, or is not dumpable): the sockets
            // exist; who holds them cannot be told.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return inodes,
            Err(_) => continue,
        };
        for n in owned {
            if inodes.contains(&n) && !held.contains(&n) {
                held.push(n);
            }
        }
    }
    held
}

/// A place a server accepts connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A UNIX domain socket path.
    Unix(PathBuf),
}

impl Listener {
    /// One connection attempt (connect only; no TLS handshake, no request).
    pub fn accepts(&self) -> bool {
        match self {
            Listener::Tcp(a) => TcpStream::connect_timeout(a, Duration::from_millis(200)).is_ok(),
            Listener::Unix(p) => UnixStream::connect(p).is_ok(),
        }
    }
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listener::Tcp(a) => write!(f, "{a}"),
            Listener::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_bindable() {
        let ports = free_ports(4).unwrap();
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 4);
        let l = TcpListener::bind(("127.0.0.1", ports[0])).unwrap();
        let addr = l.local_addr().unwrap();
        assert!(Listener::Tcp(addr).accepts());
    }

    #[test]
    fn bound_by_finds_this_process_sockets_and_only_on_their_port() {
        let port = free_port_tcp_udp().unwrap();
        let me = [std::process::id()];
        assert!(!bound_by(&me, Bound::TcpListen, port));
        assert!(!bound_by(&me, Bound::Udp, port));
        let udp = UdpSocket::bind(("127.0.0.1", port)).unwrap();
        assert!(bound_by(&me, Bound::Udp, port));
        assert!(!bound_by(&me, Bound::TcpListen, port));
        let tcp = TcpListener::bind(("127.0.0.1", port)).unwrap();
        assert!(bound_by(&me, Bound::TcpListen, port));
        // A connection to the listener is not a listening socket of its local port.
        let conn = TcpStream::connect(tcp.local_addr().unwrap()).unwrap();
        let local = conn.local_addr().unwrap().port();
        assert!(!bound_by(&me, Bound::TcpListen, local));
        // Another process does not hold these sockets.
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert!(!bound_by(&[other.id()], Bound::Udp, port));
        other.kill().unwrap();
        other.wait().unwrap();
        drop((udp, tcp));
        assert!(!bound_by(&me, Bound::Udp, port));
    }

    #[test]
    fn held_sockets_counts_this_process_sockets_of_the_kind() {
        let port = free_port_tcp_udp().unwrap();
        let me = [std::process::id()];
        assert!(held_sockets(&me, Bound::Udp, port).is_empty());
        let udp = UdpSocket::bind(("127.0.0.1", port)).unwrap();
        let tcp = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let udp_held = held_sockets(&me, Bound::Udp, port);
        let tcp_held = held_sockets(&me, Bound::TcpListen, port);
        assert_eq!(udp_held.len(), 1);
        assert_eq!(tcp_held.len(), 1);
        assert_ne!(udp_held, tcp_held);
        // Asking for this process twice counts each socket once; another process holds none.
        assert_eq!(held_sockets(&[me[0], me[0]], Bound::Udp, port), udp_held);
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert!(held_sockets(&[other.id()], Bound::Udp, port).is_empty());
        other.kill().unwrap();
        other.wait().unwrap();
        drop((udp, tcp));
    }
}
