//! A browser-like fetch client: fetches a list of paths from one origin over a
//! fixed pool of connections, the way a browser loads a page's sub-resources.
//!
//! Unlike [`run`](crate::run) (closed-loop load generation, requests spread
//! statically over clients), a [`Fetcher`] keeps one shared queue: a request
//! goes to the first connection that can take it, and a new connection is
//! opened only while requests wait and the pool is below its limit — six
//! HTTP/1.1 connections per host without pipelining, or one multiplexed
//! HTTP/2 (or HTTP/3, QUIC) connection, in a browser's default configuration. Connections stay
//! open between [`Fetcher::fetch`] calls (keep-alive), so a page loader
//! fetches the HTML first and then its sub-resources on the same pool.
//!
//! It drives the bench client's connection driver (`conn`, QUIC included: address lists walked
//! on connect failure, UNIX sockets, TLS with SNI, ALPN, the same sessions), runs on the calling thread
//! (one mio poll per fetcher) and records a timeline per request
//! ([`FetchRecord`]) and per connection ([`ConnRecord`]) plus byte counters
//! split into headers and bodies ([`FetchTraffic`]).
//!
//! ```no_run
//! use h2lab_engine::fetch::{FetchConfig, FetchProtocol, Fetcher};
//! use h2lab_engine::Target;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let origin = Target::parse("https://localhost:8443/")?;
//! let paths = vec!["/page".to_owned(), "/asset/1/0.png".to_owned()];
//! let mut f = Fetcher::new(FetchConfig::browser(origin, FetchProtocol::H2), &paths)?;
//! let html = f.fetch(&[0], true)?;
//! let rest = f.fetch(&[1], false)?;
//! println!("{} + {} requests on {} connection(s)", html.records.len(), rest.records.len(),
//!          f.connections().len());
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use crate::config::{AppProtocol, BenchConfig, ProtocolChoice, Scheme, Target};
use crate::conn::{AlpnOffer, ConnEnd, Dialer, ReadBufs};
use crate::error::{ProtocolError, TimeoutError, TransportError};
use crate::h2::H2Settings;
use crate::request::Prepared;
use crate::transport;
use crate::EngineError;

mod dial;
mod early;
mod events;
mod hints;
mod pool;
mod push;
#[cfg(test)]
mod tests;

use dial::{endpoint, quic_dial};
pub use dial::{SessionCounts, TlsSessions};
use events::{BatchState, Job};
pub use hints::HintStats;
use pool::PoolConn;
use push::PushCache;
pub use push::PushStats;
/// A request is given up after this many attempts (connection lost while in flight).
const MAX_ATTEMPTS: u32 = 3;
/// Consecutive connections that end before completing anything, after which the fetch fails.
const MAX_FAILED_CONNECTIONS: u32 = 3;
/// Longest single poll wait (the deadline is checked at least this often).
const MAX_POLL_WAIT: Duration = Duration::from_millis(100);

/// The protocol a [`Fetcher`] speaks. The origin's scheme decides TLS:
/// `https` + [`FetchProtocol::H2`] is HTTP/2 negotiated with ALPN `h2`,
/// `http` + `H2` is h2c with prior knowledge, `https` + `Http11` offers ALPN
/// `http/1.1`; [`FetchProtocol::H3`] needs `https` (QUIC on UDP to the same host
/// and port, ALPN `h3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchProtocol {
    /// HTTP/1.1 (cleartext or TLS).
    Http11,
    /// HTTP/2 (TLS with ALPN, or h2c prior knowledge).
    H2,
    /// HTTP/3 over QUIC (one connection, many streams), through the same connection
    /// driver as bench's `--h3`.
    H3,
}

/// How a [`Fetcher`] connects and what it sends.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Scheme, host and port of the origin (`:authority`, `Host`, SNI). The path is ignored.
    pub origin: Target,
    /// Connect to these addresses instead of resolving the origin (an emulated link,
    /// a proxy). Like the origin's resolved addresses, they are tried in order: a
    /// connection that cannot be established moves on to the next one.
    pub connect_to: Vec<SocketAddr>,
    /// Connect to this UNIX domain socket instead (like bench's `-B unix:/path`);
    /// scheme and authority still come from `origin`.
    pub unix_socket: Option<PathBuf>,
    /// TLS server name (SNI) instead of the origin's host (like bench's `--sni`).
    pub sni: Option<String>,
    /// Protocol to speak.
    pub protocol: FetchProtocol,
    /// Most connections open at once (browsers: 6 per host for HTTP/1.1, 1 for HTTP/2).
    pub max_connections: u32,
    /// Most requests in flight per connection: HTTP/2 streams (further limited by the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS); HTTP/1.1 pipelining depth (1 = none).
    pub max_streams: u32,
    /// Request header fields added to every request (after `:method`, `:scheme`,
    /// `:authority`/`Host`, `:path`; a `user-agent` entry replaces the default one).
    pub headers: Vec<(String, String)>,
    /// Longest one [`Fetcher::fetch`] call may take.
    pub timeout: Duration,
    /// Incremented for every connection opened and decremented when it closes, so a
    /// load test can sample the open connections of many fetchers.
    pub open_gauge: Option<Arc<AtomicI64>>,
    /// HTTP/2 receive windows and header table sizes.
    pub h2: H2Settings,
    /// Send the RFC 9218 `priority` header a browser would give each path
    /// ([`crate::priority::browser_priority`]), on HTTP/2 only (on HTTP/1.1 it would
    /// mean nothing; the HTTP/3 session sends one pre-encoded field section whose only
    /// per-request field is `:path`, so HTTP/3 requests carry none). Default: on, as
    /// browsers do.
    pub priorities: bool,
    /// TLS session store shared with other fetchers (a returning visit resumes the
    /// sessions of the first); `None`: every handshake is a full one.
    pub sessions: Option<Arc<TlsSessions>>,
    /// Send the first requests of a connection that resumes a session as TLS 1.3 early data
    /// (HTTP/1.1, HTTP/2 over TLS) or QUIC 0-RTT (HTTP/3), as a returning browser can; needs
    /// a store made with [`TlsSessions::with_early_data`]. Rejected early data is sent again
    /// after the handshake (the requests are requeued, [`ConnRecord::early_data`]).
    pub zero_rtt: bool,
}

impl FetchConfig {
    /// A browser's defaults for `protocol`: HTTP/1.1 with 6 connections and no
    /// pipelining, or HTTP/2 (and HTTP/3) with one connection and up to 100 streams; browser-like
    /// request headers ([`browser_headers`]); 60 s timeout; 6 MiB stream and 15 MiB
    /// connection windows for HTTP/2 (Chrome's).
    pub fn browser(origin: Target, protocol: FetchProtocol) -> FetchConfig {
        let (max_connections, max_streams) = match protocol {
            FetchProtocol::Http11 => (6, 1),
            FetchProtocol::H2 | FetchProtocol::H3 => (1, 100),
        };
        FetchConfig {
            origin,
            connect_to: Vec::new(),
            unix_socket: None,
            sni: None,
            protocol,
            max_connections,
            max_streams,
            headers: browser_headers(),
            timeout: Duration::from_secs(60),
            open_gauge: None,
            h2: H2Settings {
                window_bits: 23,            // ~8 MiB
                connection_window_bits: 24, // ~16 MiB
                header_table_size: 65_536,
                encoder_header_table_size: 4096,
                max_frame_size: 16_384,
                enable_push: false,
            },
            priorities: true,
            sessions: None,
            zero_rtt: false,
        }
    }
}

/// Request headers a desktop browser sends for an image (about 400 bytes).
pub fn browser_headers() -> Vec<(String, String)> {
    [
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
             Chrome/126.0.0.0 Safari/537.36",
        ),
        (
            "accept",
            "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
        ),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-US,en;q=0.9"),
        ("cache-control", "no-cache"),
        ("pragma", "no-cache"),
        ("sec-fetch-dest", "image"),
        ("sec-fetch-mode", "no-cors"),
        ("sec-fetch-site", "same-origin"),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v.to_owned()))
    .collect()
}

/// One request of a [`Fetcher::fetch`] batch. Times are measured from the
/// fetcher's creation ([`Fetcher::epoch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRecord {
    /// Index of the path in the list given to [`Fetcher::new`].
    pub path: usize,
    /// Connection that carried the (last) attempt ([`ConnRecord::id`]).
    pub conn: u32,
    /// When the request was queued (the batch started).
    pub queued: Duration,
    /// When the request was handed to a connection.
    pub sent: Duration,
    /// When the first response byte (status line / HEADERS) arrived.
    pub first_byte: Duration,
    /// When the response was complete (or the request was given up).
    pub done: Duration,
    /// Final status (0 when no response came).
    pub status: u16,
    /// Response body bytes.
    pub body_bytes: u64,
    /// Request bytes as written: the HTTP/1.1 request head, or the HTTP/2 HEADERS
    /// frame (9-byte frame header + HPACK block).
    pub request_bytes: u64,
    /// Attempts (more than 1 when a connection was lost with the request in flight).
    pub attempts: u32,
}

impl FetchRecord {
    /// A complete response with a 2xx or 3xx status.
    pub fn ok(&self) -> bool {
        (200..400).contains(&self.status)
    }
}

/// One connection a [`Fetcher`] opened. Times are measured from [`Fetcher::epoch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnRecord {
    /// Connection number, in opening order from 0.
    pub id: u32,
    /// When the connect started.
    pub opened: Duration,
    /// When TCP (and TLS) was ready, if it got that far.
    pub ready: Option<Duration>,
    /// When it closed (`None` while open).
    pub closed: Option<Duration>,
    /// Negotiated protocol.
    pub protocol: Option<AppProtocol>,
    /// Responses completed on it.
    pub completed: u64,
    /// Its TLS handshake over TCP resumed a session (QUIC: known only when 0-RTT was
    /// accepted; otherwise false, and [`TlsSessions::counts`] counts the attempts).
    pub resumed: bool,
    /// Early data / 0-RTT ([`FetchConfig::zero_rtt`]): `None` when the connection sent none,
    /// `Some(true)` when the server accepted it, `Some(false)` when it rejected it (or the
    /// handshake has not completed yet) and the requests were sent again.
    pub early_data: Option<bool>,
}

/// Byte counters of a [`Fetcher`], cumulative since its creation. All counts are
/// application bytes (inside TLS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchTraffic {
    /// Bytes written (requests, HTTP/2 preface, SETTINGS, WINDOW_UPDATE, ...).
    pub bytes_written: u64,
    /// Bytes read (responses, HTTP/2 frame headers and control frames).
    pub bytes_read: u64,
    /// Request header bytes: HTTP/1.1 request heads, or HTTP/2 HEADERS frames.
    pub request_header_bytes: u64,
    /// Response header bytes as received: HTTP/1.1 field names and values, or
    /// HPACK-compressed header blocks (h2load's definition).
    pub response_header_bytes: u64,
    /// Response header bytes decompressed (names + values).
    pub response_header_decoded: u64,
    /// Response body bytes.
    pub response_body_bytes: u64,
}

/// What one [`Fetcher::fetch`] call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchBatch {
    /// When the batch started (from [`Fetcher::epoch`]).
    pub started: Duration,
    /// When its last response completed.
    pub finished: Duration,
    /// One record per requested index, in the order given.
    pub records: Vec<FetchRecord>,
    /// Response bodies per record when the batch captured them (else empty).
    pub bodies: Vec<Vec<u8>>,
    /// Connections opened during this batch.
    pub new_connections: u32,
}

impl FetchBatch {
    /// `finished - started`.
    pub fn elapsed(&self) -> Duration {
        self.finished.saturating_sub(self.started)
    }
}

/// Fetches paths from one origin over a pool of connections (see the module docs).
pub struct Fetcher {
    cfg: FetchConfig,
    /// Connections: where to, TLS, ALPN rules, sessions (shared with the bench worker).
    dialer: Dialer,
    poll: Poll,
    events: Events,
    /// Indexed by connection id (ids are never reused within a fetcher).
    conns: Vec<Option<PoolConn>>,
    log: Vec<ConnRecord>,
    epoch: Instant,
    bufs: ReadBufs,
    traffic: FetchTraffic,
    failed_conns: u32,
    /// How the first connection that failed before any response ended.
    first_error: Option<ConnEnd>,
    /// Pushed responses (HTTP/2 with [`H2Settings::enable_push`]).
    pushes: PushCache,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("origin", &self.cfg.origin)
            .field("endpoint", &self.dialer.endpoint)
            .field("protocol", &self.cfg.protocol)
            .field("connections", &self.log.len())
            .finish()
    }
}

impl Fetcher {
    /// Prepares a fetcher for `paths` (request targets like `/img/1.png?x`). Nothing is
    /// connected until [`Fetcher::fetch`]; the fetcher's clock ([`Fetcher::epoch`])
    /// starts now.
    pub fn new(cfg: FetchConfig, paths: &[String]) -> Result<Fetcher, EngineError> {
        if paths.is_empty() {
            return Err(EngineError::Config(crate::ConfigError::Invalid(
                "nothing to fetch".into(),
            )));
        }
        let uris: Vec<Target> = paths
            .iter()
            .map(|p| Target {
                path: p.clone(),
                ..cfg.origin.clone()
            })
            .collect();
        let mut bc = BenchConfig::new(uris);
        bc.headers.clone_from(&cfg.headers);
        bc.protocol = match cfg.protocol {
            FetchProtocol::Http11 => ProtocolChoice::H1,
            FetchProtocol::H2 => ProtocolChoice::Alpn(vec!["h2".to_owned()]),
            FetchProtocol::H3 => ProtocolChoice::Alpn(vec!["h3".to_owned()]),
        };
        let mut prep = Prepared::new(&bc)?;
        if cfg.priorities && cfg.protocol == FetchProtocol::H2 {
            for (fields, path) in prep.h2.iter_mut().zip(paths) {
                let p = crate::priority::browser_priority(path).to_string();
                fields.push((b"priority".as_slice().into(), p.into_bytes().into()));
            }
        }
        let endpoint = endpoint(&cfg)?;
        let quic = match cfg.protocol {
            FetchProtocol::H3 => Some(quic_dial(&cfg, &endpoint)?),
            _ => None,
        };
        let tls = if cfg.origin.scheme == Scheme::Https {
            let alpn = bc.effective_alpn();
            let c = dial::tls_config(&alpn, cfg.sessions.as_ref()).map_err(EngineError::Tls)?;
            let name = cfg.sni.as_deref().unwrap_or(&cfg.origin.host);
            let name = transport::server_name(name).map_err(EngineError::Tls)?;
            Some((c, name))
        } else {
            None
        };
        let poll = Poll::new().map_err(|e| EngineError::Io {
            context: "cannot create event loop".into(),
            source: e,
        })?;
        let dialer = Dialer {
            endpoint,
            alpn: AlpnOffer::of(&bc.effective_alpn()),
            tls,
            cleartext: bc.cleartext_protocol(),
            prep: Arc::new(prep),
            max_streams: cfg.max_streams,
            h2: cfg.h2,
            // A page load keeps the static QPACK shape (its lab figures were measured so).
            qpack: crate::h3::QpackSettings::STATIC,
            verbose: false,
            // Early data only where the store's configuration enables it.
            zero_rtt: cfg.zero_rtt && cfg.sessions.as_ref().is_some_and(|s| s.early_data()),
            // What an early session speaks: the one protocol this fetcher offers.
            early_proto: std::cell::Cell::new(Some(match cfg.protocol {
                FetchProtocol::Http11 => AppProtocol::Http11,
                FetchProtocol::H2 => AppProtocol::H2,
                FetchProtocol::H3 => AppProtocol::H3,
            })),
            reconnect_every: 0,
            resumes: false,
            quic,
        };
        Ok(Fetcher {
            bufs: ReadBufs::new(dialer.tls.is_some()),
            dialer,
            cfg,
            poll,
            events: Events::with_capacity(256),
            conns: Vec::new(),
            log: Vec::new(),
            epoch: Instant::now(),
            traffic: FetchTraffic::default(),
            failed_conns: 0,
            first_error: None,
            pushes: PushCache::new(paths),
        })
    }

    /// Server push counters (all zero unless `cfg.h2.enable_push`): a request for a path
    /// the server pushed on an open connection uses the pushed response instead of being
    /// sent ([`FetchRecord::request_bytes`] 0).
    pub fn push_stats(&self) -> PushStats {
        self.pushes.stats()
    }

    /// The instant all recorded times are measured from (the fetcher's creation).
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Every connection opened so far.
    pub fn connections(&self) -> &[ConnRecord] {
        &self.log
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.conns.iter().filter(|c| c.is_some()).count()
    }

    /// Byte counters since creation.
    pub fn traffic(&self) -> FetchTraffic {
        self.traffic
    }

    /// Fetches the paths with these indices (into the list given to [`Fetcher::new`]),
    /// in this order of priority, and returns when every response is complete. With
    /// `capture`, response bodies are kept in [`FetchBatch::bodies`].
    ///
    /// Requests whose connection is lost in flight are retried (up to 3 attempts);
    /// a request that still fails is recorded with status 0. The call fails when no
    /// connection can be established, or when it takes longer than
    /// [`FetchConfig::timeout`].
    pub fn fetch(&mut self, indices: &[usize], capture: bool) -> Result<FetchBatch, EngineError> {
        let started = self.now();
        let opened_before = self.log.len();
        let mut jobs: Vec<Job> = Vec::with_capacity(indices.len());
        for &i in indices {
            if i >= self.dialer.prep.len() {
                return Err(EngineError::Config(crate::ConfigError::Invalid(format!(
                    "fetch index {i} out of range"
                ))));
            }
            jobs.push(Job::new(i, started));
        }
        let mut st = BatchState {
            jobs,
            queue: VecDeque::with_capacity(indices.len()),
            remaining: indices.len(),
            capture,
        };
        for k in 0..indices.len() {
            if !self.claim_preload(k, &mut st) && !self.claim_push(k, &mut st) {
                st.queue.push_back(k);
            }
        }
        let deadline = self.epoch + started + self.cfg.timeout;
        while st.remaining > 0 {
            self.schedule(&mut st);
            self.flush_all(&mut st);
            if st.remaining == 0 {
                break;
            }
            if self.failed_conns >= MAX_FAILED_CONNECTIONS && self.open_connections() == 0 {
                return Err(self.connect_error());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(EngineError::Timeout(TimeoutError::Fetch {
                    missing: st.remaining,
                    total: indices.len(),
                    after: self.cfg.timeout,
                }));
            }
            let wait = MAX_POLL_WAIT.min(deadline - now);
            if let Err(e) = self.poll.poll(&mut self.events, Some(wait)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(EngineError::Io {
                    context: "event loop".into(),
                    source: e,
                });
            }
            let ready: Vec<(usize, bool)> = self
                .events
                .iter()
                .map(|e| (e.token().0, e.is_read_closed() || e.is_error()))
                .collect();
            for (idx, closed) in ready {
                self.drive(idx, closed, &mut st);
            }
        }
        // Close what the protocol is done with (HTTP/1.1 `Connection: close`) and bring
        // the per-connection counts up to date.
        self.flush_all(&mut st);
        for (c, r) in self.conns.iter().zip(self.log.iter_mut()) {
            if let Some(c) = c {
                r.completed = c.completed;
            }
        }
        self.keep_preloads(&mut st, indices.len());
        let finished = st.jobs.iter().map(|j| j.rec.done).max().unwrap_or(started);
        let bodies = if capture {
            st.jobs
                .iter_mut()
                .map(|j| std::mem::take(&mut j.body))
                .collect()
        } else {
            Vec::new()
        };
        Ok(FetchBatch {
            started,
            finished,
            records: st.jobs.into_iter().map(|j| j.rec).collect(),
            bodies,
            new_connections: u32::try_from(self.log.len() - opened_before).unwrap_or(u32::MAX),
        })
    }

    /// Serves job `k` from a pushed response if there is one: finished now when the
    /// push is complete, else when it ends. Returns false when nothing was pushed.
    fn claim_push(&mut self, k: usize, st: &mut BatchState) -> bool {
        let Some(j) = st.jobs.get_mut(k) else {
            return false;
        };
        let conns = &self.conns;
        let open = |c: u32| conns.get(c as usize).is_some_and(Option::is_some);
        let Some(p) = self.pushes.find(j.rec.path, open) else {
            return false;
        };
        p.used = true;
        j.rec.conn = p.conn;
        j.rec.body_bytes = p.bytes;
        if p.complete {
            j.rec.status = p.status;
            j.finished = true;
            st.remaining = st.remaining.saturating_sub(1);
        } else {
            p.claimed = Some(k);
        }
        true
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// The error for a fetch whose connections all failed: how the first one ended.
    fn connect_error(&mut self) -> EngineError {
        let addr = self.dialer.describe(0);
        match self.first_error.take() {
            None | Some(ConnEnd::ServerClosed) => EngineError::Closed { addr },
            Some(ConnEnd::Connect { addr_idx, source }) => EngineError::Connect {
                addr: self.dialer.describe(addr_idx),
                source,
            },
            Some(ConnEnd::Tls(e)) => EngineError::Tls(e),
            Some(ConnEnd::Negotiation(e)) => EngineError::Protocol(e),
            Some(ConnEnd::Transport(
                TransportError::Read(source) | TransportError::Write(source),
            )) => EngineError::Connect { addr, source },
            Some(ConnEnd::Transport(e)) => EngineError::Protocol(ProtocolError::Tls(e)),
            Some(ConnEnd::Session(e) | ConnEnd::Truncated(e)) => {
                EngineError::Protocol(ProtocolError::Session(e))
            }
        }
    }
}

impl Drop for Fetcher {
    fn drop(&mut self) {
        self.close();
    }
}
