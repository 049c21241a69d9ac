//! How long a cell's runs warm up and measure: [`Timing`] (the user's settings and the lab's
//! [`RunPolicy`]) applied to a cell's protocol, payload, concurrency and link. The measurer
//! ([`super::measure`]) and the cost model ([`super::plan`]) both ask here, so that what is
//! planned is what is run; every number comes from the policy.

use std::time::Duration;

use serde::Serialize;

use super::matrix::CellKey;
use crate::kernel::RunPolicy;
use crate::proto::LabProtocol;

/// How long and how often each cell is measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Measured runs per cell.
    pub runs: u32,
    /// Unmeasured warm-up at the start of every run.
    #[serde(serialize_with = "ser_secs")]
    pub warm_up: Duration,
    /// Measured period of every run.
    #[serde(serialize_with = "ser_secs")]
    pub duration: Duration,
    /// Client worker threads.
    pub client_threads: u32,
    /// Every other timing number (resume warm-ups, settles, drain caps, overheads, retries).
    #[serde(skip)]
    pub policy: RunPolicy,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// One link "round" of `key`'s condition: every in-flight request completing once — about
/// one RTT plus the time to push the concurrency's worth of responses (and requests)
/// through the link's bandwidth (the client stack's rate, [`LabProtocol::stack_bps`],
/// counts as a bandwidth too; zero on loopback for stacks without one).
pub fn link_round(key: &CellKey) -> Duration {
    let (rtt, down, up) = key.cond.link.shape();
    // A client stack slower than the link bounds a round too (HTTP/3: `stack_bps`).
    let slower = |bps: Option<u64>| match (bps, key.proto.stack_bps()) {
        (Some(b), Some(s)) => Some(b.min(s)),
        (b, s) => b.or(s),
    };
    let (down, up) = (slower(down), slower(up));
    let c = f64::from(key.cond.concurrency);
    let resp = key.cond.payload.approx_bytes() as f64 + 200.0;
    let req = super::headers::size(&key.cond.headers.fields()) as f64 + 120.0;
    let xfer = |bytes: f64, bps: Option<u64>| bps.map_or(0.0, |b| c * bytes * 8.0 / b as f64);
    Duration::from_secs_f64(rtt.as_secs_f64() + xfer(resp, down) + xfer(req, up))
}

/// The warm-up and measured duration of `key`'s runs. On an emulated link a run must see
/// several "rounds" ([`link_round`]: every in-flight request completing once), or a short
/// run on a slow link measures nothing. The measured period is stretched to at least
/// [`RunPolicy::link_rounds`] such rounds (at most [`RunPolicy::max_run`]) and the warm-up
/// to cover connection set-up ([`RunPolicy::setup_rtts`]).
pub fn cell_timing(key: &CellKey, t: &Timing) -> (Duration, Duration) {
    let p = &t.policy;
    let (rtt, _, _) = key.cond.link.shape();
    let round = link_round(key);
    let duration = t.duration.max((round * p.link_rounds).min(p.max_run));
    let setup = key.proto.setup_cost() * key.cond.connections();
    let warm_up = t
        .warm_up
        .max((rtt * p.setup_rtts).min(p.max_run))
        .max(setup.min(p.max_run));
    (warm_up, duration)
}

/// The extra warm-up of a window of `key` right after a run of `last`: after HTTP/1.0 on
/// loopback [`RunPolicy::settle_after_close`], otherwise none (on a shaped link the resume
/// warm-up covers a whole link round already).
pub fn settle_after(p: &RunPolicy, last: Option<LabProtocol>, key: &CellKey) -> Duration {
    if last == Some(LabProtocol::H1Close) && key.cond.link.shape().0.is_zero() {
        p.settle_after_close
    } else {
        Duration::ZERO
    }
}

/// How long `key`'s windows wait for their requests in flight after the measured period
/// ([`h2lab_engine::StandingRun::drain_before_reply`]): [`RunPolicy::drain_cap`] on
/// loopback; on an emulated link nothing (the next arm's [`resume_warm_up`] covers a link
/// round of drain, which can take hundreds of milliseconds).
pub fn drain_cap(p: &RunPolicy, key: &CellKey) -> Duration {
    if key.cond.link.shape().0.is_zero() {
        p.drain_cap
    } else {
        Duration::ZERO
    }
}

/// The warm-up of `key`'s runs after the first on its standing connections (connections
/// are open; the first run warmed them up for [`cell_timing`]'s warm-up): the time for
/// every in-flight slot to be taken again — on loopback
/// [`RunPolicy::loopback_resume_warm_up`] (the arm before has drained, [`drain_cap`]), on a
/// shaped link [`RunPolicy::resume_warm_up`] and one [`link_round`] plus one RTT (at least
/// two RTTs). When a window starts on a shaped link, the arm measured just before still has
/// a round of requests in flight (responses queued in the relay, the server writing them
/// and, for HTTP/1.0, tearing connections down); they drain for one round, then this arm's
/// first responses arrive an RTT later. With the warm-up at two RTTs (80 ms on `wan`,
/// shorter than 10k's 123 ms round) the drain was charged to the next arm: on the kept
/// `--quick` runs (10k over wan, 72 windows) a window's server CPU per request was +19% of
/// its cell's median after an HTTP/1.0 window, +12% after h1-tls, −5% after h2 or h2c.
pub fn resume_warm_up(p: &RunPolicy, key: &CellKey) -> Duration {
    let (rtt, _, _) = key.cond.link.shape();
    if rtt.is_zero() {
        return p.loopback_resume_warm_up;
    }
    let drain = (link_round(key) + rtt).min(p.max_run);
    p.resume_warm_up.max(rtt * 2).max(drain)
}

/// The measured period of a run on a shaped link, rounded to a whole number of the closed
/// loop's cycles (`concurrency / rps`: the time for every in-flight request to complete once,
/// at the arm's measured rate `rps`); `planned` when that makes no sense (no rate yet, or a
/// cycle longer than the period). On a slow link the in-flight requests' responses share the
/// bandwidth and complete in waves, one per cycle: a period of 3.3 cycles held 3 or 4 waves
/// depending on where it started (10k over the WAN: 156–159 or 178–186 completions per
/// 373 ms window, the same pattern round after round), and req/s and server CPU per request
/// moved by ±12% with the phase. A period of whole cycles holds the same number of waves
/// wherever it starts. Rounded to the nearest, so the budget's plan holds on average.
pub fn whole_cycles(planned: Duration, concurrency: u32, rps: f64) -> Duration {
    if !(rps.is_finite() && rps > 0.0) {
        return planned;
    }
    let cycle = f64::from(concurrency.max(1)) / rps;
    let p = planned.as_secs_f64();
    if cycle > p || cycle < 1e-4 {
        return planned;
    }
    Duration::from_secs_f64((p / cycle).round().max(1.0) * cycle)
}

/// How many rounds `key`'s condition gets: `t.runs`, at most
/// [`RunPolicy::stretched_rounds`] when a slow link stretches its runs to more than 1.5× the
/// set duration.
pub fn rounds_for(key: &CellKey, t: &Timing) -> u32 {
    let (_, d) = cell_timing(key, t);
    if d > t.duration.mul_f64(1.5) {
        t.runs.clamp(1, t.policy.stretched_rounds)
    } else {
        t.runs.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkProfile;

    fn key(payload: &str, link: LinkProfile) -> CellKey {
        CellKey::h1_for_test(payload, link)
    }

    #[test]
    fn runs_are_stretched_on_slow_links() {
        let t = Timing {
            runs: 3,
            warm_up: Duration::from_millis(100),
            duration: Duration::from_millis(400),
            client_threads: 1,
            policy: RunPolicy::LAB,
        };
        let (w, d) = cell_timing(&key("100k", LinkProfile::Loopback), &t);
        assert_eq!((w, d), (t.warm_up, t.duration));
        // 50 × 100 KiB through 50 Mbit/s is 0.84 s per round, plus 40 ms: 3 rounds.
        let (w, d) = cell_timing(&key("100k", LinkProfile::Wan), &t);
        assert_eq!(w, Duration::from_millis(160));
        assert!(
            d > Duration::from_millis(2580) && d < Duration::from_millis(2700),
            "{d:?}"
        );
        let (_, d) = cell_timing(&key("ping", LinkProfile::Wan), &t);
        assert_eq!(d, t.duration);
        let (_, d) = cell_timing(&key("100m", LinkProfile::Mobile), &t);
        assert_eq!(d, RunPolicy::LAB.max_run);
    }

    #[test]
    fn periods_on_a_link_hold_whole_cycles_of_the_closed_loop() {
        let ms = Duration::from_millis;
        // 50 in flight at 440 req/s: a 113.6 ms cycle; 373 ms is 3.28 cycles -> 3.
        let d = whole_cycles(ms(373), 50, 440.0);
        assert!((d.as_secs_f64() - 3.0 * 50.0 / 440.0).abs() < 1e-6, "{d:?}");
        // 3.6 cycles round up to 4.
        let d = whole_cycles(ms(409), 50, 440.0);
        assert!((d.as_secs_f64() - 4.0 * 50.0 / 440.0).abs() < 1e-6, "{d:?}");
        // On loopback a window holds one cycle of warm-up and three measured: 50 in flight
        // at 2,266 req/s (HTTP/2 over TLS, 100 KB, a debug build) is a 22 ms cycle.
        let (w, d) = RunPolicy::LAB.cycle_floor(50, 2266.0).unwrap();
        assert!(w > ms(21) && w < ms(23), "{w:?}");
        assert_eq!(d, w * RunPolicy::LAB.link_rounds);
        // At release rates the floor is far below the 5 ms refill and 15 ms period.
        let (w, d) = RunPolicy::LAB.cycle_floor(50, 40_000.0).unwrap();
        assert!(
            w < RunPolicy::LAB.loopback_resume_warm_up && d < ms(15),
            "{w:?} {d:?}"
        );
        assert_eq!(RunPolicy::LAB.cycle_floor(50, 0.0), None);
        assert_eq!(RunPolicy::LAB.cycle_floor(50, f64::NAN), None);
        assert_eq!(
            RunPolicy::LAB.cycle_floor(50, 1e-9).unwrap(),
            (RunPolicy::LAB.max_run, RunPolicy::LAB.max_run)
        );
        // No rate, or a cycle longer than the period: as planned.
        assert_eq!(whole_cycles(ms(373), 50, f64::NAN), ms(373));
        assert_eq!(whole_cycles(ms(373), 50, 0.0), ms(373));
        assert_eq!(whole_cycles(ms(100), 50, 100.0), ms(100));
    }

    #[test]
    fn later_windows_on_a_shaped_link_wait_out_the_previous_arms_drain() {
        // Loopback: the previous arm has drained (its window waited for it), a short
        // refill; a fast LAN: the fixed re-warm.
        let lo = key("10k", LinkProfile::Loopback);
        assert_eq!(
            resume_warm_up(&RunPolicy::LAB, &lo),
            RunPolicy::LAB.loopback_resume_warm_up
        );
        assert_eq!(drain_cap(&RunPolicy::LAB, &lo), RunPolicy::LAB.drain_cap);
        // After HTTP/1.0 on loopback a window settles longer; on a link it does not.
        assert_eq!(
            settle_after(&RunPolicy::LAB, Some(LabProtocol::H1Close), &lo),
            RunPolicy::LAB.settle_after_close
        );
        assert_eq!(
            settle_after(&RunPolicy::LAB, Some(LabProtocol::H1), &lo),
            Duration::ZERO
        );
        assert_eq!(settle_after(&RunPolicy::LAB, None, &lo), Duration::ZERO);
        let wan10k = key("10k", LinkProfile::Wan);
        assert_eq!(
            settle_after(&RunPolicy::LAB, Some(LabProtocol::H1Close), &wan10k),
            Duration::ZERO
        );
        assert_eq!(
            drain_cap(&RunPolicy::LAB, &key("10k", LinkProfile::Lan)),
            Duration::ZERO
        );
        assert_eq!(
            resume_warm_up(&RunPolicy::LAB, &key("10k", LinkProfile::Lan)),
            RunPolicy::LAB.resume_warm_up
        );
        // 10k over the WAN: 50 × ~10.4 KB through 50 Mbit/s is 84 ms, plus 40 ms: a 124 ms
        // round, and one RTT more for this arm's first responses (two RTTs were 80 ms).
        let wan = key("10k", LinkProfile::Wan);
        let round = link_round(&wan);
        assert!(round > Duration::from_millis(120) && round < Duration::from_millis(130));
        assert_eq!(
            resume_warm_up(&RunPolicy::LAB, &wan),
            round + Duration::from_millis(40)
        );
        // A tiny payload over the WAN: about two RTTs, as before.
        let ping = resume_warm_up(&RunPolicy::LAB, &key("ping", LinkProfile::Wan));
        assert!(ping >= Duration::from_millis(80) && ping < Duration::from_millis(90));
    }
}
