//! The order of a round's runs: forwards and backwards in turn, rotated from round to round,
//! so that whatever one run leaves behind for the next favours no arm.

/// Where the `k`-th run of round `round` of `n` arms comes from (an index into the arms):
/// round `2m` runs the arms forwards starting at arm `m` (rotated), round `2m + 1` runs the
/// same order backwards. Rotation alone gives every arm the same predecessor in most rounds
/// (an A/A control's second arm always ran right after its first), so whatever a run leaves
/// behind for the next (warm caches, a busy server thread, TCP state) favoured the same arm
/// every round — a bias pairing cannot remove; with each order followed by its reverse,
/// every arm precedes each neighbour exactly as often as it follows it.
pub fn round_position(k: usize, round: u32, n: usize) -> usize {
    let n = n.max(1);
    let m = (round / 2) as usize % n;
    if round % 2 == 0 {
        (m + k) % n
    } else {
        (m + n - 1 - k % n) % n
    }
}

/// The order of round `round` of the cells `idxs` (in `compare::order::pair_order`): the
/// cells for which `last` holds — HTTP/1.0, which opens and closes a connection per request —
/// at the end of the round, the others in the order of [`round_position`] among themselves.
/// The run right after an HTTP/1.0 window is slower (most likely the teardown of the few
/// hundred connections HTTP/1.0 opened and closed): in the kept runs of a quiet machine's repro pairs the arm
/// following HTTP/1.0 had a p99 4–25% above its A/A twin's. Rotated with the others,
/// HTTP/1.0 was always followed by one of its two neighbours in the order (`h2c#2` in
/// backward rounds, `h1-tls` in forward ones), which biased their decisions, and an A/A
/// control "won" on p99 (+8.4%, +3.1…+12.5%). Last in every round, it is followed by the next round's first arm, which
/// the rotation changes every round, and the next run waits longer ([`super::policy::RunPolicy::settle_after_close`]).
pub fn round_order(idxs: &[usize], round: u32, last: impl Fn(usize) -> bool) -> Vec<usize> {
    let (tail, rotated): (Vec<usize>, Vec<usize>) = idxs.iter().partition(|&&i| last(i));
    let m = rotated.len();
    (0..m)
        .map(|k| rotated[round_position(k, round, m)])
        .chain(tail)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{round_order, round_position};

    #[test]
    fn rounds_rotate_and_alternate_direction() {
        let order = |round| {
            (0..4)
                .map(|k| round_position(k, round, 4))
                .collect::<Vec<_>>()
        };
        assert_eq!(order(0), vec![0, 1, 2, 3]);
        assert_eq!(order(1), vec![3, 2, 1, 0]);
        assert_eq!(order(2), vec![1, 2, 3, 0]);
        assert_eq!(order(3), vec![0, 3, 2, 1]);
        // Every round is a permutation.
        for round in 0..9 {
            let mut o = order(round);
            o.sort_unstable();
            assert_eq!(o, vec![0, 1, 2, 3]);
        }
        // In every pair of rounds, each arm runs right after each other as often as before it.
        for (a, b) in [(0, 1), (1, 2), (0, 3), (2, 0)] {
            let (mut ab, mut ba) = (0, 0);
            for round in 0..6 {
                for w in order(round).windows(2) {
                    ab += usize::from(w == [a, b]);
                    ba += usize::from(w == [b, a]);
                }
            }
            assert_eq!(ab, ba, "{a} {b}");
        }
        assert_eq!(round_position(0, 5, 1), 0);
    }

    #[test]
    fn http10_runs_last_in_every_round_and_every_other_arm_follows_it_in_turn() {
        // Cells 0..5 in pair order; cell 4 is HTTP/1.0.
        let idxs = [10, 11, 12, 13, 14];
        let close = |i: usize| i == 14;
        let mut first = std::collections::HashMap::new();
        for round in 0..8 {
            let o = round_order(&idxs, round, close);
            assert_eq!(o.len(), 5);
            assert_eq!(o[4], 14, "round {round}: {o:?}");
            // The others as round_position orders four arms.
            let rest: Vec<usize> = (0..4).map(|k| 10 + round_position(k, round, 4)).collect();
            assert_eq!(&o[..4], &rest[..]);
            *first.entry(o[0]).or_insert(0) += 1;
        }
        // The next round's first arm (the one after HTTP/1.0) is each arm equally often.
        assert_eq!(first.len(), 4, "{first:?}");
        assert!(first.values().all(|&c| c == 2), "{first:?}");
        // Without HTTP/1.0 the order is round_position's.
        let o = round_order(&idxs[..4], 3, close);
        assert_eq!(
            o,
            (0..4)
                .map(|k| 10 + round_position(k, 3, 4))
                .collect::<Vec<_>>()
        );
    }
}
