//! Page-time ratios: which protocol loaded faster and by how much (medians of the loads).

use serde::Serialize;

use super::ProtoPage;
use crate::proto::LabProtocol;

/// Which protocol was faster and by how much.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// The faster protocol.
    pub faster: LabProtocol,
    /// The slower protocol.
    pub slower: LabProtocol,
    /// Slower median / faster median.
    pub ratio: f64,
    /// The faster median (ms).
    pub faster_ms: f64,
    /// The slower median (ms).
    pub slower_ms: f64,
}

impl Ratio {
    /// The ratio of the slowest to the fastest median among `items`.
    pub fn of(items: &[(LabProtocol, f64)]) -> Option<Ratio> {
        let ok: Vec<&(LabProtocol, f64)> = items.iter().filter(|x| x.1 > 0.0).collect();
        let fast = ok.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
        let slow = ok.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        if fast.0 == slow.0 {
            return None;
        }
        Some(Ratio {
            faster: fast.0,
            slower: slow.0,
            ratio: slow.1 / fast.1,
            faster_ms: fast.1,
            slower_ms: slow.1,
        })
    }

    /// HTTP/3 against HTTP/2 among `pages` ([`Ratio::of`] their medians), unless `overall`
    /// is already that pair.
    pub fn h3_vs_h2(pages: &[ProtoPage], overall: Option<&Ratio>) -> Option<Ratio> {
        let pair = [LabProtocol::H2, LabProtocol::H3];
        if overall.is_some_and(|r| pair.contains(&r.faster) && pair.contains(&r.slower)) {
            return None;
        }
        let v: Vec<ProtoPage> = pages
            .iter()
            .filter(|p| pair.contains(&p.proto))
            .cloned()
            .collect();
        (v.len() == 2).then(|| Ratio::of_pages(&v)).flatten()
    }

    /// [`Ratio::of`] the median page load times of `pages` (those that loaded).
    pub fn of_pages(pages: &[ProtoPage]) -> Option<Ratio> {
        let medians: Vec<(LabProtocol, f64)> = pages
            .iter()
            .filter_map(|p| p.page_ms.map(|s| (p.proto, s.median)))
            .collect();
        Ratio::of(&medians)
    }
}
