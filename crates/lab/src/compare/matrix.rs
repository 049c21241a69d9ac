//! Which cells a compare run measures.
//!
//! The full cross product of the default axes is 6 protocols × 7 payloads × 2 header sets ×
//! 3 concurrencies × 2 stream counts × 3 links ≈ 1500 cells — hours. The default design
//! measures every payload at a *base* point (the first header set, the middle concurrency,
//! one stream per connection, the first link) and varies each other axis one at a time on
//! a few *sweep* payloads. `--full` measures the cross product instead.
//!
//! A *condition* is one point of the non-protocol axes; within a condition the protocols
//! are compared. HTTP/1.x cannot multiplex, so in a condition with several streams per
//! connection the HTTP/1.x protocols run with one stream per connection (the same
//! concurrency spread over more connections); such cells are measured once and shared.

use std::collections::HashMap;

use serde::Serialize;

use super::axes::{profile_name, HeaderSet, Payload};
use crate::link::LinkProfile;
use crate::proto::LabProtocol;

/// The axes a compare run spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axes {
    /// Protocols compared in every condition.
    pub protocols: Vec<LabProtocol>,
    /// Payloads of the base sweep.
    pub payloads: Vec<Payload>,
    /// Payloads measured when another axis varies.
    pub sweep_payloads: Vec<Payload>,
    /// Extra request header sets (the first is the base).
    pub headers: Vec<HeaderSet>,
    /// Concurrent requests (the base is 50 if listed, else the first).
    pub concurrency: Vec<u32>,
    /// Streams per connection for HTTP/2 (the base is 1 if listed, else the first).
    pub streams: Vec<u32>,
    /// Link profiles (the first is the base).
    pub links: Vec<LinkProfile>,
    /// Measure the full cross product instead of base + one-axis sweeps.
    pub full: bool,
}

/// Why a condition is in the plan: which axis it varies from the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// The base point, every payload.
    Base,
    /// Concurrency varied.
    Concurrency,
    /// Request headers varied.
    Headers,
    /// Streams per connection varied.
    Streams,
    /// Link profile varied.
    Link,
    /// A point of the full cross product off the base sweeps (`--full`).
    Grid,
}

impl Section {
    /// A heading for tables and the report.
    pub fn title(self) -> &'static str {
        match self {
            Section::Base => "by payload (base conditions)",
            Section::Concurrency => "by concurrency",
            Section::Headers => "with large request headers",
            Section::Streams => "with multiplexing (HTTP/2 streams per connection)",
            Section::Link => "by network (emulated link)",
            Section::Grid => "other combinations",
        }
    }
}

/// One point of the non-protocol axes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Condition {
    /// Response payload.
    pub payload: Payload,
    /// Extra request headers.
    pub headers: HeaderSet,
    /// Concurrent requests in flight.
    pub concurrency: u32,
    /// Streams per connection (HTTP/2; HTTP/1.x always uses 1).
    pub streams: u32,
    /// Link profile.
    #[serde(serialize_with = "profile_name")]
    pub link: LinkProfile,
}

impl Condition {
    /// The settings `proto` really runs with under this condition.
    pub fn effective(&self, proto: LabProtocol) -> CellKey {
        self.effective_arm(proto, 0)
    }

    /// [`Condition::effective`] for the `arm`-th listing of `proto` (an A/A control lists
    /// a protocol twice: two arms, measured separately).
    pub fn effective_arm(&self, proto: LabProtocol, arm: u32) -> CellKey {
        let streams = if proto.multiplexes() { self.streams } else { 1 };
        CellKey {
            cond: Condition {
                streams,
                ..self.clone()
            },
            proto,
            arm,
        }
    }

    /// Connections needed for the concurrency (`ceil(concurrency / streams)`).
    pub fn connections(&self) -> u32 {
        self.concurrency.div_ceil(self.streams.max(1))
    }

    /// A compact description (`/ping c=50 s=1 hdr=none loopback`).
    pub fn describe(&self) -> String {
        format!(
            "{} c={} streams={} headers={} link={}",
            self.payload.label(),
            self.concurrency,
            self.streams,
            self.headers,
            self.link
        )
    }
}

/// One measured cell: a protocol at a condition (with effective settings).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct CellKey {
    /// The condition (with the streams the protocol really uses).
    #[serde(flatten)]
    pub cond: Condition,
    /// The protocol.
    pub proto: LabProtocol,
    /// Which listing of the protocol (0; 1 for the second arm of an A/A control).
    #[serde(skip_serializing_if = "is_zero")]
    pub arm: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl CellKey {
    /// An HTTP/1.1 cell of `payload` on `link` at the base condition's other settings (50
    /// concurrent requests, one stream, no extra headers): for unit tests.
    #[cfg(test)]
    pub(crate) fn h1_for_test(payload: &str, link: crate::link::LinkProfile) -> CellKey {
        CellKey {
            cond: Condition {
                payload: payload.parse().expect("a payload name"),
                headers: super::axes::HeaderSet::None,
                concurrency: 50,
                streams: 1,
                link,
            },
            proto: LabProtocol::H1,
            arm: 0,
        }
    }

    /// The arm's name: the protocol's short label, `#2` for a second arm (`h2c#2`).
    pub fn arm_label(&self) -> String {
        arm_label(self.proto, self.arm)
    }
}

/// `h2c`, or `h2c#2` for the second arm of `h2c`.
pub fn arm_label(proto: LabProtocol, arm: u32) -> String {
    if arm == 0 {
        proto.short().to_owned()
    } else {
        format!("{}#{}", proto.short(), arm + 1)
    }
}

/// A condition of the plan and the cells its protocols use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedCondition {
    /// The condition.
    pub cond: Condition,
    /// Which axis it varies.
    pub section: Section,
    /// `(protocol, index into MatrixPlan::cells)`, one per arm (a protocol listed twice has two
    /// entries; the cells' keys tell the arms apart).
    pub cells: Vec<(LabProtocol, usize)>,
}

/// The cells to measure and the conditions comparing them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatrixPlan {
    /// Unique cells in measuring order.
    pub cells: Vec<CellKey>,
    /// Conditions in report order.
    pub conditions: Vec<PlannedCondition>,
    /// The base point's non-payload settings.
    pub base: Condition,
}

impl Axes {
    fn base_concurrency(&self) -> u32 {
        if self.concurrency.contains(&50) {
            50
        } else {
            self.concurrency.first().copied().unwrap_or(50)
        }
    }

    fn base_streams(&self) -> u32 {
        if self.streams.contains(&1) {
            1
        } else {
            self.streams.first().copied().unwrap_or(1)
        }
    }

    /// Builds the plan (see the module docs).
    pub fn plan(&self) -> MatrixPlan {
        let base_payload = self.payloads.first().cloned().unwrap_or(Payload {
            name: "ping".into(),
            path: "/ping".into(),
        });
        let base = Condition {
            payload: base_payload,
            headers: self.headers.first().copied().unwrap_or(HeaderSet::None),
            concurrency: self.base_concurrency(),
            streams: self.base_streams(),
            link: self.links.first().copied().unwrap_or(LinkProfile::Loopback),
        };
        let mut conds: Vec<(Condition, Section)> = Vec::new();
        let mut push = |c: Condition, s: Section| {
            if !conds.iter().any(|(x, _)| *x == c) {
                conds.push((c, s));
            }
        };
        for p in &self.payloads {
            push(
                Condition {
                    payload: p.clone(),
                    ..base.clone()
                },
                Section::Base,
            );
        }
        if self.full {
            for p in &self.payloads {
                for &h in &self.headers {
                    for &c in &self.concurrency {
                        for &s in &self.streams {
                            for &l in &self.links {
                                let cond = Condition {
                                    payload: p.clone(),
                                    headers: h,
                                    concurrency: c,
                                    streams: s,
                                    link: l,
                                };
                                let section = classify(&cond, &base);
                                push(cond, section);
                            }
                        }
                    }
                }
            }
        } else {
            for p in &self.sweep_payloads {
                let at = Condition {
                    payload: p.clone(),
                    ..base.clone()
                };
                for &c in self.concurrency.iter().filter(|&&c| c != base.concurrency) {
                    push(
                        Condition {
                            concurrency: c,
                            ..at.clone()
                        },
                        Section::Concurrency,
                    );
                }
                for &h in self.headers.iter().filter(|&&h| h != base.headers) {
                    push(
                        Condition {
                            headers: h,
                            ..at.clone()
                        },
                        Section::Headers,
                    );
                }
                if self.protocols.iter().any(|p| p.multiplexes()) {
                    for &s in self.streams.iter().filter(|&&s| s != base.streams) {
                        push(
                            Condition {
                                streams: s,
                                ..at.clone()
                            },
                            Section::Streams,
                        );
                    }
                }
                for &l in self.links.iter().filter(|&&l| l != base.link) {
                    push(
                        Condition {
                            link: l,
                            ..at.clone()
                        },
                        Section::Link,
                    );
                }
            }
        }
        // Sections in a fixed order, base first; payload order within.
        let order = |s: Section| s as u8;
        conds.sort_by_key(|(_, s)| order(*s));
        let mut cells: Vec<CellKey> = Vec::new();
        let mut index: HashMap<CellKey, usize> = HashMap::new();
        let mut conditions = Vec::with_capacity(conds.len());
        for (cond, section) in conds {
            let mut v = Vec::with_capacity(self.protocols.len());
            for (n, &proto) in self.protocols.iter().enumerate() {
                let arm = self.protocols[..n].iter().filter(|&&p| p == proto).count() as u32;
                let key = cond.effective_arm(proto, arm);
                let i = *index.entry(key.clone()).or_insert_with(|| {
                    cells.push(key);
                    cells.len() - 1
                });
                v.push((proto, i));
            }
            conditions.push(PlannedCondition {
                cond,
                section,
                cells: v,
            });
        }
        MatrixPlan {
            cells,
            conditions,
            base,
        }
    }
}

/// The section of a cross-product point: the one axis it differs from the base in, or
/// [`Section::Grid`].
fn classify(c: &Condition, base: &Condition) -> Section {
    let diffs = [
        (c.concurrency != base.concurrency, Section::Concurrency),
        (c.headers != base.headers, Section::Headers),
        (c.streams != base.streams, Section::Streams),
        (c.link != base.link, Section::Link),
    ];
    let mut which = diffs.iter().filter(|(d, _)| *d);
    match (which.next(), which.next()) {
        (None, _) => Section::Base,
        (Some((_, s)), None) => *s,
        _ => Section::Grid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pl(v: &[&str]) -> Vec<Payload> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn default_axes() -> Axes {
        Axes {
            protocols: vec![
                LabProtocol::H1,
                LabProtocol::H1Close,
                LabProtocol::H2,
                LabProtocol::H2c,
            ],
            payloads: pl(&["ping", "json", "1k", "10k", "50k", "100k", "compute"]),
            sweep_payloads: pl(&["json", "100k"]),
            headers: vec![HeaderSet::None, HeaderSet::Large(4)],
            concurrency: vec![10, 50, 200],
            streams: vec![1, 10],
            links: vec![LinkProfile::Loopback, LinkProfile::Lan, LinkProfile::Wan],
            full: false,
        }
    }

    #[test]
    fn default_design_is_base_plus_sweeps() {
        let plan = default_axes().plan();
        assert_eq!(plan.base.concurrency, 50);
        let base = plan
            .conditions
            .iter()
            .filter(|c| c.section == Section::Base)
            .count();
        assert_eq!(base, 7);
        // 7 base + 2 payloads × (2 concurrencies + 1 header set + 1 stream count + 2 links).
        assert_eq!(plan.conditions.len(), 7 + 2 * 6);
        // HTTP/1.x cells of the streams sweep are the base cells: 4 fewer unique cells
        // per sweep payload... 2 HTTP/1.x protocols × 2 payloads shared.
        assert_eq!(plan.cells.len(), 19 * 4 - 4);
        let s = plan
            .conditions
            .iter()
            .find(|c| c.section == Section::Streams)
            .unwrap();
        let h1 = s
            .cells
            .iter()
            .find(|(p, _)| *p == LabProtocol::H1)
            .unwrap()
            .1;
        assert_eq!(plan.cells[h1].cond.streams, 1);
        let h2 = s
            .cells
            .iter()
            .find(|(p, _)| *p == LabProtocol::H2)
            .unwrap()
            .1;
        assert_eq!(plan.cells[h2].cond.streams, 10);
        assert_eq!(plan.cells[h2].cond.connections(), 5);
        // Base first.
        assert_eq!(plan.conditions[0].section, Section::Base);
    }

    #[test]
    fn full_cross_product() {
        let mut a = default_axes();
        a.full = true;
        a.payloads = pl(&["ping", "1k"]);
        a.protocols = vec![LabProtocol::H1, LabProtocol::H2c];
        let plan = a.plan();
        assert_eq!(plan.conditions.len(), 2 * 2 * 3 * 2 * 3);
        assert!(plan.conditions.iter().any(|c| c.section == Section::Grid));
    }
}
