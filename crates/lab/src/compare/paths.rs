//! `h2lab compare` on the packet link or the relay: what the path counted per cell, and the
//! link records and descriptions in the mode used (see [`crate::netpath`]).

use serde::Serialize;

use super::matrix::CellKey;
use super::run::CellResult;
use crate::env::LabEnv;
use crate::link::{LinkProfile, LinkRecord};
use crate::netpath::{ModeChoice, PathCounters, PathMode, PathSides};
use crate::page::paths as page_paths;

/// Adds what the path of `key`'s link counted since `before` to `cell`'s counters.
pub fn count(env: &LabEnv, key: &CellKey, before: Option<PathCounters>, cell: &mut CellResult) {
    let after = env.path_counters(&[key.proto], key.cond.link);
    if let (Some(b), Some(a)) = (before, after) {
        let d = a.since(&b);
        cell.path = Some(cell.path.map_or(d, |c| c.plus(&d)));
    }
}

/// The mode chosen for a run over `links`: `asked` when a link is shaped (packet mode falls
/// back to the relay with a warning when unavailable), the relay's record otherwise.
pub fn choose(env: &mut LabEnv, links: &[LinkProfile], asked: PathMode) -> ModeChoice {
    if links.iter().any(|l| *l != LinkProfile::Loopback) {
        env.set_mode(asked).clone()
    } else {
        ModeChoice::fixed(asked)
    }
}

/// The path of a compare run, as results.json records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathRecord {
    /// The mode and its label, and why the relay when packet mode was asked for.
    #[serde(flatten)]
    pub choice: ModeChoice,
    /// Each packet path's TCP congestion control per side, by link profile.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sides: Vec<(String, PathSides)>,
}

impl PathRecord {
    /// The record of `choice` with the sides of the packet paths of `links`.
    pub fn of(env: &LabEnv, links: &[LinkProfile], choice: ModeChoice) -> PathRecord {
        PathRecord {
            sides: links
                .iter()
                .filter_map(|&l| env.path_sides(l).map(|s| (l.name().to_owned(), s)))
                .collect(),
            choice,
        }
    }
}

impl PathRecord {
    /// `packet link (kernel TCP); wan: TCP congestion control bbr (client), bbr (server)`,
    /// with the fallback warning if any.
    pub fn describe(&self) -> String {
        let mut s = self.choice.label.to_owned();
        for (l, sd) in &self.sides {
            s.push_str(&format!(
                "; {l}: TCP congestion control {} (client), {} (server)",
                sd.client_tcp_cc, sd.server_tcp_cc
            ));
        }
        if let Some(w) = &self.choice.fallback {
            s.push_str(&format!(" ({w})"));
        }
        s
    }
}

/// The start lines of a run's path (`path: packet link (kernel TCP)` and any warning), each
/// preceded by a newline.
pub fn start_lines(c: &ModeChoice) -> String {
    let mut s = format!("\npath: {}", c.label);
    if let Some(w) = &c.fallback {
        s.push('\n');
        s.push_str(w);
    }
    s
}

/// Each link described, and its record, in `mode`.
pub fn records(links: &[LinkProfile], mode: PathMode) -> (Vec<String>, Vec<LinkRecord>) {
    (
        links
            .iter()
            .map(|&p| page_paths::describe(p, mode))
            .collect(),
        links.iter().map(|&p| page_paths::record(p, mode)).collect(),
    )
}
