//! Free loopback ports and readiness polling.

use std::fmt;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

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
}
