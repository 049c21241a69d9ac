//! The simulated arms' page loads by round ([`SimLoads`]): every scenario that loads pages
//! in rounds (the page loads, the slow endpoint, each loss level) logs a load, keeps it, or
//! keeps its error the same way, so that a failed load leaves its round out of the pairing
//! alike everywhere.

use std::fmt::Display;

use super::load::PageLoad;

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
