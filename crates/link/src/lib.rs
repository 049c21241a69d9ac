//! `h2lab link`: a user-space network emulator.
//!
//! The kernel here has no netem and loopback has no latency, so every protocol difference that
//! depends on round trips disappears in a local benchmark. This module relays TCP connections
//! from a listening address to an upstream server and shapes each direction like a real path:
//! half the RTT of propagation delay, a bandwidth limit with a bounded bottleneck queue that
//! pushes back on the sender, optional jitter (never reordering) and optional loss (modelled as
//! TCP retransmission delay with head-of-line blocking). All connections share each direction's
//! bandwidth, as they share an access line. The model is documented in [`shaper`], its sans-IO
//! core. Because the relayed TCP connections run on loopback and never see the path, the relay
//! also emulates each one's congestion window ([`tcp_model`]: slow start, a cut per modelled
//! loss; [`LinkConfig::tcp_model`]).
//!
//! It relays UDP too ([`udp`], on by default, on the TCP listener's port number when free), so
//! that HTTP/3 crosses the same emulated path: datagrams get the same delay, rate, queue, jitter
//! and loss, with loss and a full queue dropping them for real.
//!
//! # Accuracy
//!
//! Measured by `tests/accuracy.rs` over loopback on a loaded 2-core machine (debug build,
//! medians of 5-15 echo round trips and of 3 half-second transfers):
//!
//! | target RTT | added RTT | error |   | configured rate | measured    | error  |
//! |-----------:|----------:|------:|---|----------------:|------------:|-------:|
//! | 5 ms       | 5.07 ms   | +1.4% |   | 1 Mbit/s        | 1.000 Mbit/s| +0.02% |
//! | 20 ms      | 20.12 ms  | +0.6% |   | 10 Mbit/s       | 10.00 Mbit/s| +0.00% |
//! | 50 ms      | 50.15 ms  | +0.3% |   | 100 Mbit/s      | 100.0 Mbit/s| +0.00% |
//! | 200 ms     | 200.13 ms | +0.06%|   | 1000 Mbit/s     | 996 Mbit/s  | -0.4%  |
//!
//! The remaining RTT error is the wake-up latency of the relay thread (tens of microseconds per
//! direction); rates are exact in virtual time and only a sender that cannot keep up (or a
//! machine that stalls the relay for longer than its queue lasts) shows below them.
//!
//! For UDP (`tests/udp.rs`, same machine): added RTT 10.3 ms for 10 ms and 50.3 ms for
//! 50 ms; 4.00 and 7.96 Mbit/s for 4 and 8 Mbit/s; 4.85% of 4000 datagrams lost for 5% loss
//! (seeded, so the same figure every run).
//!
//! Start it in-process on port 0 and point a client at [`RunningLink::addr`]:
//!
//! ```no_run
//! use h2lab_link::{self as link, LinkConfig, LinkProfile};
//! # fn main() -> std::io::Result<()> {
//! let server: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
//! let config = LinkConfig::profile(LinkProfile::Wan, "127.0.0.1:0".parse().unwrap(), server);
//! let link = link::spawn(config)?;
//! println!("WAN link to {server} on {}", link.addr());
//! // ... run the client against link.addr() ...
//! println!("{:?}", link.stats());
//! link.join()?; // shuts it down
//! # Ok(()) }
//! ```

mod config;
mod flags;
#[cfg(target_os = "linux")]
pub mod packet;
mod parse;
mod path;
pub mod record;
mod relay;
mod ring;
mod sched;
pub mod shaper;
mod stats;
pub mod tcp_model;
pub mod udp;

use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

pub use config::{
    parse_loss_levels, ConfigError, Direction, LinkConfig, LinkProfile, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_UDP_IDLE, PRE_QUEUE_BYTES,
};
pub use flags::{resolve, FlagError, LinkFlags};
pub use parse::{
    format_duration, format_rate, parse_bytes, parse_duration, parse_loss, parse_rate, ParseError,
};
pub use path::PathKind;
pub use record::{LinkRecord, TcpModelRecord};
pub use stats::{DirStats, LinkStats, UdpDirStats, UdpStats};
pub use tcp_model::{TcpModelKind, UnknownTcpModel};

use relay::Relay;
use stats::Counters;
use udp::UdpRelay;

#[derive(Debug, Default)]
struct ShutdownInner {
    flag: AtomicBool,
    wakers: Mutex<Vec<Arc<mio::Waker>>>,
}

/// Stops a running link from any thread. Cloning gives another handle to the same trigger.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<ShutdownInner>);

impl Shutdown {
    /// A trigger that has not fired.
    pub fn new() -> Self {
        Shutdown::default()
    }

    /// Asks the link to stop: it closes every connection and [`run`] returns.
    pub fn trigger(&self) {
        self.0.flag.store(true, Ordering::SeqCst);
        let wakers = self.0.wakers.lock().unwrap_or_else(PoisonError::into_inner);
        for w in wakers.iter() {
            let _ = w.wake();
        }
    }

    /// Whether [`trigger`](Self::trigger) was called.
    pub fn is_triggered(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    fn install(&self, waker: Arc<mio::Waker>) {
        let mut wakers = self.0.wakers.lock().unwrap_or_else(PoisonError::into_inner);
        wakers.push(waker);
    }
}

/// Reads a link's counters from any thread.
#[derive(Debug, Clone)]
pub struct StatsHandle(Arc<Counters>);

impl StatsHandle {
    /// The counters now.
    pub fn snapshot(&self) -> LinkStats {
        self.0.snapshot()
    }
}

fn invalid(e: ConfigError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e)
}

/// A link ready to run on a bound listener: [`Link::run`] blocks the calling thread until the
/// [`Shutdown`] fires.
pub struct Link {
    relay: Relay,
    udp: Option<UdpRelay>,
    addr: SocketAddr,
    udp_addr: Option<SocketAddr>,
    counters: Arc<Counters>,
    shutdown: Shutdown,
}

/// Binds the UDP socket of a link whose TCP listener is on `tcp`: the same address and port
/// number when that port is free for UDP, otherwise the same address and any port.
fn bind_udp(tcp: SocketAddr) -> io::Result<UdpSocket> {
    UdpSocket::bind(tcp).or_else(|_| UdpSocket::bind(SocketAddr::new(tcp.ip(), 0)))
}

impl Link {
    /// Prepares a link on `listener` (which is made non-blocking), stopped by `shutdown`.
    /// With [`LinkConfig::udp`] it also binds the UDP socket, on the listener's port number
    /// when that is free.
    pub fn new(listener: TcpListener, config: &LinkConfig, shutdown: Shutdown) -> io::Result<Link> {
        let udp = match config.udp {
            true => Some(bind_udp(listener.local_addr()?)?),
            false => None,
        };
        Link::with_udp(listener, udp, config, shutdown)
    }

    /// Prepares a link on `listener` and, if given, the already bound UDP socket `udp`
    /// (relayed whatever [`LinkConfig::udp`] says).
    pub fn with_udp(
        listener: TcpListener,
        udp: Option<UdpSocket>,
        config: &LinkConfig,
        shutdown: Shutdown,
    ) -> io::Result<Link> {
        config.validate().map_err(invalid)?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters {
            tcp_model: config.effective_tcp_model(),
            ..Counters::default()
        });
        let relay = Relay::new(listener, config, Arc::clone(&counters), shutdown.clone())?;
        let (udp, udp_addr) = match udp {
            Some(socket) => {
                let udp_addr = socket.local_addr()?;
                let relay = UdpRelay::new(socket, config, Arc::clone(&counters), shutdown.clone())?;
                (Some(relay), Some(udp_addr))
            }
            None => (None, None),
        };
        Ok(Link {
            relay,
            udp,
            addr,
            udp_addr,
            counters,
            shutdown,
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address UDP clients send to, if the link relays UDP.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        self.udp_addr
    }

    /// A handle for reading the counters while the link runs.
    pub fn stats(&self) -> StatsHandle {
        StatsHandle(Arc::clone(&self.counters))
    }

    /// Relays until the shutdown fires (UDP on a second thread).
    pub fn run(self) -> io::Result<()> {
        let udp = match self.udp {
            Some(relay) => Some(
                std::thread::Builder::new()
                    .name("h2lab-link-udp".into())
                    .spawn(move || relay.run())?,
            ),
            None => None,
        };
        let tcp = self.relay.run();
        // Whichever way the TCP loop ended, the UDP one ends too.
        self.shutdown.trigger();
        let udp = match udp {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("link UDP thread panicked"))),
            None => Ok(()),
        };
        tcp.and(udp)
    }
}

/// Runs a link on `listener` with `config` until `shutdown` fires (blocking). This is what
/// `h2lab link` runs; in-process users usually prefer [`spawn`].
pub fn run(listener: TcpListener, config: &LinkConfig, shutdown: Shutdown) -> io::Result<()> {
    Link::new(listener, config, shutdown)?.run()
}

/// Binds `config.listen` (port 0 picks a free port) and runs the link on a background thread.
pub fn spawn(config: LinkConfig) -> io::Result<RunningLink> {
    config.validate().map_err(invalid)?;
    let listener = TcpListener::bind(config.listen)?;
    spawn_on(listener, config)
}

/// Runs a link on an already bound `listener` on a background thread.
pub fn spawn_on(listener: TcpListener, config: LinkConfig) -> io::Result<RunningLink> {
    let shutdown = Shutdown::new();
    let link = Link::new(listener, &config, shutdown.clone())?;
    let addr = link.local_addr();
    let udp_addr = link.udp_addr();
    let stats = link.stats();
    let thread = std::thread::Builder::new()
        .name("h2lab-link".into())
        .spawn(move || link.run())?;
    Ok(RunningLink {
        addr,
        udp_addr,
        config,
        shutdown,
        stats,
        thread: Some(thread),
    })
}

/// A link running on its own thread. Dropping it shuts it down and waits for the thread.
pub struct RunningLink {
    addr: SocketAddr,
    udp_addr: Option<SocketAddr>,
    config: LinkConfig,
    shutdown: Shutdown,
    stats: StatsHandle,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl RunningLink {
    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address UDP clients send to, if the link relays UDP.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        self.udp_addr
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The counters now.
    pub fn stats(&self) -> LinkStats {
        self.stats.snapshot()
    }

    /// A handle for reading the counters from elsewhere.
    pub fn stats_handle(&self) -> StatsHandle {
        self.stats.clone()
    }

    /// Asks the link to stop (returns at once; see [`join`](Self::join)).
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    /// Stops the link and waits for its thread; returns the loop's error, if it failed.
    pub fn join(mut self) -> io::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> io::Result<()> {
        self.shutdown.trigger();
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("link thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for RunningLink {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
