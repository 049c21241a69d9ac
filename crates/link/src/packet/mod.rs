//! Packet mode: the kernels' own TCP and QUIC across one emulated path.
//!
//! [`PacketLink::start`] creates two network namespaces, *client* and *server*, each with one
//! TUN device (`h2lab0`) and an address from the benchmarking range 198.18.0.0/15
//! ([`CLIENT_ADDR`], [`SERVER_ADDR`]). A link thread holds both devices: every IP packet the
//! client's kernel sends towards the server is read from the client's device, shaped by the
//! up direction's [`PacketShaper`] (half the RTT, the rate counting whole IP packets, a
//! drop-tail queue, loss, jitter) and written into the server's device, and the reverse for
//! the down direction. One queue per direction: every flow shares the bottleneck as on a real
//! access line, and TCP and QUIC see the same drops.
//!
//! Threads join a side with [`PacketLink::enter`] (`setns` for the calling thread; threads it
//! starts inherit the namespace, sockets stay in the namespace they were created in), and
//! commands run on a side with [`PacketLink::command`]. Nothing is bound to the file system:
//! the namespaces live only as long as the process's descriptors of them (and the threads and
//! children inside), so they vanish with the process on any exit, SIGKILL and panic included;
//! children get SIGKILL when the link's owner thread dies.

mod netlink;
mod pump;
pub mod shaper;
mod sys;

use std::fmt;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::Serialize;

pub use shaper::{DelayQueue, Fate, LossModel, PacketParams, PacketShaper};

use crate::config::{Direction, LinkConfig};
use crate::shaper::{bytes_in, Nanos};

/// The client side's address (in the benchmarking range, RFC 2544).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The server side's address.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// The prefix both sides' devices are configured with (198.18.0.0/15).
pub const PREFIX: u8 = 15;
/// The TUN device's name in each namespace.
pub const DEVICE: &str = "h2lab0";
/// The TUN devices' transmit queue length in packets (the kernel's default is 500).
pub const DEVICE_QUEUE: u32 = 20_000;

/// One side of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Where clients run.
    Client,
    /// Where servers run.
    Server,
}

/// The shape of a packet path.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketConfig {
    /// Client to server.
    pub up: PacketParams,
    /// Server to client.
    pub down: PacketParams,
    /// Seed of the loss and jitter draws (the down direction uses `seed + 1`).
    pub seed: u64,
    /// MTU of both devices.
    pub mtu: u32,
    /// TCP congestion control of every connection across the path (set on the route between
    /// the namespaces: any algorithm the kernel has); `None` keeps the namespace's default.
    pub congestion_control: Option<String>,
    /// How long before a packet is due the link thread stops sleeping and polls, in ns
    /// ([`DEFAULT_SPIN_NS`]): delays within tens of microseconds, but under a steady stream
    /// of packets the (real-time) link thread then keeps a core busy. 0 sleeps until each
    /// packet is due and leaves the CPU to others: for a machine whose cores are all pinned
    /// to servers and clients, where a spinning link thread would take its core from one of
    /// them. Either way, at low load (one packet held) the thread polls ahead of a packet by
    /// one and a half times its timer's measured wake-up latency (at most 150 µs), so that
    /// a late timer does not delay the packet.
    /// `u64::MAX` never sleeps (busy polling: a core of its own, and no wake-up latency on
    /// a readable device either).
    pub spin_ns: u64,
}

/// The link thread's default poll before a packet is due: 300 µs.
pub const DEFAULT_SPIN_NS: u64 = 300_000;

/// The default drop-tail queue: one bandwidth-delay product, at least two full packets.
pub fn default_queue_bytes(bps: u64, rtt: Nanos, mtu: u32) -> usize {
    bytes_in(bps, rtt).max(2 * mtu as usize)
}

impl PacketConfig {
    /// The packet path with the shape of a relay configuration: its RTT, rates, loss
    /// (independent per packet), jitter, seed and queue (`None`: one BDP).
    pub fn from_link(c: &LinkConfig) -> PacketConfig {
        let mtu = 1500;
        let rtt = c.rtt.as_nanos() as Nanos;
        let dir = |d: Direction| {
            let bps = c.bps(d);
            PacketParams {
                one_way: rtt / 2,
                jitter: c.jitter.as_nanos() as Nanos,
                reorder: false,
                bps,
                queue_bytes: c
                    .queue_bytes
                    .or_else(|| bps.map(|b| default_queue_bytes(b, rtt, mtu)))
                    .unwrap_or(usize::MAX),
                loss: LossModel::Iid(c.loss),
            }
        };
        PacketConfig {
            up: dir(Direction::Up),
            down: dir(Direction::Down),
            seed: c.seed,
            mtu,
            congestion_control: None,
            spin_ns: DEFAULT_SPIN_NS,
        }
    }
}

/// Counters of one direction of a packet path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PacketDirStats {
    /// IP packets read from the sending side's device.
    pub packets_in: u64,
    /// Their bytes (whole IP packets).
    pub bytes_in: u64,
    /// Packets written into the receiving side's device.
    pub packets_out: u64,
    /// Their bytes.
    pub bytes_out: u64,
    /// Packets dropped at the tail of the full bottleneck queue.
    pub queue_drops: u64,
    /// Packets lost on the wire by the loss model.
    pub lost: u64,
    /// Packets the receiving device refused.
    pub write_errors: u64,
    /// Largest bottleneck queue seen, in bytes.
    pub max_queue_bytes: u64,
    /// How late the relayed packets were written, summed (ns after each was due: the link
    /// thread's timer wake-up and its work before the write).
    pub late_ns_total: u64,
    /// The latest one (ns).
    pub late_ns_max: u64,
}

impl PacketDirStats {
    /// Mean lateness of a relayed packet (ns; 0 with none).
    pub fn late_ns_mean(&self) -> u64 {
        self.late_ns_total
            .checked_div(self.packets_out)
            .unwrap_or(0)
    }
}

/// A snapshot of a packet path's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PacketStats {
    /// Client to server.
    pub up: PacketDirStats,
    /// Server to client.
    pub down: PacketDirStats,
}

impl fmt::Display for PacketDirStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} packets ({} B) relayed of {} read, {} dropped at the queue, {} lost, \
             max queue {} B",
            self.packets_out,
            self.bytes_out,
            self.packets_in,
            self.queue_drops,
            self.lost,
            self.max_queue_bytes
        )?;
        if self.write_errors > 0 {
            write!(f, ", {} refused by the device", self.write_errors)?;
        }
        Ok(())
    }
}

impl fmt::Display for PacketStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "path: {}", crate::PathKind::Packet.describe())?;
        writeln!(f, "up:   {}", self.up)?;
        write!(f, "down: {}", self.down)
    }
}

/// What packet mode could not do, by layer.
#[derive(Debug)]
pub enum PacketError {
    /// Neither root nor a user namespace: namespaces cannot be created. The text says why
    /// and what to change.
    Privileges(String),
    /// Creating or entering a network namespace failed.
    Namespace(io::Error),
    /// Creating the TUN device failed (`/dev/net/tun`).
    Tun(io::Error),
    /// Configuring an interface, a route or a sysctl failed.
    Configure(&'static str, io::Error),
    /// The link thread could not start.
    Thread(io::Error),
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacketError::Privileges(why) => f.write_str(why),
            PacketError::Namespace(e) => write!(
                f,
                "cannot create a network namespace ({e}): packet mode needs root or a user \
                 namespace (or use the relay: modelled TCP)"
            ),
            PacketError::Tun(e) if e.kind() == io::ErrorKind::PermissionDenied => write!(
                f,
                "cannot create a TUN device ({e}): /dev/net/tun is not readable and writable \
                 by this user (most distributions make it mode 0666: chmod 0666 \
                 /dev/net/tun), or run as root, or use the relay (modelled TCP)"
            ),
            PacketError::Tun(e) => write!(
                f,
                "cannot create a TUN device ({e}): packet mode needs /dev/net/tun (modprobe \
                 tun) and CAP_NET_ADMIN in the namespace"
            ),
            PacketError::Configure(what, e) => write!(f, "cannot configure {what}: {e}"),
            PacketError::Thread(e) => write!(f, "cannot start the link thread: {e}"),
        }
    }
}

impl std::error::Error for PacketError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PacketError::Privileges(_) => None,
            PacketError::Namespace(e)
            | PacketError::Tun(e)
            | PacketError::Configure(_, e)
            | PacketError::Thread(e) => Some(e),
        }
    }
}

/// How this process may create namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    /// Running as root.
    Root,
    /// Inside a user namespace that maps the current user to root (as `unshare -r`).
    UserNamespace,
}

/// Makes sure namespaces can be created: nothing to do as root; otherwise enters a user
/// namespace mapping the current user. Call it before the process starts any thread (a
/// threaded process cannot enter a user namespace). The error is one line saying why and what
/// to change.
pub fn prepare_privileges() -> Result<Privilege, PacketError> {
    if sys::euid() == 0 {
        return Ok(Privilege::Root);
    }
    match sys::enter_user_namespace() {
        Ok(()) => Ok(Privilege::UserNamespace),
        Err(e) => {
            let restricted = sys::read_sysctl("kernel/apparmor_restrict_unprivileged_userns")
                .is_ok_and(|v| v == "1");
            let hint = if restricted {
                "AppArmor restricts them: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
            } else {
                "allow them (sysctl -w kernel.unprivileged_userns_clone=1 and \
                 user.max_user_namespaces > 0)"
            };
            Err(PacketError::Privileges(format!(
                "packet mode needs root or an unprivileged user namespace, and creating one \
                 failed ({e}); run as root, or {hint}, or use the relay (modelled TCP)"
            )))
        }
    }
}

/// Moves the calling thread, and the threads it starts from now on, into a private network
/// namespace with loopback up. In a user namespace of its own (see [`prepare_privileges`]) a
/// thread that entered a path's side cannot return to the host's network namespace (owned by
/// the host's user namespace); a lab run that keeps its loopback conditions and its own
/// servers in a private home can. Call it while the process is single-threaded, and only when
/// nothing outside the machine's loopback of this process is needed (the host's other
/// addresses are unreachable from there).
pub fn private_home() -> Result<(), PacketError> {
    let _home = sys::unshare_net().map_err(PacketError::Namespace)?;
    sys::configure("lo", None, None, None).map_err(|e| PacketError::Configure("lo", e))
}

/// Ends a command started in its own process group (`CommandExt::process_group(0)`, as for
/// `--server-cmd`, which runs through `sh -c`): SIGKILL to the whole group, so that what the
/// shell started goes too, then reaps the child.
pub fn end_process_group(child: &mut std::process::Child) {
    sys::kill_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// What a side of a running path is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideInfo {
    /// Its address.
    pub addr: Ipv4Addr,
    /// The TCP congestion control new sockets there get by default.
    pub congestion_control: String,
    /// The network namespace's inode (`net:[N]`), to check that it is gone afterwards.
    pub netns_inode: u64,
}

/// Both sides of a running path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathInfo {
    /// The client side.
    pub client: SideInfo,
    /// The server side.
    pub server: SideInfo,
}

struct Namespace {
    ns: OwnedFd,
    tun: OwnedFd,
    info: SideInfo,
}

/// Creates one side in a helper thread: a new network namespace with loopback up and the TUN
/// device configured; the thread exits, the descriptors keep both alive.
fn make_side(addr: Ipv4Addr, config: &PacketConfig) -> Result<Namespace, PacketError> {
    let mtu = config.mtu;
    let cc = config.congestion_control.clone();
    let h = std::thread::Builder::new()
        .name("h2lab-netns".into())
        .spawn(move || -> Result<Namespace, PacketError> {
            let ns = sys::unshare_net().map_err(PacketError::Namespace)?;
            sys::configure("lo", None, None, None).map_err(|e| PacketError::Configure("lo", e))?;
            let tun = sys::open_tun(DEVICE).map_err(PacketError::Tun)?;
            // A long device queue: the emulated bottleneck is the link's queue, so the kernel's
            // queue in front of the link thread must not drop when the thread is late.
            // (Set by netlink, which a user namespace of our own allows, unlike the ioctl.)
            sys::configure(DEVICE, Some((addr, PREFIX)), Some(mtu), Some(DEVICE_QUEUE))
                .map_err(|e| PacketError::Configure("the TUN device", e))?;
            // IPv6 is not routed over the path; keep its chatter off the devices.
            let _ = sys::write_sysctl("net/ipv6/conf/all/disable_ipv6", "1");
            let congestion_control = match &cc {
                // On the route across the path, not as the namespace's default: a route may
                // name any algorithm the kernel has (cubic too), a namespace's default only
                // one the host allows (`tcp_allowed_congestion_control`, often `reno bbr`).
                Some(cc) => {
                    let mask = u32::MAX.checked_shl(32 - u32::from(PREFIX)).unwrap_or(0);
                    let net = Ipv4Addr::from(u32::from(addr) & mask);
                    netlink::set_route_congestion_control(DEVICE, net, PREFIX, addr, cc).map_err(
                        |e| {
                            PacketError::Configure(
                                "the route's TCP congestion control (one of \
                                 /proc/sys/net/ipv4/tcp_available_congestion_control)",
                                e,
                            )
                        },
                    )?;
                    cc.clone()
                }
                None => sys::read_sysctl("net/ipv4/tcp_congestion_control")
                    .map_err(|e| PacketError::Configure("tcp_congestion_control", e))?,
            };
            let netns_inode = sys::ns_inode(&ns).map_err(PacketError::Namespace)?;
            Ok(Namespace {
                ns,
                tun,
                info: SideInfo {
                    addr,
                    congestion_control,
                    netns_inode,
                },
            })
        })
        .map_err(PacketError::Thread)?;
    h.join()
        .unwrap_or_else(|_| Err(PacketError::Thread(io::Error::other("panicked"))))
}

/// A running packet path. Dropping it stops the link thread and closes both devices; the
/// namespaces go when the last thread or child inside them does.
pub struct PacketLink {
    client_ns: Arc<OwnedFd>,
    server_ns: Arc<OwnedFd>,
    info: PathInfo,
    config: PacketConfig,
    stop: Arc<AtomicBool>,
    wake: Arc<OwnedFd>,
    counters: Arc<pump::Counters>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl PacketLink {
    /// Creates both namespaces and devices and starts the link thread.
    pub fn start(config: PacketConfig) -> Result<PacketLink, PacketError> {
        let client = make_side(CLIENT_ADDR, &config)?;
        let server = make_side(SERVER_ADDR, &config)?;
        let stop = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(sys::eventfd().map_err(PacketError::Thread)?);
        let counters = Arc::new(pump::Counters::default());
        let pump = pump::Pump {
            devices: [client.tun, server.tun],
            wake: Arc::clone(&wake),
            stop: Arc::clone(&stop),
            shapers: [
                PacketShaper::new(config.up.clone(), config.seed),
                PacketShaper::new(config.down.clone(), config.seed.wrapping_add(1)),
            ],
            counters: Arc::clone(&counters),
            spin_ns: config.spin_ns,
        };
        let thread = std::thread::Builder::new()
            .name("h2lab-link-packet".into())
            .spawn(move || pump.run())
            .map_err(PacketError::Thread)?;
        Ok(PacketLink {
            client_ns: Arc::new(client.ns),
            server_ns: Arc::new(server.ns),
            info: PathInfo {
                client: client.info,
                server: server.info,
            },
            config,
            stop,
            wake,
            counters,
            thread: Some(thread),
        })
    }

    /// The sides' addresses, congestion controls and namespace ids.
    pub fn info(&self) -> &PathInfo {
        &self.info
    }

    /// The shape it runs with.
    pub fn config(&self) -> &PacketConfig {
        &self.config
    }

    /// The counters now.
    pub fn stats(&self) -> PacketStats {
        self.counters.snapshot()
    }

    fn ns(&self, side: Side) -> &Arc<OwnedFd> {
        match side {
            Side::Client => &self.client_ns,
            Side::Server => &self.server_ns,
        }
    }

    /// Moves the calling thread into `side`'s namespace: sockets it creates from now on, and
    /// threads it starts, are on that side of the path.
    pub fn enter(&self, side: Side) -> io::Result<()> {
        sys::enter_net(self.ns(side).as_raw_fd())
    }

    /// A handle that moves threads into `side`'s namespace, usable after the link is moved.
    pub fn entry(&self, side: Side) -> SideEntry {
        SideEntry(Arc::clone(self.ns(side)))
    }

    /// Starts `f` on a new thread inside `side`'s namespace.
    pub fn spawn_in<T: Send + 'static>(
        &self,
        side: Side,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<JoinHandle<T>> {
        let entry = self.entry(side);
        std::thread::Builder::new()
            .name("h2lab-netns-side".into())
            .spawn(move || {
                entry
                    .enter()
                    .expect("setns into a namespace this process created");
                f()
            })
    }

    /// Makes `cmd` run inside `side`'s namespace, killed (SIGKILL) if the thread that spawns
    /// it dies first; the side's addresses are exported as `H2LAB_CLIENT_ADDR` and
    /// `H2LAB_SERVER_ADDR`.
    pub fn command(&self, side: Side, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let ns = Arc::clone(self.ns(side));
        cmd.env("H2LAB_CLIENT_ADDR", CLIENT_ADDR.to_string())
            .env("H2LAB_SERVER_ADDR", SERVER_ADDR.to_string());
        let hook = move || sys::child_enter(ns.as_raw_fd());
        // The hook runs between fork and exec: only async-signal-safe calls (prctl, setns).
        #[allow(unsafe_code)]
        // SAFETY: `hook` calls only prctl and setns, which are async-signal-safe, and touches
        // no lock or allocation.
        unsafe {
            cmd.pre_exec(hook);
        }
    }

    /// Stops the link thread and waits for it; returns its error, if it failed.
    pub fn stop(mut self) -> io::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        sys::wake(self.wake.as_raw_fd());
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("link thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for PacketLink {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

/// Moves threads into one side's namespace (see [`PacketLink::entry`]).
#[derive(Debug, Clone)]
pub struct SideEntry(Arc<OwnedFd>);

impl SideEntry {
    /// Moves the calling thread into the side's namespace.
    pub fn enter(&self) -> io::Result<()> {
        sys::enter_net(self.0.as_raw_fd())
    }
}

/// The calling thread's own network namespace, to return to after [`PacketLink::enter`].
pub fn current_namespace() -> io::Result<SideEntry> {
    sys::current_net().map(|fd| SideEntry(Arc::new(fd)))
}
