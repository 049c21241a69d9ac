use super::*;

const MS: Nanos = 1_000_000;
const MBIT: u64 = 1_000_000;

fn params(one_way: Nanos, bps: Option<u64>) -> PacketParams {
    PacketParams {
        one_way,
        jitter: 0,
        reorder: false,
        bps,
        queue_bytes: 64 * 1500,
        loss: LossModel::Iid(0.0),
    }
}

#[test]
fn an_idle_path_delays_by_serialization_plus_one_way() {
    // 1500 bytes at 12 Mbit/s is exactly 1 ms.
    let mut s = PacketShaper::new(params(20 * MS, Some(12 * MBIT)), 1);
    assert_eq!(s.offer(0, 1500), Fate::Deliver(21 * MS));
    // Unlimited: propagation only.
    let mut s = PacketShaper::new(params(20 * MS, None), 1);
    assert_eq!(s.offer(5, 1500), Fate::Deliver(20 * MS + 5));
}

#[test]
fn back_to_back_packets_leave_at_the_rate() {
    let mut s = PacketShaper::new(params(0, Some(12 * MBIT)), 1);
    for i in 1..=10u64 {
        assert_eq!(s.offer(0, 1500), Fate::Deliver(i * MS));
    }
    assert_eq!(s.queued(0), 15_000);
    assert_eq!(s.queued(5 * MS), 7500);
}

#[test]
fn the_rate_is_exact_over_many_odd_sized_packets() {
    let mut p = params(0, Some(7 * MBIT));
    p.queue_bytes = usize::MAX;
    let mut s = PacketShaper::new(p, 1);
    let mut last = 0;
    let mut bytes = 0u64;
    for i in 0..100_000u64 {
        let len = 40 + (i as usize * 37) % 1461;
        bytes += len as u64;
        if let Fate::Deliver(at) = s.offer(0, len) {
            last = at;
        }
    }
    let exact = (bytes as u128 * 8 * 1_000_000_000).div_ceil(7_000_000) as u64;
    assert_eq!(last, exact);
}

#[test]
fn a_full_queue_drops_at_the_tail_and_drains_at_the_rate() {
    let mut p = params(10 * MS, Some(12 * MBIT));
    p.queue_bytes = 10 * 1500;
    let mut s = PacketShaper::new(p, 1);
    let fates: Vec<Fate> = (0..15).map(|_| s.offer(0, 1500)).collect();
    let dropped = fates.iter().filter(|f| **f == Fate::QueueDrop).count();
    assert_eq!(dropped, 5);
    assert!(fates[..10].iter().all(|f| matches!(f, Fate::Deliver(_))));
    // One packet time later there is room for exactly one more.
    assert!(matches!(s.offer(MS, 1500), Fate::Deliver(_)));
    assert_eq!(s.offer(MS, 1500), Fate::QueueDrop);
}

#[test]
fn jitter_stays_in_bounds_and_never_reorders_unless_asked() {
    let mut p = params(10 * MS, None);
    p.jitter = 3 * MS;
    let mut s = PacketShaper::new(p.clone(), 9);
    let mut prev = 0;
    let mut raised = 0;
    for i in 0..10_000u64 {
        let now = i * 100_000; // a packet every 0.1 ms
        let Fate::Deliver(at) = s.offer(now, 100) else {
            panic!("no loss configured")
        };
        assert!(at >= prev, "reordered");
        assert!(at <= now + 13 * MS, "beyond the jitter");
        if at > now + 7 * MS {
            raised += 1;
        }
        prev = at;
    }
    assert!(raised > 0);
    // With reordering allowed, the raw draws stand: some arrive before their predecessor,
    // none outside [one_way - jitter, one_way + jitter].
    p.reorder = true;
    let mut s = PacketShaper::new(p, 9);
    let mut prev = 0;
    let mut overtaken = 0;
    for i in 0..10_000u64 {
        let now = i * 100_000;
        let Fate::Deliver(at) = s.offer(now, 100) else {
            panic!("no loss configured")
        };
        assert!((now + 7 * MS..=now + 13 * MS).contains(&at));
        if at < prev {
            overtaken += 1;
        }
        prev = prev.max(at);
    }
    assert!(overtaken > 1000, "{overtaken}");
}

/// Independent loss: the count of 100,000 packets lost at 1% and 3% lies in the binomial 99%
/// interval (z = 2.576) around the expectation (seeded: the same count every run).
#[test]
fn iid_loss_is_the_configured_rate_per_packet() {
    for (seed, loss) in [(1u64, 0.01), (2, 0.03), (3, 0.2)] {
        let mut p = params(MS, None);
        p.loss = LossModel::Iid(loss);
        let mut s = PacketShaper::new(p, seed);
        let n = 100_000;
        let lost = (0..n).filter(|_| s.offer(0, 1500) == Fate::Lost).count() as f64;
        let half = 2.576 * (n as f64 * loss * (1.0 - loss)).sqrt();
        assert!((lost - n as f64 * loss).abs() <= half, "{loss}: {lost}");
    }
}

#[test]
fn gilbert_elliott_loses_in_bursts_at_its_mean_rate() {
    let model = LossModel::GilbertElliott {
        p: 0.01,
        r: 0.25,
        loss_good: 0.0,
        loss_bad: 1.0,
    };
    let mean = model.mean();
    assert!((mean - 0.01 / 0.26).abs() < 1e-12);
    let mut p = params(MS, None);
    p.loss = model;
    let mut s = PacketShaper::new(p, 4);
    let n = 400_000;
    let fates: Vec<bool> = (0..n).map(|_| s.offer(0, 1500) == Fate::Lost).collect();
    let lost = fates.iter().filter(|&&l| l).count() as f64;
    // Bursts make the count vary more than a binomial one; 10% of the mean is ~10 sigma of
    // the binomial and a few sigma of this chain.
    assert!(
        (lost / n as f64 - mean).abs() < 0.1 * mean,
        "{}",
        lost / n as f64
    );
    // Mean burst length 1 / r = 4 packets.
    let bursts = fates.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
    let burst = lost / bursts;
    assert!((3.5..4.5).contains(&burst), "{burst}");
}

#[test]
fn lost_packets_still_use_the_bottleneck() {
    let mut p = params(0, Some(12 * MBIT));
    p.loss = LossModel::Iid(1.0 - f64::EPSILON);
    let mut s = PacketShaper::new(p, 1);
    assert_eq!(s.offer(0, 1500), Fate::Lost);
    assert_eq!(s.queued(0), 1500);
}

#[test]
fn the_delay_queue_hands_out_by_time_then_order() {
    let mut q = DelayQueue::new();
    q.push(30, 1u32);
    q.push(10, 2);
    q.push(10, 3);
    assert_eq!(q.next_at(), Some(10));
    assert_eq!(q.pop_due(9), None);
    assert_eq!(q.pop_due(10), Some(2));
    assert_eq!(q.pop_due(10), Some(3));
    assert_eq!(q.pop_due(29), None);
    assert_eq!(q.pop_due(100), Some(1));
    assert!(q.is_empty());
}
