//! Deterministic tests of the window model on a synthetic clock.

use super::*;
use crate::shaper::Rng;

const MS: Nanos = 1_000_000;
const RTT: Nanos = 40 * MS;

/// A greedy sender of MSS segments over a path with no bottleneck: each segment is acknowledged
/// one RTT after it is sent, or, when the loss draw hits it, found lost one RTT after and
/// acknowledged (retransmitted) one more RTT later. Returns the bytes sent by `until`.
fn greedy(model: &mut TcpModel, loss: f64, seed: u64, until: Nanos) -> usize {
    let mut rng = Rng::new(seed);
    let mut t = 0;
    let mut sent = 0;
    loop {
        t = model.ready_at(t, MSS);
        if t >= until {
            return sent;
        }
        if loss > 0.0 && rng.unit() < loss {
            model.on_send(t, MSS, t + 2 * RTT, Some(t + RTT));
        } else {
            model.on_send(t, MSS, t + RTT, None);
        }
        sent += MSS;
    }
}

#[test]
fn slow_start_doubles_the_window_every_round_trip() {
    for kind in [TcpModelKind::Cubic, TcpModelKind::Reno] {
        let mut m = TcpModel::new(kind);
        assert_eq!(m.cwnd(), INITIAL_WINDOW);
        // Round k (sends in [k RTT, (k+1) RTT)) sends 10 * 2^k segments: by the start of round
        // k the sender has sent 10 * (2^k - 1) segments.
        for k in 0..8u32 {
            let sent = greedy(&mut TcpModel::new(kind), 0.0, 1, u64::from(k) * RTT + 1);
            assert_eq!(sent, 10 * ((1 << (k + 1)) - 1) * MSS, "round {k}");
        }
        // After round 6 (640 segments sent at 6 RTT, the sender then waits for their ACKs at
        // 7 RTT) the window is 1280 segments.
        greedy(&mut m, 0.0, 1, 6 * RTT + 1);
        assert_eq!(m.cwnd(), 1280 * MSS);
        assert_eq!(m.ssthresh(), usize::MAX);
        assert_eq!(m.cuts(), 0);
    }
}

#[test]
fn a_loss_cuts_the_window_by_beta_once_per_window() {
    for (kind, beta) in [(TcpModelKind::Cubic, 0.7), (TcpModelKind::Reno, 0.5)] {
        let mut m = TcpModel::new(kind);
        // Fill the initial window at t = 0; segments 3 and 7 are lost.
        for i in 0..10 {
            let lost = i == 3 || i == 7;
            let (ack, seen) = if lost {
                (2 * RTT, Some(RTT))
            } else {
                (RTT, None)
            };
            m.on_send(0, MSS, ack, seen);
        }
        assert_eq!(m.window(0), 0);
        // Just before the round trip ends nothing has changed.
        assert_eq!(m.window(RTT - 1), 0);
        assert_eq!(m.cwnd(), INITIAL_WINDOW);
        // At RTT: both losses are seen (one decrease), the 8 others are acknowledged and do
        // not grow the window (they belong to the window that saw the loss).
        m.advance(RTT);
        let cut = (INITIAL_WINDOW as f64 * beta) as usize;
        assert_eq!(m.cwnd(), cut, "{kind}");
        assert_eq!(m.ssthresh(), cut);
        assert_eq!(m.cuts(), 1);
        assert_eq!(m.in_flight(), 2 * MSS);
        // A loss of a segment sent after the decrease cuts again.
        m.on_send(RTT, MSS, 3 * RTT, Some(2 * RTT));
        m.advance(2 * RTT);
        assert_eq!(m.cuts(), 2);
        assert_eq!(m.cwnd(), ((cut as f64) * beta) as usize);
        // Never below two segments.
        for i in 0..20 {
            let t = (3 + i) * RTT;
            m.on_send(t, MSS, t + 2 * RTT, Some(t + RTT));
            m.advance(t + RTT);
        }
        assert_eq!(m.cwnd(), MIN_WINDOW);
    }
}

#[test]
fn congestion_avoidance_grows_alpha_segments_per_round_trip() {
    for kind in [TcpModelKind::Cubic, TcpModelKind::Reno] {
        let mut m = TcpModel::new(kind);
        // One loss in the first window: ssthresh = cwnd = beta * IW.
        m.on_send(0, MSS, 2 * RTT, Some(RTT));
        m.advance(RTT);
        let start = m.cwnd();
        // 50 loss-free round trips of a greedy sender.
        let mut t = RTT;
        while t < 2 * RTT + 50 * RTT {
            t = m.ready_at(t, MSS);
            m.on_send(t, MSS, t + RTT, None);
        }
        let growth = (m.cwnd() - start) as f64 / MSS as f64;
        let expected = 50.0 * kind.alpha();
        assert!(
            (growth - expected).abs() <= 0.1 * expected + 1.0,
            "{kind}: grew {growth:.1} segments in 50 RTTs, expected {expected:.1}"
        );
    }
}

#[test]
fn throughput_under_loss_follows_the_mathis_formula() {
    // A 10-minute transfer (15000 round trips) at 0.5%, 1% and 3% segment loss.
    for kind in [TcpModelKind::Cubic, TcpModelKind::Reno] {
        for p in [0.005, 0.01, 0.03] {
            let until = 15_000 * RTT;
            let mut m = TcpModel::new(kind);
            let sent = greedy(&mut m, p, 7, until);
            let rate = sent as f64 / (until as f64 / 1e9);
            let mathis = MSS as f64 / (RTT as f64 / 1e9) * 1.22 / p.sqrt();
            let ratio = rate / mathis;
            println!("{kind} p={p}: {rate:.0} B/s, Mathis {mathis:.0} B/s, x{ratio:.3}");
            assert!(
                (0.75..1.3).contains(&ratio),
                "{kind} at {p}: {rate:.0} B/s vs Mathis {mathis:.0} B/s (x{ratio:.2})"
            );
        }
    }
}

#[test]
fn an_application_limited_sender_does_not_grow_the_window() {
    let mut m = TcpModel::new(TcpModelKind::Cubic);
    // Two segments per round trip for 100 round trips: never half the window in flight.
    for k in 0..100 {
        let t = k * RTT;
        m.advance(t);
        m.on_send(t, MSS, t + RTT / 2, None);
        m.on_send(t + 1, MSS, t + 1 + RTT / 2, None);
    }
    m.advance(100 * RTT);
    assert_eq!(m.cwnd(), INITIAL_WINDOW);
    assert_eq!(m.in_flight(), 0);
}

#[test]
fn sends_are_never_dated_before_the_clock() {
    let mut m = TcpModel::new(TcpModelKind::Reno);
    for _ in 0..10 {
        m.on_send(0, MSS, RTT, None);
    }
    // The window is full until the acknowledgements at RTT.
    assert_eq!(m.ready_at(5 * MS, MSS), RTT);
    // Asking again about an earlier instant cannot go back in time.
    assert_eq!(m.ready_at(0, MSS), RTT);
    // Want more than the window: the whole (grown) window must be free.
    assert_eq!(m.ready_at(0, usize::MAX), RTT);
}

#[test]
fn kinds_parse_and_print() {
    for k in TcpModelKind::ALL {
        assert_eq!(k.name().parse::<TcpModelKind>(), Ok(k));
        assert_eq!(k.to_string(), k.name());
    }
    assert_eq!("CUBIC".parse::<TcpModelKind>(), Ok(TcpModelKind::Cubic));
    assert_eq!(TcpModelKind::default(), TcpModelKind::Cubic);
    assert!("bbr".parse::<TcpModelKind>().is_err());
    assert!((TcpModelKind::Cubic.alpha() - 0.5294).abs() < 1e-3);
}
