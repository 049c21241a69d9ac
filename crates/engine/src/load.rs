//! The load-shape options of a run ([`LoadShape`], part of [`BenchConfig`]): h2lab's open
//! model and stages, h2load's pacing flags, the time series and sharding. The plan
//! ([`plan`](crate::plan)) turns them into what the workers follow; the rules that tie them to
//! the rest of the configuration are with [`BenchConfig`] (`config.rs`).
//!
//! [`BenchConfig`]: crate::BenchConfig

use std::sync::Arc;
use std::time::Duration;

use crate::schedule::{Profile, Stage};

/// Load-shape options (h2lab's open model and stages, h2load's pacing flags, time series).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadShape {
    /// `--arrival-rate`: open model, requests per second across the run, each request due at
    /// its own computed time. With `stages`, the starting rate of the first ramp.
    pub arrival_rate: Option<f64>,
    /// `--stages`: linear ramps of the request rate (open model) or of the number of active
    /// connections (closed model, starting from 0). The stages set the run's duration.
    pub stages: Vec<Stage>,
    /// `--queue-limit`: most due requests (over the whole run) waiting for a free slot in the
    /// open model; more are dropped and reported as not sent on time. `None`: enough for 5 s at
    /// the peak rate (at least `-c × -m`).
    pub queue_limit: Option<u64>,
    /// `--rps` (h2load): requests per second of each client.
    pub rps: Option<f64>,
    /// `-r` and `--rate-period` (h2load): start this many clients per period (the first batch at
    /// once) until `-c` are started.
    pub connection_rate: Option<(u32, Duration)>,
    /// `--timing-script-file` (h2load): per-client request offsets from the client's first
    /// connection, one per URI (the URIs are the script's, in order). `-n` then counts requests
    /// per client.
    pub timing_script: Option<Arc<[Duration]>>,
    /// Record a time series with this interval (rows go to
    /// [`Observer::interval`](crate::Observer::interval) and into the result).
    pub interval: Option<Duration>,
    /// Keep each interval's latency histograms in the time-series rows
    /// ([`IntervalRow::histograms`](crate::IntervalRow::histograms)), so that the series of
    /// several processes can be merged exactly later (sharded runs).
    pub interval_histograms: bool,
    /// This process runs one shard of a larger run (`h2lab bench --shard i/N`); `None` for a
    /// whole run.
    pub shard: Option<ShardLanes>,
}

/// Where one shard's connections sit in the whole run of a sharded benchmark.
///
/// The whole run has `whole_clients` connection lanes; shard `index` of `count` owns the lanes
/// `index, index + count, index + 2·count, …` (its `-c` share, the remainder going to the first
/// shards). Arrivals of the open model and levels of closed-model stages are dealt to lanes of
/// the *whole* run, so each shard takes exactly the arrivals (and active connections) of the
/// whole schedule that fall on its lanes: the shards add up to the whole schedule, and a ramp
/// stays a ramp in every shard. A whole run is the shard `0/1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardLanes {
    /// This shard, from 0.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
    /// Connections of the whole run (`-c`, or the top stage level for closed-model stages).
    pub whole_clients: u32,
}

impl ShardLanes {
    /// Connections of shard `index` of `count` for `whole` connections in all (remainder to the
    /// first shards).
    pub fn clients_of(whole: u32, index: u32, count: u32) -> u32 {
        let n = count.max(1);
        whole / n + u32::from(index < whole % n)
    }
}

impl LoadShape {
    /// The open model is in use (`--arrival-rate`).
    pub fn is_open(&self) -> bool {
        self.arrival_rate.is_some()
    }

    /// Requests are paced on a schedule (open model, `--rps`, timing script): latency is then
    /// also measured from each request's intended start.
    pub fn is_paced(&self) -> bool {
        self.arrival_rate.is_some() || self.rps.is_some() || self.timing_script.is_some()
    }

    pub(crate) fn max_level(&self) -> f64 {
        Profile::stages(self.arrival_rate.unwrap_or(0.0), &self.stages).max_level()
    }
}
