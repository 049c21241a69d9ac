//! Slow spells, whatever the experiment: rounds in which the machine itself ran slower for
//! every arm. The rule and its measurements are `compare`'s (`compare/spell.rs` explains
//! them): on the 2-core VM the whole machine sometimes runs a workload two to three times
//! slower for seconds, with no sign in `/proc`, and not by the same factor for every arm, so
//! a spell does not cancel in the per-round ratio.
//!
//! A round is a spell when **every** arm measured in it cost at least [`SPELL_FACTOR`] times
//! its own lower quartile over the rounds (a CPU time per request, from the per-thread CPU
//! clocks of [`super::clocks`]). The rule looks only at how all arms moved together, never at
//! which arm is ahead, so it cannot favour one. It is only meaningful where the CPU per
//! request is work, not wake-ups: on an emulated link the threads mostly wait and their CPU
//! per request varies by more than the factor from round to round.

/// How much costlier than its lower quartile every arm of a round must be for the round to
/// be a slow spell. Per-round noise of one arm on this machine is 5–10% (SD of the log ratio
/// of an A/A pair), single slow windows 10–30%; spells were 1.9–2.8×.
pub const SPELL_FACTOR: f64 = 1.3;

/// The fewest rounds of every arm before spells are looked for (a quartile of fewer is not
/// a reference).
pub const MIN_SPELL_ROUNDS: usize = 4;

/// The lower quartile of `v` (linear interpolation), `None` when empty.
fn lower_quartile(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let k = (v.len() - 1) as f64 * 0.25;
    let i = k.floor() as usize;
    let f = k - i as f64;
    let hi = v[(i + 1).min(v.len() - 1)];
    Some(v[i] * (1.0 - f) + hi * f)
}

/// The rounds that were slow spells, from each arm's cost by round (`costs[arm][round]`,
/// `None`: no cost that round). None when fewer than two arms, or an arm has fewer than
/// [`MIN_SPELL_ROUNDS`] costs; a round in which some arm has no cost is not a spell.
pub fn spell_rounds(costs: &[Vec<Option<f64>>]) -> Vec<usize> {
    let usable = |v: &Option<f64>| v.filter(|c| c.is_finite() && *c > 0.0);
    if costs.len() < 2 {
        return Vec::new();
    }
    let mut refs = Vec::with_capacity(costs.len());
    for arm in costs {
        let mut v: Vec<f64> = arm.iter().filter_map(usable).collect();
        if v.len() < MIN_SPELL_ROUNDS {
            return Vec::new();
        }
        refs.push(lower_quartile(&mut v).unwrap_or(f64::NAN));
    }
    let rounds = costs.iter().map(Vec::len).max().unwrap_or(0);
    (0..rounds)
        .filter(|&round| {
            costs.iter().zip(&refs).all(|(arm, &reference)| {
                arm.get(round)
                    .and_then(usable)
                    .is_some_and(|c| c >= SPELL_FACTOR * reference)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().map(|&x| Some(x)).collect()
    }

    #[test]
    fn a_round_in_which_every_arm_ran_slower_is_a_spell_and_one_slow_arm_is_not() {
        // Round 3: both arms twice as costly (a spell). Round 5: only the first (one arm's
        // slow window). Round 7: the second arm 25% up with the first (below the factor).
        let a = some(&[10.0, 10.2, 9.9, 20.0, 10.1, 19.0, 10.0, 12.5, 10.1]);
        let b = some(&[12.0, 12.1, 11.9, 26.0, 12.2, 12.0, 12.1, 15.0, 11.8]);
        assert_eq!(spell_rounds(&[a.clone(), b.clone()]), vec![3]);
        // A round without the second arm's cost is not judged a spell.
        let mut gap = b.clone();
        gap[3] = None;
        assert_eq!(spell_rounds(&[a.clone(), gap]), Vec::<usize>::new());
        // One arm, or too few rounds: nothing is judged.
        assert!(spell_rounds(std::slice::from_ref(&a)).is_empty());
        assert!(spell_rounds(&[a[..3].to_vec(), b[..3].to_vec()]).is_empty());
    }

    #[test]
    fn an_a_a_pair_leaves_the_same_rounds_whichever_slowed_more() {
        // Two identical arms; rounds 2 and 6 in a spell where one slowed 2.7× and the
        // other 2.0×.
        let a = some(&[10.0, 10.1, 27.0, 9.9, 10.0, 10.2, 27.5, 10.1, 9.8]);
        let b = some(&[10.1, 10.0, 20.0, 10.0, 9.9, 10.1, 20.5, 10.0, 10.1]);
        assert_eq!(spell_rounds(&[a.clone(), b.clone()]), vec![2, 6]);
        assert_eq!(spell_rounds(&[b, a]), vec![2, 6]);
    }

    #[test]
    fn the_lower_quartile_interpolates() {
        assert_eq!(lower_quartile(&mut []), None);
        assert_eq!(lower_quartile(&mut [4.0]), Some(4.0));
        assert_eq!(lower_quartile(&mut [5.0, 1.0, 3.0, 2.0, 4.0]), Some(2.0));
        assert_eq!(lower_quartile(&mut [1.0, 2.0, 3.0, 4.0]), Some(1.75));
    }
}
