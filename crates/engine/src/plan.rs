//! The shape of a run: stop condition × pacing × which clients are active when.
//!
//! [`LoadShape`](crate::load::LoadShape) holds the options (part of [`BenchConfig`]); `Plan`
//! turns them, once per run, into what the workers follow:
//!
//! | stop              | from                                        |
//! |-------------------|---------------------------------------------|
//! | request count     | `-n` (per client with a timing script)      |
//! | duration          | `-D` (+ `--warm-up-time`), or the stages    |
//!
//! | pacing            | from                     | latency measured from          |
//! |-------------------|--------------------------|--------------------------------|
//! | closed            | default (h2load)         | the send                       |
//! | open              | `--arrival-rate`         | the intended start (and send)  |
//! | per-client rate   | `--rps` (h2load)         | the intended start (and send)  |
//! | per-client script | `--timing-script-file`   | the intended start (and send)  |
//!
//! | active clients    | from                                        |
//! |-------------------|---------------------------------------------|
//! | all, from start   | default                                     |
//! | connection ramp   | `-r`/`--rate-period` (h2load)               |
//! | virtual users     | `--stages` without `--arrival-rate`         |

use std::time::Duration;

use crate::config::BenchConfig;
use crate::schedule::{ArrivalSchedule, ClientSchedule, Lanes, Profile};

/// How often the active-client count of `--stages` (closed model) is re-evaluated.
pub(crate) const GATE_STEP: Duration = Duration::from_millis(10);

/// Default bound of the open model's queue, in seconds of arrivals at the peak rate (at
/// least `-c × -m` entries, at most [`MAX_QUEUE`]).
const DEFAULT_QUEUE_SECONDS: f64 = 5.0;
/// Largest default queue (entries over the whole run; 16 bytes each).
const MAX_QUEUE: u64 = 1 << 20;

/// Per-run decisions shared by every worker (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// `(warm-up, main duration)` for timed runs.
    pub timing: Option<(Duration, Duration)>,
    /// Clients in the run.
    pub clients: u32,
    pub threads: u32,
    /// The open model's rate over time.
    pub arrivals: Option<Profile>,
    /// Per-client schedule (`--rps`, timing script).
    pub per_client: Option<ClientSchedule>,
    /// Active-client rule.
    pub gate: GateRule,
    /// Total queue bound of the open model.
    pub queue_limit: u64,
    /// What the time series reports as the target level.
    pub target: Option<Profile>,
    /// Time series interval.
    pub interval: Option<Duration>,
    /// `-n` (per client for a timing script).
    pub requests: u64,
    timing_script: bool,
    /// Connection lanes of the whole run (`clients` unless sharded).
    lanes_total: u32,
    /// Shards (1 unless sharded): global lane = local lane × `lane_stride` + `lane_offset`.
    lane_stride: u32,
    /// This shard (0 unless sharded).
    lane_offset: u32,
}

/// Clients and requests of each worker thread, as the workers of a run of `cfg` will run them
/// (h2load's split: remainders to the lowest ids; with a timing script `-n` counts per client,
/// so a thread's requests follow its clients). `requests` is 0 for timed runs; no threads
/// (`-t 0`, refused by validation) split nothing.
pub fn thread_split(cfg: &BenchConfig) -> Vec<(u32, u64)> {
    if cfg.threads == 0 {
        return Vec::new();
    }
    let plan = Plan::new(cfg);
    (0..plan.threads)
        .map(|w| (plan.clients_of(w), plan.requests_of(w)))
        .collect()
}

/// Which clients are active when.
#[derive(Debug, Clone)]
pub(crate) enum GateRule {
    /// All of them, from the start.
    All,
    /// h2load `-r`: `rate` clients per `period`, split over threads like h2load.
    Ramp { rate: u32, period: Duration },
    /// Closed-model stages: global client `g` is active while `g < round(level(t))`.
    Levels(Profile),
}

impl Plan {
    /// The plan of a validated configuration.
    pub(crate) fn new(cfg: &BenchConfig) -> Plan {
        let l = &cfg.load;
        let clients = l.clients(cfg);
        let timing = if l.stages.is_empty() {
            cfg.duration
                .map(|d| (cfg.warm_up.unwrap_or(Duration::ZERO), d))
        } else {
            let p = Profile::stages(0.0, &l.stages);
            Some((Duration::ZERO, p.duration().unwrap_or(Duration::ZERO)))
        };
        let arrivals = l.arrival_rate.map(|r| {
            if l.stages.is_empty() {
                Profile::constant(r)
            } else {
                Profile::stages(r, &l.stages)
            }
        });
        let per_client = match (&l.rps, &l.timing_script) {
            (Some(r), _) => Some(ClientSchedule::Rate(*r)),
            (None, Some(s)) => Some(ClientSchedule::Script(
                s.iter()
                    .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                    .collect(),
            )),
            _ => None,
        };
        let gate = match (l.connection_rate, l.arrival_rate, l.stages.is_empty()) {
            (Some((rate, period)), _, _) => GateRule::Ramp { rate, period },
            (None, None, false) => GateRule::Levels(Profile::stages(0.0, &l.stages)),
            _ => GateRule::All,
        };
        let (lanes_total, lane_stride, lane_offset) = match l.shard {
            Some(s) => (s.whole_clients.max(clients), s.count.max(1), s.index),
            None => (clients, 1, 0),
        };
        // A shard's part of the whole schedule's level (its share of the lanes).
        let share = f64::from(clients) / f64::from(lanes_total.max(1));
        let target = match (&arrivals, &gate) {
            (Some(p), _) => Some(p.scaled(share)),
            (None, GateRule::Levels(p)) => Some(p.scaled(share)),
            _ => l.rps.map(|r| Profile::constant(r * f64::from(cfg.clients))),
        };
        let slots = u64::from(clients) * u64::from(cfg.max_concurrent_streams);
        let queue_limit = l.queue_limit.unwrap_or_else(|| {
            let peak = arrivals.as_ref().map_or(0.0, Profile::max_level) * share;
            let by_rate = (peak * DEFAULT_QUEUE_SECONDS).ceil();
            let by_rate = if by_rate.is_finite() && by_rate > 0.0 {
                by_rate as u64
            } else {
                0
            };
            by_rate.max(slots).clamp(1, MAX_QUEUE.max(slots))
        });
        Plan {
            timing,
            clients,
            threads: cfg.threads,
            arrivals,
            per_client,
            gate,
            queue_limit,
            target,
            interval: l.interval,
            requests: cfg.requests,
            timing_script: l.timing_script.is_some(),
            lanes_total,
            lane_stride,
            lane_offset,
        }
    }

    /// Worker `w`'s place in the lanes of the whole run: `(stride, offset)` such that its
    /// client `i` is lane `i·stride + offset` (`i·t + w` unless sharded).
    fn lane_walk(&self, w: u32) -> (u64, u64) {
        let n = u64::from(self.lane_stride);
        (
            u64::from(self.threads) * n,
            u64::from(w) * n + u64::from(self.lane_offset),
        )
    }

    /// Clients of worker `w` (h2load: the first `c % t` workers get one more).
    pub(crate) fn clients_of(&self, w: u32) -> u32 {
        self.clients / self.threads + u32::from(w < self.clients % self.threads)
    }

    /// Requests worker `w` makes (0 for timed runs). With a timing script `-n` counts per
    /// client (h2load).
    pub(crate) fn requests_of(&self, w: u32) -> u64 {
        if self.timing.is_some() {
            return 0;
        }
        if self.timing_script {
            return self.requests.saturating_mul(u64::from(self.clients_of(w)));
        }
        let t = u64::from(self.threads);
        self.requests / t + u64::from(u64::from(w) < self.requests % t)
    }

    /// The open-model schedule of worker `w`, if the run uses the open model.
    pub(crate) fn arrival_schedule(&self, w: u32) -> Option<ArrivalSchedule> {
        let p = self.arrivals.clone()?;
        let (stride, offset) = self.lane_walk(w);
        let lanes = Lanes {
            total: u64::from(self.lanes_total),
            threads: stride,
            worker: offset,
            count: u64::from(self.clients_of(w)),
        };
        let limit = self.timing.is_none().then(|| self.requests_of(w));
        Some(ArrivalSchedule::new(p, lanes, limit))
    }

    /// Worker `w`'s share of the queue bound (at least one entry).
    pub(crate) fn queue_limit_of(&self, w: u32) -> usize {
        // Split by clients, the shares adding up to the bound exactly.
        let below = |w: u32| -> u128 {
            let cum: u64 = (0..w).map(|i| u64::from(self.clients_of(i))).sum();
            u128::from(self.queue_limit) * u128::from(cum) / u128::from(self.clients.max(1))
        };
        let share = below(w + 1) - below(w);
        usize::try_from(share.max(1)).unwrap_or(usize::MAX)
    }

    /// The active-client rule of worker `w`.
    pub(crate) fn gate_of(&self, w: u32) -> Gate {
        let rule = match &self.gate {
            GateRule::All => GateKind::All,
            GateRule::Ramp { rate, period } => {
                // h2load: the rate is distributed among threads as evenly as possible.
                let per = rate / self.threads + u32::from(w < rate % self.threads);
                GateKind::Ramp {
                    per_period: per.max(1),
                    period: *period,
                }
            }
            GateRule::Levels(p) => GateKind::Levels(p.clone()),
        };
        let (stride, offset) = self.lane_walk(w);
        Gate {
            kind: rule,
            stride,
            offset,
        }
    }
}

/// One worker's active-client rule.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    kind: GateKind,
    /// Local client `i` is lane `i·stride + offset` of the whole run.
    stride: u64,
    offset: u64,
}

#[derive(Debug, Clone)]
enum GateKind {
    All,
    Ramp { per_period: u32, period: Duration },
    Levels(Profile),
}

impl Gate {
    /// Whether the gate never changes (every client active from the start).
    pub(crate) fn is_static(&self) -> bool {
        matches!(self.kind, GateKind::All)
    }

    /// Whether local client `i` is active `t` after the start of the run.
    pub(crate) fn active(&self, i: u32, t: Duration) -> bool {
        match &self.kind {
            GateKind::All => true,
            GateKind::Ramp { per_period, period } => {
                let batch = i / per_period;
                t >= period.saturating_mul(batch)
            }
            GateKind::Levels(p) => {
                let global = u64::from(i) * self.stride + self.offset;
                let level = p.level_at(t.as_secs_f64()).round();
                (global as f64) < level
            }
        }
    }

    /// When the gate should next be evaluated (after `t`), `None` if it will not change.
    pub(crate) fn next_check(&self, t: Duration, nclients: u32) -> Option<Duration> {
        match &self.kind {
            GateKind::All => None,
            GateKind::Ramp { per_period, period } => {
                let batches = nclients.div_ceil(*per_period);
                let next = period.as_nanos() * (t.as_nanos() / period.as_nanos().max(1) + 1);
                let next = Duration::from_nanos(u64::try_from(next).unwrap_or(u64::MAX));
                (next < period.saturating_mul(batches)).then_some(next)
            }
            GateKind::Levels(_) => Some(t + GATE_STEP),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::ShardLanes;
    use crate::schedule::Stage;

    fn cfg() -> BenchConfig {
        BenchConfig::from_uris(&["http://127.0.0.1/"], None).unwrap()
    }

    #[test]
    fn validation() {
        let mut c = cfg();
        c.load.arrival_rate = Some(100.0);
        c.duration = Some(Duration::from_secs(1));
        assert!(c.validate().is_ok());
        c.load.rps = Some(1.0);
        assert!(c.validate().unwrap_err().to_string().contains("exclusive"));
        c.load.rps = None;
        c.load.stages = vec![Stage {
            duration: Duration::from_secs(1),
            target: 10.0,
        }];
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--stages, -D"));
        c.duration = None;
        assert!(c.validate().is_ok());
        c.load.arrival_rate = Some(-1.0);
        assert!(c.validate().is_err());

        let mut c = cfg();
        c.clients = 4;
        c.requests = 8;
        c.load.connection_rate = Some((5, Duration::from_secs(1)));
        assert!(c.validate().unwrap_err().to_string().starts_with("-r, -c"));
        c.load.connection_rate = Some((2, Duration::from_secs(1)));
        assert!(c.validate().is_ok());
        c.duration = Some(Duration::from_secs(1));
        assert!(c.validate().unwrap_err().to_string().starts_with("-r, -D"));
    }

    #[test]
    fn closed_stages_raise_the_client_count() {
        let mut c = cfg();
        c.load.stages = vec![
            Stage {
                duration: Duration::from_secs(2),
                target: 7.6,
            },
            Stage {
                duration: Duration::from_secs(1),
                target: 0.0,
            },
        ];
        assert!(c.validate().is_ok());
        let p = Plan::new(&c);
        assert_eq!(p.clients, 8);
        assert_eq!(p.timing, Some((Duration::ZERO, Duration::from_secs(3))));
        let g = p.gate_of(0);
        assert!(!g.active(0, Duration::ZERO));
        // Level 3.8 at 1 s: clients 0..4 active.
        assert!(g.active(3, Duration::from_secs(1)));
        assert!(!g.active(4, Duration::from_secs(1)));
    }

    #[test]
    fn ramp_gate_like_h2load() {
        let mut c = cfg();
        c.clients = 5;
        c.requests = 5;
        c.threads = 2;
        c.load.connection_rate = Some((3, Duration::from_secs(1)));
        let p = Plan::new(&c);
        // Worker 0 gets 2 clients per period, worker 1 one.
        let g0 = p.gate_of(0);
        assert!(g0.active(1, Duration::ZERO));
        assert!(!g0.active(2, Duration::from_millis(999)));
        assert!(g0.active(2, Duration::from_secs(1)));
        assert_eq!(
            g0.next_check(Duration::ZERO, 3),
            Some(Duration::from_secs(1))
        );
        assert_eq!(g0.next_check(Duration::from_secs(1), 3), None);
        let g1 = p.gate_of(1);
        assert!(!g1.active(1, Duration::from_millis(500)));
    }

    #[test]
    fn work_split() {
        let mut c = cfg();
        c.clients = 3;
        c.threads = 2;
        c.requests = 7;
        let p = Plan::new(&c);
        assert_eq!((p.clients_of(0), p.clients_of(1)), (2, 1));
        assert_eq!((p.requests_of(0), p.requests_of(1)), (4, 3));
        c.load.timing_script = Some(vec![Duration::ZERO].into());
        c.requests = 1;
        let p = Plan::new(&c);
        assert_eq!(p.requests_of(0), 2, "-n is per client with a timing script");
        c.load.timing_script = None;
        c.load.arrival_rate = Some(1000.0);
        c.max_concurrent_streams = 10;
        let p = Plan::new(&c);
        assert_eq!(p.queue_limit, 5000);
        assert_eq!(p.queue_limit_of(0) + p.queue_limit_of(1), 5000);
    }

    /// The shard `index/count` of `whole` (clients and -n split, the remainder first).
    fn shard_of(whole: &BenchConfig, index: u32, count: u32, threads: u32) -> BenchConfig {
        let mut c = whole.clone();
        let wc = whole.load.clients(whole);
        c.clients = ShardLanes::clients_of(wc, index, count);
        c.threads = threads.min(c.clients);
        c.load.shard = Some(ShardLanes {
            index,
            count,
            whole_clients: wc,
        });
        c
    }

    #[test]
    fn shards_take_the_whole_schedule_exactly_once() {
        let mut whole = cfg();
        whole.clients = 7;
        whole.threads = 2;
        whole.duration = Some(Duration::from_secs(10));
        whole.load.arrival_rate = Some(0.0);
        whole.load.stages = vec![
            Stage {
                duration: Duration::from_secs(5),
                target: 500.0,
            },
            Stage {
                duration: Duration::from_secs(5),
                target: 100.0,
            },
        ];
        whole.duration = None;
        let dues = |c: &BenchConfig| -> Vec<u64> {
            let p = Plan::new(c);
            let mut v = Vec::new();
            for w in 0..p.threads {
                let mut s = p.arrival_schedule(w).unwrap();
                while let Some((due, _)) = s.pop_due(u64::MAX) {
                    v.push(due);
                }
            }
            v.sort_unstable();
            v
        };
        let one = dues(&whole);
        assert_eq!(one.len(), 2750, "the area of the stages");
        for n in [2u32, 3, 7] {
            let mut all = Vec::new();
            for i in 0..n {
                let part = dues(&shard_of(&whole, i, n, 1 + i % 2));
                // A ramp stays a ramp: each shard's first and last seconds are slower than
                // its fifth.
                let in_sec = |k: u64| part.iter().filter(|d| **d / 1_000_000_000 == k).count();
                assert!(in_sec(0) < in_sec(4) && in_sec(9) < in_sec(4), "{i}/{n}");
                all.extend(part);
            }
            all.sort_unstable();
            assert!(all == one, "{n} shards: {} arrivals", all.len());
        }
        // Closed-model stages: the active connections of the shards add up to the level.
        let mut closed = cfg();
        closed.threads = 2;
        closed.load.stages = vec![Stage {
            duration: Duration::from_secs(10),
            target: 9.0,
        }];
        let whole_plan = Plan::new(&closed);
        let active = |c: &BenchConfig, t: Duration| -> u32 {
            let p = Plan::new(c);
            (0..p.threads)
                .map(|w| {
                    let g = p.gate_of(w);
                    (0..p.clients_of(w)).filter(|i| g.active(*i, t)).count() as u32
                })
                .sum()
        };
        for ms in [0u64, 1500, 4200, 7777, 9999] {
            let t = Duration::from_millis(ms);
            let want = active(&closed, t);
            let got: u32 = (0..4).map(|i| active(&shard_of(&closed, i, 4, 1), t)).sum();
            assert_eq!(got, want, "at {ms} ms");
        }
        assert_eq!(whole_plan.clients, 9);
        assert_eq!(
            (0..4)
                .map(|i| ShardLanes::clients_of(9, i, 4))
                .collect::<Vec<_>>(),
            [3, 2, 2, 2]
        );
    }
}
