//! Packet mode end to end: the kernels' TCP, UDP and ICMP across two network namespaces joined
//! by the link thread. Accuracy tests state their bounds; they need root (or a user namespace)
//! and /dev/net/tun, and skip with a line otherwise (failing when `CI=true`).
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use common::median;
use h2lab_link::packet::{LossModel, PacketConfig, PacketLink, PacketParams, Side, SERVER_ADDR};

const MS: u64 = 1_000_000;

fn dir(one_way: u64, bps: Option<u64>, loss: f64) -> PacketParams {
    PacketParams {
        one_way,
        jitter: 0,
        reorder: false,
        bps,
        queue_bytes: bps.map_or(usize::MAX, |b| {
            h2lab_link::packet::default_queue_bytes(b, 2 * one_way, 1500)
        }),
        loss: LossModel::Iid(loss),
    }
}

fn config(rtt_ms: u64, bps: Option<u64>, loss: f64) -> PacketConfig {
    PacketConfig {
        up: dir(rtt_ms * MS / 2, bps, loss),
        down: dir(rtt_ms * MS / 2, bps, loss),
        seed: 7,
        mtu: 1500,
        congestion_control: None,
    }
}

/// Starts a path, or returns `None` (with a line) where namespaces are unavailable.
fn start(c: PacketConfig) -> Option<PacketLink> {
    match PacketLink::start(c) {
        Ok(l) => Some(l),
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "packet mode unavailable in CI: {e}"
            );
            eprintln!("SKIP: packet mode unavailable: {e}");
            None
        }
    }
}

/// A TCP listener on the server side, port chosen by the kernel.
fn listen(link: &PacketLink) -> TcpListener {
    link.spawn_in(Side::Server, || {
        TcpListener::bind(SocketAddr::from((SERVER_ADDR, 0))).unwrap()
    })
    .unwrap()
    .join()
    .unwrap()
}

fn in_client<T: Send + 'static>(link: &PacketLink, f: impl FnOnce() -> T + Send + 'static) -> T {
    link.spawn_in(Side::Client, f).unwrap().join().unwrap()
}

fn echo_server(l: TcpListener) {
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let _ = s.set_nodelay(true);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

/// RTT at low load within ±0.5 ms of the configured 20 ms: median of 20 round trips on a
/// kept-alive TCP connection (the first, with its handshake, excluded).
#[test]
fn tcp_round_trip_is_the_configured_rtt() {
    let Some(link) = start(config(20, None, 0.0)) else {
        return;
    };
    let l = listen(&link);
    let addr = l.local_addr().unwrap();
    echo_server(l);
    let samples = in_client(&link, move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 4];
        s.write_all(b"warm").unwrap();
        s.read_exact(&mut buf).unwrap();
        (0..20)
            .map(|_| {
                let t = Instant::now();
                s.write_all(b"ping").unwrap();
                s.read_exact(&mut buf).unwrap();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect::<Vec<f64>>()
    });
    let m = median(samples.clone());
    eprintln!("median RTT {m:.3} ms");
    assert!((19.5..=20.5).contains(&m), "median {m} ms of {samples:?}");
}

fn icmp_echo(seq: u16) -> Vec<u8> {
    let mut p = vec![8u8, 0, 0, 0, 0x12, 0x34, (seq >> 8) as u8, seq as u8];
    p.extend_from_slice(&[0xab; 56]);
    let mut sum = 0u32;
    for c in p.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    p[2..4].copy_from_slice(&ck.to_be_bytes());
    p
}

/// ICMP echo (the server side's kernel answers) within ±0.5 ms of the configured 10 ms.
#[test]
fn icmp_echo_is_the_configured_rtt() {
    use socket2::{Domain, Protocol, Socket, Type};
    let Some(link) = start(config(10, None, 0.0)) else {
        return;
    };
    let samples = in_client(&link, || {
        // A raw ICMP socket, used through std's datagram calls (send_to, recv).
        let s: UdpSocket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
            .unwrap()
            .into();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut out = Vec::new();
        let mut b = [0u8; 256];
        for seq in 0..20u16 {
            let t = Instant::now();
            s.send_to(&icmp_echo(seq), (SERVER_ADDR, 0)).unwrap();
            loop {
                let n = s.recv(&mut b).unwrap();
                // IP header (20 bytes), then ICMP type 0 (echo reply) with our sequence.
                if n >= 28 && b[20] == 0 && u16::from_be_bytes([b[26], b[27]]) == seq {
                    break;
                }
            }
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
        out
    });
    let m = median(samples.clone());
    eprintln!("median RTT {m:.3} ms");
    assert!((9.5..=10.5).contains(&m), "median {m} ms of {samples:?}");
}
