//! The link's TCP window model through the real relay: slow start costs round trips on a fresh
//! connection, loss slows a long transfer down to about what the Mathis formula allows (a real
//! TCP sender would), and `--tcp-model none` keeps the old behaviour. The assertions are lower
//! bounds on time (a busy machine can only make transfers slower) plus the link's counters.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use h2lab_link::{self as link, LinkConfig, TcpModelKind};

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Downloads `n` bytes from a `source` server through `addr`; returns the time from the request
/// to the last byte.
fn download(addr: SocketAddr, n: u64) -> Duration {
    let mut s = connect(addr);
    let t = Instant::now();
    s.write_all(&n.to_be_bytes()).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0u64;
    while got < n {
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "EOF after {got} of {n} bytes");
        got += k as u64;
    }
    t.elapsed()
}

#[test]
fn slow_start_costs_round_trips_on_a_fresh_connection() {
    let upstream = serve(source);
    // 1 MB over 50 ms RTT at 1 Gbit/s (the rate is not the limit). The initial window is 10
    // segments, doubling each round trip: 10+20+40+80+160+320 = 630 segments < 1 MB (725), so
    // the last byte leaves in the 7th round trip and arrives half a round trip later: after
    // the request's half round trip, at least 6.5 round trips = 325 ms.
    let n = 1_000_000;
    let mut c = LinkConfig::new(any(), upstream);
    c.rtt = Duration::from_millis(50);
    c.down_bps = Some(1_000_000_000);
    c.up_bps = Some(1_000_000_000);
    c.emulate_handshake = false;
    let link = link::spawn(c.clone()).unwrap();
    let modelled = download(link.addr(), n);
    let stats = link.stats();
    assert_eq!(stats.tcp_model, Some(TcpModelKind::Cubic));
    assert_eq!(stats.down.window_cuts, 0);
    assert!(
        modelled >= Duration::from_millis(50 / 2 + 325),
        "1 MB in {modelled:?}: faster than slow start allows"
    );

    // Without the model the loopback TCP sends it all at once: one round trip plus the
    // serialization of 1 MB at 1 Gbit/s (8 ms).
    c.tcp_model = TcpModelKind::None;
    let link = link::spawn(c).unwrap();
    let unmodelled = download(link.addr(), n);
    assert_eq!(link.stats().tcp_model, None);
    println!("1 MB over 50 ms: cubic {modelled:?}, none {unmodelled:?}");
    assert!(
        unmodelled < modelled,
        "none {unmodelled:?} vs cubic {modelled:?}"
    );
}

#[test]
fn loss_slows_a_long_transfer_down_to_what_tcp_would_do() {
    let upstream = serve(source);
    // 3% loss over 20 ms RTT, 100 Mbit/s. Mathis: 1448 B / 20 ms x 1.22 / sqrt(0.03) = 510 kB/s,
    // so 600 kB take about 1.2 s; the loopback TCP alone would need ~0.1 s plus a few
    // retransmission round trips. Lower bound: a quarter of the Mathis time (414 segments are
    // mostly slow start, which Mathis's steady state leaves out: 352-354 ms measured with the
    // loss drawn per segment; the old per-chunk draw lost about twice as much and took longer).
    let n = 600_000;
    let mut c = LinkConfig::new(any(), upstream);
    c.rtt = Duration::from_millis(20);
    c.down_bps = Some(100_000_000);
    c.up_bps = Some(100_000_000);
    c.loss = 0.03;
    c.seed = 3;
    let link = link::spawn(c.clone()).unwrap();
    let modelled = download(link.addr(), n);
    let stats = link.stats();
    let mathis = n as f64 / (1448.0 / 0.020 * 1.22 / 0.03f64.sqrt());
    println!(
        "600 kB at 3% loss over 20 ms: cubic {modelled:?} (Mathis {mathis:.2} s), {} window cuts",
        stats.down.window_cuts
    );
    assert!(stats.down.lost_chunks > 0, "{stats:?}");
    assert!(stats.down.window_cuts > 0, "{stats:?}");
    assert!(
        stats.down.window_cuts <= stats.down.lost_chunks,
        "{stats:?}"
    );
    assert!(
        modelled.as_secs_f64() >= mathis / 4.0,
        "{modelled:?} vs Mathis {mathis:.2} s"
    );

    c.tcp_model = TcpModelKind::Reno;
    let link = link::spawn(c).unwrap();
    let reno = download(link.addr(), n);
    println!("reno {reno:?}");
    assert_eq!(link.stats().tcp_model, Some(TcpModelKind::Reno));
    assert!(reno.as_secs_f64() >= mathis / 4.0, "{reno:?}");
}

#[test]
fn no_added_rtt_means_no_window() {
    let upstream = serve(source);
    let link = link::spawn(LinkConfig::new(any(), upstream)).unwrap();
    download(link.addr(), 100_000);
    assert_eq!(link.stats().tcp_model, None);
}
