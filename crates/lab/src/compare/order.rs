//! The order in which a round measures a condition's arms ([`PAIR_ORDER`]); the rotation
//! and reversal from round to round are [`crate::kernel::order::round_position`]'s.

use super::matrix::CellKey;
use crate::proto::LabProtocol;

/// The measuring order of a condition's arms: the arms of each decision pair next to each
/// other (`h1-tls`, `h2`, `h3`, then `h1`, `h2c` and its A/A arm, then `h1.0`). A decision
/// compares two arms of the same round, and the closer in time their windows, the more of
/// the machine's slow and fast spells they share: on the kept idle `--quick` runs
/// (loopback, 6 arms, 5 conditions of 9–10 rounds, two runs), the SD of the difference of
/// two windows' log deviations from their cells' medians was 0.107–0.127 (req/s) and
/// 0.078–0.090 (server CPU per request) for neighbours in a round, 0.128–0.140 and
/// 0.098–0.107 five windows apart. The rotation of [`crate::kernel::order::round_position`] keeps
/// its balance whatever the order; a pair is split across a round's two ends only in the
/// rounds that start between them.
pub const PAIR_ORDER: [LabProtocol; 6] = [
    LabProtocol::H1Tls,
    LabProtocol::H2,
    LabProtocol::H3,
    LabProtocol::H1,
    LabProtocol::H2c,
    LabProtocol::H1Close,
];

/// Sorts the cells `idxs` of one condition into [`PAIR_ORDER`] (then by arm; stable), with
/// `key` giving each index's cell.
pub fn pair_order<'k>(idxs: &mut [usize], key: impl Fn(usize) -> Option<&'k CellKey>) {
    idxs.sort_by_key(|&i| {
        key(i).map_or((PAIR_ORDER.len(), 0), |k| {
            let rank = PAIR_ORDER
                .iter()
                .position(|&p| p == k.proto)
                .unwrap_or(PAIR_ORDER.len());
            (rank, k.arm)
        })
    });
}

#[cfg(test)]
mod tests {
    use super::pair_order;
    use crate::compare::matrix::CellKey;
    use crate::proto::LabProtocol;

    #[test]
    fn the_arms_of_a_pair_are_measured_next_to_each_other() {
        let plan = crate::compare::CompareConfig::preset(crate::compare::Preset::Tiny)
            .axes
            .plan();
        let base = plan.cells[0].clone();
        let keys: Vec<CellKey> = [
            (LabProtocol::H1, 0),
            (LabProtocol::H1Close, 0),
            (LabProtocol::H1Tls, 0),
            (LabProtocol::H2, 0),
            (LabProtocol::H2c, 0),
            (LabProtocol::H2c, 1),
            (LabProtocol::H3, 0),
        ]
        .into_iter()
        .map(|(proto, arm)| CellKey {
            proto,
            arm,
            ..base.clone()
        })
        .collect();
        let mut idxs: Vec<usize> = (0..keys.len()).collect();
        pair_order(&mut idxs, |i| keys.get(i));
        let order: Vec<(LabProtocol, u32)> =
            idxs.iter().map(|&i| (keys[i].proto, keys[i].arm)).collect();
        assert_eq!(
            order,
            vec![
                (LabProtocol::H1Tls, 0),
                (LabProtocol::H2, 0),
                (LabProtocol::H3, 0),
                (LabProtocol::H1, 0),
                (LabProtocol::H2c, 0),
                (LabProtocol::H2c, 1),
                (LabProtocol::H1Close, 0),
            ]
        );
        // Within a round the pairs are neighbours unless the rotation starts between them.
        let n = idxs.len();
        let adjacent = |round: u32, a: usize, b: usize| {
            let pos: Vec<usize> = (0..n)
                .map(|k| crate::kernel::order::round_position(k, round, n))
                .collect();
            let (pa, pb) = (
                pos.iter().position(|&x| x == a).unwrap(),
                pos.iter().position(|&x| x == b).unwrap(),
            );
            pa.abs_diff(pb) == 1
        };
        let together = (0..2 * n as u32).filter(|&r| adjacent(r, 0, 1)).count();
        assert_eq!(
            together,
            2 * n - 2,
            "h1-tls and h2 split only when a round starts at h2"
        );
    }
}
