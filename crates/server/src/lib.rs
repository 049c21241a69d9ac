//! `h2lab serve`: the test target server. HTTP/1.1 and h2c on one cleartext port, HTTP/2 and
//! HTTP/1.1 over TLS (ALPN), the built-in endpoints the experiments need, on h2lab's own
//! sans-IO codecs (`h2lab_wire::{h1, h2, hpack}`) and one mio event loop per worker thread.
//!
//! - [`run`] serves already bound [`Listener`]s until a [`Shutdown`] is triggered;
//!   [`spawn`] binds `config.listen`/`config.tls_listen` (port 0 allowed) and runs the
//!   server on a background thread, returning a [`RunningServer`] with the bound addresses
//!   and the certificate path.
//! - [`ServerConfig`] holds every tunable (threads, HTTP/2 SETTINGS, limits, keep-alive,
//!   idle timeout, static root, certificate).
//! - [`endpoints`] is the protocol-independent endpoint table (`/`, `/ping`, `/json`,
//!   `/data`, `/compute`, `/info`, `/delay`, `/status/N`, `/page`, `/asset/...`, `--root`).
//! - [`tls`] loads or generates (self-signed, for localhost) the certificate.
//!
//! Architecture: with one thread the worker accepts itself; with more, an acceptor thread
//! hands each connection to the least-loaded worker, where it stays. Each loop turn reads
//! and processes ready connections, fires timers (`/delay`), and writes each connection's
//! queued output with one `writev` (cleartext) or by feeding the slices to rustls (TLS).
//! Built-in bodies are never copied by the server: the output queue splices them in from
//! static memory behind the frame or response heads (see `out.rs`). Built-in responses
//! allocate nothing per request (see `tests/alloc.rs`).
//!
//! In-process use (tests, the lab):
//!
//! ```no_run
//! let server = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
//! println!("listening on {}", server.addr().unwrap());
//! server.shutdown();
//! server.join().unwrap();
//! ```

pub mod body;
pub mod config;
mod conn;
pub mod cpu_clock;
mod ctx;
pub mod date;
pub mod early;
pub mod endpoints;
mod h2head;
mod head_key;
mod http1;
mod http2;
mod http3;
mod log;
mod out;
mod proto;
/// The QUIC shell, now its own crate (`h2lab-quic`) shared with the client engine.
pub use h2lab_quic as quic;
pub mod sched;
pub mod shutdown;
pub mod testing;
pub mod tls;
mod worker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

pub use config::ServerConfig;
pub use shutdown::Shutdown;

/// Errors that stop the server from starting or running.
#[derive(Debug)]
pub enum ServerError {
    /// Binding or polling failed.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// A listening socket could not be bound.
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The configuration is invalid.
    Config(String),
    /// Certificate or TLS setup failed.
    Tls(String),
    /// A worker thread panicked.
    WorkerPanicked,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::Io { context, source } => write!(f, "{context}: {source}"),
            ServerError::Listen { addr, source } => {
                write!(f, "cannot listen on {addr}: ")?;
                match source.kind() {
                    std::io::ErrorKind::AddrInUse => write!(f, "address in use"),
                    std::io::ErrorKind::AddrNotAvailable => {
                        write!(f, "address not available on this host")
                    }
                    std::io::ErrorKind::PermissionDenied => write!(f, "permission denied"),
                    _ => write!(f, "{source}"),
                }
            }
            ServerError::Config(m) => write!(f, "invalid configuration: {m}"),
            ServerError::Tls(m) => write!(f, "TLS: {m}"),
            ServerError::WorkerPanicked => write!(f, "a worker thread panicked"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Io { source, .. } | ServerError::Listen { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServerError {
    let context = context.into();
    move |source| ServerError::Io { context, source }
}

/// A bound listening socket and what it serves.
#[derive(Debug)]
pub struct Listener {
    inner: std::net::TcpListener,
    tls: bool,
    /// HTTP/3's UDP sockets on the same address, one per HTTP/3 thread (TLS listeners,
    /// `config.h3`); empty when [`run`] binds them itself.
    udp: Vec<std::net::UdpSocket>,
}

impl Listener {
    /// Binds `addr` (port 0 picks a free port). `tls`: serve TLS (HTTP/2 and HTTP/1.1 by
    /// ALPN) instead of cleartext (HTTP/1.1 and h2c).
    pub fn bind(addr: SocketAddr, tls: bool) -> std::io::Result<Self> {
        Ok(Listener {
            inner: std::net::TcpListener::bind(addr)?,
            tls,
            udp: Vec::new(),
        })
    }

    /// Wraps an already bound listener (cleartext).
    pub fn cleartext(inner: std::net::TcpListener) -> Self {
        Listener {
            inner,
            tls: false,
            udp: Vec::new(),
        }
    }

    /// Wraps an already bound listener (TLS).
    pub fn tls(inner: std::net::TcpListener) -> Self {
        Listener {
            inner,
            tls: true,
            udp: Vec::new(),
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Whether this listener serves TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Binds HTTP/3's UDP sockets on this listener's address (same IP and port number),
    /// one per HTTP/3 thread (`threads`, as `config.threads`), for a server run with
    /// `config.h3`; [`run`] binds them itself when this was not called.
    ///
    /// The whole SO_REUSEPORT group is bound here, before the address is published: the
    /// kernel picks a group member by a hash of the 4-tuple *modulo the group's size*, so a
    /// socket joining later re-routes the datagrams of connections already accepted by
    /// another thread's QUIC endpoint, which drops them as unknown (an HTTP/3 transfer
    /// started in that window stalled until its idle timeout).
    pub fn with_h3(mut self, threads: usize) -> std::io::Result<Self> {
        let first = http3::bind(self.inner.local_addr()?, threads > 1)?;
        let more = http3::bind_more(&first, threads)?;
        self.udp = std::iter::once(first).chain(more).collect();
        Ok(self)
    }

    /// The bound socket (for event loops other than the server's, e.g. `h2lab proxy`).
    pub fn into_std(self) -> std::net::TcpListener {
        self.inner
    }
}

/// Serves `listeners` until `shutdown` is triggered, with `config.threads` workers.
/// TLS listeners use `config.cert`/`config.key`, or a generated self-signed certificate
/// (see [`tls::ensure_certificate`]). `config.listen`/`config.tls_listen` are ignored here
/// (the listeners are given).
pub fn run(
    listeners: Vec<Listener>,
    config: ServerConfig,
    shutdown: Shutdown,
) -> Result<(), ServerError> {
    run_with_ids(listeners, config, shutdown, &ThreadIds::default())
}

/// The kernel thread ids of a server's threads, filled in by each thread as it starts
/// (Linux only; empty elsewhere). The lab reads their CPU clocks and pins them to CPUs.
#[derive(Debug, Clone, Default)]
pub struct ThreadIds(Arc<std::sync::Mutex<Vec<u32>>>);

impl ThreadIds {
    /// The ids registered so far.
    pub fn get(&self) -> Vec<u32> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Registers the calling thread.
    fn register_current(&self) {
        if let Some(tid) = current_tid() {
            if let Ok(mut v) = self.0.lock() {
                v.push(tid);
            }
        }
    }
}

/// The kernel thread id of the calling thread (`/proc/thread-self` names it), Linux only.
pub fn current_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// [`run`], registering every server thread (the caller's, the workers', the acceptor's)
/// in `ids`.
pub fn run_with_ids(
    listeners: Vec<Listener>,
    config: ServerConfig,
    shutdown: Shutdown,
    ids: &ThreadIds,
) -> Result<(), ServerError> {
    ids.register_current();
    config.validate().map_err(ServerError::Config)?;
    if listeners.is_empty() {
        return Err(ServerError::Config("no listener".into()));
    }
    let tls = if listeners.iter().any(|l| l.tls) {
        let paths = tls::ensure_certificate(&config)?;
        Some(tls::server_config(&paths, &config)?)
    } else {
        None
    };
    let router = endpoints::Router::new(&config).map_err(io_err("--root"))?;
    let mut h3_threads = Vec::new();
    let mut alt_svc = None;
    if config.h3 {
        h3_threads = spawn_h3(&listeners, &config, &shutdown, ids)?;
        // RFC 9114 §3.1.1: HTTP/3 on the same port number as the TLS port.
        if let Some(a) = listeners.iter().find(|l| l.tls) {
            let port = a.local_addr().map_err(io_err("local_addr"))?.port();
            alt_svc = Some(format!("h3=\":{port}\"").into_bytes());
        }
    }
    let threads = config.threads;
    let shared = Arc::new(ctx::Shared {
        config,
        router,
        tls,
        shutdown: shutdown.clone(),
        alt_svc,
    });
    let mut mio_listeners = Vec::with_capacity(listeners.len());
    for l in listeners {
        l.inner
            .set_nonblocking(true)
            .map_err(io_err("set_nonblocking"))?;
        mio_listeners.push((mio::net::TcpListener::from_std(l.inner), l.tls));
    }

    let mut handles = Vec::with_capacity(threads);
    let mut threads_joined: Vec<JoinHandle<std::io::Result<()>>> = Vec::new();
    let mut direct = if threads == 1 {
        std::mem::take(&mut mio_listeners)
    } else {
        Vec::new()
    };
    for i in 0..threads {
        let (w, h) = worker::Worker::new(shared.clone(), std::mem::take(&mut direct))
            .map_err(io_err("creating the event loop"))?;
        handles.push(h);
        let ids = ids.clone();
        let t = std::thread::Builder::new()
            .name(format!("h2lab-worker-{i}"))
            .spawn(move || {
                ids.register_current();
                w.run()
            })
            .map_err(io_err("spawning a worker"))?;
        threads_joined.push(t);
    }
    let acceptor = if mio_listeners.is_empty() {
        drop(handles);
        None
    } else {
        let sd = shutdown.clone();
        let ids = ids.clone();
        Some(
            std::thread::Builder::new()
                .name("h2lab-acceptor".into())
                .spawn(move || {
                    ids.register_current();
                    worker::run_acceptor(mio_listeners, handles, sd)
                })
                .map_err(io_err("spawning the acceptor"))?,
        )
    };

    let mut result = Ok(());
    if let Some(a) = acceptor {
        match a.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                shutdown.trigger();
                result = Err(ServerError::Io {
                    context: "acceptor".into(),
                    source: e,
                });
            }
            Err(_) => {
                shutdown.trigger();
                result = Err(ServerError::WorkerPanicked);
            }
        }
    }
    for t in h3_threads.into_iter().chain(threads_joined) {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                shutdown.trigger();
                if result.is_ok() {
                    result = Err(ServerError::Io {
                        context: "worker event loop".into(),
                        source: e,
                    });
                }
            }
            Err(_) => {
                shutdown.trigger();
                if result.is_ok() {
                    result = Err(ServerError::WorkerPanicked);
                }
            }
        }
    }
    result
}

/// Starts the HTTP/3 threads of each TLS listener (binding its UDP socket if
/// [`Listener::with_h3`] did not): `config.threads` of them, each with its own UDP socket on
/// the port (SO_REUSEPORT, Linux; see [`http3::bind_more`]) and its own QUIC endpoint.
fn spawn_h3(
    listeners: &[Listener],
    config: &ServerConfig,
    shutdown: &Shutdown,
    ids: &ThreadIds,
) -> Result<Vec<JoinHandle<std::io::Result<()>>>, ServerError> {
    let mut handles = Vec::new();
    for l in listeners.iter().filter(|l| l.tls) {
        let addr = l.local_addr().map_err(io_err("local_addr"))?;
        let group = if l.udp.is_empty() {
            // Bound before any thread reads (see `Listener::with_h3`).
            let first = http3::bind(addr, config.threads > 1)
                .map_err(|source| ServerError::Listen { addr, source })?;
            let more = http3::bind_more(&first, config.threads)
                .map_err(|source| ServerError::Listen { addr, source })?;
            std::iter::once(first).chain(more).collect()
        } else {
            let mut g = Vec::new();
            for u in &l.udp {
                g.push(u.try_clone().map_err(io_err("HTTP/3 socket"))?);
            }
            g
        };
        let quic = http3::quic_server_config(config)?;
        for udp in group {
            let (config, shutdown, ids) = (config.clone(), shutdown.clone(), ids.clone());
            let quic = Arc::clone(&quic);
            let t = std::thread::Builder::new()
                .name("h2lab-h3".into())
                .spawn(move || {
                    ids.register_current();
                    http3::run(udp, &config, quic, &shutdown)
                })
                .map_err(io_err("spawning the HTTP/3 thread"))?;
            handles.push(t);
        }
    }
    if handles.is_empty() {
        return Err(ServerError::Config("HTTP/3 needs a TLS port".into()));
    }
    Ok(handles)
}

/// A server started by [`spawn`].
#[derive(Debug)]
pub struct RunningServer {
    addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    h3_addr: Option<SocketAddr>,
    cert_path: Option<PathBuf>,
    key_path: Option<PathBuf>,
    shutdown: Shutdown,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
    ids: ThreadIds,
    threads: usize,
    early: Arc<early::EarlyStats>,
}

impl RunningServer {
    /// The cleartext address (HTTP/1.1 and h2c), if any.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The TLS address, if any.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// The HTTP/3 (QUIC, UDP) address, if HTTP/3 is on: the TLS address's IP and port.
    pub fn h3_addr(&self) -> Option<SocketAddr> {
        self.h3_addr
    }

    /// The certificate (PEM) the TLS port presents (generated or configured).
    pub fn cert_path(&self) -> Option<&std::path::Path> {
        self.cert_path.as_deref()
    }

    /// The private key (PEM) of the TLS port.
    pub fn key_path(&self) -> Option<&std::path::Path> {
        self.key_path.as_deref()
    }

    /// The kernel thread ids of the server's threads registered so far (Linux; see
    /// [`RunningServer::expected_threads`] for how many there will be).
    pub fn thread_ids(&self) -> Vec<u32> {
        self.ids.get()
    }

    /// How many threads the server runs: the server thread, its workers, with more than
    /// one worker the acceptor, and the HTTP/3 threads (as many as workers on Linux, one
    /// elsewhere).
    pub fn expected_threads(&self) -> usize {
        let h3 = if cfg!(any(target_os = "linux", target_os = "android")) {
            self.threads
        } else {
            1
        };
        1 + self.threads + usize::from(self.threads > 1) + usize::from(self.h3_addr.is_some()) * h3
    }

    /// The early-data counters (`--0rtt`): tickets and requests answered or refused early.
    pub fn early_stats(&self) -> &early::EarlyStats {
        &self.early
    }

    /// A clone of the stop handle.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Asks the server to stop (returns at once; [`RunningServer::join`] waits).
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    /// Waits for the server thread to finish (call [`RunningServer::shutdown`] first).
    pub fn join(mut self) -> Result<(), ServerError> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ServerError::WorkerPanicked),
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `config.listen` and `config.tls_listen` (port 0 allowed), prepares the certificate
/// for TLS, and runs the server on a background thread.
pub fn spawn(mut config: ServerConfig) -> Result<RunningServer, ServerError> {
    config.validate().map_err(ServerError::Config)?;
    // Report a bad --root now rather than from the server thread.
    endpoints::Router::new(&config).map_err(io_err(format!(
        "--root {}",
        config
            .root
            .as_deref()
            .unwrap_or(std::path::Path::new(""))
            .display()
    )))?;
    let mut listeners = Vec::new();
    let mut addr = None;
    let mut tls_addr = None;
    let mut h3_addr = None;
    if let Some(a) = config.listen {
        let l =
            Listener::bind(a, false).map_err(|source| ServerError::Listen { addr: a, source })?;
        addr = Some(l.local_addr().map_err(io_err("local_addr"))?);
        listeners.push(l);
    }
    let (mut cert_path, mut key_path) = (None, None);
    if let Some(a) = config.tls_listen {
        let paths = tls::ensure_certificate(&config)?;
        // Report an unusable certificate or key now rather than from the server thread.
        tls::server_config(&paths, &config)?;
        config.cert = Some(paths.cert.clone());
        config.key = Some(paths.key.clone());
        cert_path = Some(paths.cert);
        key_path = Some(paths.key);
        let mut l =
            Listener::bind(a, true).map_err(|source| ServerError::Listen { addr: a, source })?;
        if config.h3 {
            // The UDP port number must be the TCP one: with port 0 the kernel picked a TCP
            // port whose UDP twin may be taken; try again with another.
            let mut tries = 0;
            l = loop {
                match l.with_h3(config.threads) {
                    Ok(l) => break l,
                    Err(source) if a.port() != 0 || tries >= 20 => {
                        return Err(ServerError::Listen { addr: a, source })
                    }
                    Err(_) => {
                        tries += 1;
                        l = Listener::bind(a, true)
                            .map_err(|source| ServerError::Listen { addr: a, source })?;
                    }
                }
            };
            h3_addr = Some(l.local_addr().map_err(io_err("local_addr"))?);
        }
        tls_addr = Some(l.local_addr().map_err(io_err("local_addr"))?);
        listeners.push(l);
    }
    if config.h3 && h3_addr.is_none() {
        return Err(ServerError::Config(
            "HTTP/3 (--h3) needs a TLS port (--tls or --tls-listen)".into(),
        ));
    }
    let shutdown = Shutdown::new();
    let sd = shutdown.clone();
    let ids = ThreadIds::default();
    let ids2 = ids.clone();
    let threads = config.threads;
    let early = Arc::clone(&config.early_stats);
    let thread = std::thread::Builder::new()
        .name("h2lab-server".into())
        .spawn(move || run_with_ids(listeners, config, sd, &ids2))
        .map_err(io_err("spawning the server thread"))?;
    Ok(RunningServer {
        addr,
        tls_addr,
        h3_addr,
        cert_path,
        key_path,
        shutdown,
        thread: Some(thread),
        ids,
        threads,
        early,
    })
}
