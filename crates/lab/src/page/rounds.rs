//! The simulated arms' page loads by round ([`SimLoads`]): every scenario that loads pages
//! in rounds (the page loads, the slow endpoint, each loss level) logs a load, keeps it, or
//! keeps its error the same way, so that a failed load leaves its round out of the pairing
//! alike everywhere. The order of a round's arms ([`round_order`]) is the lab kernel's:
//! pairs next to each other, forwards and backwards in turn.

use std::fmt::Display;

use super::load::PageLoad;
use crate::kernel::order::round_position;
use crate::proto::LabProtocol;

/// One arm of a page round: a simulated arm or an extra (browser) arm, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundArm {
    /// Simulated arm `j`.
    Sim(usize),
    /// Extra arm `j` ([`super::browser::ExtraArms`]).
    Extra(usize),
}

/// The arms in pair order: simulated arms without an extra arm of their protocol first, then
/// each extra arm beside the simulated arm of its protocol (the pair compared as simulated /
/// browser), alternately after and before it, so that consecutive extra arms (the browser's
/// protocols, compared with each other) are next to each other too: `sim h2, chromium h2,
/// chromium h3, sim h3`.
pub fn pair_order(sims: &[LabProtocol], extra: &[LabProtocol]) -> Vec<RoundArm> {
    let mut partner: Vec<Option<usize>> = Vec::with_capacity(extra.len());
    let mut taken = vec![false; sims.len()];
    for p in extra {
        let j = (0..sims.len()).find(|&j| !taken[j] && sims[j] == *p);
        if let Some(j) = j {
            taken[j] = true;
        }
        partner.push(j);
    }
    let mut order: Vec<RoundArm> = (0..sims.len())
        .filter(|&j| !taken[j])
        .map(RoundArm::Sim)
        .collect();
    for (k, s) in partner.into_iter().enumerate() {
        match s {
            Some(j) if k % 2 == 0 => order.extend([RoundArm::Sim(j), RoundArm::Extra(k)]),
            Some(j) => order.extend([RoundArm::Extra(k), RoundArm::Sim(j)]),
            None => order.push(RoundArm::Extra(k)),
        }
    }
    order
}

/// The order of round `round` (from 0) of the simulated arms of protocols `sims` and the
/// extra arms of protocols `extra`: [`pair_order`], run as the kernel runs a round
/// ([`round_position`]: forwards starting one arm later every other round, then the same
/// order backwards), so that each arm runs right before its pair as often as right after.
pub fn round_order(sims: &[LabProtocol], extra: &[LabProtocol], round: usize) -> Vec<RoundArm> {
    let base = pair_order(sims, extra);
    let n = base.len();
    let round = u32::try_from(round).unwrap_or(u32::MAX);
    (0..n).map(|k| base[round_position(k, round, n)]).collect()
}

/// Every simulated arm's loads by round and first error.
#[derive(Debug)]
pub struct SimLoads {
    /// `loads[j][i]`: arm `j`'s load of round `i` (`None`: it failed).
    pub loads: Vec<Vec<Option<PageLoad>>>,
    /// Each arm's first error.
    pub errors: Vec<Option<String>>,
    what: String,
    labels: Vec<String>,
    rounds: usize,
}

impl SimLoads {
    /// No loads yet of the arms labelled `labels`, over `rounds` rounds; `what` names a load
    /// in the log lines (`load`, `run`, `loss 1% load`).
    pub fn new(what: impl Into<String>, labels: Vec<String>, rounds: usize) -> SimLoads {
        SimLoads {
            loads: vec![Vec::with_capacity(rounds); labels.len()],
            errors: vec![None; labels.len()],
            what: what.into(),
            labels,
            rounds,
        }
    }

    /// Logs arm `j`'s load of round `round` and keeps it, or keeps its error (the round's
    /// load is then `None`); whether it completed.
    pub fn keep<E: Display>(
        &mut self,
        j: usize,
        round: usize,
        r: Result<PageLoad, E>,
        log: &mut dyn FnMut(&str),
    ) -> bool {
        let label = self.labels.get(j).map_or("", String::as_str);
        let (Some(loads), Some(error)) = (self.loads.get_mut(j), self.errors.get_mut(j)) else {
            return false;
        };
        match r {
            Ok(l) => {
                log(&format!(
                    "{} {}/{} {label:<16} {:>9}  {} connection(s), {} requests",
                    self.what,
                    round + 1,
                    self.rounds,
                    crate::fmt::ms(l.page_ms),
                    l.connections,
                    l.requests
                ));
                loads.push(Some(l));
                true
            }
            Err(e) => {
                log(&format!("{} {} {label}: {e}", self.what, round + 1));
                error.get_or_insert(e.to_string());
                loads.push(None);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LabProtocol::{H1Tls, H2, H3};
    use RoundArm::{Extra, Sim};

    #[test]
    fn pairs_sit_side_by_side_and_rounds_alternate_direction() {
        let sims = [H1Tls, H2, H3];
        let extra = [H2, H3];
        // h1-tls alone, then sim h2 | chromium h2 | chromium h3 | sim h3.
        let base = vec![Sim(0), Sim(1), Extra(0), Extra(1), Sim(2)];
        assert_eq!(pair_order(&sims, &extra), base);
        assert_eq!(round_order(&sims, &extra, 0), base);
        // Round 1: the same order backwards.
        let back: Vec<RoundArm> = base.iter().rev().copied().collect();
        assert_eq!(round_order(&sims, &extra, 1), back);
        // Round 2: forwards from the next arm; round 3 its reverse.
        assert_eq!(
            round_order(&sims, &extra, 2),
            vec![Sim(1), Extra(0), Extra(1), Sim(2), Sim(0)]
        );
        assert_eq!(
            round_order(&sims, &extra, 3),
            vec![Sim(0), Sim(2), Extra(1), Extra(0), Sim(1)]
        );
        // Over rounds in pairs, each pair (simulated/browser of a protocol, browser h2/h3)
        // runs back to back in most rounds, each arm first as often as second.
        let pairs = [(Sim(1), Extra(0)), (Sim(2), Extra(1)), (Extra(0), Extra(1))];
        for (a, b) in pairs {
            let (mut ab, mut ba) = (0, 0);
            for round in 0..10 {
                for w in round_order(&sims, &extra, round).windows(2) {
                    ab += usize::from(w == [a, b]);
                    ba += usize::from(w == [b, a]);
                }
            }
            assert_eq!(ab, ba, "{a:?} {b:?}");
            assert!(
                ab + ba >= 8,
                "{a:?} {b:?}: back to back in {} of 10 rounds",
                ab + ba
            );
        }
        // Every round runs every arm once.
        for round in 0..7 {
            let mut o = round_order(&sims, &extra, round);
            o.sort_by_key(|a| format!("{a:?}"));
            let mut b = base.clone();
            b.sort_by_key(|a| format!("{a:?}"));
            assert_eq!(o, b);
        }
    }

    #[test]
    fn browser_only_and_unpaired_arms_keep_their_place() {
        // --browser-only: no simulated arms.
        assert_eq!(round_order(&[], &[H2, H3], 1), vec![Extra(1), Extra(0)]);
        // No extra arms: the simulated arms as the kernel orders them.
        assert_eq!(round_order(&[H1Tls, H2], &[], 1), vec![Sim(1), Sim(0)]);
        // An extra arm without a simulated arm of its protocol stands alone.
        assert_eq!(
            pair_order(&[H2], &[H1Tls, H2]),
            vec![Extra(0), Extra(1), Sim(0)]
        );
    }
}
