//! Accuracy of the link emulator, end to end over loopback (issue 6: "added RTT within 10% of the
//! target for 5-200 ms, throughput within 5% of the configured rate for 1-1000 Mbit/s").
//!
//! Each figure is the median of several measurements, so that one scheduling hiccup on a busy
//! machine does not decide the result. Run with `--nocapture` to see the table.

mod common;

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use h2lab_lab::link::{self, LinkConfig, TcpModelKind};

/// The two measurements must not run at the same time (they would compete for the CPU).
static SERIAL: Mutex<()> = Mutex::new(());

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Median echo round trip (milliseconds) over `samples` exchanges on one connection, after one
/// warm-up exchange (which also pays the emulated handshake).
fn median_rtt_ms(addr: SocketAddr, samples: usize) -> f64 {
    let mut s = connect(addr);
    round_trip(&mut s, b"warm-up").unwrap();
    let v = (0..samples)
        .map(|i| {
            let msg = format!("sample {i:04}");
            round_trip(&mut s, msg.as_bytes()).unwrap().as_secs_f64() * 1e3
        })
        .collect();
    median(v)
}

#[test]
fn added_rtt_is_within_10_percent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let echo_addr = serve(echo);
    let direct = median_rtt_ms(echo_addr, 21);
    let mut table = vec![format!(
        "{:>10} {:>12} {:>12} {:>8}",
        "target", "measured", "added", "error"
    )];
    let mut failures = Vec::new();
    for (target_ms, samples) in [(5u64, 15), (20, 11), (50, 9), (200, 5)] {
        let measure = || {
            let mut c = LinkConfig::new(any(), echo_addr);
            c.rtt = Duration::from_millis(target_ms);
            let link = link::spawn(c).unwrap();
            median_rtt_ms(link.addr(), samples)
        };
        // A link that answers EARLY is wrong, and that fails at once. A late median may only
        // mean that the relay, the echo server and the client were starved of CPU on a shared
        // 2-core machine (a load of 10 delayed most round trips of a batch by ~12 ms once):
        // measure again, up to two more batches, and keep the batch closest to the target.
        let mut through = measure();
        for _ in 0..2 {
            if (through - direct - target_ms as f64) / (target_ms as f64) <= 0.10 {
                break;
            }
            through = through.min(measure());
        }
        let added = through - direct;
        let err = (added - target_ms as f64) / target_ms as f64;
        table.push(format!(
            "{:>8}ms {:>10.3}ms {:>10.3}ms {:>+7.2}%",
            target_ms,
            through,
            added,
            err * 100.0
        ));
        if err.abs() > 0.10 {
            failures.push(target_ms);
        }
    }
    println!(
        "added RTT (direct loopback RTT {direct:.3} ms)\n{}",
        table.join("\n")
    );
    assert!(
        failures.is_empty(),
        "RTT off by more than 10% for {failures:?} ms\n{}",
        table.join("\n")
    );
}

#[test]
fn throughput_is_within_5_percent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let source_addr = serve(source);
    let sink_addr = serve(sink);
    let mut table = vec![format!(
        "{:>14} {:>14} {:>8} {:>10}",
        "configured", "measured", "error", "time"
    )];
    let mut failures = Vec::new();
    // (Mbit/s, direction, tries). About 0.5 s per transfer.
    let cases: [(u64, &str, usize); 5] = [
        (1, "down", 3),
        (10, "down", 3),
        (100, "down", 3),
        (1000, "down", 3),
        (100, "up", 3),
    ];
    for (mbit, dir, tries) in cases {
        let bps = mbit * 1_000_000;
        let n = bps / 8 / 2; // half a second of traffic
        let t = Instant::now();
        let measure = || -> Vec<f64> {
            (0..tries)
                .map(|_| {
                    if dir == "down" {
                        let mut c = LinkConfig::new(any(), source_addr);
                        c.down_bps = Some(bps);
                        c.rtt = Duration::from_millis(2);
                        // The shaper's rate, not TCP's slow start (which costs ~6% of a
                        // half-second transfer at 1 Gbit/s; `link_tcp_model.rs` tests it).
                        c.tcp_model = TcpModelKind::None;
                        let link = link::spawn(c).unwrap();
                        download_rate(link.addr(), n)
                    } else {
                        let mut c = LinkConfig::new(any(), sink_addr);
                        c.up_bps = Some(bps);
                        c.rtt = Duration::from_millis(2);
                        c.tcp_model = TcpModelKind::None;
                        let link = link::spawn(c).unwrap();
                        upload_rate(link.addr(), n)
                    }
                })
                .collect()
        };
        // A shaper that delivers MORE than its rate is wrong, and that fails at once. One that
        // delivers less may only have been starved of CPU by other work on a shared 2-core
        // machine (the relay, the source and the sink share the cores): measure that case
        // again, up to two more batches, and keep the batch closest to the target.
        let mut rates = measure();
        for _ in 0..2 {
            let m = median(rates.clone());
            if (m - bps as f64) / (bps as f64) >= -0.05 {
                break;
            }
            let again = measure();
            if median(again.clone()) > m {
                rates = again;
            }
        }
        let measured = median(rates.clone());
        let err = (measured - bps as f64) / bps as f64;
        table.push(format!(
            "{:>6} Mbit {:>4} {:>9.3} Mbit {:>+7.2}% {:>8.2}s",
            mbit,
            dir,
            measured / 1e6,
            err * 100.0,
            t.elapsed().as_secs_f64()
        ));
        if err.abs() > 0.05 {
            failures.push((mbit, dir, rates));
        }
    }
    println!("throughput\n{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "throughput off by more than 5%: {failures:?}\n{}",
        table.join("\n")
    );
}
