//! The decision table as terminal text: every cell leads with the words a reader needs
//! (`h1 +40% (+36…+47%)`: the better arm and how much better, with the 95% CI;
//! `slight: h1 -2.9% (-5.3…-0.6%)`; `parity +0.4% (-1.0…+1.9%)`; `undecided (-4.0…+6.0%)
//! ≈12 more`), and every line fits [`fmt::WIDTH`] columns.

use super::decision::{families, Arm, Bands, Decision, DecisionRow, Metric};
use super::matrix::{MatrixPlan, Section};
use crate::fmt;
use crate::stats::ci::{Estimate, Outcome, MAX_ROUNDS_ESTIMATE};

/// `+18% (+12…+25%)`: the change `ratio - 1` with its CI.
pub fn ratio_text(r: &Estimate) -> String {
    format!(
        "{} ({}…{})",
        fmt::pct(r.median - 1.0),
        fmt::pct(r.lo - 1.0),
        fmt::pct(r.hi - 1.0)
    )
}

/// `(-4.0…+6.0%)`: the CI of the change alone.
fn range_text(r: &Estimate) -> String {
    format!(
        "({}…{})",
        fmt::pct(r.lo - 1.0).trim_end_matches('%'),
        fmt::pct(r.hi - 1.0)
    )
}

/// `+42% (+36…+47%)`: the change with its CI, compactly (the decision table's cells).
fn change_text(r: &Estimate) -> String {
    format!("{} {}", fmt::pct(r.median - 1.0), range_text(r))
}

/// `h1`, `h2c#2`: an arm by its protocol's flag name.
pub fn arm_name(a: Arm) -> String {
    if a.arm == 0 {
        a.proto.name().to_owned()
    } else {
        format!("{}#{}", a.proto.name(), a.arm + 1)
    }
}

/// The decision's ratio turned to the better arm (its value over the other's), with that
/// arm; `None` without a direction.
pub fn oriented(d: &Decision) -> Option<(Arm, Estimate)> {
    let (better, r) = (d.better?, d.ratio?);
    Some(if better == d.a {
        (better, r)
    } else {
        (better, inverse(&r))
    })
}

/// `b / a` from `a / b`.
fn inverse(r: &Estimate) -> Estimate {
    Estimate {
        median: 1.0 / r.median,
        lo: 1.0 / r.hi,
        hi: 1.0 / r.lo,
        n: r.n,
    }
}

/// `≈12 more`, `many more` (the rounds an undecided decision roughly needs).
fn more_text(more_rounds: Option<usize>) -> String {
    match more_rounds {
        Some(n) if n >= MAX_ROUNDS_ESTIMATE => "many more".into(),
        Some(n) => format!("≈{n} more"),
        None => String::new(),
    }
}

/// A decision in words first: `h1 +40% (+36…+47%)` (a win: the better arm, its value over
/// the other's), `slight: h1 -2.9% (-5.3…-0.6%)`, `parity +0.4% (-1.0…+1.9%)` (`a` over
/// `b`), `undecided (-4.0…+6.0%) ≈12 more` (roughly how many more rounds would tell); an
/// A/A control never names a winner (`A/A parity +0.4% (…)`). With `pair`, parity and
/// undecided name the ratio (`h2c/h1`): the verdicts' columns do not say which arms.
pub fn decision_text(d: &Decision, pair: bool) -> String {
    let Some(r) = &d.ratio else {
        return "undecided (no paired rounds)".into();
    };
    if d.control {
        return format!("A/A {} {}", d.outcome.name(), change_text(r));
    }
    let names = (arm_name(d.a), arm_name(d.b));
    let better_a = d.better.map(|b| b == d.a);
    verdict_words(
        d.outcome,
        (&names.0, &names.1),
        r,
        better_a,
        d.more_rounds,
        pair,
    )
}

/// The words of a verdict on the ratio `r` of arm `a` over arm `b` (their names), for any
/// experiment's decision (compare's cells, `page --loss`'s page times): a win names the
/// better arm and its value over the other's, a slight difference the same after
/// `slight:`, parity and undecided the ratio `a / b` (named with `pair`), undecided with
/// roughly how many more rounds would tell (`more_rounds`). `better_a`: whether `a` is the
/// better arm, when the direction is known.
pub fn verdict_words(
    outcome: Outcome,
    (a, b): (&str, &str),
    r: &Estimate,
    better_a: Option<bool>,
    more_rounds: Option<usize>,
    pair: bool,
) -> String {
    let names = if pair {
        format!("{a}/{b} ")
    } else {
        String::new()
    };
    let oriented = better_a.map(|is_a| if is_a { (a, *r) } else { (b, inverse(r)) });
    match (outcome, oriented) {
        (Outcome::Win, Some((arm, e))) => format!("{arm} {}", change_text(&e)),
        (Outcome::Slight, Some((arm, e))) => format!("slight: {arm} {}", change_text(&e)),
        (Outcome::Parity, _) => format!("parity {names}{}", change_text(r)),
        _ => format!(
            "undecided {names}{} {}",
            range_text(r),
            more_text(more_rounds)
        )
        .trim_end()
        .to_owned(),
    }
}

/// `40 win, 20 slight, 60 parity, 30 undecided (20%)`.
pub fn counts_text(n: [usize; 4]) -> String {
    let total: usize = n.iter().sum();
    let mut parts: Vec<String> = Outcome::ALL
        .iter()
        .zip(n)
        .map(|(o, k)| format!("{k} {}", o.name()))
        .collect();
    if total > 0 {
        if let Some(last) = parts.last_mut() {
            last.push_str(&format!(" ({:.0}%)", 100.0 * n[3] as f64 / total as f64));
        }
    }
    parts.join(", ")
}

fn band_text(b: f64) -> String {
    fmt::pct(b).trim_start_matches('+').to_owned()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The decision table as text: a block per section (the best arm against the runner-up),
/// a table per family of comparisons (like-for-like pairs, A/A controls), and the count of
/// each outcome; `rounds` is the most rounds any condition was measured in. Every line fits
/// [`fmt::WIDTH`] columns.
pub fn render(rows: &[DecisionRow], plan: &MatrixPlan, rounds: u32, bands: &Bands) -> String {
    let mut out = String::new();
    let b = &plan.base;
    let intro = format!(
        "Decision table (up to {rounds} paired rounds). Each cell: the better arm and its \
         value over the other's, the median of the per-round ratios with its 95% CI. Against \
         the equivalence band (req/s ±{}, p99 ±{}, server CPU ±{}): a win lies outside it; \
         slight: the direction is known but the CI crosses the band's edge; parity: inside \
         it; undecided: the CI contains no change and reaches outside the band (≈N more: \
         roughly the rounds that would tell).\nbase: c={} concurrent requests, {} \
         stream(s)/connection, request headers: {}, link: {}",
        band_text(bands.throughput),
        band_text(bands.p99),
        band_text(bands.server_cost),
        b.concurrency,
        b.streams,
        b.headers,
        b.link,
    );
    out.push_str(&fmt::wrap(&intro, fmt::WIDTH, ""));
    out.push('\n');
    let mut sections: Vec<Section> = rows.iter().map(|r| r.section).collect();
    sections.dedup();
    for s in sections {
        let mut t: Vec<Vec<String>> = vec![vec![
            "condition".into(),
            "req/s".into(),
            "p99".into(),
            "server CPU/req".into(),
        ]];
        for r in rows.iter().filter(|r| r.section == s) {
            let mut row = vec![r.label.clone()];
            for m in Metric::ALL {
                row.push(
                    r.verdict(m)
                        .map_or_else(|| "-".into(), |d| decision_text(d, true)),
                );
            }
            t.push(row);
        }
        out.push_str(&format!(
            "\n{} (best against runner-up)\n",
            capitalize(s.title())
        ));
        out.push_str(&fmt::fit_table(&t, fmt::WIDTH));
    }
    for family in families() {
        out.push_str(&family_table(rows, family));
    }
    let n = super::decision::outcome_counts(rows, false);
    if n.iter().sum::<usize>() > 0 {
        out.push_str(&format!("\nOutcomes: {}\n", counts_text(n)));
    }
    let c = super::decision::outcome_counts(rows, true);
    if c.iter().sum::<usize>() > 0 {
        out.push_str(&format!("A/A controls: {}\n", counts_text(c)));
    }
    out
}

/// The table of one family of comparisons (a row per condition and pair, a column per
/// metric); empty when no condition has one.
pub fn family_table(rows: &[DecisionRow], family: &str) -> String {
    let mut t: Vec<Vec<String>> = vec![vec![
        "condition".into(),
        "pair".into(),
        "req/s".into(),
        "p99".into(),
        "server CPU/req".into(),
    ]];
    for r in rows {
        for c in r.family(family) {
            let mut row = vec![
                r.label.clone(),
                format!("{}/{}", arm_name(c.a), arm_name(c.b)),
            ];
            for m in Metric::ALL {
                row.push(
                    c.decision(m)
                        .map_or_else(|| "-".into(), |d| decision_text(d, false)),
                );
            }
            t.push(row);
        }
    }
    if t.len() == 1 {
        return String::new();
    }
    let title = if family == super::decision::CONTROL {
        "A/A controls (the same protocol measured as two arms: never a winner; a win or many \
         slight ones mean the machine is noisier than the intervals say)"
            .to_owned()
    } else {
        format!("{family}, like for like (the first of the pair over the second)")
    };
    format!(
        "\n{}\n{}",
        fmt::wrap(&title, fmt::WIDTH, ""),
        fmt::fit_table(&t, fmt::WIDTH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::decision::{decision_of, PAIRS};
    use crate::proto::LabProtocol;

    fn d(a: LabProtocol, b: LabProtocol, metric: Metric, lo: f64, hi: f64) -> Decision {
        let (a, b) = (
            Arm { proto: a, arm: 0 },
            Arm {
                proto: b,
                arm: u32::from(a == b),
            },
        );
        let r = Estimate {
            median: (lo + hi) / 2.0,
            lo,
            hi,
            n: 9,
        };
        let band = Bands::default().of(metric);
        decision_of(metric, a, b, Some(r), band)
    }

    #[test]
    fn cells_lead_with_words() {
        use LabProtocol::*;
        let w = d(H1, H2c, Metric::Throughput, 1.36, 1.47);
        assert_eq!(w.outcome, Outcome::Win);
        assert_eq!(decision_text(&w, false), "h1 +42% (+36…+47%)");
        // Lower is better: the pair's second arm is cheaper; its value over the other's.
        let s = d(H2c, H1, Metric::ServerCost, 1.006, 1.056);
        assert_eq!(s.outcome, Outcome::Slight);
        assert_eq!(s.better.map(|a| a.proto), Some(H1));
        assert!(s.winner.is_none());
        let t = decision_text(&s, false);
        assert!(t.starts_with("slight: h1 -3."), "{t}");
        let p = d(H2c, H1, Metric::P99, 0.95, 1.05);
        assert_eq!(p.outcome, Outcome::Parity, "p99's band is ±10%");
        assert_eq!(decision_text(&p, true), "parity h2c/h1 +0.0% (-5.0…+5.0%)");
        let u = d(H2c, H1, Metric::Throughput, 0.96, 1.04);
        assert_eq!(u.outcome, Outcome::Undecided);
        assert_eq!(decision_text(&u, false), "undecided (-4.0…+4.0%) ≈7 more");
        let c = d(H2c, H2c, Metric::Throughput, 1.05, 1.10);
        assert!(c.control && c.winner.is_none() && c.better.is_none());
        assert!(decision_text(&c, false).starts_with("A/A win"));
        assert_eq!(
            counts_text([1, 2, 3, 4]),
            "1 win, 2 slight, 3 parity, 4 undecided (40%)"
        );
        assert_eq!(PAIRS.len(), 3);
    }

    #[test]
    fn the_table_fits_the_terminal() {
        let mut cfg = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny);
        cfg.axes.protocols = vec![LabProtocol::H1, LabProtocol::H2c, LabProtocol::H2c];
        let plan = cfg.axes.plan();
        let mut cells: Vec<crate::compare::run::CellResult> = plan
            .cells
            .iter()
            .map(|k| crate::compare::run::CellResult::new(k.clone(), &cfg.timing))
            .collect();
        for c in &mut cells {
            for r in 0..9u32 {
                let x = 1.0 + 0.07 * f64::from(r % 3);
                c.runs.push(crate::compare::run::RunSample::synthetic(
                    r,
                    9000.0 * x,
                    5.0 * x,
                    12.0 / x,
                ));
            }
            c.refresh();
        }
        let rows = crate::compare::decision::decide_all(&plan, &cells, &Bands::default());
        let text = render(&rows, &plan, 9, &Bands::default());
        assert!(text.contains("A/A controls"), "{text}");
        assert!(text.contains("HTTP/2 vs HTTP/1.1, like for like"), "{text}");
        for l in text.lines() {
            assert!(l.chars().count() <= fmt::WIDTH, "{l}");
        }
    }
}
