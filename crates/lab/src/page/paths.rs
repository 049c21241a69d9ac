//! `h2lab page` on the packet link or the relay: the link records, descriptions and path
//! counters the report carries (see [`crate::netpath`]).

use super::loss::{self, ProtoPath};
use super::{PageReport, PoolSpec};
use crate::env::{describe_profile, describe_profile_shape, LabEnv};
use crate::link::{LinkProfile, LinkRecord, PathKind};
use crate::netpath::{PathCounters, PathMode};
use crate::proto::LabProtocol;

/// The record of `profile` as the lab ran it in `mode`: on the packet link TCP is the
/// kernel's and no TCP model applies.
pub fn record(profile: LinkProfile, mode: PathMode) -> LinkRecord {
    let mut r = LinkRecord::of(profile);
    if r.relayed && mode == PathMode::Packet {
        r.path = PathKind::Packet;
        r.tcp = PathKind::Packet.tcp();
        r.tcp_model = None;
    }
    r
}

/// One line describing `profile` as crossed in `mode` (`wan: rtt 40ms, ...; packet link
/// (kernel TCP)`, or `...; modelled TCP: TCP model cubic (...)` on the relay).
pub fn describe(profile: LinkProfile, mode: PathMode) -> String {
    match (profile, mode) {
        (LinkProfile::Loopback, _) => describe_profile(profile),
        (_, PathMode::Packet) => format!(
            "{}; {}",
            describe_profile_shape(profile),
            PathMode::Packet.label()
        ),
        // Already ends `modelled TCP: TCP model cubic (...)`.
        (_, PathMode::Relay) => describe_profile(profile),
    }
}

/// Per protocol, what the path counted during its loads.
pub fn per_protocol(pools: &[PoolSpec], per: Vec<Option<PathCounters>>) -> Vec<ProtoPath> {
    pools
        .iter()
        .zip(per)
        .filter_map(|(p, c)| {
            c.map(|counters| ProtoPath {
                proto: p.proto,
                counters,
            })
        })
        .collect()
}

/// Records each packet path's congestion control per side.
pub fn finish(env: &LabEnv, links: &[LinkProfile], report: &mut PageReport) {
    for &l in links {
        if let Some(s) = env.path_sides(l) {
            report.path_sides.push((l.name().to_owned(), s));
        }
    }
}

/// The loss counters of the links `protos` cross on `profile` (each link counted once).
pub fn link_loss(env: &LabEnv, protos: &[LabProtocol], profile: LinkProfile) -> loss::LinkLoss {
    let mut seen = Vec::new();
    let mut c = loss::LinkLoss::default();
    for &p in protos {
        let Some(l) = env.link(p, profile) else {
            continue;
        };
        if seen.contains(&l.addr()) {
            continue;
        }
        seen.push(l.addr());
        let s = l.stats();
        c.tcp_chunks_lost += s.up.lost_chunks + s.down.lost_chunks;
        c.tcp_chunks += s.up.chunks + s.down.chunks;
        c.udp_datagrams_lost += s.udp.up.lost + s.udp.down.lost;
        c.udp_datagrams += s.udp.up.datagrams_in + s.udp.down.datagrams_in;
    }
    c.path = env.path_counters(protos, profile);
    c
}

/// One line per protocol of what the path counted during its page loads (without `--loss`).
pub fn count_lines(r: &PageReport) -> Vec<String> {
    r.path_counts
        .iter()
        .map(|p| {
            format!(
                "path during {} loads: {}",
                p.proto.label(),
                p.counters.describe()
            )
        })
        .collect()
}
