//! The lab environment: where each protocol's requests go, with or without an emulated link.
//!
//! [`LabEnv::builtin`] starts the built-in server (`h2lab_server::spawn`) in-process on
//! `127.0.0.1` with a cleartext port (HTTP/1.1 and h2c) and a TLS port (HTTP/2 and HTTP/1.1
//! by ALPN, self-signed certificate). [`LabEnv::external`] points at servers given by URL.
//! Either way [`LabEnv::origin`] returns, for a protocol and a link profile, the origin to
//! name in requests and the address to connect to: the server itself for `loopback`, or an
//! in-process [`link`](mod@crate::link) relay shaped like the profile, started on first use.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use h2lab_engine::{Scheme, Target};

use crate::error::LabError;
use h2lab_server::{RunningServer, ServerConfig};

use crate::link::{self, LinkConfig, LinkProfile, RunningLink};
use crate::netpath::{ModeChoice, PacketPath, PathMode};

mod describe;
mod paths;
mod pinning;

use crate::proto::LabProtocol;
pub use describe::{describe_profile, describe_profile_shape};
pub use pinning::{default_split, pin_servers, Isolation, PinGuard, Pinning};

/// Where one protocol's requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Scheme, host and port named in requests (`:authority`, `Host`, SNI); path `/` or the
    /// base path of an external target.
    pub target: Target,
    /// Where connections really go (a link, `--connect-to`), if not to the target itself:
    /// tried in order, a connection that cannot be established moves on to the next.
    pub connect_to: Vec<SocketAddr>,
    /// A UNIX domain socket connections go to instead (`-B unix:PATH`).
    pub unix_socket: Option<PathBuf>,
}

/// Where connections go instead of the targets' hosts (`h2lab page -B unix:PATH`,
/// `--connect-to`); the targets still name the origin (`:authority`, `Host`, SNI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A UNIX domain socket.
    Unix(PathBuf),
    /// These addresses, tried in order (a host resolving to several addresses).
    Addrs(Vec<SocketAddr>),
}

impl Route {
    /// Resolves `--connect-to` values (`HOST[:PORT]`, a missing port meaning `default_port`)
    /// to every address each names, in order.
    pub fn resolve(hosts: &[(String, Option<u16>)], default_port: u16) -> Result<Route, LabError> {
        let mut addrs = Vec::new();
        for (host, port) in hosts {
            let found = (host.as_str(), port.unwrap_or(default_port))
                .to_socket_addrs()
                .map_err(|e| LabError::Resolve {
                    host: host.clone(),
                    source: Some(e),
                })?;
            let before = addrs.len();
            addrs.extend(found);
            if addrs.len() == before {
                return Err(LabError::Resolve {
                    host: host.clone(),
                    source: None,
                });
            }
        }
        Ok(Route::Addrs(addrs))
    }
}

impl Origin {
    /// The URL of `path` (`/ping`) on this origin.
    pub fn url(&self, path: &str) -> String {
        format!(
            "{}://{}{}",
            self.target.scheme,
            host_port(&self.target),
            path
        )
    }
}

/// `host:port` with IPv6 brackets.
pub fn host_port(t: &Target) -> String {
    if t.host.contains(':') {
        format!("[{}]:{}", t.host, t.port)
    } else {
        format!("{}:{}", t.host, t.port)
    }
}

/// The servers to use, by kind of connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    /// Cleartext HTTP/1.1 (`h1`, `h1.0`).
    pub h1: Option<Target>,
    /// HTTP/1.1 over TLS (`h1-tls`).
    pub h1_tls: Option<Target>,
    /// HTTP/2 over TLS (`h2`).
    pub h2: Option<Target>,
    /// h2c (`h2c`).
    pub h2c: Option<Target>,
    /// HTTP/3 over QUIC (`h3`): an `https://` URL whose host and port take UDP.
    pub h3: Option<Target>,
}

impl Targets {
    /// Targets from one URL: `http://` serves `h1`, `h1.0` and `h2c`; `https://` serves
    /// `h1-tls` and `h2`.
    pub fn from_url(url: &str) -> Result<Targets, LabError> {
        let t = Target::parse(url)?;
        Ok(match t.scheme {
            Scheme::Http => Targets {
                h1: Some(t.clone()),
                h2c: Some(t),
                ..Targets::default()
            },
            Scheme::Https => Targets {
                h1_tls: Some(t.clone()),
                h2: Some(t),
                ..Targets::default()
            },
        })
    }

    /// The target for `proto`, if there is one.
    pub fn get(&self, proto: LabProtocol) -> Option<&Target> {
        match proto {
            LabProtocol::H1 | LabProtocol::H1Close => self.h1.as_ref(),
            LabProtocol::H1Tls => self.h1_tls.as_ref(),
            LabProtocol::H2 => self.h2.as_ref(),
            LabProtocol::H2c => self.h2c.as_ref(),
            LabProtocol::H3 => self.h3.as_ref(),
        }
    }

    /// Sets the target of `proto`'s kind from a URL, checking the scheme fits.
    pub fn set(&mut self, proto: LabProtocol, url: &str) -> Result<(), LabError> {
        self.set_target(proto, Target::parse(url)?)
    }

    /// Sets the target of `proto`'s kind, checking the scheme fits.
    pub fn set_target(&mut self, proto: LabProtocol, t: Target) -> Result<(), LabError> {
        let want = if proto.tls() {
            Scheme::Https
        } else {
            Scheme::Http
        };
        if t.scheme != want {
            return Err(LabError::SchemeMismatch {
                proto,
                want,
                url: format!("{}://{}{}", t.scheme, host_port(&t), t.path),
            });
        }
        match proto {
            LabProtocol::H1 | LabProtocol::H1Close => self.h1 = Some(t),
            LabProtocol::H1Tls => self.h1_tls = Some(t),
            LabProtocol::H2 => self.h2 = Some(t),
            LabProtocol::H2c => self.h2c = Some(t),
            LabProtocol::H3 => self.h3 = Some(t),
        }
        Ok(())
    }

    /// The protocols these targets can serve, in [`LabProtocol::ALL`] order.
    pub fn available(&self) -> Vec<LabProtocol> {
        LabProtocol::ALL
            .into_iter()
            .filter(|p| self.get(*p).is_some())
            .collect()
    }
}

/// Built-in server settings for [`LabEnv::builtin`].
#[derive(Debug, Clone)]
pub struct BuiltinOptions {
    /// Server worker threads.
    pub threads: usize,
    /// How the server and the client threads share the CPUs.
    pub pinning: Pinning,
    /// HTTP/2 server push of `/page` assets (`h2lab serve --push`).
    pub push: bool,
    /// HTTP/3 on UDP on the TLS port number (`h2lab serve --h3`): the `h3` protocol. It
    /// also adds `alt-svc: h3=":PORT"` to the TLS port's responses, as a real server
    /// offering HTTP/3 does, so it is on only when `h3` is measured.
    pub h3: bool,
    /// The default TCP congestion control of the packet paths' namespaces (`--cc`); `None`:
    /// the namespaces' default.
    pub tcp_cc: Option<String>,
    /// Accept TLS 1.3 early data and QUIC 0-RTT for safe methods (`h2lab serve --0rtt`,
    /// single-use tickets); off: sessions resume without early data.
    pub zero_rtt: bool,
}

impl Default for BuiltinOptions {
    fn default() -> Self {
        BuiltinOptions {
            threads: 1,
            pinning: Pinning::Auto,
            push: false,
            h3: false,
            tcp_cc: None,
            zero_rtt: false,
        }
    }
}

/// The running lab environment (see the module docs). Dropping it stops the links and the
/// built-in server.
pub struct LabEnv {
    targets: Targets,
    links: Vec<(LinkProfile, SocketAddr, RunningLink)>,
    server: Option<RunningServer>,
    cert_dir: Option<PathBuf>,
    description: String,
    isolation: Isolation,
    /// The client thread's CPUs, restored on drop (after the server has stopped: fields
    /// drop after `Drop::drop`).
    _pin: PinGuard,
    /// Where connections go instead of the targets' hosts.
    route: Option<Route>,
    /// Which path shaped conditions cross.
    mode: ModeChoice,
    /// The packet paths started (packet mode), one per link profile.
    paths: Vec<PacketPath>,
    /// The built-in server's settings, for its copies on packet paths.
    opts: Option<BuiltinOptions>,
}

impl std::fmt::Debug for LabEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabEnv")
            .field("targets", &self.targets)
            .field("links", &self.links.len())
            .field("builtin", &self.server.is_some())
            .finish()
    }
}

static ENV_SEQ: AtomicU64 = AtomicU64::new(0);

impl LabEnv {
    /// Starts the built-in server on 127.0.0.1 (cleartext and TLS ports, chosen by the OS).
    /// Pins the server's threads and the calling thread (whose later threads, the client's
    /// workers and the links, inherit the set) as `opts.pinning` says; see [`Isolation`].
    pub fn builtin(opts: &BuiltinOptions) -> Result<LabEnv, LabError> {
        let cert_dir = std::env::temp_dir().join(format!(
            "h2lab-lab-{}-{}",
            std::process::id(),
            ENV_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let cfg = ServerConfig {
            tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            cert_dir: Some(cert_dir.clone()),
            threads: opts.threads.max(1),
            push: opts.push,
            h3: opts.h3,
            zero_rtt: opts.zero_rtt,
            ..ServerConfig::local()
        };
        // The server's threads inherit the set of the thread that starts them.
        let (server, isolation, pin) = pin_servers(&opts.pinning, || h2lab_server::spawn(cfg));
        let server = server.map_err(|source| LabError::Server {
            role: "built-in server",
            source,
        })?;
        wait_for_thread_ids(&server);
        let (Some(addr), Some(tls)) = (server.addr(), server.tls_addr()) else {
            return Err(LabError::NoAddress("built-in server: no listening address"));
        };
        let mk = |scheme: Scheme, a: SocketAddr| Target {
            scheme,
            host: a.ip().to_string(),
            port: a.port(),
            path: "/".into(),
        };
        let h3 = server.h3_addr();
        let targets = Targets {
            h1: Some(mk(Scheme::Http, addr)),
            h1_tls: Some(mk(Scheme::Https, tls)),
            h2: Some(mk(Scheme::Https, tls)),
            h2c: Some(mk(Scheme::Http, addr)),
            h3: h3.map(|a| mk(Scheme::Https, a)),
        };
        Ok(LabEnv {
            targets,
            links: Vec::new(),
            server: Some(server),
            cert_dir: Some(cert_dir),
            isolation,
            _pin: pin,
            route: None,
            mode: ModeChoice::fixed(PathMode::Relay),
            paths: Vec::new(),
            opts: Some(opts.clone()),
            description: format!(
                "built-in h2lab server ({} thread{}) on {addr} (cleartext: HTTP/1.1, h2c) and \
                 {tls} (TLS: h2, http/1.1){}",
                opts.threads.max(1),
                if opts.threads > 1 { "s" } else { "" },
                h3.map_or_else(String::new, |a| format!(
                    " and {a} (UDP: HTTP/3 over QUIC, its own thread)"
                ))
            ),
        })
    }

    /// Uses servers given by URL.
    pub fn external(targets: Targets) -> LabEnv {
        let mut parts = Vec::new();
        for p in LabProtocol::ALL {
            if let Some(t) = targets.get(p) {
                parts.push(format!("{} {}://{}", p.name(), t.scheme, host_port(t)));
            }
        }
        LabEnv {
            description: format!("external target: {}", parts.join(", ")),
            targets,
            links: Vec::new(),
            server: None,
            cert_dir: None,
            isolation: Isolation {
                note: "external target: nothing pinned".into(),
                ..Isolation::default()
            },
            _pin: PinGuard::default(),
            route: None,
            mode: ModeChoice::fixed(PathMode::Relay),
            paths: Vec::new(),
            opts: None,
        }
    }

    /// Sends connections to `route` instead of the targets' hosts (an external target on a
    /// UNIX socket or at other addresses).
    pub fn with_route(mut self, route: Option<Route>) -> LabEnv {
        self.route = route;
        self
    }

    /// The built-in server's certificate (PEM), if the built-in server runs.
    pub fn cert_path(&self) -> Option<PathBuf> {
        self.server
            .as_ref()
            .and_then(|s| s.cert_path().map(PathBuf::from))
    }

    /// Where the built-in server keeps its certificate (another built-in listener reuses it).
    pub fn cert_dir(&self) -> Option<&std::path::Path> {
        self.cert_dir.as_deref()
    }

    /// How the CPUs were split between the server and the client.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// The kernel thread ids of the built-in server's threads (empty for external targets).
    pub fn server_tids(&self) -> Vec<u32> {
        self.server
            .as_ref()
            .map(RunningServer::thread_ids)
            .unwrap_or_default()
    }

    /// The targets in use.
    pub fn targets(&self) -> &Targets {
        &self.targets
    }

    /// Whether the built-in server is running (its endpoints are known to exist).
    pub fn is_builtin(&self) -> bool {
        self.server.is_some()
    }

    /// One line describing the servers.
    pub fn describe(&self) -> &str {
        &self.description
    }

    /// Where `proto`'s requests go over `profile` (`loopback` connects directly; other
    /// profiles go through an in-process link started on first use).
    pub fn origin(&mut self, proto: LabProtocol, profile: LinkProfile) -> Result<Origin, LabError> {
        let target = self
            .targets
            .get(proto)
            .cloned()
            .ok_or(LabError::NoTarget(proto))?;
        if proto.is_h3() && matches!(self.route, Some(Route::Unix(_))) {
            return Err(LabError::NoAddress(
                "HTTP/3 runs over UDP: it cannot use a UNIX domain socket",
            ));
        }
        if let Some(o) = self.packet_origin(proto, profile)? {
            return Ok(o);
        }
        if profile == LinkProfile::Loopback {
            let (connect_to, unix_socket) = match &self.route {
                None => (Vec::new(), None),
                Some(Route::Addrs(a)) => (a.clone(), None),
                Some(Route::Unix(p)) => (Vec::new(), Some(p.clone())),
            };
            return Ok(Origin {
                target,
                connect_to,
                unix_socket,
            });
        }
        let upstream = match &self.route {
            Some(Route::Unix(_)) => return Err(LabError::UnixSocketLink(profile)),
            Some(Route::Addrs(a)) => a.first().copied().ok_or_else(|| LabError::Resolve {
                host: target.host.clone(),
                source: None,
            })?,
            None => resolve_first(&target)?,
        };
        let known = self
            .links
            .iter()
            .position(|(p, u, _)| *p == profile && *u == upstream);
        let i = match known {
            Some(i) => i,
            None => {
                let cfg =
                    LinkConfig::profile(profile, SocketAddr::from(([127, 0, 0, 1], 0)), upstream);
                let l = link::spawn(cfg).map_err(|source| LabError::Link {
                    name: Some(profile.to_string()),
                    source,
                })?;
                self.links.push((profile, upstream, l));
                self.links.len() - 1
            }
        };
        let l = &self.links[i].2;
        // HTTP/3 crosses the same link as TCP: its UDP relay, shaped the same way.
        let addr = if proto.is_h3() {
            l.udp_addr().ok_or(LabError::NoAddress(
                "the link relays no UDP (HTTP/3 cannot cross it)",
            ))?
        } else {
            l.addr()
        };
        Ok(Origin {
            target,
            connect_to: vec![addr],
            unix_socket: None,
        })
    }

    /// The link serving `profile` for `proto`, if one was started (its counters show the
    /// connections open through it).
    pub fn link(&self, proto: LabProtocol, profile: LinkProfile) -> Option<&RunningLink> {
        let t = self.targets.get(proto)?;
        let upstream = match &self.route {
            Some(Route::Addrs(a)) => *a.first()?,
            Some(Route::Unix(_)) => return None,
            None => (t.host.as_str(), t.port).to_socket_addrs().ok()?.next()?,
        };
        self.links
            .iter()
            .find(|(p, u, _)| *p == profile && *u == upstream)
            .map(|(_, _, l)| l)
    }
}

impl Drop for LabEnv {
    fn drop(&mut self) {
        self.links.clear();
        self.paths.clear();
        if let Some(s) = self.server.take() {
            s.shutdown();
            let _ = s.join();
        }
        if let Some(d) = self.cert_dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The first address `t`'s host resolves to (a link's upstream).
fn resolve_first(t: &Target) -> Result<SocketAddr, LabError> {
    (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| LabError::Resolve {
            host: t.host.clone(),
            source: Some(e),
        })?
        .next()
        .ok_or_else(|| LabError::Resolve {
            host: t.host.clone(),
            source: None,
        })
}

/// Waits (bounded: 2 s) until every thread of `server` has registered its id, so that their
/// CPU clocks can be read.
pub(crate) fn wait_for_thread_ids(server: &h2lab_server::RunningServer) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while server.thread_ids().len() < server.expected_threads()
        && std::time::Instant::now() < deadline
    {
        std::thread::yield_now();
    }
}
