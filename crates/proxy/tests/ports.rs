//! Listening ports: two proxies on adjacent ports run side by side, and the one real cause of
//! "Address already in use" with no other listener on the port — a connection whose local
//! port it is (outgoing connections get their local ports from the ephemeral range) — is
//! reported as such.

mod common;

use std::net::{SocketAddr, TcpListener, TcpStream};

use common::{backends, proxy, Client};
use h2lab_proxy::{ProxyError, UpstreamProtocol};

/// A port `n` with `n` and `n + 1` both free a moment ago (found at run time).
fn adjacent_free_ports() -> u16 {
    for _ in 0..50 {
        let a = TcpListener::bind("127.0.0.1:0").expect("bind");
        let n = a.local_addr().expect("addr").port();
        if n == u16::MAX {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", n + 1)).is_ok() {
            return n;
        }
    }
    panic!("no two adjacent free ports found");
}

#[test]
fn two_proxies_on_adjacent_ports_serve_side_by_side() {
    let b = backends(1);
    let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    // Both bound before any connection exists: a connection opened in between could take
    // n + 1 as its local port (that is what "Address already in use" with adjacent ports
    // was; the other test shows it). Another process may still take a port between the
    // choice and the bind: then the pair is chosen again.
    let spawn_at = |port: u16| {
        let ups = vec![h2lab_proxy::UpstreamAddr::Tcp(b[0].addr().expect("addr"))];
        let mut c = h2lab_proxy::ProxyConfig::local(ups, UpstreamProtocol::H1);
        c.listen = Some(at(port));
        h2lab_proxy::spawn(c)
    };
    let (n, p1, p2) = (0..5)
        .find_map(|_| {
            let n = adjacent_free_ports();
            Some((n, spawn_at(n).ok()?, spawn_at(n + 1).ok()?))
        })
        .expect("two proxies on adjacent ports in 5 attempts");
    let mut c1 = Client::connect(at(n));
    let mut c2 = Client::connect(at(n + 1));
    for _ in 0..20 {
        assert_eq!(c1.get("/ping").status, 200);
        assert_eq!(c2.get("/ping").status, 200);
    }
    assert_eq!(p1.addr(), Some(at(n)));
    assert_eq!(p2.addr(), Some(at(n + 1)));
    // Two on port 0 too.
    let p3 = proxy(&b, UpstreamProtocol::H1, |_| {});
    let p4 = proxy(&b, UpstreamProtocol::H1, |_| {});
    assert_ne!(p3.addr(), p4.addr());
    for p in [&p3, &p4] {
        assert_eq!(
            Client::connect(p.addr().expect("addr")).get("/ping").status,
            200
        );
    }
}

#[test]
fn a_port_held_by_a_connection_is_reported_as_such() {
    let b = backends(1);
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    let conn = TcpStream::connect(server.local_addr().expect("addr")).expect("connect");
    let taken = conn.local_addr().expect("local addr");
    let res = h2lab_proxy::spawn({
        let mut c = h2lab_proxy::ProxyConfig::local(
            vec![h2lab_proxy::UpstreamAddr::Tcp(b[0].addr().expect("addr"))],
            UpstreamProtocol::H1,
        );
        c.listen = Some(taken);
        c
    });
    let Err(err) = res else {
        panic!("the port is taken by a connection: the bind should fail");
    };
    match &err {
        ProxyError::Io { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse)
        }
        other => panic!("unexpected error: {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&taken.to_string()), "{msg}");
    assert!(msg.contains("ephemeral range"), "{msg}");
    assert!(msg.contains("port 0"), "{msg}");
}
