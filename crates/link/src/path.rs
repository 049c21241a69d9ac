//! Which path a measurement crossed, so every output can say whether TCP was real or modelled.

use serde::Serialize;

/// The kind of path between a lab client and its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathKind {
    /// No emulated link: the client connects to the server directly over loopback.
    Direct,
    /// Packet mode: client and server in their own network namespaces, joined by TUN devices;
    /// the link shapes whole IP packets, so the kernels' own TCP and QUIC cross it and see its
    /// delay, queue and drops.
    Packet,
    /// The relay (`--mode relay`): TCP is terminated in user space on both sides and the path's
    /// effect on it is modelled (retransmission delay, a modelled congestion window); UDP
    /// datagrams are relayed and really dropped.
    Relay,
}

impl PathKind {
    /// `direct`, `packet` or `relay`.
    pub fn name(self) -> &'static str {
        match self {
            PathKind::Direct => "direct",
            PathKind::Packet => "packet",
            PathKind::Relay => "relay",
        }
    }

    /// What TCP was on this path: `kernel TCP` or `modelled TCP`.
    pub fn tcp(self) -> &'static str {
        match self {
            PathKind::Direct | PathKind::Packet => "kernel TCP",
            PathKind::Relay => "modelled TCP",
        }
    }

    /// One line for outputs: `relay (modelled TCP: ...)`.
    pub fn describe(self) -> &'static str {
        match self {
            PathKind::Direct => "direct (loopback, kernel TCP, no emulated link)",
            PathKind::Packet => {
                "packet (kernel TCP and QUIC in network namespaces; IP packets delayed, queued \
                 and dropped)"
            }
            PathKind::Relay => {
                "relay (modelled TCP: connections terminated in user space, loss modelled as \
                 retransmission delay and a modelled congestion window; UDP really dropped)"
            }
        }
    }
}

impl std::fmt::Display for PathKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
