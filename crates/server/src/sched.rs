//! RFC 9218 scheduling of response DATA across the streams of one HTTP/2 connection.
//!
//! RFC 9218 §10: "It is RECOMMENDED that, when possible, servers respect the urgency
//! parameter (Section 4.1), sending higher-urgency responses before lower-urgency
//! responses." ... "Non-incremental responses of the same urgency SHOULD be served by
//! prioritizing bandwidth allocation in ascending order of the stream ID, which corresponds
//! to the order in which clients make requests." ... "Incremental responses of the same
//! urgency SHOULD be served by sharing bandwidth among them."
//!
//! [`Scheduler::pick`] chooses the stream that gets the next DATA frame: the lowest urgency
//! value wins; within it, non-incremental streams go first, one at a time in stream order
//! (a browser cannot use half a script), then incremental streams take turns frame by frame
//! (round-robin in stream order from the last one served). A stream that cannot send
//! (flow-control window closed) is skipped, so a blocked urgent stream never holds the
//! connection idle. No allocation: one pass over the candidates per frame.

use h2lab_wire::priority::{ExtPriority, MAX_URGENCY};

/// How `h2lab serve` orders response data across the streams of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriorityMode {
    /// Round-robin, one frame per stream per pass, ignoring priority signals.
    Off,
    /// RFC 9218 extensible priorities (`priority` header, PRIORITY_UPDATE frames).
    #[default]
    Rfc9218,
}

impl PriorityMode {
    /// Parses `off` or `rfc9218`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(PriorityMode::Off),
            "rfc9218" | "on" => Some(PriorityMode::Rfc9218),
            _ => None,
        }
    }
}

/// Round-robin position per urgency level.
#[derive(Debug, Default, Clone)]
pub struct Scheduler {
    /// The incremental stream served last at each urgency (0 = none yet).
    last_incremental: [u32; MAX_URGENCY as usize + 1],
}

impl Scheduler {
    /// The stream to send the next frame of, among `(stream id, priority)` candidates that
    /// can send now; `None` when there is none.
    pub fn pick<I>(&self, candidates: I) -> Option<u32>
    where
        I: Iterator<Item = (u32, ExtPriority)> + Clone,
    {
        let urgency = candidates.clone().map(|(_, p)| p.urgency).min()?;
        let at = candidates.filter(|(_, p)| p.urgency == urgency);
        // Non-incremental first, lowest stream id.
        if let Some(id) = at
            .clone()
            .filter(|(_, p)| !p.incremental)
            .map(|(id, _)| id)
            .min()
        {
            return Some(id);
        }
        let last = self.last_incremental[usize::from(urgency.min(MAX_URGENCY))];
        let ids = at.map(|(id, _)| id);
        ids.clone()
            .filter(|&id| id > last)
            .min()
            .or_else(|| ids.min())
    }

    /// Records that `id` (of priority `p`) got a frame.
    pub fn served(&mut self, id: u32, p: ExtPriority) {
        if p.incremental {
            self.last_incremental[usize::from(p.urgency.min(MAX_URGENCY))] = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &mut Scheduler, c: &[(u32, ExtPriority)]) -> u32 {
        let id = s.pick(c.iter().copied()).unwrap();
        let p = c.iter().find(|(i, _)| *i == id).unwrap().1;
        s.served(id, p);
        id
    }

    #[test]
    fn urgency_then_order_then_round_robin() {
        let inc = |u| ExtPriority::new(u, true);
        let seq = |u| ExtPriority::new(u, false);
        let mut s = Scheduler::default();
        assert_eq!(s.pick(std::iter::empty()), None);
        // Urgency wins over stream order.
        let c = [(1, inc(5)), (3, inc(5)), (5, seq(3)), (7, seq(0))];
        assert_eq!(run(&mut s, &c), 7);
        // Non-incremental in stream order: 5 before 9 at the same urgency.
        let c = [(1, inc(3)), (9, seq(3)), (5, seq(3))];
        assert_eq!(run(&mut s, &c), 5);
        // Incremental round-robin within an urgency.
        let c = [(1, inc(5)), (3, inc(5)), (5, inc(5))];
        let order: Vec<u32> = (0..7).map(|_| run(&mut s, &c)).collect();
        assert_eq!(order, [1, 3, 5, 1, 3, 5, 1]);
        // A stream leaving the set keeps the turn order of the others.
        let c = [(1, inc(5)), (5, inc(5))];
        assert_eq!(run(&mut s, &c), 5);
        assert_eq!(run(&mut s, &c), 1);
    }

    #[test]
    fn modes() {
        assert_eq!(PriorityMode::parse("off"), Some(PriorityMode::Off));
        assert_eq!(PriorityMode::parse("rfc9218"), Some(PriorityMode::Rfc9218));
        assert_eq!(PriorityMode::parse("x"), None);
        assert_eq!(PriorityMode::default(), PriorityMode::Rfc9218);
    }
}
