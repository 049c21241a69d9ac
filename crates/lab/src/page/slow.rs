//! The seeds' slow-endpoint case: 100 parallel requests to an endpoint that answers after
//! 2 seconds, as a page's `fetch()` calls would make them. A browser runs them over 6
//! HTTP/1.1 connections (17 rounds of 2 s: 34 s) or one HTTP/2 connection (one round:
//! 2 s); the seed measured 34,182 ms vs 2,270 ms, 15×.

use super::browser::{run_round, ExtraArms};
use super::load::{fetch_all, PoolSpec};
use std::time::Duration;

use serde::Serialize;

use super::{proto_page, Ratio, SlowReport};

/// The slow-endpoint scenario's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SlowConfig {
    /// Parallel requests (the seed: 100).
    pub requests: u32,
    /// Server-side delay of each (the seed: 2 s).
    #[serde(serialize_with = "ser_ms")]
    pub delay: Duration,
}

impl Default for SlowConfig {
    fn default() -> Self {
        SlowConfig {
            requests: 100,
            delay: Duration::from_secs(2),
        }
    }
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// The seed's HTTP/1.1 time (ms).
pub const SEED_H1_MS: f64 = 34_182.37;
/// The seed's HTTP/2 time (ms).
pub const SEED_H2_MS: f64 = 2_269.68;

/// The request targets: `/delay?ms=D&r=i`, distinct like the seed's random paths.
pub fn paths(cfg: &SlowConfig) -> Vec<String> {
    (0..cfg.requests)
        .map(|i| format!("/delay?ms={}&r={i}", cfg.delay.as_millis()))
        .collect()
}

/// The time HTTP/1.1 needs in theory: `ceil(requests / connections)` rounds of the delay.
pub fn expected_h1_ms(cfg: &SlowConfig, connections: u32) -> f64 {
    f64::from(cfg.requests.div_ceil(connections.max(1))) * cfg.delay.as_secs_f64() * 1000.0
}

/// Runs the scenario `repeat` times per protocol (alternated, so run `i` of every protocol is
/// round `i`); the verdict pairs the runs by round against the band `1 ± equivalence`.
/// `extra` arms (the browser's) take their turns in every round.
pub fn run(
    pools: &[PoolSpec],
    cfg: &SlowConfig,
    repeat: u32,
    equivalence: f64,
    mut extra: Option<&mut dyn ExtraArms>,
    log: &mut dyn FnMut(&str),
) -> SlowReport {
    let paths = paths(cfg);
    let labels = pools.iter().map(|p| p.proto.label().to_string()).collect();
    let mut sims = super::rounds::SimLoads::new("run", labels, repeat.max(1) as usize);
    log(&format!(
        "{} parallel requests to /delay?ms={} per protocol",
        cfg.requests,
        cfg.delay.as_millis()
    ));
    let sim_protos: Vec<crate::proto::LabProtocol> = pools.iter().map(|p| p.proto).collect();
    for i in 0..repeat.max(1) as usize {
        let mut sim = |j: usize, log: &mut dyn FnMut(&str)| {
            sims.keep(j, i, fetch_all(&pools[j], &paths), log);
        };
        run_round(i, &sim_protos, extra.as_deref_mut(), &mut sim, log);
    }
    let results: Vec<_> = pools
        .iter()
        .zip(sims.loads)
        .zip(sims.errors)
        .map(|((p, l), e)| proto_page(p.proto, p, l, e))
        .collect();
    SlowReport {
        config: *cfg,
        ratio: Ratio::of_pages(&results, equivalence, "slow"),
        results,
    }
}
