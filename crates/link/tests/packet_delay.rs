//! Where the packet link's added delay at low load goes: a measurement, not a check (run it
//! with `cargo test -p h2lab-link --test packet_delay -- --ignored --nocapture`; needs root or
//! a user namespace). Prints, for ICMP echoes sent 5 ms apart (the link thread goes idle
//! between them, as at low load):
//!
//! - the floor: the same echo to 127.0.0.1 inside the client namespace (no link: the kernel's
//!   echo and the sender's wake-up, which every path pays);
//! - the RTT over the link minus the configured RTT, at RTT 0 (the packet is due when it is
//!   read: the link thread's wake-up on a readable device and its writes) and at 10 ms (the
//!   same plus the timer wake-up before each packet is due), with the link thread sleeping
//!   until a packet is due (`spin_ns` 0, the lab's setting when it pins CPUs) and polling the
//!   last 300 µs (the default);
//! - the link's own count of how late it wrote the packets (timer wake-up and work).
#![cfg(target_os = "linux")]

use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

use h2lab_link::packet::{
    LossModel, PacketConfig, PacketLink, PacketParams, Side, DEFAULT_SPIN_NS, SERVER_ADDR,
};

fn config(rtt_ns: u64, spin_ns: u64) -> PacketConfig {
    let dir = PacketParams {
        one_way: rtt_ns / 2,
        jitter: 0,
        reorder: false,
        bps: None,
        queue_bytes: usize::MAX,
        loss: LossModel::Iid(0.0),
    };
    PacketConfig {
        up: dir.clone(),
        down: dir,
        seed: 7,
        mtu: 1500,
        congestion_control: None,
        spin_ns,
    }
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
    p[2..4].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p
}

/// `n` echoes to `to`, 5 ms apart; their round trips in µs.
fn echoes(to: Ipv4Addr, n: u16) -> Vec<f64> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s: UdpSocket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
        .unwrap()
        .into();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = [0u8; 256];
    let mut out = Vec::new();
    for seq in 0..n {
        std::thread::sleep(Duration::from_millis(5));
        let t = Instant::now();
        s.send_to(&icmp_echo(seq), (to, 0)).unwrap();
        loop {
            let k = s.recv(&mut b).unwrap();
            if k >= 28 && b[20] == 0 && u16::from_be_bytes([b[26], b[27]]) == seq {
                break;
            }
        }
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out
}

fn summary(what: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f) as usize];
    eprintln!(
        "{what:<44} min {:>6.0}  p10 {:>6.0}  median {:>6.0}  p90 {:>6.0} µs",
        q(0.0),
        q(0.1),
        q(0.5),
        q(0.9)
    );
}

#[test]
#[ignore = "a measurement: prints where the added delay goes"]
fn added_delay_at_low_load() {
    const N: u16 = 200;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average: {}", load.trim());
    for (rtt_ms, spin) in [
        (0u64, 0u64),
        (10, 0),
        (0, DEFAULT_SPIN_NS),
        (10, DEFAULT_SPIN_NS),
        (0, u64::MAX),
        (10, u64::MAX),
    ] {
        let link = match PacketLink::start(config(rtt_ms * 1_000_000, spin)) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("SKIP: packet mode unavailable: {e}");
                return;
            }
        };
        if rtt_ms == 0 && spin == 0 {
            let floor = link
                .spawn_in(Side::Client, || echoes(Ipv4Addr::LOCALHOST, N))
                .unwrap()
                .join()
                .unwrap();
            summary("floor: echo on the namespace's loopback", floor);
        }
        let rtts = link
            .spawn_in(Side::Client, || echoes(SERVER_ADDR, N))
            .unwrap()
            .join()
            .unwrap();
        let added = rtts.iter().map(|r| r - (rtt_ms * 1000) as f64).collect();
        let what = match spin {
            u64::MAX => format!("over the link, RTT {rtt_ms} ms, busy poll"),
            _ => format!("over the link, RTT {rtt_ms} ms, spin {} µs", spin / 1000),
        };
        summary(&what, added);
        let s = link.stats();
        eprintln!(
            "{:<44} up mean {:>5.1} max {:>6.1}, down mean {:>5.1} max {:>6.1} µs",
            "  written after due (the link's count)",
            s.up.late_ns_mean() as f64 / 1e3,
            s.up.late_ns_max as f64 / 1e3,
            s.down.late_ns_mean() as f64 / 1e3,
            s.down.late_ns_max as f64 / 1e3
        );
    }
}
