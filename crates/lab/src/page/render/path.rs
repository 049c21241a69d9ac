//! Where the render and Early Hints experiments' servers run and how their fetchers reach
//! them, per link: on a packet path ([`PathMode::Packet`], the default) the built-in servers
//! start inside its server namespace (198.18.0.2) and the anchors (nghttpd, h2o) are child
//! processes there, while the fetcher and Chromium run on its client side; on the relay each
//! server gets its own relay on loopback. A loopback link with no loss is direct in packet
//! mode. Every arm's loads are bracketed by the path's counters ([`LinkPath::counters`]).

use std::net::{IpAddr, SocketAddr};

use h2lab_link::packet::{PacketConfig, PacketLink, Side, SERVER_ADDR};
use h2lab_server::{RunningServer, ServerConfig};

use super::RenderLink;
use crate::error::LabError;
use crate::link::{self, LinkConfig, LinkProfile, RunningLink};
use crate::netpath::{ClientSide, PathCounters, PathMode, PathSides};
use crate::page::anchor::Site;

/// How one link of an experiment is crossed.
pub(crate) struct LinkPath {
    name: String,
    /// The relays' shape (relay mode).
    shape: LinkConfig,
    kind: Kind,
}

enum Kind {
    /// A packet path: servers on its server side.
    Packet(Box<PacketLink>),
    /// A relay per server, on loopback.
    Relay,
    /// No path (a loopback link without loss in packet mode).
    Direct,
}

/// How the fetcher reaches one server: where it connects (TCP, and UDP for HTTP/3), and the
/// relay in front of it, if any (shut down when this is dropped).
pub(crate) struct Reach {
    /// TCP address to connect to.
    pub(crate) tcp: SocketAddr,
    /// UDP address to connect to (HTTP/3), if the server answers it.
    pub(crate) udp: Option<SocketAddr>,
    relay: Option<RunningLink>,
}

impl Drop for Reach {
    fn drop(&mut self) {
        if let Some(r) = self.relay.take() {
            r.shutdown();
        }
    }
}

impl LinkPath {
    /// Starts the path of `rl` in `mode` (`cc`: the TCP congestion control across a packet
    /// path, `None` the namespaces' default).
    pub(crate) fn start(
        rl: &RenderLink,
        mode: PathMode,
        cc: Option<&str>,
    ) -> Result<LinkPath, LabError> {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let mut shape = LinkConfig::profile(rl.profile, any, any);
        shape.loss = rl.loss;
        let kind = match mode {
            PathMode::Relay => Kind::Relay,
            PathMode::Packet if rl.profile == LinkProfile::Loopback && rl.loss == 0.0 => {
                Kind::Direct
            }
            PathMode::Packet => {
                let mut pc = PacketConfig::from_link(&shape);
                pc.congestion_control = cc.map(str::to_owned);
                // Servers, fetcher, browser and anchors share the machine's cores: a link
                // thread polling before each packet would take a core from one of them.
                pc.spin_ns = 0;
                let link = PacketLink::start(pc).map_err(|e| LabError::Link {
                    name: Some(rl.name.clone()),
                    source: std::io::Error::other(e.to_string()),
                })?;
                Kind::Packet(Box::new(link))
            }
        };
        Ok(LinkPath {
            name: rl.name.clone(),
            shape,
            kind,
        })
    }

    /// The mode it runs in (a direct link: packet mode's).
    pub(crate) fn mode(&self) -> PathMode {
        match self.kind {
            Kind::Relay => PathMode::Relay,
            _ => PathMode::Packet,
        }
    }

    /// Starts a built-in server with `cfg`, listening for TLS (and QUIC) on the server side
    /// (198.18.0.2 on a packet path, else 127.0.0.1; ports chosen there).
    pub(crate) fn server(&self, cfg: ServerConfig) -> Result<RunningServer, LabError> {
        let fail = |source| LabError::Server {
            role: "built-in server",
            source,
        };
        match &self.kind {
            Kind::Packet(link) => {
                let cfg = ServerConfig {
                    listen: None,
                    tls_listen: Some(SocketAddr::from((SERVER_ADDR, 0))),
                    ..cfg
                };
                link.spawn_in(Side::Server, move || h2lab_server::spawn(cfg))
                    .map_err(|source| self.link_error(source))?
                    .join()
                    .map_err(|_| LabError::NoAddress("a server-side start thread panicked"))?
                    .map_err(fail)
            }
            _ => h2lab_server::spawn(cfg).map_err(fail),
        }
    }

    fn link_error(&self, source: std::io::Error) -> LabError {
        LabError::Link {
            name: Some(self.name.clone()),
            source,
        }
    }

    /// How the fetcher reaches the server at `tcp` (and `udp`): directly on a packet path or
    /// a direct link, else through a relay of its own.
    pub(crate) fn reach(
        &self,
        tcp: SocketAddr,
        udp: Option<SocketAddr>,
    ) -> Result<Reach, LabError> {
        match self.kind {
            Kind::Relay => {
                let mut c = self.shape.clone();
                c.upstream = tcp;
                let relay = link::spawn(c).map_err(|source| self.link_error(source))?;
                Ok(Reach {
                    tcp: relay.addr(),
                    udp: udp.and(relay.udp_addr()),
                    relay: Some(relay),
                })
            }
            _ => Ok(Reach {
                tcp,
                udp,
                relay: None,
            }),
        }
    }

    /// What the path in front of `r` counted so far: the packet path's (all arms share it;
    /// their loads run one at a time), or `r`'s relay's.
    pub(crate) fn counters(&self, r: &Reach) -> Option<PathCounters> {
        match (&self.kind, &r.relay) {
            (Kind::Packet(l), _) => Some(PathCounters::of_packet(&l.stats())),
            (Kind::Relay, Some(relay)) => Some(PathCounters::of_relay(&relay.stats())),
            _ => None,
        }
    }

    /// Moves the calling thread to the client side (a packet path) until the guard drops:
    /// the fetcher's sockets and a browser started meanwhile are there.
    pub(crate) fn client_side(&self) -> Result<ClientSide, LabError> {
        match &self.kind {
            Kind::Packet(l) => ClientSide::enter(&l.entry(Side::Client)),
            _ => Ok(ClientSide::none()),
        }
    }

    /// Runs `f` with the calling thread on the server side (a packet path) and an anchor
    /// [`Site`] there: its free port is chosen there, and its command is started in the
    /// server namespace, killed if this thread dies.
    pub(crate) fn on_server_side<T>(&self, f: impl FnOnce(&Site<'_>) -> T) -> Result<T, LabError> {
        match &self.kind {
            Kind::Packet(l) => {
                let _side = ClientSide::enter(&l.entry(Side::Server))?;
                let prepare = |cmd: &mut std::process::Command| l.command(Side::Server, cmd);
                Ok(f(&Site {
                    ip: IpAddr::V4(SERVER_ADDR),
                    prepare: Some(&prepare),
                }))
            }
            _ => Ok(f(&Site::loopback())),
        }
    }

    /// A packet path's sides in one line: `client 198.18.0.1 (TCP congestion control bbr,
    /// netns net:[N]), server 198.18.0.2 (...)`.
    pub(crate) fn describe_sides(&self) -> Option<String> {
        let Kind::Packet(l) = &self.kind else {
            return None;
        };
        let side = |s: &h2lab_link::packet::SideInfo| {
            format!(
                "{} (TCP congestion control {}, netns net:[{}])",
                s.addr, s.congestion_control, s.netns_inode
            )
        };
        let i = l.info();
        Some(format!(
            "client {}, server {}",
            side(&i.client),
            side(&i.server)
        ))
    }

    /// Each side's TCP congestion control (a packet path).
    pub(crate) fn sides(&self) -> Option<PathSides> {
        match &self.kind {
            Kind::Packet(l) => Some(PathSides {
                client_tcp_cc: l.info().client.congestion_control.clone(),
                server_tcp_cc: l.info().server.congestion_control.clone(),
            }),
            _ => None,
        }
    }
}

/// Adds what the path counted between `before` and `after` to `sum`.
pub(crate) fn add(
    sum: &mut Option<PathCounters>,
    before: Option<PathCounters>,
    after: Option<PathCounters>,
) {
    if let (Some(b), Some(a)) = (before, after) {
        let d = a.since(&b);
        *sum = Some(sum.map_or(d, |s| s.plus(&d)));
    }
}
