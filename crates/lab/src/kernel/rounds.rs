//! How runs are measured, whatever the experiment: a *round* runs arms back to back in the
//! order of [`super::order`], judges what the rest of the machine did over the whole round
//! ([`crate::host::LoadProbe`]) and, with `strict`, measures a busy round again (at most
//! [`RunPolicy::strict_retries`] times); a run that completed nothing is run once more with a
//! longer warm-up ([`retry_empty`]); [`whole_run`] is one engine run (connect, warm up,
//! measure, close) with that retry.

use h2lab_engine::{BenchConfig, EngineError, Observer, RunResult, StopFlag};

use super::policy::RunPolicy;
use crate::host::{LoadProbe, MachineLoad};

/// One round's kept runs.
#[derive(Debug)]
pub struct Round<T> {
    /// Each kept run with the index of its arm, in the order measured.
    pub outs: Vec<(usize, T)>,
    /// What the rest of the machine did during the round kept.
    pub load: Option<MachineLoad>,
    /// The machine was busy during the round kept ([`MachineLoad::busy`]).
    pub busy: bool,
    /// How often the round was measured again because the machine was busy (`strict`).
    pub remeasured: usize,
}

/// Measures one round: `run(i)` for every arm `i` of `order`, back to back (`None`: that arm
/// has nothing to keep this round). What the rest of the machine does is judged over the
/// whole round: /proc/stat counts in clock ticks of 10 ms, so a 15 ms window on 2 CPUs is 3
/// ticks, and one tick of another process made a third of such windows look busy. With
/// `strict`, a busy round is measured again, at most [`RunPolicy::strict_retries`] times. A
/// stop ends the round early; an error ends it at once.
pub fn round<T, E>(
    order: &[usize],
    strict: bool,
    policy: &RunPolicy,
    stop: &StopFlag,
    mut run: impl FnMut(usize) -> Result<Option<T>, E>,
) -> Result<Round<T>, E> {
    let mut remeasured = 0usize;
    loop {
        let mut outs = Vec::with_capacity(order.len());
        let probe = LoadProbe::start();
        for &i in order {
            if stop.is_stopped() {
                break;
            }
            if let Some(o) = run(i)? {
                outs.push((i, o));
            }
        }
        let load = probe.finish();
        let busy = load.is_some_and(|l| l.busy());
        if busy && strict && remeasured < policy.strict_retries as usize && !stop.is_stopped() {
            remeasured += 1;
            continue;
        }
        return Ok(Round {
            outs,
            load,
            busy,
            remeasured,
        });
    }
}

/// Whether a run completed nothing and failed nothing: its connections were still being set
/// up when the measured period ended (a starved machine, a slow server, a debug build's TLS),
/// which a longer warm-up cures ([`retry_empty`]).
pub fn completed_nothing(completed: u64, failed: u64) -> bool {
    completed == 0 && failed == 0
}

/// A run and, when it completed nothing, its one retry.
#[derive(Debug)]
pub struct Attempts<T> {
    /// The first attempt.
    pub first: T,
    /// The retry, when the first completed nothing.
    pub retry: Option<T>,
}

impl<T> Attempts<T> {
    /// The attempt that counts: the retry if there was one.
    pub fn last(&self) -> &T {
        self.retry.as_ref().unwrap_or(&self.first)
    }
}

/// Runs `run(1)`; when `empty` says it completed nothing ([`completed_nothing`]) and the run
/// was not asked to stop, runs `run(policy.empty_retry_warm_up)` once more: the argument
/// multiplies the warm-up, and a retry measures at least [`RunPolicy::empty_retry_period`].
pub fn retry_empty<T, E>(
    policy: &RunPolicy,
    stop: &StopFlag,
    empty: impl Fn(&T) -> bool,
    mut run: impl FnMut(u32) -> Result<T, E>,
) -> Result<Attempts<T>, E> {
    let first = run(1)?;
    let retry = if empty(&first) && !stop.is_stopped() {
        Some(run(policy.empty_retry_warm_up)?)
    } else {
        None
    };
    Ok(Attempts { first, retry })
}

/// One whole engine run of `bc` (connect, warm up, measure, close) with [`retry_empty`]'s one
/// retry: [`RunPolicy::empty_retry_warm_up`] times the warm-up and a measured period of at
/// least [`RunPolicy::empty_retry_period`].
pub fn whole_run(
    bc: &BenchConfig,
    policy: &RunPolicy,
    obs: &dyn Observer,
    stop: &StopFlag,
) -> Result<Attempts<RunResult>, EngineError> {
    retry_empty(
        policy,
        stop,
        |r: &RunResult| completed_nothing(r.requests.completed, r.requests.failed),
        |factor| {
            if factor <= 1 {
                return h2lab_engine::run(bc, obs, stop);
            }
            let mut again = bc.clone();
            again.warm_up = bc.warm_up.map(|w| w * factor);
            again.duration = bc.duration.map(|d| d.max(policy.empty_retry_period));
            h2lab_engine::run(&again, obs, stop)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_round_is_measured_again_only_when_strict_and_an_empty_run_once() {
        let stop = StopFlag::new();
        let p = RunPolicy::LAB;
        let mut calls = Vec::new();
        let r = round(&[2, 0, 1], false, &p, &stop, |i| {
            calls.push(i);
            Ok::<_, ()>((i != 0).then_some(i * 10))
        })
        .unwrap();
        assert_eq!(calls, [2, 0, 1]);
        assert_eq!(r.outs, [(2, 20), (1, 10)]);
        assert_eq!(r.remeasured, 0);
        let mut factors = Vec::new();
        let a = retry_empty(
            &p,
            &stop,
            |n: &u64| *n == 0,
            |f| {
                factors.push(f);
                Ok::<_, ()>(u64::from(f > 1))
            },
        )
        .unwrap();
        assert_eq!(factors, [1, p.empty_retry_warm_up]);
        assert_eq!(*a.last(), 1);
        stop.stop();
        let a = retry_empty(&p, &stop, |n: &u64| *n == 0, |_| Ok::<_, ()>(0)).unwrap();
        assert!(a.retry.is_none());
    }
}
