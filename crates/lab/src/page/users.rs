//! The page as a load test: virtual users loading the page in a loop, their number following
//! stages (the seed's LoadRunner scenario: ramp up to 10 users over 5 minutes, hold 5
//! minutes, ramp down), recording page time, open connections and throughput over time.
//!
//! Every virtual user is a thread; every page load is cold (new connections, no cache),
//! like LoadRunner with "simulate a new user on each iteration" and caching off. Open
//! connections are counted by a gauge all fetchers share.

use crate::error::{ParseError, StageProblem};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use h2lab_engine::schedule::Profile;
use h2lab_engine::syntax::{self, BareNumber, StageErrorKind};
use h2lab_engine::Stage;
use serde::Serialize;

use super::load::{load_page, PoolSpec};
use super::{LoadBrief, ProtoPage, Ratio};
use crate::proto::LabProtocol;
use crate::stats::{quantile, MedianSpread};

/// One stage: move linearly to `users` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UserStage {
    /// Stage length.
    #[serde(serialize_with = "ser_secs")]
    pub duration: Duration,
    /// Users at the end of the stage.
    pub users: u32,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Parses `30s:10,1m:10,10s:0` (k6 style: duration:target users; the workspace's one stage
/// syntax, [`h2lab_engine::syntax::parse_stage`], with the lab's durations): whole users, at
/// most 1000, stages of at most 24 hours.
pub fn parse_stages(s: &str) -> Result<Vec<UserStage>, ParseError> {
    let mut v = Vec::new();
    for part in syntax::stage_parts(s) {
        let bad = |why| ParseError::Stage {
            stage: part.to_owned(),
            why,
        };
        let stage = syntax::parse_stage(part, BareNumber::ZeroOnly).map_err(|e| match e.kind {
            StageErrorKind::Shape => bad(StageProblem::Shape),
            StageErrorKind::Duration(d) => bad(StageProblem::Duration(d)),
            StageErrorKind::Level => bad(StageProblem::Users(
                part.split_once(':').map_or("", |(_, u)| u).to_owned(),
            )),
        })?;
        let duration = stage.duration;
        if duration > Duration::from_secs(86_400) {
            return Err(bad(StageProblem::TooLong));
        }
        if stage.target.fract() != 0.0 {
            return Err(bad(StageProblem::Users(stage.target.to_string())));
        }
        if stage.target > 1000.0 {
            return Err(bad(StageProblem::TooManyUsers));
        }
        v.push(UserStage {
            duration,
            users: stage.target as u32,
        });
    }
    if v.is_empty() {
        return Err(ParseError::NoStages);
    }
    if v.iter().all(|s| s.users == 0) {
        return Err(ParseError::NoUsers);
    }
    Ok(v)
}

/// The seed's shape scaled: ramp to `users` over `ramp`, hold for `hold`, ramp down in a
/// tenth of the ramp (at least 1 s).
pub fn ramp_hold(users: u32, ramp: Duration, hold: Duration) -> Vec<UserStage> {
    vec![
        UserStage {
            duration: ramp,
            users,
        },
        UserStage {
            duration: hold,
            users,
        },
        UserStage {
            duration: (ramp / 10).max(Duration::from_secs(1)),
            users: 0,
        },
    ]
}

/// Target users at time `t`: the engine's stage profile ([`Profile::stages`], linear within
/// each stage, starting from 0), holding the last stage's users once the stages are over.
pub fn users_at(stages: &[UserStage], t: Duration) -> f64 {
    UserProfile::new(stages).at(t)
}

/// [`users_at`] with the profile built once (for the user threads and the sampler).
#[derive(Debug, Clone)]
struct UserProfile {
    profile: Profile,
    end: Duration,
    last: f64,
}

impl UserProfile {
    fn new(stages: &[UserStage]) -> UserProfile {
        let engine: Vec<Stage> = stages
            .iter()
            .map(|s| Stage {
                duration: s.duration,
                target: f64::from(s.users),
            })
            .collect();
        UserProfile {
            profile: Profile::stages(0.0, &engine),
            end: total(stages),
            last: stages.last().map_or(0.0, |s| f64::from(s.users)),
        }
    }

    fn at(&self, t: Duration) -> f64 {
        if t >= self.end {
            return self.last;
        }
        self.profile.level_at(t.as_secs_f64())
    }
}

/// Total length of the stages.
pub fn total(stages: &[UserStage]) -> Duration {
    stages.iter().map(|s| s.duration).sum()
}

/// A load test's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadTestConfig {
    /// The stages.
    pub stages: Vec<UserStage>,
    /// Pause between a user's page loads.
    #[serde(serialize_with = "ser_secs")]
    pub think: Duration,
    /// Sampling interval of the time series.
    #[serde(serialize_with = "ser_secs")]
    pub sample: Duration,
    /// How many times the whole scenario runs per protocol (`--load-rounds`), the protocols
    /// alternating round by round (the order rotated each round); from
    /// [`ci::MIN_ROUNDS`](crate::stats::ci::MIN_ROUNDS) rounds on, the per-round ratio of
    /// median page times decides win, slight, parity or undecided. 1: one run each, no
    /// verdict.
    pub rounds: u32,
}

/// One sample of the time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the start.
    pub t: f64,
    /// Active virtual users.
    pub users: u32,
    /// Connections open (all users).
    pub connections: i64,
    /// Requests completed per second in the interval.
    pub req_per_sec: f64,
    /// Page loads completed per second in the interval.
    pub pages_per_sec: f64,
}

/// One protocol's load test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadTestResult {
    /// Every completed page load: `(seconds since start at completion, page ms)`.
    pub pages: Vec<(f64, f64)>,
    /// Page loads that failed.
    pub failed_pages: u64,
    /// First failure message.
    pub error: Option<String>,
    /// The time series.
    pub samples: Vec<Sample>,
    /// Page time over all loads (ms).
    pub page_ms: Option<MedianSpread>,
    /// 90th percentile page time (ms).
    pub page_p90_ms: f64,
    /// Most connections open at once.
    pub peak_connections: i64,
}

impl LoadTestResult {
    /// Adds a later round's run of the same protocol: its page loads, failures and peak
    /// connections count; the time series stays the first round's.
    pub fn absorb(&mut self, later: LoadTestResult) {
        self.pages.extend(later.pages);
        self.failed_pages += later.failed_pages;
        if self.error.is_none() {
            self.error = later.error;
        }
        self.peak_connections = self.peak_connections.max(later.peak_connections);
        let times: Vec<f64> = self.pages.iter().map(|p| p.1).collect();
        self.page_ms = MedianSpread::of(&times);
        self.page_p90_ms = quantile(&times, 0.9);
    }
}

/// Runs the load test for one protocol (blocking for the stages' total time). `pool.gauge`
/// is replaced by the test's own.
pub fn run(pool: &PoolSpec, paths: &[String], cfg: &LoadTestConfig) -> LoadTestResult {
    let gauge = Arc::new(AtomicI64::new(0));
    let mut pool = pool.clone();
    pool.gauge = Some(Arc::clone(&gauge));
    let max_users = cfg.stages.iter().map(|s| s.users).max().unwrap_or(0);
    let end = total(&cfg.stages);
    let start = Instant::now();
    let pages: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
    let requests = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let error: Arc<Mutex<Option<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let paths: Arc<[String]> = paths.into();
    let users = Arc::new(UserProfile::new(&cfg.stages));
    let mut samples = Vec::new();
    std::thread::scope(|sc| {
        for i in 0..max_users {
            let (pool, pages, requests, failed, error, stop, paths, users) = (
                pool.clone(),
                Arc::clone(&pages),
                Arc::clone(&requests),
                Arc::clone(&failed),
                Arc::clone(&error),
                Arc::clone(&stop),
                Arc::clone(&paths),
                Arc::clone(&users),
            );
            let think = cfg.think;
            sc.spawn(move || loop {
                let t = start.elapsed();
                if t >= end || stop.load(Ordering::Relaxed) {
                    break;
                }
                if f64::from(i) >= users.at(t).floor() {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                match load_page(&pool, &paths) {
                    Ok(l) => {
                        requests.fetch_add(u64::from(l.requests), Ordering::Relaxed);
                        if let Ok(mut p) = pages.lock() {
                            p.push((start.elapsed().as_secs_f64(), l.page_ms));
                        }
                    }
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut slot) = error.lock() {
                            slot.get_or_insert(e.to_string());
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                let wake = Instant::now() + think;
                while Instant::now() < wake && start.elapsed() < end {
                    std::thread::sleep(Duration::from_millis(20).min(think));
                }
            });
        }
        // Sampler (this thread).
        let mut last_req = 0u64;
        let mut last_pages = 0usize;
        let mut last_t = 0.0f64;
        let mut next = cfg.sample;
        loop {
            let now = start.elapsed();
            if now < next {
                std::thread::sleep((next - now).min(Duration::from_millis(50)));
                continue;
            }
            let t = now.as_secs_f64();
            let req = requests.load(Ordering::Relaxed);
            let np = pages.lock().map(|p| p.len()).unwrap_or(0);
            let dt = (t - last_t).max(1e-3);
            samples.push(Sample {
                t,
                users: users.at(now).floor() as u32,
                connections: gauge.load(Ordering::Relaxed),
                req_per_sec: (req - last_req) as f64 / dt,
                pages_per_sec: (np - last_pages) as f64 / dt,
            });
            last_req = req;
            last_pages = np;
            last_t = t;
            next += cfg.sample;
            if now >= end {
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    });
    let pages = pages.lock().map(|p| p.clone()).unwrap_or_default();
    let times: Vec<f64> = pages.iter().map(|p| p.1).collect();
    LoadTestResult {
        page_ms: MedianSpread::of(&times),
        page_p90_ms: quantile(&times, 0.9),
        peak_connections: samples.iter().map(|s| s.connections).max().unwrap_or(0),
        failed_pages: failed.load(Ordering::Relaxed),
        error: error.lock().ok().and_then(|e| e.clone()),
        pages,
        samples,
    }
}

/// The load test's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadTestReport {
    /// Settings.
    pub config: LoadTestConfig,
    /// One entry per protocol: every round's page loads and failures, the first round's
    /// time series.
    pub results: Vec<(LabProtocol, LoadTestResult)>,
    /// Each protocol's median page time (ms) per round (`None`: no page completed).
    pub round_medians_ms: Vec<(LabProtocol, Vec<Option<f64>>)>,
    /// Slowest / fastest by the medians, with the verdict from the per-round ratios of
    /// median page times (undecided below [`ci::MIN_ROUNDS`](crate::stats::ci::MIN_ROUNDS)
    /// rounds); `None` with one round or fewer than two protocols.
    pub ratio: Option<Ratio>,
}

impl LoadTestReport {
    /// The verdict over `round_medians_ms`: each round's median page time is one "load" of
    /// [`Ratio::of_pages`], so rounds measured back to back are paired as page loads are.
    /// The pseudo-pages carry no connection counts: only page times and rounds decide.
    fn decide(&mut self, equivalence: f64) {
        if self.config.rounds < 2 {
            return;
        }
        let pages: Vec<ProtoPage> = self
            .round_medians_ms
            .iter()
            .map(|(proto, medians)| {
                let loads: Vec<LoadBrief> = medians
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| {
                        m.map(|page_ms| LoadBrief {
                            page_ms,
                            connections: 0,
                            requests: 0,
                            failed: 0,
                            round: i as u32,
                        })
                    })
                    .collect();
                let times: Vec<f64> = loads.iter().map(|l| l.page_ms).collect();
                ProtoPage {
                    proto: *proto,
                    connections_limit: 0,
                    streams: 0,
                    loads,
                    page_ms: MedianSpread::of(&times),
                    page_p90_ms: quantile(&times, 0.9),
                    median_load: None,
                    error: None,
                }
            })
            .collect();
        self.ratio = Ratio::of_pages(&pages, equivalence, "load test");
    }
}

/// The load test: `lt.rounds` rounds, each running the whole scenario once per protocol,
/// the order rotated round by round so that no protocol always goes first.
pub fn run_rounds(
    pools: &[PoolSpec],
    paths: &[String],
    lt: &LoadTestConfig,
    equivalence: f64,
    log: &mut dyn FnMut(&str),
) -> LoadTestReport {
    let rounds = lt.rounds.max(1) as usize;
    let mut results: Vec<Option<LoadTestResult>> = vec![None; pools.len()];
    let mut medians = vec![Vec::with_capacity(rounds); pools.len()];
    for round in 0..rounds {
        for k in 0..pools.len() {
            let j = (k + round) % pools.len();
            let pool = &pools[j];
            log(&format!(
                "load test {} (round {}/{rounds}): {} s of stages, up to {} users",
                pool.proto.label(),
                round + 1,
                total(&lt.stages).as_secs(),
                lt.stages.iter().map(|s| s.users).max().unwrap_or(0)
            ));
            let r = run(pool, paths, lt);
            log(&format!(
                "load test {}: {} pages, median {}, peak {} connections",
                pool.proto.label(),
                r.pages.len(),
                r.page_ms.map_or("-".into(), |s| crate::fmt::ms(s.median)),
                r.peak_connections
            ));
            // Each protocol runs once per round, so its medians arrive in round order.
            medians[j].push(r.page_ms.map(|s| s.median));
            match &mut results[j] {
                Some(first) => first.absorb(r),
                slot => *slot = Some(r),
            }
        }
    }
    let mut report = LoadTestReport {
        config: lt.clone(),
        results: pools
            .iter()
            .zip(results)
            .filter_map(|(p, r)| r.map(|r| (p.proto, r)))
            .collect(),
        round_medians_ms: pools.iter().map(|p| p.proto).zip(medians).collect(),
        ratio: None,
    };
    report.decide(equivalence);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages() {
        let s = parse_stages("10s:10, 10s:10,2s:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(total(&s), Duration::from_secs(22));
        assert_eq!(users_at(&s, Duration::from_secs(5)), 5.0);
        assert_eq!(users_at(&s, Duration::from_secs(15)), 10.0);
        assert_eq!(users_at(&s, Duration::from_secs(21)), 5.0);
        assert_eq!(users_at(&s, Duration::from_secs(30)), 0.0);
        // A zero-length stage jumps; after the last stage its users hold.
        let s = parse_stages("10s:10, 0:20, 10s:0").unwrap();
        assert_eq!(users_at(&s, Duration::from_secs(10)), 20.0);
        assert_eq!(users_at(&s, Duration::from_secs(15)), 10.0);
        let s = parse_stages("1s:5").unwrap();
        assert_eq!(users_at(&s, Duration::from_millis(500)), 2.5);
        assert_eq!(users_at(&s, Duration::from_secs(2)), 5.0);
        assert!(parse_stages("10s").is_err());
        assert!(parse_stages("10s:x").is_err());
        assert!(parse_stages("10s:0").is_err());
        let r = ramp_hold(10, Duration::from_secs(300), Duration::from_secs(300));
        assert_eq!(r[2].duration, Duration::from_secs(30));
    }

    fn report(rounds: u32, medians: Vec<(LabProtocol, Vec<Option<f64>>)>) -> LoadTestReport {
        let mut r = LoadTestReport {
            config: LoadTestConfig {
                stages: ramp_hold(2, Duration::from_secs(1), Duration::from_secs(1)),
                think: Duration::from_secs(1),
                sample: Duration::from_secs(1),
                rounds,
            },
            results: Vec::new(),
            round_medians_ms: medians,
            ratio: None,
        };
        r.decide(0.03);
        r
    }

    #[test]
    fn rounds_of_median_page_times_decide_like_page_loads() {
        use crate::stats::ci::Outcome;
        let h1 = |f: f64| {
            (0..6)
                .map(|i| Some(f * (1000.0 + 10.0 * f64::from(i))))
                .collect()
        };
        // HTTP/2 twice as fast in every round: a win for HTTP/2.
        let r = report(
            6,
            vec![(LabProtocol::H1Tls, h1(2.0)), (LabProtocol::H2, h1(1.0))],
        );
        let v = r.ratio.unwrap();
        assert_eq!(v.outcome, Outcome::Win);
        assert_eq!(v.winner, Some(LabProtocol::H2));
        assert_eq!(v.round_ratio.unwrap().n, 6);
        // The same page times: parity, never a winner.
        let r = report(
            6,
            vec![(LabProtocol::H2, h1(1.0)), (LabProtocol::H1Tls, h1(1.0))],
        );
        let v = r.ratio.unwrap();
        assert_eq!(v.outcome, Outcome::Parity);
        assert_eq!(v.winner, None);
        // Two rounds cannot decide; a round without pages is left out of the pairing.
        let mut slow = h1(2.0);
        slow.truncate(2);
        slow[1] = None;
        let r = report(
            2,
            vec![
                (LabProtocol::H1Tls, slow),
                (LabProtocol::H2, h1(1.0)[..2].to_vec()),
            ],
        );
        let v = r.ratio.unwrap();
        assert_eq!(v.outcome, Outcome::Undecided);
        assert_eq!(v.round_ratio.unwrap().n, 1);
        // One round: no verdict at all.
        assert!(report(
            1,
            vec![(LabProtocol::H1Tls, h1(2.0)), (LabProtocol::H2, h1(1.0))]
        )
        .ratio
        .is_none());
    }
}
