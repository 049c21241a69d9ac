//! The loss experiment (`h2lab page --loss 0,1,3`): cold page loads over the WAN link at
//! several loss levels, HTTP/1.1 over 6 connections against HTTP/2 and HTTP/3 over one
//! connection each, the protocols alternated load by load.
//!
//! The question users ask: HTTP/2 multiplexes every request on one TCP connection, so a
//! lost segment stalls every stream behind it (head-of-line blocking); HTTP/3's streams are
//! independent in QUIC, so a lost datagram stalls only the streams it carried. The link
//! ([`crate::link`]) relays TCP and UDP with the same RTT, rate and loss probability: for
//! UDP a lost datagram is dropped (QUIC detects and resends it), for TCP — which the relay
//! cannot drop bytes from — a lost chunk is held back for a retransmission round trip,
//! stalling the connection behind it as the kernel's retransmission would.
//!
//! Statistics as in `compare`: each protocol's median page time with its 95% CI
//! ([`ci::median_ci`]), and per level the like-for-like decisions — HTTP/2 against
//! HTTP/1.1 (`h2` / `h1-tls`, `h2c` / `h1`) and HTTP/3 against HTTP/2 (`h3` / `h2`) — from
//! the per-round ratios of page times (load `i` of every protocol is round `i`: measured
//! back to back), with win / parity / undecided against the equivalence band.

use serde::Serialize;

use super::{load, proto_page, PoolSpec, ProtoPage};
use crate::kernel::pairs::PAIRS;
use crate::link::LinkProfile;
use crate::netpath::PathCounters;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome};

/// The pairs the loss experiment decides: the lab's like-for-like pairs
/// ([`PAIRS`]: HTTP/2 against HTTP/1.1 over TLS and cleartext, HTTP/3 against HTTP/2).
pub fn loss_pairs() -> Vec<(LabProtocol, LabProtocol)> {
    PAIRS.iter().map(|p| (p.a, p.b)).collect()
}

/// One protocol's page time at one loss level: median and 95% CI (ms).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageCi {
    /// The protocol.
    pub proto: LabProtocol,
    /// Median page load time with its 95% CI (ms); `None` without a load.
    pub page_ms: Option<Estimate>,
}

/// `a` against `b` on page load time at one loss level, paired by round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageDecision {
    /// The numerator (the newer protocol: HTTP/2 against HTTP/1.1, HTTP/3 against HTTP/2).
    pub a: LabProtocol,
    /// The denominator.
    pub b: LabProtocol,
    /// Per-round ratio of page times `a / b`: median and 95% CI (below 1: `a` is faster).
    pub ratio: Option<Estimate>,
    /// Win, slight, parity or undecided (fewer than 6 paired loads is undecided), against
    /// the band `1 ± equivalence`.
    pub outcome: Outcome,
    /// The faster protocol when the outcome is a win.
    pub winner: Option<LabProtocol>,
    /// The faster protocol when the direction is known (a win or a slight difference).
    pub better: Option<LabProtocol>,
    /// Roughly how many more paired rounds would decide an undecided decision
    /// ([`ci::rounds_to_decide`]).
    pub more_rounds: Option<usize>,
}

/// What the link counted at one level while the page loads crossed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LinkLoss {
    /// TCP chunks held back as lost (both directions).
    pub tcp_chunks_lost: u64,
    /// TCP chunks relayed (both directions).
    pub tcp_chunks: u64,
    /// UDP datagrams dropped as lost (both directions).
    pub udp_datagrams_lost: u64,
    /// UDP datagrams received by the link (both directions).
    pub udp_datagrams: u64,
    /// What the path counted per direction (packets relayed, dropped at the queue, lost; the
    /// relay's TCP chunks), for the packet link and the relay alike.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathCounters>,
}

/// What the path counted during one protocol's loads at one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProtoPath {
    /// The protocol.
    pub proto: LabProtocol,
    /// The path's counters over its loads (browser arms not included).
    pub counters: PathCounters,
}

/// The page loads at one loss level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LossLevel {
    /// The link profile (`wan`, `lossy`, `lossy3`).
    #[serde(serialize_with = "crate::compare::axes::profile_name")]
    pub profile: LinkProfile,
    /// Its loss probability in percent.
    pub loss_pct: f64,
    /// The link, described.
    pub link: String,
    /// Every protocol's loads.
    pub protocols: Vec<ProtoPage>,
    /// Every protocol's median page time with its CI.
    pub page_ci: Vec<PageCi>,
    /// The like-for-like decisions measured at this level ([`loss_pairs`]).
    pub decisions: Vec<PageDecision>,
    /// What the link counted (loss included) during this level's loads.
    pub link_counts: LinkLoss,
    /// What the path counted during each protocol's loads.
    pub path_by_protocol: Vec<ProtoPath>,
}

/// Median page time with its CI of `p`'s loads.
pub fn page_ci(p: &ProtoPage) -> PageCi {
    let times: Vec<f64> = p.loads.iter().map(|l| l.page_ms).collect();
    let mut rng = ci::Rng::new(ci::seed_for(&format!("page {}", p.proto)));
    PageCi {
        proto: p.proto,
        page_ms: ci::median_ci(&times, &mut rng),
    }
}

/// Decides `a` against `b` on page time from their loads of the same rounds: `a_rounds[i]`
/// and `b_rounds[i]` are the page times of round `i` (`None`: that load failed).
pub fn decide(
    a: LabProtocol,
    b: LabProtocol,
    a_rounds: &[Option<f64>],
    b_rounds: &[Option<f64>],
    equivalence: f64,
    what: &str,
) -> PageDecision {
    let mut rng = ci::Rng::new(ci::seed_for(&format!("page {what} {a} {b}")));
    let ratio = ci::paired_ratio(a_rounds, b_rounds, &mut rng);
    let outcome = ratio.map_or(Outcome::Undecided, |r| ci::classify(&r, equivalence));
    let better = match (outcome.directional(), ratio) {
        (true, Some(r)) => Some(if r.median < 1.0 { a } else { b }),
        _ => None,
    };
    PageDecision {
        a,
        b,
        ratio,
        outcome,
        winner: better.filter(|_| outcome == Outcome::Win),
        better,
        more_rounds: match ratio {
            Some(r) => ci::rounds_to_decide(&r, equivalence),
            None => Some(ci::MIN_ROUNDS),
        },
    }
}

/// Runs `repeat` rounds of cold page loads of `paths` on `pools` (one per protocol, all
/// behind the link of `profile`), alternating the protocol order round by round, and
/// summarises them. `counts` reads the link's loss counters before and after. `extra` arms
/// (the browser's, on the same link) take their turns in every round.
#[allow(clippy::too_many_arguments)] // one loss level: its link, pools, rounds and sinks
pub fn run_level(
    profile: LinkProfile,
    link: String,
    pools: &[PoolSpec],
    paths: &[String],
    repeat: u32,
    equivalence: f64,
    counts: &mut dyn FnMut() -> LinkLoss,
    mut extra: Option<&mut dyn super::browser::ExtraArms>,
    log: &mut dyn FnMut(&str),
) -> LossLevel {
    let rounds = repeat.max(1) as usize;
    let before = counts();
    let labels = pools.iter().map(|p| p.proto.label().to_string()).collect();
    let what = format!("loss {} load", fmt_pct(profile.loss()));
    let mut sims = super::rounds::SimLoads::new(what, labels, rounds);
    let mut per: Vec<Option<PathCounters>> = vec![None; pools.len()];
    let sim_protos: Vec<LabProtocol> = pools.iter().map(|p| p.proto).collect();
    for i in 0..rounds {
        let mut sim = |j: usize, log: &mut dyn FnMut(&str)| {
            let r = path_of_load(&mut *counts, &mut per[j], || {
                load::load_page(&pools[j], paths)
            });
            sims.keep(j, i, r, log);
        };
        super::browser::run_round(i, &sim_protos, extra.as_deref_mut(), &mut sim, log);
    }
    let after = counts();
    let by_round: Vec<Vec<Option<f64>>> = sims
        .loads
        .iter()
        .map(|v| {
            v.iter()
                .map(|l| l.as_ref().filter(|l| l.failed == 0).map(|l| l.page_ms))
                .collect()
        })
        .collect();
    let protocols: Vec<ProtoPage> = pools
        .iter()
        .zip(sims.loads)
        .zip(sims.errors)
        .map(|((pool, l), e)| proto_page(pool.proto, pool, l, e))
        .collect();
    let find = |p: LabProtocol| pools.iter().position(|x| x.proto == p);
    let decisions = loss_pairs()
        .into_iter()
        .filter_map(|(a, b)| {
            let (ia, ib) = (find(a)?, find(b)?);
            Some(decide(
                a,
                b,
                &by_round[ia],
                &by_round[ib],
                equivalence,
                profile.name(),
            ))
        })
        .collect();
    LossLevel {
        profile,
        loss_pct: profile.loss() * 100.0,
        link,
        page_ci: protocols.iter().map(page_ci).collect(),
        protocols,
        decisions,
        link_counts: LinkLoss {
            tcp_chunks_lost: after.tcp_chunks_lost - before.tcp_chunks_lost,
            tcp_chunks: after.tcp_chunks - before.tcp_chunks,
            udp_datagrams_lost: after.udp_datagrams_lost - before.udp_datagrams_lost,
            udp_datagrams: after.udp_datagrams - before.udp_datagrams,
            path: after.path.zip(before.path).map(|(a, b)| a.since(&b)),
        },
        path_by_protocol: super::paths::per_protocol(pools, per),
    }
}

/// Runs one load and adds what the path counted meanwhile to `sum`.
pub(super) fn path_of_load<T>(
    counts: &mut dyn FnMut() -> LinkLoss,
    sum: &mut Option<PathCounters>,
    load: impl FnOnce() -> T,
) -> T {
    let before = counts().path;
    let out = load();
    if let (Some(b), Some(a)) = (before, counts().path) {
        let d = a.since(&b);
        *sum = Some(sum.map_or(d, |s| s.plus(&d)));
    }
    out
}

/// Lines of what the path counted at each level, in total and per protocol (the verbose
/// text and the HTML report).
pub fn path_lines(levels: &[LossLevel]) -> Vec<String> {
    let mut out = Vec::new();
    for l in levels {
        if let Some(c) = &l.link_counts.path {
            out.push(format!(
                "loss {}: {}",
                fmt_pct(l.loss_pct / 100.0),
                c.describe()
            ));
        }
        for p in &l.path_by_protocol {
            out.push(format!(
                "loss {} {}: {}",
                fmt_pct(l.loss_pct / 100.0),
                p.proto.label(),
                p.counters.describe()
            ));
        }
    }
    out
}

/// `0%`, `1%`, `3%`.
pub fn fmt_pct(loss: f64) -> String {
    format!("{}%", (loss * 1000.0).round() / 10.0)
}

/// The per-level table: page time (median and CI) per protocol, then the decisions.
pub fn render(levels: &[LossLevel]) -> String {
    use crate::fmt;
    let mut out = String::new();
    let protos: Vec<LabProtocol> = levels
        .first()
        .map(|l| l.protocols.iter().map(|p| p.proto).collect())
        .unwrap_or_default();
    let mut t = vec![vec!["loss".to_owned()]];
    for p in &protos {
        t[0].push(format!(">{} (95% CI)", p.label()));
    }
    for l in levels {
        let mut row = vec![fmt_pct(l.loss_pct / 100.0)];
        for c in &l.page_ci {
            row.push(c.page_ms.map_or_else(
                || "-".into(),
                |e| {
                    format!(
                        "{} ({}–{})",
                        fmt::ms(e.median),
                        fmt::ms(e.lo),
                        fmt::ms(e.hi)
                    )
                },
            ));
        }
        t.push(row);
    }
    out.push_str(&fmt::table(&t));
    let mut d = vec![vec![
        "loss".to_owned(),
        "pair".into(),
        "page time ratio (95% CI)".into(),
        "verdict".into(),
        "lost by the path".into(),
    ]];
    for l in levels {
        for x in &l.decisions {
            d.push(decision_cells(l, x).to_vec());
        }
    }
    if d.len() > 1 {
        out.push('\n');
        out.push_str(&fmt::table(&d));
    }
    for line in path_lines(levels) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The cells of decision `x` of level `l` in the decision tables (text and HTML): the loss
/// level, the pair, the ratio with its CI, the verdict, and what the link lost of what it
/// carried (TCP chunks / UDP datagrams).
pub fn decision_cells(l: &LossLevel, x: &PageDecision) -> [String; 5] {
    [
        fmt_pct(l.loss_pct / 100.0),
        format!("{}/{}", x.a.name(), x.b.name()),
        x.ratio
            .map_or_else(|| "-".into(), |r| crate::compare::verdicts::ratio_text(&r)),
        decision_text(x),
        match &l.link_counts.path {
            Some(c) => c.brief(),
            None => format!(
                "{} of {} TCP chunks / {} of {} UDP datagrams",
                l.link_counts.tcp_chunks_lost,
                l.link_counts.tcp_chunks,
                l.link_counts.udp_datagrams_lost,
                l.link_counts.udp_datagrams
            ),
        },
    ]
}

/// The verdict in compare's words ([`crate::compare::verdicts::verdict_words`]): `h3 -20%
/// (-25…-15%)` (a win: the faster protocol and its page time over the other's), `slight: h3
/// -2.1% (-4.0…-0.3%)`, `parity h3/h2 +0.4% (…)`, `undecided h3/h2 (-4.0…+6.0%) ≈12 more`.
pub fn decision_text(d: &PageDecision) -> String {
    let Some(r) = &d.ratio else {
        return "undecided (no paired rounds)".into();
    };
    let better_a = d.better.map(|b| b == d.a);
    let names = (d.a.name(), d.b.name());
    crate::compare::verdicts::verdict_words(d.outcome, names, r, better_a, d.more_rounds, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_pair_loads_by_round() {
        // HTTP/3 at 0.80 of HTTP/2's page time in every round, with round-to-round drift
        // both share: a win for h3.
        let h2: Vec<Option<f64>> = (0..8).map(|i| Some(500.0 + 40.0 * f64::from(i))).collect();
        let h3: Vec<Option<f64>> = h2.iter().map(|v| v.map(|x| x * 0.8)).collect();
        let d = decide(LabProtocol::H3, LabProtocol::H2, &h3, &h2, 0.03, "t");
        assert_eq!(d.outcome, Outcome::Win);
        assert_eq!(d.winner, Some(LabProtocol::H3));
        let r = d.ratio.unwrap();
        assert!((r.median - 0.8).abs() < 1e-9 && r.n == 8);
        // The same protocol twice: parity, no winner.
        let d = decide(LabProtocol::H2, LabProtocol::H1Tls, &h2, &h2, 0.03, "t");
        assert_eq!((d.outcome, d.winner), (Outcome::Parity, None));
        // Five rounds cannot decide; a failed load leaves its round out.
        let d = decide(
            LabProtocol::H3,
            LabProtocol::H2,
            &h3[..5],
            &h2[..5],
            0.03,
            "t",
        );
        assert_eq!(d.outcome, Outcome::Undecided);
        let mut gap = h3.clone();
        gap[2] = None;
        let d = decide(LabProtocol::H3, LabProtocol::H2, &gap, &h2, 0.03, "t");
        assert_eq!(d.ratio.unwrap().n, 7);
        assert_eq!(d.outcome, Outcome::Win);
    }

    #[test]
    fn loss_verdicts_use_compares_four_outcome_words_and_pair_names() {
        let h2: Vec<Option<f64>> = (0..8).map(|i| Some(500.0 + 40.0 * f64::from(i))).collect();
        let scaled = |f: f64| h2.iter().map(|v| v.map(|x| x * f)).collect::<Vec<_>>();
        let d = decide(
            LabProtocol::H3,
            LabProtocol::H2,
            &scaled(0.8),
            &h2,
            0.03,
            "t",
        );
        assert_eq!(decision_text(&d), "h3 -20% (-20…-20%)");
        // HTTP/2 slower by 2%, inside the 3% band but not 1.0: slight, HTTP/3 faster.
        let jitter: Vec<Option<f64>> = h2
            .iter()
            .enumerate()
            .map(|(i, v)| v.map(|x| x * (0.975 + 0.005 * (i % 3) as f64)))
            .collect();
        let d = decide(LabProtocol::H3, LabProtocol::H2, &jitter, &h2, 0.02, "t");
        assert_eq!(d.outcome, Outcome::Slight, "{d:?}");
        assert_eq!(d.better, Some(LabProtocol::H3));
        assert!(
            decision_text(&d).starts_with("slight: h3 -"),
            "{}",
            decision_text(&d)
        );
        let d = decide(LabProtocol::H2, LabProtocol::H1Tls, &h2, &h2, 0.03, "t");
        assert!(
            decision_text(&d).starts_with("parity h2/h1-tls +0.0%"),
            "{}",
            decision_text(&d)
        );
        let d = decide(
            LabProtocol::H3,
            LabProtocol::H2,
            &h2[..5],
            &h2[..5],
            0.03,
            "t",
        );
        assert!(
            decision_text(&d).starts_with("undecided h3/h2 ("),
            "{}",
            decision_text(&d)
        );
        // The pairs are the lab's table.
        assert_eq!(loss_pairs().len(), PAIRS.len());
    }

    #[test]
    fn pairs_and_labels() {
        assert_eq!(
            loss_pairs(),
            vec![
                (LabProtocol::H2, LabProtocol::H1Tls),
                (LabProtocol::H2c, LabProtocol::H1),
                (LabProtocol::H3, LabProtocol::H2)
            ]
        );
        assert_eq!(fmt_pct(0.03), "3%");
        assert_eq!(fmt_pct(0.0), "0%");
        assert_eq!(fmt_pct(0.005), "0.5%");
    }
}
