//! Page-time ratios: which protocol loaded faster, by how much, and how sure that is.
//!
//! The pair is chosen by the medians of the loads (the fastest and the slowest protocol, or
//! HTTP/3 against HTTP/2). Its verdict comes from the per-round ratios of the two protocols'
//! page times: the protocols alternate load by load, so load `i` of every protocol belongs to
//! round `i` and the two loads of a round were measured back to back. The median of those
//! ratios with its 95% CI ([`ci::paired_ratio`]) is classified against the equivalence band
//! ([`ci::classify`]): a **win**, **parity** or **undecided** (also below
//! [`ci::MIN_ROUNDS`] paired rounds), as in `compare` and the loss experiment.

use serde::Serialize;

use super::ProtoPage;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome};

/// Which protocol was faster, by how much, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// The faster protocol (by the per-round ratios when there are paired rounds, else by
    /// the medians).
    pub faster: LabProtocol,
    /// The slower protocol.
    pub slower: LabProtocol,
    /// Slower median / faster median (below 1 only in the rare case where the per-round
    /// ratios and the medians disagree on which protocol was faster).
    pub ratio: f64,
    /// The faster median (ms).
    pub faster_ms: f64,
    /// The slower median (ms).
    pub slower_ms: f64,
    /// Per-round ratio of page times, slower / faster (above 1: `faster` was faster):
    /// median, 95% CI and the number of paired rounds; `None` when no round has a complete
    /// load of both.
    pub round_ratio: Option<Estimate>,
    /// Win, slight, parity or undecided (the CI of `round_ratio` against `1 ± equivalence`).
    pub outcome: Outcome,
    /// The faster protocol when the outcome is a win.
    pub winner: Option<LabProtocol>,
    /// The equivalence band (a fraction: 0.03 is ±3%).
    pub equivalence: f64,
}

/// One protocol's page times by round: `v[i]` is round `i`'s load (`None`: it failed or
/// lost requests).
fn by_round(p: &ProtoPage, rounds: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; rounds];
    for l in p.loads.iter().filter(|l| l.failed == 0) {
        if let Some(slot) = v.get_mut(l.round as usize) {
            *slot = Some(l.page_ms);
        }
    }
    v
}

impl Ratio {
    /// The slowest against the fastest of `pages` by their medians (those that loaded),
    /// decided on their per-round ratios against the band `1 ± equivalence`; `what` names
    /// the scenario (it seeds the bootstrap). `None` with fewer than two protocols loaded.
    pub fn of_pages(pages: &[ProtoPage], equivalence: f64, what: &str) -> Option<Ratio> {
        let ok: Vec<(&ProtoPage, f64)> = pages
            .iter()
            .filter_map(|p| p.page_ms.map(|s| (p, s.median)))
            .filter(|x| x.1 > 0.0)
            .collect();
        let fast = ok.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
        let slow = ok.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        if fast.0.proto == slow.0.proto {
            return None;
        }
        Some(Ratio::decide(*fast, *slow, equivalence, what))
    }

    /// `fast` against `slow` (each with its median, ms): the per-round ratio slow / fast,
    /// turned round when its median says `slow` was the faster one.
    fn decide(
        fast: (&ProtoPage, f64),
        slow: (&ProtoPage, f64),
        equivalence: f64,
        what: &str,
    ) -> Ratio {
        let rounds = [fast.0, slow.0]
            .iter()
            .flat_map(|p| p.loads.iter().map(|l| l.round as usize + 1))
            .max()
            .unwrap_or(0);
        let (f, s) = (by_round(fast.0, rounds), by_round(slow.0, rounds));
        // One seed per pair, whichever way round it ends up.
        let mut names = [fast.0.proto.name(), slow.0.proto.name()];
        names.sort_unstable();
        let seed = ci::seed_for(&format!("page {what} {} {}", names[0], names[1]));
        let (paired, swapped, outcome) = ci::faster_of(&f, &s, seed, equivalence);
        let (fast, slow) = if swapped { (slow, fast) } else { (fast, slow) };
        Ratio {
            faster: fast.0.proto,
            slower: slow.0.proto,
            ratio: slow.1 / fast.1,
            faster_ms: fast.1,
            slower_ms: slow.1,
            round_ratio: paired,
            outcome,
            winner: (outcome == Outcome::Win).then_some(fast.0.proto),
            equivalence,
        }
    }

    /// HTTP/3 against HTTP/2 among `pages` (as [`Ratio::of_pages`]), unless `overall` is
    /// already that pair.
    pub fn h3_vs_h2(
        pages: &[ProtoPage],
        overall: Option<&Ratio>,
        equivalence: f64,
        what: &str,
    ) -> Option<Ratio> {
        let pair = [LabProtocol::H2, LabProtocol::H3];
        if overall.is_some_and(|r| pair.contains(&r.faster) && pair.contains(&r.slower)) {
            return None;
        }
        let v: Vec<ProtoPage> = pages
            .iter()
            .filter(|p| pair.contains(&p.proto))
            .cloned()
            .collect();
        (v.len() == 2)
            .then(|| Ratio::of_pages(&v, equivalence, what))
            .flatten()
    }

    /// The verdict in words: `win`, `parity (within ±3%)`, `undecided (8 rounds: the CI
    /// crosses the ±3% band's edge)`, `undecided (5 rounds: 6 or more can decide)`.
    pub fn verdict_text(&self) -> String {
        let band = super::loss::fmt_pct(self.equivalence);
        let n = self.round_ratio.map_or(0, |r| r.n);
        let rounds = if n == 1 {
            "1 round".to_owned()
        } else {
            format!("{n} rounds")
        };
        match self.outcome {
            Outcome::Win => "win".into(),
            Outcome::Slight => format!("slightly faster (the CI crosses the ±{band} band's edge)"),
            Outcome::Parity => format!("parity (within ±{band})"),
            Outcome::Undecided if n < ci::MIN_ROUNDS => format!(
                "undecided ({rounds}: {} or more can decide)",
                ci::MIN_ROUNDS
            ),
            Outcome::Undecided => {
                format!("undecided ({rounds}: the CI crosses the ±{band} band's edge)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::LoadBrief;
    use crate::stats::MedianSpread;

    /// A protocol's page with `times[i]` as round `i`'s load (`None`: that load failed).
    fn page(proto: LabProtocol, times: &[Option<f64>]) -> ProtoPage {
        let loads: Vec<LoadBrief> = times
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                t.map(|ms| LoadBrief {
                    page_ms: ms,
                    connections: 1,
                    requests: 301,
                    failed: 0,
                    round: i as u32,
                })
            })
            .collect();
        let v: Vec<f64> = loads.iter().map(|l| l.page_ms).collect();
        ProtoPage {
            proto,
            connections_limit: 1,
            streams: 100,
            page_ms: MedianSpread::of(&v),
            page_p90_ms: 0.0,
            loads,
            median_load: None,
            error: None,
        }
    }

    /// `n` rounds drifting together by ±20%: HTTP/1.1 at `h1` ms, HTTP/2 at `h1 / factor`,
    /// each with its own small per-round noise.
    fn drifting(n: usize, h1: f64, factor: f64) -> (ProtoPage, ProtoPage) {
        let drift = [1.0, 1.2, 0.8, 1.1, 0.9, 1.15, 0.85, 1.05, 0.95, 1.1];
        let wobble = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.01, 0.99, 1.0, 1.005];
        let a: Vec<Option<f64>> = (0..n).map(|i| Some(h1 * drift[i % 10])).collect();
        let b: Vec<Option<f64>> = (0..n)
            .map(|i| Some(h1 / factor * drift[i % 10] * wobble[i % 10]))
            .collect();
        (page(LabProtocol::H1Tls, &a), page(LabProtocol::H2, &b))
    }

    #[test]
    fn a_steady_ratio_under_common_drift_is_a_win() {
        let (h1, h2) = drifting(8, 2400.0, 4.6);
        let r = Ratio::of_pages(&[h1, h2], 0.03, "t").unwrap();
        assert_eq!((r.faster, r.slower), (LabProtocol::H2, LabProtocol::H1Tls));
        assert_eq!(r.outcome, Outcome::Win);
        assert_eq!(r.winner, Some(LabProtocol::H2));
        let rr = r.round_ratio.unwrap();
        assert_eq!(rr.n, 8);
        assert!(rr.lo > 4.4 && rr.hi < 4.8 && rr.lo <= rr.median, "{rr:?}");
        assert_eq!(r.verdict_text(), "win");
        // The same rounds give the same interval.
        let (h1, h2) = drifting(8, 2400.0, 4.6);
        assert_eq!(
            Ratio::of_pages(&[h2, h1], 0.03, "t").unwrap().round_ratio,
            Some(rr)
        );
    }

    #[test]
    fn the_same_page_time_within_the_band_is_parity() {
        // HTTP/3 within 1% of HTTP/2 in every round, both drifting by ±20%: the per-round
        // ratios stay inside ±3% although the medians' ranges overlap widely.
        let (_, h2) = drifting(8, 2400.0, 4.6);
        let h3_times: Vec<Option<f64>> = h2
            .loads
            .iter()
            .enumerate()
            .map(|(i, l)| Some(l.page_ms * if i % 2 == 0 { 1.01 } else { 0.995 }))
            .collect();
        let h3 = page(LabProtocol::H3, &h3_times);
        let r = Ratio::of_pages(&[h2, h3], 0.03, "t").unwrap();
        assert_eq!(r.outcome, Outcome::Parity, "{r:?}");
        assert_eq!(r.winner, None);
        assert_eq!(r.verdict_text(), "parity (within ±3%)");
        // A narrower band cannot hold that interval: undecided, still no winner.
        let (_, h2) = drifting(8, 2400.0, 4.6);
        let h3 = page(LabProtocol::H3, &h3_times);
        let r = Ratio::of_pages(&[h2, h3], 0.005, "t").unwrap();
        assert_eq!((r.outcome, r.winner), (Outcome::Undecided, None));
    }

    #[test]
    fn a_ratio_that_swings_across_the_band_is_undecided() {
        // HTTP/3 5% slower in some rounds, 5% faster in others: no verdict from 8 rounds.
        let h2: Vec<Option<f64>> = (0..8).map(|i| Some(500.0 + 10.0 * f64::from(i))).collect();
        let h3: Vec<Option<f64>> = h2
            .iter()
            .enumerate()
            .map(|(i, t)| t.map(|t| t * if i % 2 == 0 { 1.05 } else { 0.96 }))
            .collect();
        let r = Ratio::of_pages(
            &[page(LabProtocol::H2, &h2), page(LabProtocol::H3, &h3)],
            0.03,
            "t",
        )
        .unwrap();
        assert_eq!((r.outcome, r.winner), (Outcome::Undecided, None));
        assert!(r.round_ratio.unwrap().lo < 1.0 && r.round_ratio.unwrap().hi > 1.0);
        assert!(
            r.verdict_text()
                .starts_with("undecided (8 rounds: the CI crosses"),
            "{}",
            r.verdict_text()
        );
    }

    #[test]
    fn too_few_rounds_never_decide() {
        // 4.6x faster in every round, but five rounds (the range is a 94% interval): undecided.
        for n in 1..ci::MIN_ROUNDS {
            let (h1, h2) = drifting(n, 2400.0, 4.6);
            let r = Ratio::of_pages(&[h1, h2], 0.03, "t").unwrap();
            assert_eq!((r.outcome, r.winner), (Outcome::Undecided, None), "{n}");
            assert_eq!(r.faster, LabProtocol::H2);
            assert!(r.verdict_text().contains("6 or more can decide"), "{n}");
        }
        let (h1, h2) = drifting(1, 2400.0, 4.6);
        let r = Ratio::of_pages(&[h1, h2], 0.03, "t").unwrap();
        assert_eq!(
            r.verdict_text(),
            "undecided (1 round: 6 or more can decide)"
        );
    }

    #[test]
    fn failed_loads_leave_their_round_out_and_pairs_never_cross_rounds() {
        let (h1, _) = drifting(8, 2400.0, 4.6);
        let h2: Vec<Option<f64>> = h1
            .loads
            .iter()
            .map(|l| (l.round != 3).then_some(l.page_ms / 4.6))
            .collect();
        let r = Ratio::of_pages(&[h1.clone(), page(LabProtocol::H2, &h2)], 0.03, "t").unwrap();
        let rr = r.round_ratio.unwrap();
        assert_eq!(rr.n, 7);
        assert!(
            (rr.median - 4.6).abs() < 1e-9 && (rr.hi - rr.lo) < 1e-9,
            "{rr:?}"
        );
        assert_eq!(r.outcome, Outcome::Win);
        // A load with failed requests does not count either.
        let mut h2p = page(LabProtocol::H2, &h2);
        h2p.loads[0].failed = 3;
        let r = Ratio::of_pages(&[h1, h2p], 0.03, "t").unwrap();
        assert_eq!(r.round_ratio.unwrap().n, 6);
    }

    #[test]
    fn medians_and_rounds_disagreeing_follow_the_rounds() {
        // HTTP/2's median is lower, yet HTTP/3 was faster in 6 of 7 rounds measured back to
        // back (its one slow load fell in HTTP/2's quickest round): the line names HTTP/3.
        let h2 = [100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0];
        let h3 = [650.0, 190.0, 290.0, 390.0, 490.0, 590.0, 690.0];
        let some = |v: &[f64]| v.iter().map(|x| Some(*x)).collect::<Vec<_>>();
        let r = Ratio::of_pages(
            &[
                page(LabProtocol::H2, &some(&h2)),
                page(LabProtocol::H3, &some(&h3)),
            ],
            0.03,
            "t",
        )
        .unwrap();
        assert_eq!(r.faster, LabProtocol::H3);
        assert!(r.round_ratio.unwrap().median > 1.0);
        assert!(r.ratio < 1.0, "{r:?}");
    }

    #[test]
    fn http3_against_http2_only_when_the_overall_pair_is_not_it() {
        let (h1, h2) = drifting(6, 2400.0, 4.6);
        let h3 = page(
            LabProtocol::H3,
            &h2.loads
                .iter()
                .map(|l| Some(l.page_ms * 1.17))
                .collect::<Vec<_>>(),
        );
        let pages = [h1, h2, h3];
        let overall = Ratio::of_pages(&pages, 0.03, "t").unwrap();
        assert_eq!(
            (overall.faster, overall.slower),
            (LabProtocol::H2, LabProtocol::H1Tls)
        );
        let h3h2 = Ratio::h3_vs_h2(&pages, Some(&overall), 0.03, "t").unwrap();
        assert_eq!((h3h2.faster, h3h2.outcome), (LabProtocol::H2, Outcome::Win));
        assert!((h3h2.round_ratio.unwrap().median - 1.17).abs() < 1e-9);
        assert!(Ratio::h3_vs_h2(&pages, Some(&h3h2), 0.03, "t").is_none());
    }
}
