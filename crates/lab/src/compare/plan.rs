//! What a compare plan costs in wall time: one model for the estimate printed at the start
//! ([`estimate`]), for fitting the first rounds into the budget
//! ([`schedule::run_plan`](super::schedule::run_plan)) and for planning the rounds the budget
//! adds ([`sequential`](super::sequential)).
//!
//! A run costs its warm-up and measured period ([`cell_timing`], every number from the run's
//! [`RunPolicy`](crate::kernel::RunPolicy)) plus a fixed overhead, and
//! what that overhead and the warm-up are depends on how the arm is measured:
//! - **On standing connections** ([`arms`](super::arms)): the first run opens the arm and
//!   warms up in full; later runs only refill the pipeline ([`resume_warm_up`]) and pay
//!   [`RunPolicy::window_overhead`](crate::kernel::RunPolicy::window_overhead).
//! - **As whole engine runs** (`--fresh-connections`, or a configuration that
//!   [`StandingRun::supports`](h2lab_engine::StandingRun::supports) refuses — never one of
//!   compare's: they are closed-model runs without time series or log files, whatever the
//!   protocol, HTTP/3 included since the standing run drives QUIC): *every* run connects
//!   afresh, so every run pays the full warm-up (for HTTP/3 at least
//!   [`LabProtocol::setup_cost`](crate::proto::LabProtocol::setup_cost) per connection: QUIC
//!   handshakes in the client's thread) plus [`RunPolicy::whole_run_overhead`](crate::kernel::RunPolicy::whole_run_overhead) (threads started and
//!   joined, connections closed). Counting an HTTP/3 arm as standing underestimated its
//!   rounds by about half, which is how a default matrix with `h3` overran its budget.
//!
//! The measurer asks [`StandingRun::supports`](h2lab_engine::StandingRun::supports) about
//! each run's configuration ([`bench_config`](super::run::bench_config)); the model here
//! plans without one (before the servers and their origins exist), and a test checks that
//! the engine supports the configuration of every protocol, so the model follows the engine.

use std::time::Duration;

use super::matrix::{CellKey, MatrixPlan};
use super::timing::{cell_timing, resume_warm_up, rounds_for, settle_after, Timing};

/// Whether `key`'s runs are measured on its arm's standing connections: unless `fresh`
/// (`--fresh-connections`). The engine supports every configuration compare builds (see the
/// module docs), so the key does not change the answer.
pub fn stands(_key: &CellKey, fresh: bool) -> bool {
    !fresh
}

/// Expected wall time of one run of `key`: the arm's `first` run (on standing connections it
/// opens the arm and warms up in full) or a later one (see the module docs).
pub fn run_cost(key: &CellKey, t: &Timing, first: bool, fresh: bool) -> Duration {
    let (w, d) = cell_timing(key, t);
    let p = &t.policy;
    if !stands(key, fresh) {
        w + d + p.whole_run_overhead
    } else if first {
        w + d + p.window_overhead + p.open_overhead
    } else {
        // HTTP/1.0 on loopback costs the run after it its settling time too.
        resume_warm_up(p, key) + d + p.window_overhead + settle_after(p, Some(key.proto), key)
    }
}

/// Expected wall time of `rounds` first rounds of `key`: its first run and `rounds - 1` later
/// ones.
pub fn first_rounds_cost(key: &CellKey, t: &Timing, rounds: u32, fresh: bool) -> Duration {
    if rounds == 0 {
        return Duration::ZERO;
    }
    run_cost(key, t, true, fresh) + run_cost(key, t, false, fresh) * (rounds - 1)
}

/// Expected wall time of a plan's first rounds ([`rounds_for`] each cell).
pub fn estimate(plan: &MatrixPlan, t: &Timing, fresh: bool) -> Duration {
    plan.cells
        .iter()
        .map(|k| first_rounds_cost(k, t, rounds_for(k, t), fresh))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::axes::HeaderSet;
    use crate::compare::matrix::Condition;
    use crate::kernel::RunPolicy;
    use crate::link::LinkProfile;
    use crate::proto::LabProtocol;

    fn key(proto: LabProtocol, concurrency: u32) -> CellKey {
        CellKey {
            cond: Condition {
                payload: "ping".parse().unwrap(),
                headers: HeaderSet::None,
                concurrency,
                streams: 1,
                link: LinkProfile::Loopback,
            },
            proto,
            arm: 0,
        }
    }

    fn timing() -> Timing {
        Timing {
            runs: 9,
            warm_up: Duration::from_millis(100),
            duration: Duration::from_millis(100),
            client_threads: 1,
            policy: RunPolicy::LAB,
        }
    }

    #[test]
    fn the_engine_supports_every_configuration_compare_builds() {
        // What `stands` assumes: the measurer's question, asked of each protocol's real
        // configuration (cleartext and TLS origins alike), gets the answer the model plans with.
        for scheme in [h2lab_engine::Scheme::Http, h2lab_engine::Scheme::Https] {
            let origin = crate::env::Origin {
                target: h2lab_engine::Target {
                    scheme,
                    host: "127.0.0.1".into(),
                    port: 8443,
                    path: "/".into(),
                },
                connect_to: vec!["127.0.0.1:8443".parse().unwrap()],
                unix_socket: None,
            };
            for proto in LabProtocol::ALL {
                let k = key(proto, 50);
                let cfg = crate::compare::run::bench_config(&k, &origin, &timing()).unwrap();
                assert_eq!(
                    h2lab_engine::StandingRun::refusal(&cfg),
                    None,
                    "{proto:?} {scheme:?}"
                );
                assert!(stands(&k, false));
            }
        }
    }

    #[test]
    fn arms_the_engine_cannot_keep_pay_a_whole_run_every_round() {
        let t = timing();
        let h2 = key(LabProtocol::H2, 50);
        assert!(stands(&h2, false));
        assert!(!stands(&h2, true));
        let later = run_cost(&h2, &t, false, false);
        assert_eq!(
            later,
            RESUME_WARM + t.duration + RunPolicy::LAB.window_overhead
        );
        assert!(run_cost(&h2, &t, true, false) > later);
        // Fresh connections: the full warm-up every time.
        assert_eq!(
            run_cost(&h2, &t, false, true),
            t.warm_up + t.duration + RunPolicy::LAB.whole_run_overhead
        );
        // HTTP/3 follows what the engine says of its protocol.
        let h3 = key(LabProtocol::H3, 200);
        let (w, d) = cell_timing(&h3, &t);
        // 200 QUIC handshakes at 3 ms each.
        assert_eq!(w, Duration::from_millis(600));
        let cfg_stands = stands(&h3, false);
        let later = run_cost(&h3, &t, false, false);
        if cfg_stands {
            assert!(later < w + d);
        } else {
            assert_eq!(later, w + d + RunPolicy::LAB.whole_run_overhead);
        }
        assert_eq!(
            first_rounds_cost(&h3, &t, 9, false),
            run_cost(&h3, &t, true, false) + later * 8
        );
        assert_eq!(first_rounds_cost(&h3, &t, 0, false), Duration::ZERO);
    }

    #[test]
    fn http3_periods_cover_rounds_of_its_stack_rate_on_loopback() {
        let t = timing();
        let mut h3 = key(LabProtocol::H3, 200);
        h3.cond.payload = "100k".parse().unwrap();
        let mut h2 = h3.clone();
        h2.proto = LabProtocol::H2;
        // h2 on loopback: no bandwidth, the set duration.
        assert_eq!(cell_timing(&h2, &t).1, t.duration);
        // h3: 3 rounds of 200 × ~100 KiB at 600 Mbit/s, about 0.82 s.
        let d = cell_timing(&h3, &t).1;
        assert!(
            d > Duration::from_millis(800) && d < Duration::from_millis(850),
            "{d:?}"
        );
        // Small responses are not stretched.
        let small = key(LabProtocol::H3, 50);
        assert_eq!(cell_timing(&small, &t).1, t.duration);
    }

    const RESUME_WARM: Duration = RunPolicy::LAB.loopback_resume_warm_up;
}
