//! `h2lab proxy`: a reverse proxy on h2lab's own codecs and the thread-per-core mio loop
//! style of `h2lab serve`.
//!
//! - Front: HTTP/1.1 and h2c (prior knowledge) on a cleartext port, HTTP/2 and HTTP/1.1 over
//!   TLS by ALPN (the server crate's [`h2lab_server::Listener`] and certificate handling). An
//!   HTTP/2 stream is served by a virtual HTTP/1.1 connection (`front_h2`).
//! - Upstreams ([`ProxyConfig::upstreams`], round robin, TCP or UNIX sockets) over
//!   HTTP/1.1 keep-alive (pooled), HTTP/1.0 (a connection per request), h2c with one stream
//!   per connection (nginx 1.29's `proxy_http_version 2`), or h2c multiplexed
//!   (`--streams` per connection, capped by the upstream's MAX_CONCURRENT_STREAMS).
//! - Forwarding as the seed's nginx configuration: `Host`, `X-Real-IP`, `X-Forwarded-For`,
//!   `X-Forwarded-Proto`; hop-by-hop fields dropped; bodies streamed both ways with
//!   back-pressure (at most about 64 KiB queued per direction and exchange; h2c upstream
//!   streams stop at their own window, returned as their client drains); trailers passed both
//!   ways (to HTTP/1.1 clients with `TE: trailers`).
//! - Failures: connect refused → 502, upstream reset/closed/garbage → 502, no upstream
//!   progress for `upstream_timeout` → 504; a client that goes away cancels its upstream
//!   request (HTTP/1.x: the upstream connection is closed; h2c: RST_STREAM CANCEL).
//! - Counters: [`Stats`], snapshots through [`StatsHandle`].
//!
//! ```no_run
//! use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
//! let backend = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
//! let up = UpstreamAddr::Tcp(backend.addr().unwrap());
//! let proxy = h2lab_proxy::spawn(ProxyConfig::local(vec![up], UpstreamProtocol::H1)).unwrap();
//! println!("proxy on {}", proxy.addr().unwrap());
//! proxy.shutdown();
//! let stats = proxy.join().unwrap();
//! println!("{stats}");
//! ```

mod buf;
pub mod config;
mod fields;
mod front;
mod front_h2;
mod io;
mod slab;
pub mod stats;
mod upstream;
mod worker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

pub use config::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
pub use h2lab_server::{Listener, Shutdown};
pub use stats::{Stats, StatsHandle};

/// Errors that stop the proxy from starting or running.
#[derive(Debug)]
pub enum ProxyError {
    /// Invalid configuration.
    Config(String),
    /// Listening, polling or a worker failed.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// Certificate or TLS setup failed.
    Tls(String),
    /// A worker thread panicked.
    WorkerPanicked,
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyError::Config(m) => write!(f, "invalid configuration: {m}"),
            ProxyError::Io { context, source } => write!(f, "{context}: {source}"),
            ProxyError::Tls(m) => write!(f, "TLS: {m}"),
            ProxyError::WorkerPanicked => write!(f, "a worker thread panicked"),
        }
    }
}

impl std::error::Error for ProxyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProxyError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(context: &str) -> impl FnOnce(std::io::Error) -> ProxyError + '_ {
    move |source| ProxyError::Io {
        context: context.to_string(),
        source,
    }
}

/// A failed bind of `addr`. "Address already in use" also happens when no program listens
/// on the port: any socket bound to it blocks it, including a connection whose local port it
/// is — the kernel gives outgoing connections (this proxy's own upstream connections, a
/// benchmark client's) local ports from the ephemeral range, so a fixed port inside that
/// range can be taken at any moment (two proxies on adjacent ports collide this way when the
/// first one's upstream connections got the second one's port). The error says so.
fn bind_err(what: &'static str, addr: SocketAddr) -> impl FnOnce(std::io::Error) -> ProxyError {
    move |source| {
        let context = if source.kind() == std::io::ErrorKind::AddrInUse {
            format!(
                "binding the {what} port {addr} (a listener or a connection already uses this \
                 port: fixed ports inside the ephemeral range, /proc/sys/net/ipv4/ip_local_port_range, \
                 are also handed to outgoing connections; use port 0 or a port below that range)"
            )
        } else {
            format!("binding the {what} port {addr}")
        };
        ProxyError::Io { context, source }
    }
}

/// The front's TLS settings: the configured certificate (or a generated one) and ALPN `h2`,
/// `http/1.1`.
fn tls_config(
    config: &ProxyConfig,
) -> Result<(Arc<rustls::ServerConfig>, h2lab_server::tls::CertPaths), ProxyError> {
    let mut front = config.front.clone();
    front.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let paths = h2lab_server::tls::ensure_certificate(&front)
        .map_err(|e| ProxyError::Tls(e.to_string()))?;
    let tls = h2lab_server::tls::server_config(&paths, &front)
        .map_err(|e| ProxyError::Tls(e.to_string()))?;
    Ok((tls, paths))
}

/// Serves `listeners` with `config.front.threads` workers until `shutdown` is triggered
/// (the `mini-redis` style: tests bind port 0 and stop cleanly). Returns the merged
/// counters; `stats` gives snapshots while running.
pub fn run(
    listeners: Vec<Listener>,
    config: ProxyConfig,
    shutdown: Shutdown,
    stats: StatsHandle,
) -> Result<Stats, ProxyError> {
    config.validate().map_err(ProxyError::Config)?;
    if listeners.is_empty() {
        return Err(ProxyError::Config("no listener".into()));
    }
    let tls = if listeners.iter().any(Listener::is_tls) {
        Some(tls_config(&config)?.0)
    } else {
        None
    };
    let threads = config.front.threads;
    let shared = Arc::new(worker::Shared {
        config,
        tls,
        shutdown: shutdown.clone(),
        stats,
    });
    let socks: Vec<(std::net::TcpListener, bool)> = listeners
        .into_iter()
        .map(|l| {
            let tls = l.is_tls();
            (l.into_std(), tls)
        })
        .collect();
    let mut threads_joined: Vec<JoinHandle<std::io::Result<Stats>>> = Vec::new();
    for i in 0..threads {
        let mut mine = Vec::with_capacity(socks.len());
        for (s, tls) in &socks {
            mine.push((s.try_clone().map_err(io_err("cloning a listener"))?, *tls));
        }
        let w =
            worker::Worker::new(shared.clone(), mine).map_err(io_err("creating the event loop"))?;
        let t = std::thread::Builder::new()
            .name(format!("h2lab-proxy-{i}"))
            .spawn(move || w.run())
            .map_err(io_err("spawning a worker"))?;
        threads_joined.push(t);
    }
    drop(socks);
    let mut total = Stats::default();
    let mut result = Ok(());
    for t in threads_joined {
        match t.join() {
            Ok(Ok(s)) => total.merge(&s),
            Ok(Err(e)) => {
                shutdown.trigger();
                result = Err(ProxyError::Io {
                    context: "worker event loop".into(),
                    source: e,
                });
            }
            Err(_) => {
                shutdown.trigger();
                result = Err(ProxyError::WorkerPanicked);
            }
        }
    }
    result.map(|()| total)
}

/// A proxy started by [`spawn`].
#[derive(Debug)]
pub struct RunningProxy {
    addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    cert_path: Option<PathBuf>,
    shutdown: Shutdown,
    stats: StatsHandle,
    thread: Option<JoinHandle<Result<Stats, ProxyError>>>,
}

impl RunningProxy {
    /// The cleartext address.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The TLS address.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// The certificate the TLS port presents.
    pub fn cert_path(&self) -> Option<&std::path::Path> {
        self.cert_path.as_deref()
    }

    /// Counter snapshots while running.
    pub fn stats(&self) -> &StatsHandle {
        &self.stats
    }

    /// A clone of the stop handle.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Asks the proxy to stop.
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    /// Waits for the proxy to stop (call [`RunningProxy::shutdown`] first); returns the
    /// final counters.
    pub fn join(mut self) -> Result<Stats, ProxyError> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ProxyError::WorkerPanicked),
            None => Ok(Stats::default()),
        }
    }
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `config.listen` and `config.tls_listen` (port 0 allowed) and runs the proxy on a
/// background thread.
pub fn spawn(mut config: ProxyConfig) -> Result<RunningProxy, ProxyError> {
    config.validate().map_err(ProxyError::Config)?;
    let mut listeners = Vec::new();
    let (mut addr, mut tls_addr, mut cert_path) = (None, None, None);
    if let Some(a) = config.listen {
        let l = Listener::bind(a, false).map_err(bind_err("cleartext", a))?;
        addr = Some(l.local_addr().map_err(io_err("local_addr"))?);
        listeners.push(l);
    }
    if let Some(a) = config.tls_listen {
        let (_, paths) = tls_config(&config)?;
        config.front.cert = Some(paths.cert.clone());
        config.front.key = Some(paths.key.clone());
        cert_path = Some(paths.cert);
        let l = Listener::bind(a, true).map_err(bind_err("TLS", a))?;
        tls_addr = Some(l.local_addr().map_err(io_err("local_addr"))?);
        listeners.push(l);
    }
    let shutdown = Shutdown::new();
    let stats = StatsHandle::new();
    let (sd, st) = (shutdown.clone(), stats.clone());
    let thread = std::thread::Builder::new()
        .name("h2lab-proxy".into())
        .spawn(move || run(listeners, config, sd, st))
        .map_err(io_err("spawning the proxy thread"))?;
    Ok(RunningProxy {
        addr,
        tls_addr,
        cert_path,
        shutdown,
        stats,
        thread: Some(thread),
    })
}
