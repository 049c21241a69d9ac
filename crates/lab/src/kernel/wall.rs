//! Where a compare run's wall time goes: per run, the time from the call into the engine to
//! the client's first worker starting (set-up: threads, resolving, TLS configuration — or,
//! on standing connections, the command reaching the worker), the warm-up, the measured
//! period, and from its end to the engine's return (closing connections, joining threads,
//! merging); outside the runs, opening and closing the arms' standing connections and
//! everything else between runs (load probes, statistics). Recorded in results.json
//! (`wall`) so that a run that overran its budget says where.

use std::time::{Duration, Instant};

use serde::Serialize;

/// The edges of one run, as the client's first worker reported them.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunEdges {
    /// The worker began the run (its warm-up).
    pub warm_up: Option<Instant>,
    /// The measured period began.
    pub main: Option<Instant>,
    /// The measured period ended.
    pub over: Option<Instant>,
}

/// Sums over a compare run (seconds).
#[derive(Debug, Clone, Default, Serialize)]
pub struct WallTally {
    /// Runs (engine calls or windows), retries included.
    pub runs: u32,
    /// Runs measured again because they completed nothing.
    pub retries: u32,
    /// The warm-ups and measured periods asked for.
    pub planned_secs: f64,
    /// Call into the engine → the first worker starting.
    pub setup_secs: f64,
    /// Warm-ups as they happened.
    pub warm_up_secs: f64,
    /// Measured periods as they happened.
    pub measured_secs: f64,
    /// End of the measured period → the engine's return.
    pub teardown_secs: f64,
    /// Opening and closing standing connections (threads, connects, TLS handshakes happen
    /// in the background of the first warm-up; this is the call itself) — 0 with fresh
    /// connections per run.
    pub open_close_secs: f64,
    /// Arms whose standing connections were opened.
    pub opened: u32,
    /// Inside rounds but outside runs: load probes, bookkeeping, `--strict` decisions.
    pub between_secs: f64,
    /// Phases of the whole run: starting the built-in server and links, the first rounds,
    /// the budget's added rounds, `--until-decided`, the statistics.
    pub phases: Vec<(String, f64)>,
}

impl WallTally {
    /// Adds one run: called at `call`, returned at `ret`, with the worker's `edges`, and
    /// `planned` warm-up plus measured period.
    pub fn add_run(&mut self, call: Instant, ret: Instant, edges: RunEdges, planned: Duration) {
        self.runs += 1;
        self.planned_secs += planned.as_secs_f64();
        let secs = |a: Instant, b: Option<Instant>| {
            b.map_or(0.0, |b| b.saturating_duration_since(a).as_secs_f64())
        };
        match (edges.warm_up, edges.main, edges.over) {
            (Some(w), Some(m), Some(o)) => {
                self.setup_secs += secs(call, Some(w));
                self.warm_up_secs += secs(w, Some(m));
                self.measured_secs += secs(m, Some(o));
                self.teardown_secs += secs(o, Some(ret));
            }
            // A run that never reached its measured period: all of it is set-up.
            _ => self.setup_secs += secs(call, Some(ret)),
        }
    }

    /// The wall time of all runs.
    pub fn runs_secs(&self) -> f64 {
        self.setup_secs + self.warm_up_secs + self.measured_secs + self.teardown_secs
    }

    /// Records a phase of the whole run.
    pub fn phase(&mut self, name: &str, took: Duration) {
        self.phases.push((name.to_owned(), took.as_secs_f64()));
    }

    /// One line for stderr: where the time went.
    pub fn summary(&self) -> String {
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|(n, s)| format!("{n} {s:.1} s"))
            .collect();
        format!(
            "wall time: {}; {} runs ({} retried) planned {:.1} s, took {:.1} s: set-up {:.1} s, \
             warm-up {:.1} s, measured {:.1} s, teardown {:.1} s; {} arms opened/closed {:.1} s; \
             between runs {:.1} s",
            phases.join(", "),
            self.runs,
            self.retries,
            self.planned_secs,
            self.runs_secs(),
            self.setup_secs,
            self.warm_up_secs,
            self.measured_secs,
            self.teardown_secs,
            self.opened,
            self.open_close_secs,
            self.between_secs
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_splits_into_its_edges() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut w = WallTally::default();
        let edges = RunEdges {
            warm_up: Some(t0 + ms(5)),
            main: Some(t0 + ms(105)),
            over: Some(t0 + ms(205)),
        };
        w.add_run(t0, t0 + ms(240), edges, ms(200));
        assert_eq!(w.runs, 1);
        assert!((w.setup_secs - 0.005).abs() < 1e-9);
        assert!((w.warm_up_secs - 0.1).abs() < 1e-9);
        assert!((w.measured_secs - 0.1).abs() < 1e-9);
        assert!((w.teardown_secs - 0.035).abs() < 1e-9);
        assert!((w.runs_secs() - 0.24).abs() < 1e-9);
        // A run that never measured counts as set-up.
        w.add_run(t0, t0 + ms(50), RunEdges::default(), ms(200));
        assert!((w.setup_secs - 0.055).abs() < 1e-9);
        w.phase("first rounds", ms(1500));
        assert!(
            w.summary().contains("first rounds 1.5 s"),
            "{}",
            w.summary()
        );
    }
}
