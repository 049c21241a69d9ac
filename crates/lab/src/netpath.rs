//! Which emulated path the lab's shaped conditions cross, and what the path counted.
//!
//! [`PathMode::Packet`] (the default) runs every shaped condition over the packet link
//! ([`h2lab_link::packet`]): a pair of network namespaces per link profile joined by TUN
//! devices, a copy of the built-in server started inside the server namespace (its threads
//! create their sockets there), and the client's threads moved into the client namespace
//! ([`ClientSide`]) while they measure, so both ends run the kernel's own TCP and QUIC's
//! datagrams cross the same queue. [`PathMode::Relay`] uses the user-space relay, whose TCP
//! is modelled. Loopback conditions connect directly either way.
//!
//! [`PathCounters`] are what a path counted over one cell (the difference of two snapshots),
//! recorded in every lab result so a verdict can be checked against what the path did.

use std::net::SocketAddr;
use std::path::PathBuf;

use h2lab_engine::{Scheme, Target};
use h2lab_link::packet::{
    current_namespace, PacketConfig, PacketError, PacketLink, PacketStats, PathInfo, Side,
    SideEntry, SERVER_ADDR,
};
use h2lab_link::{LinkConfig, LinkProfile, LinkStats, PathKind};
use h2lab_server::{RunningServer, ServerConfig};
use serde::Serialize;

use crate::env::Targets;
use crate::error::LabError;

/// How the lab's shaped conditions are emulated (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathMode {
    /// The packet link: kernel TCP (and QUIC) across network namespaces.
    #[default]
    Packet,
    /// The user-space relay: modelled TCP, UDP really dropped.
    Relay,
}

impl PathMode {
    /// Parses `packet` or `relay`.
    pub fn parse(s: &str) -> Option<PathMode> {
        match s {
            "packet" => Some(PathMode::Packet),
            "relay" => Some(PathMode::Relay),
            _ => None,
        }
    }

    /// The kind of path a shaped condition crosses in this mode.
    pub fn kind(self) -> PathKind {
        match self {
            PathMode::Packet => PathKind::Packet,
            PathMode::Relay => PathKind::Relay,
        }
    }

    /// `packet link (kernel TCP)` or `relay (modelled TCP)`: the name every output uses.
    pub fn label(self) -> &'static str {
        match self {
            PathMode::Packet => "packet link (kernel TCP)",
            PathMode::Relay => "relay (modelled TCP)",
        }
    }
}

/// What the lab asked for and what it got: the mode used and, when packet mode was asked for
/// but is unavailable, the one-line warning saying why and what to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModeChoice {
    /// The mode the shaped conditions use.
    pub mode: PathMode,
    /// `packet link (kernel TCP)` or `relay (modelled TCP)`.
    pub label: &'static str,
    /// Why the relay is used although packet mode was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl ModeChoice {
    /// `asked`, checked: packet mode falls back to the relay (with the warning) when a network
    /// namespace with a TUN device cannot be made here.
    pub fn resolve(asked: PathMode) -> ModeChoice {
        let fallback = match asked {
            PathMode::Relay => None,
            PathMode::Packet => probe().err().map(|why| {
                format!(
                    "warning: using the relay (modelled TCP) instead of the packet link: {why}; \
                     run as root or allow user namespaces for kernel TCP, or pass --mode relay \
                     to silence this"
                )
            }),
        };
        let mode = if fallback.is_some() {
            PathMode::Relay
        } else {
            asked
        };
        ModeChoice {
            mode,
            label: mode.label(),
            fallback,
        }
    }

    /// The mode as chosen, without a probe (tests, external targets).
    pub fn fixed(mode: PathMode) -> ModeChoice {
        ModeChoice {
            mode,
            label: mode.label(),
            fallback: None,
        }
    }
}

/// Whether a packet path can be made: creates one (namespaces, TUN devices, link thread)
/// and drops it.
fn probe() -> Result<(), PacketError> {
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    let c = PacketConfig::from_link(&LinkConfig::profile(LinkProfile::Wan, any, any));
    PacketLink::start(c).map(drop)
}

/// `path: packet link (kernel TCP)`, with the fallback's reason in parentheses.
impl std::fmt::Display for ModeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "path: {}", self.label)?;
        match &self.fallback {
            Some(why) => write!(f, " ({why})"),
            None => Ok(()),
        }
    }
}

/// `TCP congestion control: client cubic, server cubic`.
impl std::fmt::Display for PathSides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TCP congestion control: client {}, server {}",
            self.client_tcp_cc, self.server_tcp_cc
        )
    }
}

/// One side's TCP congestion control, recorded in the results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathSides {
    /// The client namespace's default TCP congestion control.
    pub client_tcp_cc: String,
    /// The server namespace's.
    pub server_tcp_cc: String,
}

impl PathSides {
    fn of(info: &PathInfo) -> PathSides {
        PathSides {
            client_tcp_cc: info.client.congestion_control.clone(),
            server_tcp_cc: info.server.congestion_control.clone(),
        }
    }
}

/// A packet path of one link profile with the built-in server's copy on its server side.
pub(crate) struct PacketPath {
    pub(crate) profile: LinkProfile,
    pub(crate) targets: Targets,
    pub(crate) sides: PathSides,
    pub(crate) server: Option<RunningServer>,
    pub(crate) link: PacketLink,
}

impl Drop for PacketPath {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
            let _ = s.join();
        }
    }
}

/// What the built-in server on a packet path's server side runs with.
pub(crate) struct PathServer<'a> {
    pub(crate) threads: usize,
    pub(crate) push: bool,
    pub(crate) h3: bool,
    pub(crate) cert_dir: Option<PathBuf>,
    pub(crate) cpus: &'a [usize],
    /// The namespaces' default TCP congestion control (`None`: theirs).
    pub(crate) cc: Option<String>,
    /// Accept early data / 0-RTT (`serve --0rtt`), as the loopback server does.
    pub(crate) zero_rtt: bool,
}

/// Starts the packet path of `profile` and the built-in server inside its server namespace
/// (listening on 198.18.0.2, ports chosen there).
pub(crate) fn start_path(profile: LinkProfile, s: PathServer<'_>) -> Result<PacketPath, LabError> {
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut config = PacketConfig::from_link(&LinkConfig::profile(profile, any, any));
    config.congestion_control = s.cc.clone();
    if !s.cpus.is_empty() {
        // The lab divides the cores between server and client threads; a link thread
        // polling before each packet would take its core from one of them (on 2 cores it
        // doubled HTTP/2's page time on wan).
        config.spin_ns = 0;
    }
    let link = PacketLink::start(config).map_err(|e| LabError::Link {
        name: Some(profile.to_string()),
        source: std::io::Error::other(e.to_string()),
    })?;
    let cfg = ServerConfig {
        listen: Some(SocketAddr::from((SERVER_ADDR, 0))),
        tls_listen: Some(SocketAddr::from((SERVER_ADDR, 0))),
        cert_dir: s.cert_dir,
        threads: s.threads.max(1),
        push: s.push,
        h3: s.h3,
        zero_rtt: s.zero_rtt,
        quiet: true,
        ..ServerConfig::default()
    };
    let cpus = s.cpus.to_vec();
    let server = link
        .spawn_in(Side::Server, move || {
            // The server's threads inherit this thread's namespace and CPUs.
            if !cpus.is_empty() {
                let _ = crate::host::pin(0, &cpus);
            }
            h2lab_server::spawn(cfg)
        })
        .map_err(|source| LabError::Link {
            name: Some(profile.to_string()),
            source,
        })?
        .join()
        .map_err(|_| LabError::NoAddress("the packet path's server thread panicked"))?
        .map_err(|source| LabError::Server {
            role: "built-in server (packet path)",
            source,
        })?;
    crate::env::wait_for_thread_ids(&server);
    let (Some(addr), Some(tls)) = (server.addr(), server.tls_addr()) else {
        return Err(LabError::NoAddress(
            "packet path server: no listening address",
        ));
    };
    let mk = |scheme: Scheme, a: SocketAddr| Target {
        scheme,
        host: a.ip().to_string(),
        port: a.port(),
        path: "/".into(),
    };
    let targets = Targets {
        h1: Some(mk(Scheme::Http, addr)),
        h1_tls: Some(mk(Scheme::Https, tls)),
        h2: Some(mk(Scheme::Https, tls)),
        h2c: Some(mk(Scheme::Http, addr)),
        h3: server.h3_addr().map(|a| mk(Scheme::Https, a)),
    };
    Ok(PacketPath {
        profile,
        targets,
        sides: PathSides::of(link.info()),
        server: Some(server),
        link,
    })
}

/// The calling thread on a packet path's client side: sockets it creates, and threads it
/// starts, are in the client namespace until this is dropped, which returns the thread to the
/// namespace it was in.
#[must_use = "the thread leaves the client side when this is dropped"]
pub struct ClientSide {
    back: Option<SideEntry>,
}

impl ClientSide {
    /// Nothing to enter (a loopback condition, the relay).
    pub fn none() -> ClientSide {
        ClientSide { back: None }
    }

    pub(crate) fn enter(side: &SideEntry) -> Result<ClientSide, LabError> {
        let io = |source| LabError::Link { name: None, source };
        let back = current_namespace().map_err(io)?;
        side.enter().map_err(io)?;
        Ok(ClientSide { back: Some(back) })
    }
}

impl Drop for ClientSide {
    fn drop(&mut self) {
        if let Some(b) = self.back.take() {
            // Back to where the thread was; a failure would leave later loopback runs
            // unable to reach their server, so it is fatal.
            b.enter()
                .expect("setns back into the lab's own network namespace");
        }
    }
}

/// One direction of what a path counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct DirCounters {
    /// IP packets relayed (packet link), or UDP datagrams relayed (relay).
    pub packets: u64,
    /// Packets or datagrams dropped at the tail of the full bottleneck queue.
    pub queue_drops: u64,
    /// Packets or datagrams lost by the loss model.
    pub lost: u64,
    /// Bytes relayed (whole IP packets; on the relay, TCP payload and UDP datagrams).
    pub bytes: u64,
    /// TCP chunks relayed (relay only: its modelled TCP).
    pub tcp_chunks: u64,
    /// TCP chunks held back as lost (relay only).
    pub tcp_chunks_lost: u64,
}

impl DirCounters {
    fn minus(self, b: DirCounters) -> DirCounters {
        DirCounters {
            packets: self.packets.saturating_sub(b.packets),
            queue_drops: self.queue_drops.saturating_sub(b.queue_drops),
            lost: self.lost.saturating_sub(b.lost),
            bytes: self.bytes.saturating_sub(b.bytes),
            tcp_chunks: self.tcp_chunks.saturating_sub(b.tcp_chunks),
            tcp_chunks_lost: self.tcp_chunks_lost.saturating_sub(b.tcp_chunks_lost),
        }
    }

    fn plus(self, b: DirCounters) -> DirCounters {
        DirCounters {
            packets: self.packets + b.packets,
            queue_drops: self.queue_drops + b.queue_drops,
            lost: self.lost + b.lost,
            bytes: self.bytes + b.bytes,
            tcp_chunks: self.tcp_chunks + b.tcp_chunks,
            tcp_chunks_lost: self.tcp_chunks_lost + b.tcp_chunks_lost,
        }
    }
}

/// What a path counted (over a cell: the difference of two snapshots).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PathCounters {
    /// `packet` or `relay`.
    pub path: PathKind,
    /// Client to server.
    pub up: DirCounters,
    /// Server to client.
    pub down: DirCounters,
}

impl PathCounters {
    /// A packet link's counters.
    pub fn of_packet(s: &PacketStats) -> PathCounters {
        let d = |d: &h2lab_link::packet::PacketDirStats| DirCounters {
            packets: d.packets_out,
            queue_drops: d.queue_drops,
            lost: d.lost,
            bytes: d.bytes_out,
            ..DirCounters::default()
        };
        PathCounters {
            path: PathKind::Packet,
            up: d(&s.up),
            down: d(&s.down),
        }
    }

    /// A relay's counters (TCP chunks and UDP datagrams).
    pub fn of_relay(s: &LinkStats) -> PathCounters {
        let d = |t: &h2lab_link::DirStats, u: &h2lab_link::UdpDirStats| DirCounters {
            packets: u.datagrams_out,
            queue_drops: u.queue_drops,
            lost: u.lost,
            bytes: t.bytes_out + u.bytes_out,
            tcp_chunks: t.chunks,
            tcp_chunks_lost: t.lost_chunks,
        };
        PathCounters {
            path: PathKind::Relay,
            up: d(&s.up, &s.udp.up),
            down: d(&s.down, &s.udp.down),
        }
    }

    /// What was counted between `before` and `self`.
    pub fn since(&self, before: &PathCounters) -> PathCounters {
        PathCounters {
            path: self.path,
            up: self.up.minus(before.up),
            down: self.down.minus(before.down),
        }
    }

    /// The sum of two paths' counts (two relays of one condition).
    pub fn plus(&self, o: &PathCounters) -> PathCounters {
        PathCounters {
            path: self.path,
            up: self.up.plus(o.up),
            down: self.down.plus(o.down),
        }
    }

    /// Both directions in brief: `9 lost, 0 queue drops of 1458 packets` (the relay: `3 of
    /// 500 TCP chunks lost; 1 lost, 0 queue drops of 80 datagrams`).
    pub fn brief(&self) -> String {
        let (u, d) = (&self.up, &self.down);
        let lost = u.lost + d.lost;
        let drops = u.queue_drops + d.queue_drops;
        let seen = u.packets + d.packets + lost + drops;
        match self.path {
            PathKind::Relay => format!(
                "{} of {} TCP chunks lost; {lost} lost, {drops} queue drops of {seen} datagrams",
                u.tcp_chunks_lost + d.tcp_chunks_lost,
                u.tcp_chunks + d.tcp_chunks
            ),
            _ => format!("{lost} lost, {drops} queue drops of {seen} packets"),
        }
    }

    /// One line: `packet link: up 812 packets, 0 queue drops, 9 lost; down ...` (the relay
    /// adds its TCP chunks).
    pub fn describe(&self) -> String {
        let dir = |d: &DirCounters| match self.path {
            PathKind::Relay => format!(
                "{} TCP chunks ({} lost), {} datagrams, {} queue drops, {} lost",
                d.tcp_chunks, d.tcp_chunks_lost, d.packets, d.queue_drops, d.lost
            ),
            _ => format!(
                "{} packets, {} queue drops, {} lost",
                d.packets, d.queue_drops, d.lost
            ),
        };
        let name = match self.path {
            PathKind::Relay => PathMode::Relay.label(),
            _ => PathMode::Packet.label(),
        };
        format!("{name}: up {}; down {}", dir(&self.up), dir(&self.down))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_name_their_tcp() {
        assert_eq!(PathMode::parse("packet"), Some(PathMode::Packet));
        assert_eq!(PathMode::parse("relay"), Some(PathMode::Relay));
        assert_eq!(PathMode::parse("tcp"), None);
        assert_eq!(PathMode::default(), PathMode::Packet);
        assert_eq!(PathMode::Packet.label(), "packet link (kernel TCP)");
        assert_eq!(PathMode::Relay.label(), "relay (modelled TCP)");
        let c = ModeChoice::fixed(PathMode::Relay);
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["mode"], "relay");
        assert_eq!(j["label"], "relay (modelled TCP)");
    }

    #[test]
    fn counters_subtract_per_direction() {
        let mut a = PacketStats::default();
        a.up.packets_out = 10;
        a.down.lost = 2;
        let mut b = a;
        b.up.packets_out = 25;
        b.down.lost = 5;
        b.down.queue_drops = 1;
        let d = PathCounters::of_packet(&b).since(&PathCounters::of_packet(&a));
        assert_eq!((d.up.packets, d.down.lost, d.down.queue_drops), (15, 3, 1));
        assert_eq!(
            d.describe(),
            "packet link (kernel TCP): up 15 packets, 0 queue drops, 0 lost; down 0 packets, \
             1 queue drops, 3 lost"
        );
    }
}
