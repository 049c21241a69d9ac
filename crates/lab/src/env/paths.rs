//! [`LabEnv`]'s packet paths: which path shaped conditions cross, the client side of a packet
//! path, and what the paths counted (see [`crate::netpath`]).

use h2lab_server::RunningServer;

use super::{LabEnv, Origin};
use crate::error::LabError;
use crate::link::LinkProfile;
use crate::netpath::{self, ClientSide, ModeChoice, PacketPath, PathCounters, PathMode, PathSides};
use crate::proto::LabProtocol;

impl LabEnv {
    /// Which path shaped conditions cross: `asked`, or the relay with a warning when packet
    /// mode is unavailable here ([`ModeChoice::resolve`]) or the target is external (its
    /// server cannot run inside the server namespace). Returns the choice; print its
    /// `fallback` line.
    pub fn set_mode(&mut self, asked: PathMode) -> &ModeChoice {
        self.mode = if asked == PathMode::Packet && self.server.is_none() {
            ModeChoice {
                fallback: Some(
                    "warning: using the relay (modelled TCP) instead of the packet link: an \
                     external target's server cannot run inside the packet link's server \
                     namespace; pass --mode relay to silence this"
                        .into(),
                ),
                ..ModeChoice::fixed(PathMode::Relay)
            }
        } else {
            ModeChoice::resolve(asked)
        };
        &self.mode
    }

    /// The path mode in use.
    pub fn mode(&self) -> &ModeChoice {
        &self.mode
    }

    /// Whether `profile`'s conditions cross a packet path.
    pub(super) fn packet(&self, profile: LinkProfile) -> bool {
        profile != LinkProfile::Loopback && self.mode.mode == PathMode::Packet
    }

    /// The packet path of `profile`, started on first use.
    pub(super) fn packet_path(&mut self, profile: LinkProfile) -> Result<&PacketPath, LabError> {
        let i = match self.paths.iter().position(|p| p.profile == profile) {
            Some(i) => i,
            None => {
                let o = self.opts.clone().unwrap_or_default();
                let path = netpath::start_path(
                    profile,
                    netpath::PathServer {
                        threads: o.threads,
                        push: o.push,
                        h3: o.h3,
                        cert_dir: self.cert_dir.clone(),
                        cpus: &self.isolation.server_cpus,
                        cc: o.tcp_cc.clone(),
                        zero_rtt: o.zero_rtt,
                    },
                )?;
                self.paths.push(path);
                self.paths.len() - 1
            }
        };
        Ok(&self.paths[i])
    }

    /// Moves the calling thread to the client side of `profile`'s path until the returned
    /// guard is dropped (packet mode, shaped profiles; otherwise nothing to do). The client's
    /// sockets and the threads it starts while the guard lives are in the client namespace.
    pub fn client_side(&mut self, profile: LinkProfile) -> Result<ClientSide, LabError> {
        if !self.packet(profile) {
            return Ok(ClientSide::none());
        }
        let entry = self
            .packet_path(profile)?
            .link
            .entry(h2lab_link::packet::Side::Client);
        ClientSide::enter(&entry)
    }

    /// What the path of `profile` has counted so far for `protos` (each relay counted
    /// once); `None` on loopback or before the path started.
    pub fn path_counters(
        &self,
        protos: &[LabProtocol],
        profile: LinkProfile,
    ) -> Option<PathCounters> {
        if profile == LinkProfile::Loopback {
            return None;
        }
        if let Some(p) = self.paths.iter().find(|p| p.profile == profile) {
            return Some(PathCounters::of_packet(&p.link.stats()));
        }
        let mut seen = Vec::new();
        let mut sum: Option<PathCounters> = None;
        for &proto in protos {
            let Some(l) = self.link(proto, profile) else {
                continue;
            };
            if seen.contains(&l.addr()) {
                continue;
            }
            seen.push(l.addr());
            let c = PathCounters::of_relay(&l.stats());
            sum = Some(sum.map_or(c, |s| s.plus(&c)));
        }
        sum
    }

    /// Each side's TCP congestion control on `profile`'s packet path, if it runs.
    pub fn path_sides(&self, profile: LinkProfile) -> Option<PathSides> {
        self.paths
            .iter()
            .find(|p| p.profile == profile)
            .map(|p| p.sides.clone())
    }

    /// The kernel thread ids of the server `profile`'s conditions reach (the copy on its
    /// packet path in packet mode, otherwise the built-in server).
    pub fn server_tids_for(&self, profile: LinkProfile) -> Vec<u32> {
        match self.paths.iter().find(|p| p.profile == profile) {
            Some(p) if self.packet(profile) => p
                .server
                .as_ref()
                .map(RunningServer::thread_ids)
                .unwrap_or_default(),
            _ => self.server_tids(),
        }
    }

    /// Where `proto`'s requests go over `profile`'s packet path (its server's copy on
    /// 198.18.0.2); `None` when `profile` does not cross one.
    pub(super) fn packet_origin(
        &mut self,
        proto: LabProtocol,
        profile: LinkProfile,
    ) -> Result<Option<Origin>, LabError> {
        if !self.packet(profile) {
            return Ok(None);
        }
        let target = self
            .packet_path(profile)?
            .targets
            .get(proto)
            .cloned()
            .ok_or(LabError::NoTarget(proto))?;
        Ok(Some(Origin {
            target,
            connect_to: Vec::new(),
            unix_socket: None,
        }))
    }

    /// `profile`'s packet path's server side, if its conditions cross one that runs: a
    /// server started by a thread that entered it listens there (on 198.18.0.2).
    pub fn server_side(&self, profile: LinkProfile) -> Option<h2lab_link::packet::SideEntry> {
        if !self.packet(profile) {
            return None;
        }
        self.paths
            .iter()
            .find(|p| p.profile == profile)
            .map(|p| p.link.entry(h2lab_link::packet::Side::Server))
    }
}
