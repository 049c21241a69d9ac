//! `h2lab upstream` over the packet link: the backends in the server namespace, the proxy
//! (in-process, or nginx) and the client in the client namespace, so the proxy → backends
//! hop crosses the kernel's TCP over the emulated path and the client → proxy hop is the
//! client namespace's own loopback (direct, as in relay mode). One path for every arm.

use std::net::SocketAddr;

use h2lab_link::packet::{PacketConfig, PacketLink, Side, SERVER_ADDR};
use h2lab_server::{RunningServer, ServerConfig};

use super::UpstreamConfig;
use crate::error::LabError;
use crate::link::LinkConfig;
use crate::netpath::{ClientSide, PathCounters, PathSides};

/// The packet path of an upstream run.
pub(super) struct UpstreamPath {
    pub(super) link: PacketLink,
}

impl UpstreamPath {
    /// Starts the path: `cfg.rtt`, no rate limit, no loss (the relay's upstream shape).
    pub(super) fn start(cfg: &UpstreamConfig) -> Result<UpstreamPath, LabError> {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let mut lc = LinkConfig::new(any, any);
        lc.rtt = cfg.rtt;
        let mut pc = PacketConfig::from_link(&lc);
        pc.congestion_control = cfg.tcp_cc.clone();
        // Backends, proxy and client share the machine's cores: a link thread polling before
        // each packet would take a core from one of them.
        pc.spin_ns = 0;
        let link = PacketLink::start(pc).map_err(|e| LabError::Link {
            name: Some("upstream".into()),
            source: std::io::Error::other(e.to_string()),
        })?;
        Ok(UpstreamPath { link })
    }

    /// Starts a backend on the server side (on 198.18.0.2, a port chosen there).
    pub(super) fn backend(&self, config: ServerConfig) -> Result<RunningServer, LabError> {
        let config = ServerConfig {
            listen: Some(SocketAddr::from((SERVER_ADDR, 0))),
            ..config
        };
        self.link
            .spawn_in(Side::Server, move || h2lab_server::spawn(config))
            .map_err(|source| LabError::Link { name: None, source })?
            .join()
            .map_err(|_| LabError::NoAddress("a backend's start thread panicked"))?
            .map_err(|source| LabError::Server {
                role: "backend",
                source,
            })
    }

    /// Runs `f` on a thread on the client side (the proxy starts there: its listener and
    /// its upstream connections are in the client namespace).
    pub(super) fn on_client<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LabError> {
        self.link
            .spawn_in(Side::Client, f)
            .map_err(|source| LabError::Link { name: None, source })?
            .join()
            .map_err(|_| LabError::NoAddress("a client-side start thread panicked"))
    }

    /// Moves the calling thread to the client side until the guard drops (the measuring
    /// client; nginx started meanwhile).
    pub(super) fn client_side(&self) -> Result<ClientSide, LabError> {
        ClientSide::enter(&self.link.entry(Side::Client))
    }

    /// What the path counted so far.
    pub(super) fn counters(&self) -> PathCounters {
        PathCounters::of_packet(&self.link.stats())
    }

    /// Each side's TCP congestion control.
    pub(super) fn sides(&self) -> PathSides {
        let i = self.link.info();
        PathSides {
            client_tcp_cc: i.client.congestion_control.clone(),
            server_tcp_cc: i.server.congestion_control.clone(),
        }
    }
}
