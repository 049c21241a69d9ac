//! Accuracy of the link emulator, end to end over loopback: added RTT within 10% of the target
//! for 5-200 ms, throughput within 5% of the configured rate for 1-1000 Mbit/s.
//!
//! A busy machine only ever delays an exchange or a transfer, so the tests assert hard bounds
//! on every sample (never earlier than the RTT, never faster than the rate) and the accuracy
//! on the fastest sample (see each test). Run with `--nocapture` to see the tables.

mod common;

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use h2lab_link::{self as link, LinkConfig, TcpModelKind};

/// The two measurements must not run at the same time (they would compete for the CPU).
static SERIAL: Mutex<()> = Mutex::new(());

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// `samples` echo round trips (milliseconds) through the link at `link` and as many directly to
/// the echo server at `direct`, alternated (link, direct, link, ...) so that both see the same
/// spells of a busy machine, after one warm-up exchange each (the link's pays the emulated
/// handshake).
fn paired_rtts_ms(link: SocketAddr, direct: SocketAddr, samples: usize) -> (Vec<f64>, Vec<f64>) {
    let mut l = connect(link);
    let mut d = connect(direct);
    round_trip(&mut l, b"warm-up").unwrap();
    round_trip(&mut d, b"warm-up").unwrap();
    let ms =
        |s: &mut std::net::TcpStream, msg: &[u8]| round_trip(s, msg).unwrap().as_secs_f64() * 1e3;
    (0..samples)
        .map(|i| {
            let msg = format!("sample {i:04}");
            (ms(&mut l, msg.as_bytes()), ms(&mut d, msg.as_bytes()))
        })
        .unzip()
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// What the link adds to a round trip, and how accurately, on a machine that may be busy.
///
/// Waiting for the CPU only ever makes an exchange slower, never faster, so:
/// - every exchange through the link takes at least the target (a link that answers early is
///   wrong, whatever the load): checked on every sample;
/// - the link's own error is the fastest exchange through it less the fastest direct one
///   (the samples are alternated, so both had the same chances to run undisturbed). A link
///   that adds too much adds it to every exchange, the fastest included; an exchange that
///   was slow because the relay, the echo server or the client waited for a core (a load of
///   17 on 2 cores delayed the median of a batch by 9 ms at 50 ms) is not the link's error.
///   The medians are printed, not asserted: they measure the machine as much as the link.
#[test]
fn added_rtt_is_within_10_percent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let echo_addr = serve(echo);
    let mut table = vec![format!(
        "{:>10} {:>12} {:>12} {:>12} {:>8}",
        "target", "median", "fastest", "added", "error"
    )];
    let mut failures = Vec::new();
    for (target_ms, samples) in [(5u64, 31), (20, 31), (50, 21), (200, 7)] {
        let mut c = LinkConfig::new(any(), echo_addr);
        c.rtt = Duration::from_millis(target_ms);
        let link = link::spawn(c).unwrap();
        let (through, direct) = paired_rtts_ms(link.addr(), echo_addr, samples);
        let target = target_ms as f64;
        let early: Vec<f64> = through.iter().copied().filter(|&ms| ms < target).collect();
        assert!(
            early.is_empty(),
            "a {target_ms} ms link answered early: {early:?} ms"
        );
        let added = min(&through) - min(&direct);
        let err = (added - target) / target;
        table.push(format!(
            "{:>8}ms {:>10.3}ms {:>10.3}ms {:>10.3}ms {:>+7.2}%",
            target_ms,
            median(through.clone()),
            min(&through),
            added,
            err * 100.0
        ));
        if err.abs() > 0.10 {
            failures.push((target_ms, through, direct));
        }
    }
    println!("added RTT\n{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "RTT off by more than 10% (target, through the link, direct): {failures:?}\n{}",
        table.join("\n")
    );
}

/// The link's rate, on a machine that may be busy.
///
/// The shaper serializes the bytes at exactly the configured rate from the first byte's
/// arrival, so a whole transfer, from the client's first write to the client seeing its end,
/// lasts at least `bytes * 8 / rate` plus the RTT, however the machine schedules the relay,
/// the source, the sink and the client: every transfer's end-to-end rate
/// (`bytes * 8 / (elapsed - rtt)`) must not exceed the configured rate (a link that is
/// faster than configured is wrong, whatever the load). Waiting for the CPU can only make a
/// transfer slower, so the accuracy is the fastest of the tries: within 5% of the rate. (The
/// rate from the receiver's first read to its last, which earlier versions asserted, is not
/// bounded that way: when the first delivery waited for the CPU the rest came in a burst.)
#[test]
fn throughput_is_within_5_percent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let source_addr = serve(source);
    let sink_addr = serve(sink);
    let mut table = vec![format!(
        "{:>14} {:>14} {:>14} {:>8} {:>10}",
        "configured", "fastest", "receiver", "error", "time"
    )];
    let mut failures = Vec::new();
    let rtt = Duration::from_millis(2);
    // (Mbit/s, direction, tries). About 0.5 s per transfer.
    let cases: [(u64, &str, usize); 5] = [
        (1, "down", 5),
        (10, "down", 5),
        (100, "down", 5),
        (1000, "down", 5),
        (100, "up", 5),
    ];
    for (mbit, dir, tries) in cases {
        let bps = mbit * 1_000_000;
        let n = bps / 8 / 2; // half a second of traffic
        let t = Instant::now();
        let transfers: Vec<Transfer> = (0..tries)
            .map(|_| {
                let mut c = if dir == "down" {
                    let mut c = LinkConfig::new(any(), source_addr);
                    c.down_bps = Some(bps);
                    c
                } else {
                    let mut c = LinkConfig::new(any(), sink_addr);
                    c.up_bps = Some(bps);
                    c
                };
                c.rtt = rtt;
                // The shaper's rate, not TCP's slow start (which costs ~6% of a half-second
                // transfer at 1 Gbit/s; `tcp_model.rs` tests it).
                c.tcp_model = TcpModelKind::None;
                let link = link::spawn(c).unwrap();
                if dir == "down" {
                    download(link.addr(), n)
                } else {
                    upload(link.addr(), n)
                }
            })
            .collect();
        let end_to_end: Vec<f64> = transfers
            .iter()
            .map(|x| n as f64 * 8.0 / x.elapsed.saturating_sub(rtt).as_secs_f64())
            .collect();
        let too_fast: Vec<f64> = end_to_end
            .iter()
            .copied()
            .filter(|&r| r > bps as f64 * (1.0 + 1e-6))
            .collect();
        assert!(
            too_fast.is_empty(),
            "{mbit} Mbit {dir}: faster than the link's rate: {too_fast:?} bit/s"
        );
        let fastest = end_to_end.iter().copied().fold(0.0, f64::max);
        let err = (fastest - bps as f64) / bps as f64;
        table.push(format!(
            "{:>6} Mbit {:>4} {:>9.3} Mbit {:>9.3} Mbit {:>+7.2}% {:>8.2}s",
            mbit,
            dir,
            fastest / 1e6,
            median(transfers.iter().map(|x| x.rate).collect()) / 1e6,
            err * 100.0,
            t.elapsed().as_secs_f64()
        ));
        if err.abs() > 0.05 {
            failures.push((mbit, dir, end_to_end));
        }
    }
    println!("throughput\n{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "throughput off by more than 5%: {failures:?}\n{}",
        table.join("\n")
    );
}
