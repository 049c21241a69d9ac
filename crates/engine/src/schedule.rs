//! Exact per-request schedules: when each request of a paced run is due.
//!
//! A [`Profile`] is a level over time — requests per second in the open model, active
//! connections for closed-model stages — made of linear segments. Its integral `A(t)` (the
//! number of arrivals expected by time `t`) is known in closed form, so the due time of arrival
//! `n` is computed exactly as `A⁻¹(n + ½)` (each arrival sits in the middle of its unit of
//! area): for a constant rate `R` that is `(n + ½) / R`. Nothing accumulates from a timer, so
//! a late wake-up never shifts later requests.
//!
//! [`Lanes`] splits the arrivals of a run over connections and workers: arrival `n` belongs to
//! connection lane `n mod C`, and lanes are dealt to workers like clients (`lane = i·t + w`
//! for client `i` of worker `w`), so every worker walks its own increasing sub-sequence of the
//! global schedule without talking to the others.

use std::time::Duration;

/// One stage of a ramp (`--stages 30s:100`): move linearly from the previous level to
/// `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp takes.
    pub duration: Duration,
    /// The level reached at the end of the stage (req/s or connections).
    pub target: f64,
}

/// A linear piece of a [`Profile`]: level `a` at `t0` going to `b` at `t0 + d`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    t0: f64,
    /// Length in seconds; `None` = holds forever (a constant level).
    d: Option<f64>,
    a: f64,
    b: f64,
    /// `A(t0)`.
    cum0: f64,
}

impl Segment {
    /// Slope (level per second).
    fn slope(&self) -> f64 {
        match self.d {
            Some(d) if d > 0.0 => (self.b - self.a) / d,
            _ => 0.0,
        }
    }

    /// Area under the segment (`None` when infinite).
    fn area(&self) -> Option<f64> {
        self.d.map(|d| (self.a + self.b) * 0.5 * d)
    }

    /// Level `s` seconds into the segment.
    fn level(&self, s: f64) -> f64 {
        self.a + self.slope() * s
    }

    /// Area from the start of the segment to `s` seconds into it.
    fn area_to(&self, s: f64) -> f64 {
        self.a * s + 0.5 * self.slope() * s * s
    }

    /// Seconds into the segment at which `x` (≤ the segment's area) arrivals have
    /// accumulated, or `None` if the level is zero throughout.
    fn solve(&self, x: f64) -> Option<f64> {
        let k = self.slope();
        if k == 0.0 {
            return (self.a > 0.0).then(|| x / self.a);
        }
        // a·s + k/2·s² = x  ⇒  s = 2x / (a + √(a² + 2kx)): no cancellation when a ≈ √(…).
        let disc = (self.a * self.a + 2.0 * k * x).max(0.0);
        let den = self.a + disc.sqrt();
        if den <= 0.0 {
            return None;
        }
        Some(2.0 * x / den)
    }
}

/// A piecewise-linear level over time, starting at `t = 0` (the start of the run).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    segs: Vec<Segment>,
}

impl Profile {
    /// The same level forever (`--arrival-rate R` without stages).
    pub fn constant(level: f64) -> Profile {
        Profile {
            segs: vec![Segment {
                t0: 0.0,
                d: None,
                a: level,
                b: level,
                cum0: 0.0,
            }],
        }
    }

    /// Linear ramps from `start` through each stage's target; the level is 0 after the last
    /// stage (the run ends there).
    pub fn stages(start: f64, stages: &[Stage]) -> Profile {
        let mut segs = Vec::with_capacity(stages.len());
        let (mut t, mut level, mut cum) = (0.0, start, 0.0);
        for st in stages {
            let d = st.duration.as_secs_f64();
            let seg = Segment {
                t0: t,
                d: Some(d),
                a: level,
                b: st.target,
                cum0: cum,
            };
            cum += seg.area().unwrap_or(0.0);
            t += d;
            level = st.target;
            segs.push(seg);
        }
        Profile { segs }
    }

    /// The same profile with every level multiplied by `f` (a shard's part of the whole).
    pub fn scaled(&self, f: f64) -> Profile {
        Profile {
            segs: self
                .segs
                .iter()
                .map(|s| Segment {
                    a: s.a * f,
                    b: s.b * f,
                    cum0: s.cum0 * f,
                    ..*s
                })
                .collect(),
        }
    }

    /// Total length, or `None` for a constant level that never ends.
    pub fn duration(&self) -> Option<Duration> {
        let last = self.segs.last()?;
        let d = last.d?;
        Some(Duration::from_secs_f64((last.t0 + d).max(0.0)))
    }

    /// The highest level reached.
    pub fn max_level(&self) -> f64 {
        self.segs.iter().map(|s| s.a.max(s.b)).fold(0.0, f64::max)
    }

    /// The segment containing `t` seconds (the last one past the end).
    fn seg_at(&self, t: f64) -> Option<&Segment> {
        self.segs
            .iter()
            .rev()
            .find(|s| s.t0 <= t)
            .or(self.segs.first())
    }

    /// The level in force `t` seconds into the run (0 after the end of the stages).
    pub fn level_at(&self, t: f64) -> f64 {
        let Some(s) = self.seg_at(t) else { return 0.0 };
        match s.d {
            Some(d) if t > s.t0 + d => 0.0,
            _ => s.level((t - s.t0).max(0.0)),
        }
    }

    /// `A(t)`: arrivals expected from the start to `t` seconds.
    pub fn cumulative(&self, t: f64) -> f64 {
        let Some(s) = self.seg_at(t) else { return 0.0 };
        let into = (t - s.t0).max(0.0);
        let into = s.d.map_or(into, |d| into.min(d));
        s.cum0 + s.area_to(into)
    }

    /// The mean level between `t0` and `t1` seconds (the level itself when they coincide).
    pub fn mean_level(&self, t0: f64, t1: f64) -> f64 {
        if t1 - t0 <= 1e-12 {
            return self.level_at(t0);
        }
        (self.cumulative(t1) - self.cumulative(t0)) / (t1 - t0)
    }

    /// The first time (seconds) at which `x` arrivals have accumulated, `None` if that never
    /// happens.
    pub fn time_of(&self, x: f64) -> Option<f64> {
        if !x.is_finite() || x < 0.0 {
            return None;
        }
        for s in &self.segs {
            match s.area() {
                Some(area) if x > s.cum0 + area => continue,
                _ => return s.solve(x - s.cum0).map(|dt| s.t0 + dt),
            }
        }
        None
    }

    /// When arrival number `n` (counted from 0) is due, in nanoseconds from the start:
    /// `A⁻¹(n + ½)`. `None` once the profile has no more arrivals.
    pub fn due_ns(&self, n: u64) -> Option<u64> {
        let t = self.time_of(n as f64 + 0.5)?;
        let ns = (t * 1e9).round();
        (ns.is_finite() && ns < u64::MAX as f64).then_some(ns as u64)
    }
}

/// How the arrivals of a run are dealt to one worker's connection lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lanes {
    /// `C`: connections in the whole run.
    pub total: u64,
    /// `t`: worker threads.
    pub threads: u64,
    /// `w`: this worker.
    pub worker: u64,
    /// `c_w`: this worker's connections.
    pub count: u64,
}

impl Lanes {
    /// The global arrival number of this worker's `k`-th arrival (increasing in `k`).
    pub fn global(&self, k: u64) -> u64 {
        let c = self.count.max(1);
        (k / c) * self.total + (k % c) * self.threads + self.worker
    }

    /// The worker-local connection whose lane arrival `k` belongs to.
    pub fn local(&self, k: u64) -> usize {
        (k % self.count.max(1)) as usize
    }
}

/// One worker's walk through the global schedule: its arrivals in order, with their due times.
#[derive(Debug, Clone)]
pub struct ArrivalSchedule {
    profile: Profile,
    lanes: Lanes,
    /// Most arrivals this worker makes (its share of `-n`), `None` for timed runs.
    limit: Option<u64>,
    next: u64,
    next_due: Option<u64>,
}

impl ArrivalSchedule {
    /// The schedule of the worker described by `lanes`.
    pub fn new(profile: Profile, lanes: Lanes, limit: Option<u64>) -> ArrivalSchedule {
        let mut s = ArrivalSchedule {
            profile,
            lanes,
            limit,
            next: 0,
            next_due: None,
        };
        s.next_due = s.due_of(0);
        s
    }

    fn due_of(&self, k: u64) -> Option<u64> {
        if self.limit.is_some_and(|l| k >= l) {
            return None;
        }
        self.profile.due_ns(self.lanes.global(k))
    }

    /// Due time of the next arrival (ns from the start), `None` when there are no more.
    pub fn peek(&self) -> Option<u64> {
        self.next_due
    }

    /// The next arrival if it is due at `now_ns`: `(due, local connection of its lane)`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, usize)> {
        let due = self.next_due.filter(|d| *d <= now_ns)?;
        let lane = self.lanes.local(self.next);
        self.next += 1;
        self.next_due = self.due_of(self.next);
        Some((due, lane))
    }

    /// Arrivals taken so far.
    pub fn taken(&self) -> u64 {
        self.next
    }
}

/// Per-connection schedules of h2load's pacing flags, relative to the connection's start.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientSchedule {
    /// `--rps R`: request `k` at `k / R` (the first one at once, like h2load).
    Rate(f64),
    /// `--timing-script-file`: request `k` at the script's `k`-th offset (ns).
    Script(std::sync::Arc<[u64]>),
}

impl ClientSchedule {
    /// When request `k` is due, in ns from the connection's start.
    pub fn due_ns(&self, k: u64) -> Option<u64> {
        match self {
            ClientSchedule::Rate(r) => {
                let ns = (k as f64 * 1e9 / r).round();
                (ns.is_finite() && ns < u64::MAX as f64).then_some(ns as u64)
            }
            ClientSchedule::Script(offsets) => offsets.get(usize::try_from(k).ok()?).copied(),
        }
    }

    /// Number of requests due at `at_ns` from the start, counting from `from` (which is known
    /// to be due or not yet due): advances while the next is due.
    pub fn due_count(&self, from: u64, at_ns: u64) -> u64 {
        match self {
            ClientSchedule::Rate(r) => {
                let n = (at_ns as f64 * r / 1e9).floor() + 1.0;
                let n = if n.is_finite() && n > 0.0 {
                    n as u64
                } else {
                    0
                };
                // Guard against rounding: the count agrees with due_ns.
                let mut n = n.max(from);
                while self.due_ns(n).is_some_and(|d| d <= at_ns) {
                    n += 1;
                }
                while n > from && self.due_ns(n - 1).is_some_and(|d| d > at_ns) {
                    n -= 1;
                }
                n
            }
            ClientSchedule::Script(_) => {
                let mut n = from;
                while self.due_ns(n).is_some_and(|d| d <= at_ns) {
                    n += 1;
                }
                n
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(secs: f64, target: f64) -> Stage {
        Stage {
            duration: Duration::from_secs_f64(secs),
            target,
        }
    }

    #[test]
    fn constant_rate_is_exact() {
        let p = Profile::constant(2000.0);
        assert_eq!(p.due_ns(0), Some(250_000));
        assert_eq!(p.due_ns(1), Some(750_000));
        assert_eq!(p.due_ns(19_999), Some(9_999_750_000));
        // 20,000 arrivals in the first 10 s, exactly.
        let n = (0..30_000u64)
            .filter(|n| p.due_ns(*n).unwrap() < 10_000_000_000)
            .count();
        assert_eq!(n, 20_000);
        assert_eq!(p.duration(), None);
        assert_eq!(p.mean_level(3.0, 4.0), 2000.0);
    }

    #[test]
    fn ramps_follow_the_integral() {
        // 0 → 100 req/s over 10 s, hold 10 s, down to 0 over 10 s: 500 + 1000 + 500 arrivals.
        let p = Profile::stages(0.0, &[st(10.0, 100.0), st(10.0, 100.0), st(10.0, 0.0)]);
        assert_eq!(p.duration(), Some(Duration::from_secs(30)));
        assert!((p.cumulative(30.0) - 2000.0).abs() < 1e-9);
        assert!((p.level_at(5.0) - 50.0).abs() < 1e-9);
        assert_eq!(p.level_at(31.0), 0.0);
        assert!((p.mean_level(0.0, 10.0) - 50.0).abs() < 1e-9);
        let due: Vec<u64> = (0..3000).map_while(|n| p.due_ns(n)).collect();
        assert_eq!(due.len(), 2000, "exactly the area of the profile");
        assert!(due.windows(2).all(|w| w[0] <= w[1]));
        // Per 1 s interval, the count matches the mean level within one arrival.
        for i in 0..30 {
            let (a, b) = (i as u64 * 1_000_000_000, (i as u64 + 1) * 1_000_000_000);
            let n = due.iter().filter(|d| **d >= a && **d < b).count() as f64;
            let want = p.mean_level(i as f64, i as f64 + 1.0);
            assert!((n - want).abs() <= 1.0, "interval {i}: {n} vs {want}");
        }
        // A ramp down to zero and a zero start never divide by zero.
        assert_eq!(Profile::stages(0.0, &[st(1.0, 0.0)]).due_ns(0), None);
    }

    #[test]
    fn lanes_partition_the_global_sequence() {
        // 5 connections over 2 workers: worker 0 has clients 0,1,2 (lanes 0,2,4), worker 1 has
        // clients 0,1 (lanes 1,3).
        let w0 = Lanes {
            total: 5,
            threads: 2,
            worker: 0,
            count: 3,
        };
        let w1 = Lanes {
            worker: 1,
            count: 2,
            ..w0
        };
        let mut all: Vec<u64> = (0..30).map(|k| w0.global(k)).collect();
        all.extend((0..20).map(|k| w1.global(k)));
        all.sort_unstable();
        assert_eq!(all, (0..50).collect::<Vec<_>>());
        assert_eq!(
            (0..6).map(|k| w0.global(k)).collect::<Vec<_>>(),
            [0, 2, 4, 5, 7, 9]
        );
        assert_eq!(w0.local(4), 1);
        let mut s = ArrivalSchedule::new(Profile::constant(1000.0), w1, Some(3));
        assert_eq!(s.peek(), Some(1_500_000));
        assert_eq!(s.pop_due(1_000_000), None);
        assert_eq!(s.pop_due(1_500_000), Some((1_500_000, 0)));
        assert_eq!(s.pop_due(u64::MAX), Some((3_500_000, 1)));
        assert_eq!(s.pop_due(u64::MAX), Some((6_500_000, 0)));
        assert_eq!(
            s.pop_due(u64::MAX),
            None,
            "limited to this worker's share of -n"
        );
        assert_eq!(s.taken(), 3);
    }

    #[test]
    fn client_schedules() {
        let r = ClientSchedule::Rate(4.0);
        assert_eq!(r.due_ns(0), Some(0));
        assert_eq!(r.due_ns(3), Some(750_000_000));
        assert_eq!(r.due_count(0, 0), 1);
        assert_eq!(r.due_count(0, 749_999_999), 3);
        assert_eq!(r.due_count(2, 750_000_000), 4);
        let s = ClientSchedule::Script(vec![0, 10, 10, 50].into());
        assert_eq!(s.due_count(0, 9), 1);
        assert_eq!(s.due_count(1, 10), 3);
        assert_eq!(s.due_count(3, u64::MAX), 4);
        assert_eq!(s.due_ns(4), None);
    }
}
