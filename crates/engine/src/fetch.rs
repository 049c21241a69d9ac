//! A browser-like fetch client: fetches a list of paths from one origin over a
//! fixed pool of connections, the way a browser loads a page's sub-resources.
//!
//! Unlike [`run`](crate::run) (closed-loop load generation, requests spread
//! statically over clients), a [`Fetcher`] keeps one shared queue: a request
//! goes to the first connection that can take it, and a new connection is
//! opened only while requests wait and the pool is below its limit — six
//! HTTP/1.1 connections per host without pipelining, or one multiplexed
//! HTTP/2 connection, in a browser's default configuration. Connections stay
//! open between [`Fetcher::fetch`] calls (keep-alive), so a page loader
//! fetches the HTML first and then its sub-resources on the same pool.
//!
//! It reuses the engine's sessions and transports, runs on the calling thread
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
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use rustls::pki_types::ServerName;
use rustls::ClientConfig;

use crate::config::{AppProtocol, BenchConfig, ProtocolChoice, Scheme, Target};
use crate::h1::H1Session;
use crate::h2::{H2Session, H2Settings};
use crate::request::Prepared;
use crate::session::{AnySession, Session, SessionError, SessionEvents};
use crate::transport::{self, Endpoint, Handshake, ReadEnd, Socket, Transport};
use crate::EngineError;

#[path = "fetch_push.rs"]
mod push;
use push::PushCache;
pub use push::PushStats;

/// Plaintext read buffer per fetcher.
const READ_BUF: usize = 64 * 1024;
/// A request is given up after this many attempts (connection lost while in flight).
const MAX_ATTEMPTS: u32 = 3;
/// Consecutive connections that end before completing anything, after which the fetch fails.
const MAX_FAILED_CONNECTIONS: u32 = 3;
/// Longest single poll wait (the deadline is checked at least this often).
const MAX_POLL_WAIT: Duration = Duration::from_millis(100);

/// The protocol a [`Fetcher`] speaks. The origin's scheme decides TLS:
/// `https` + [`FetchProtocol::H2`] is HTTP/2 negotiated with ALPN `h2`,
/// `http` + `H2` is h2c with prior knowledge, `https` + `Http11` offers ALPN
/// `http/1.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchProtocol {
    /// HTTP/1.1 (cleartext or TLS).
    Http11,
    /// HTTP/2 (TLS with ALPN, or h2c prior knowledge).
    H2,
}

/// How a [`Fetcher`] connects and what it sends.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Scheme, host and port of the origin (`:authority`, `Host`, SNI). The path is ignored.
    pub origin: Target,
    /// Connect here instead of resolving the origin (an emulated link, a proxy).
    pub connect_to: Option<SocketAddr>,
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
    /// mean nothing). Default: on, as browsers do.
    pub priorities: bool,
}

impl FetchConfig {
    /// A browser's defaults for `protocol`: HTTP/1.1 with 6 connections and no
    /// pipelining, or HTTP/2 with one connection and up to 100 streams; browser-like
    /// request headers ([`browser_headers`]); 60 s timeout; 6 MiB stream and 15 MiB
    /// connection windows for HTTP/2 (Chrome's).
    pub fn browser(origin: Target, protocol: FetchProtocol) -> FetchConfig {
        let (max_connections, max_streams) = match protocol {
            FetchProtocol::Http11 => (6, 1),
            FetchProtocol::H2 => (1, 100),
        };
        FetchConfig {
            origin,
            connect_to: None,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Handshaking,
    Open,
}

struct PoolConn {
    id: u32,
    transport: Transport,
    phase: Phase,
    session: Option<AnySession>,
    out: Vec<u8>,
    out_pos: usize,
    /// Slot → job index.
    slots: Vec<Option<usize>>,
    free: Vec<u32>,
    completed: u64,
}

/// One request of the running batch.
struct Job {
    rec: FetchRecord,
    body: Vec<u8>,
    finished: bool,
    /// A final status was seen for the current attempt.
    got_status: bool,
}

/// Fetches paths from one origin over a pool of connections (see the module docs).
pub struct Fetcher {
    cfg: FetchConfig,
    prep: Arc<Prepared>,
    addr: SocketAddr,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    cleartext: AppProtocol,
    poll: Poll,
    events: Events,
    /// Indexed by connection id (ids are never reused within a fetcher).
    conns: Vec<Option<PoolConn>>,
    log: Vec<ConnRecord>,
    epoch: Instant,
    read_buf: Box<[u8]>,
    raw_buf: Box<[u8]>,
    traffic: FetchTraffic,
    failed_conns: u32,
    first_error: Option<String>,
    /// Pushed responses (HTTP/2 with [`H2Settings::enable_push`]).
    pushes: PushCache,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("origin", &self.cfg.origin)
            .field("addr", &self.addr)
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
        };
        let mut prep = Prepared::new(&bc)?;
        if cfg.priorities && cfg.protocol == FetchProtocol::H2 {
            for (fields, path) in prep.h2.iter_mut().zip(paths) {
                let p = crate::priority::browser_priority(path).to_string();
                fields.push((b"priority".as_slice().into(), p.into_bytes().into()));
            }
        }
        let addr = match cfg.connect_to {
            Some(a) => a,
            None => (cfg.origin.host.as_str(), cfg.origin.port)
                .to_socket_addrs()
                .map_err(|e| EngineError::Resolve {
                    host: cfg.origin.host.clone(),
                    source: e,
                })?
                .next()
                .ok_or_else(|| EngineError::Resolve {
                    host: cfg.origin.host.clone(),
                    source: io::Error::new(io::ErrorKind::NotFound, "no address returned"),
                })?,
        };
        let tls = if cfg.origin.scheme == Scheme::Https {
            let alpn = bc.effective_alpn();
            let c = transport::client_config(&alpn, true, &Default::default())
                .map_err(|reason| EngineError::Tls { reason })?;
            let name = transport::server_name(&cfg.origin.host)
                .map_err(|reason| EngineError::Tls { reason })?;
            Some((Arc::new(c), name))
        } else {
            None
        };
        let poll = Poll::new().map_err(|e| EngineError::Io {
            context: "cannot create event loop".into(),
            source: e,
        })?;
        let raw = if tls.is_some() { READ_BUF } else { 0 };
        Ok(Fetcher {
            cleartext: bc.cleartext_protocol(),
            cfg,
            prep: Arc::new(prep),
            addr,
            tls,
            poll,
            events: Events::with_capacity(256),
            conns: Vec::new(),
            log: Vec::new(),
            epoch: Instant::now(),
            read_buf: vec![0u8; READ_BUF].into_boxed_slice(),
            raw_buf: vec![0u8; raw].into_boxed_slice(),
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
            if i >= self.prep.len() {
                return Err(EngineError::Config(crate::ConfigError::Invalid(format!(
                    "fetch index {i} out of range"
                ))));
            }
            jobs.push(Job {
                rec: FetchRecord {
                    path: i,
                    conn: 0,
                    queued: started,
                    sent: started,
                    first_byte: started,
                    done: started,
                    status: 0,
                    body_bytes: 0,
                    request_bytes: 0,
                    attempts: 0,
                },
                body: Vec::new(),
                finished: false,
                got_status: false,
            });
        }
        let mut st = BatchState {
            jobs,
            queue: VecDeque::with_capacity(indices.len()),
            remaining: indices.len(),
            capture,
        };
        for k in 0..indices.len() {
            if !self.claim_push(k, &mut st) {
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
                return Err(EngineError::Timeout {
                    reason: format!(
                        "{} of {} responses still missing after {:?}",
                        st.remaining,
                        indices.len(),
                        self.cfg.timeout
                    ),
                });
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

    /// Closes every connection gracefully (HTTP/2 GOAWAY, TLS close_notify).
    pub fn close(&mut self) {
        for idx in 0..self.conns.len() {
            if let Some(c) = self.conns[idx].as_mut() {
                if let Some(s) = c.session.as_mut() {
                    let mut out = std::mem::take(&mut c.out);
                    s.terminate(&mut out);
                    let _ = c.transport.write(out.get(c.out_pos..).unwrap_or_default());
                }
            }
            self.drop_conn(idx);
        }
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

    fn connect_error(&self) -> EngineError {
        EngineError::Connect {
            addr: self.addr.to_string(),
            source: io::Error::other(
                self.first_error
                    .clone()
                    .unwrap_or_else(|| "connections keep failing".into()),
            ),
        }
    }

    /// Hands queued requests to open connections; opens connections while requests
    /// wait for capacity and the pool has room.
    fn schedule(&mut self, st: &mut BatchState) {
        for idx in 0..self.conns.len() {
            self.fill(idx, st);
        }
        if st.queue.is_empty() {
            return;
        }
        let per_conn = self.cfg.max_streams.max(1) as usize;
        let connecting = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.phase != Phase::Open)
            .count();
        let live = self.open_connections();
        let mut capacity = connecting * per_conn;
        let mut live_now = live;
        while st.queue.len() > capacity && live_now < self.cfg.max_connections.max(1) as usize {
            if self.failed_conns >= MAX_FAILED_CONNECTIONS {
                break;
            }
            self.connect();
            capacity += per_conn;
            live_now += 1;
        }
    }

    fn connect(&mut self) {
        let id = self.conns.len();
        let now = self.now();
        self.log.push(ConnRecord {
            id: u32::try_from(id).unwrap_or(u32::MAX),
            opened: now,
            ready: None,
            closed: None,
            protocol: None,
            completed: 0,
        });
        let sock = Socket::connect(&Endpoint::Tcp(vec![self.addr]), 0).and_then(|mut s| {
            self.poll
                .registry()
                .register(&mut s, Token(id), Interest::READABLE | Interest::WRITABLE)
                .map(|()| s)
        });
        let sock = match sock {
            Ok(s) => s,
            Err(e) => {
                self.conns.push(None);
                self.conn_failed(id, format!("could not connect to {}: {e}", self.addr));
                return;
            }
        };
        let transport = match &self.tls {
            None => Transport::plain(sock),
            Some((c, name)) => match Transport::tls(sock, c, name) {
                Ok(t) => t,
                Err(reason) => {
                    self.conns.push(None);
                    self.conn_failed(id, format!("TLS setup failed: {reason}"));
                    return;
                }
            },
        };
        let m = self.cfg.max_streams.max(1);
        self.conns.push(Some(PoolConn {
            id: u32::try_from(id).unwrap_or(u32::MAX),
            transport,
            phase: Phase::Connecting,
            session: None,
            out: Vec::with_capacity(4096),
            out_pos: 0,
            slots: vec![None; m as usize],
            free: (0..m).rev().collect(),
            completed: 0,
        }));
        if let Some(g) = &self.cfg.open_gauge {
            g.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A connection ended before completing anything.
    fn conn_failed(&mut self, id: usize, reason: String) {
        self.failed_conns += 1;
        if self.first_error.is_none() {
            self.first_error = Some(reason);
        }
        if let Some(r) = self.log.get_mut(id) {
            r.closed.get_or_insert(self.epoch.elapsed());
        }
    }

    fn drive(&mut self, idx: usize, read_closed: bool, st: &mut BatchState) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        if conn.phase == Phase::Connecting {
            match conn.transport.socket.check_connected() {
                Ok(false) => return,
                Ok(true) if conn.transport.is_tls() => conn.phase = Phase::Handshaking,
                Ok(true) => {
                    self.on_open(idx, st);
                    return;
                }
                Err(e) => {
                    let reason = format!("could not connect to {}: {e}", self.addr);
                    self.end_conn(idx, st, Some(reason));
                    return;
                }
            }
        }
        if conn.phase == Phase::Handshaking {
            match conn.transport.handshake() {
                Ok(Handshake::InProgress) => {}
                Ok(Handshake::Done) => self.on_open(idx, st),
                Err(reason) => {
                    self.end_conn(idx, st, Some(format!("TLS handshake failed: {reason}")));
                }
            }
            return;
        }
        self.service(idx, read_closed, st);
    }

    /// TCP/TLS is ready: pick the protocol, start the session.
    fn on_open(&mut self, idx: usize, st: &mut BatchState) {
        let now = self.now();
        let offered_h2 = self.cfg.protocol == FetchProtocol::H2;
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let proto = if conn.transport.is_tls() {
            match conn.transport.alpn() {
                Some(b"h2") => Some(AppProtocol::H2),
                Some(b"http/1.1") => Some(AppProtocol::Http11),
                None if !offered_h2 => Some(AppProtocol::Http11),
                _ => None,
            }
        } else {
            Some(self.cleartext)
        };
        let Some(proto) = proto else {
            self.end_conn(
                idx,
                st,
                Some("the server did not negotiate h2 with ALPN".to_owned()),
            );
            return;
        };
        let mut session = match proto {
            AppProtocol::Http11 => AnySession::H1(H1Session::new(
                Arc::clone(&self.prep),
                self.cfg.max_streams,
                false,
            )),
            AppProtocol::H2 | AppProtocol::H2c => AnySession::H2(Box::new(H2Session::new(
                Arc::clone(&self.prep),
                self.cfg.max_streams,
                &self.cfg.h2,
                false,
            ))),
        };
        session.on_connect(&mut conn.out);
        conn.session = Some(session);
        conn.phase = Phase::Open;
        if let Some(r) = self.log.get_mut(idx) {
            r.ready = Some(now);
            r.protocol = Some(proto);
        }
        // Data may already be buffered behind the handshake.
        self.service(idx, true, st);
    }

    /// Reads everything available, then submits what the connection can take.
    fn service(&mut self, idx: usize, read_closed: bool, st: &mut BatchState) {
        let epoch = self.epoch;
        let Fetcher {
            conns,
            read_buf,
            raw_buf,
            traffic,
            pushes,
            ..
        } = self;
        let Some(conn) = conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let PoolConn {
            transport,
            session,
            out,
            slots,
            free,
            completed,
            id,
            ..
        } = conn;
        let Some(session) = session.as_mut() else {
            return;
        };
        let mut sess_err: Option<SessionError> = None;
        let r = transport.read_with(read_buf, raw_buf, read_closed, |input| {
            traffic.bytes_read += input.len() as u64;
            let mut ev = Ev {
                conn: *id,
                slots,
                free,
                st,
                traffic,
                completed,
                now: epoch.elapsed(),
                pushes,
            };
            match session.on_read(input, out, &mut ev) {
                Ok(()) => true,
                Err(e) => {
                    sess_err = Some(e);
                    false
                }
            }
        });
        let end = match r {
            Ok(ReadEnd::Drained) => None,
            Ok(ReadEnd::Stopped) => Some(sess_err.map(|e| e.to_string())),
            Ok(ReadEnd::Eof) => {
                let mut ev = Ev {
                    conn: *id,
                    slots,
                    free,
                    st,
                    traffic,
                    completed,
                    now: epoch.elapsed(),
                    pushes,
                };
                Some(session.on_eof(&mut ev).err().map(|e| e.to_string()))
            }
            Err(e) => Some(Some(e.to_string())),
        };
        if let Some(err) = end {
            self.end_conn(idx, st, err);
            return;
        }
        self.fill(idx, st);
    }

    /// Submits queued requests to connection `idx` while it accepts them.
    fn fill(&mut self, idx: usize, st: &mut BatchState) {
        let now = self.now();
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let Some(session) = conn.session.as_mut() else {
            return;
        };
        while !st.queue.is_empty() && session.can_submit() && !session.goaway_received() {
            let Some(slot) = conn.free.pop() else { break };
            let Some(&job) = st.queue.front() else { break };
            let Some(j) = st.jobs.get_mut(job) else { break };
            let before = conn.out.len();
            if session.submit(slot, j.rec.path, &mut conn.out).is_err() {
                conn.free.push(slot);
                break;
            }
            st.queue.pop_front();
            let bytes = (conn.out.len() - before) as u64;
            self.traffic.request_header_bytes += bytes;
            j.rec.request_bytes = bytes;
            j.rec.conn = conn.id;
            j.rec.sent = now;
            j.rec.attempts += 1;
            j.got_status = false;
            j.body.clear();
            j.rec.body_bytes = 0;
            if let Some(s) = conn.slots.get_mut(slot as usize) {
                *s = Some(job);
            }
        }
    }

    /// Writes every connection's pending output; closes connections the protocol is
    /// done with.
    fn flush_all(&mut self, st: &mut BatchState) {
        for idx in 0..self.conns.len() {
            let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
                continue;
            };
            let Some(session) = conn.session.as_mut() else {
                continue;
            };
            session.on_write(&mut conn.out);
            let mut err = None;
            while conn.out_pos < conn.out.len() {
                match conn
                    .transport
                    .write(conn.out.get(conn.out_pos..).unwrap_or_default())
                {
                    Ok(n) => {
                        conn.out_pos += n;
                        self.traffic.bytes_written += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        err = Some(format!("write: {e}"));
                        break;
                    }
                }
            }
            if conn.out_pos >= conn.out.len() {
                conn.out.clear();
                conn.out_pos = 0;
                if let Err(e) = conn.transport.flush() {
                    err.get_or_insert(format!("write: {e}"));
                }
            }
            let close = session.wants_close() && conn.out.is_empty();
            if err.is_some() || close {
                self.end_conn(idx, st, err);
            }
        }
    }

    /// Connection `idx` is gone: requeue what was in flight (or give it up after
    /// too many attempts) and record why.
    fn end_conn(&mut self, idx: usize, st: &mut BatchState, error: Option<String>) {
        let now = self.now();
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::take) else {
            return;
        };
        let mut conn = conn;
        let progress = conn.completed > 0;
        let mut lost: Vec<usize> = conn.slots.iter_mut().filter_map(Option::take).collect();
        for p in self.pushes.entries.iter_mut().filter(|p| p.conn == conn.id) {
            if p.ended.is_none() {
                p.ended = Some(now);
                if let Some(job) = p.claimed.take() {
                    lost.push(job);
                }
            }
        }
        lost.sort_unstable();
        for job in lost.into_iter().rev() {
            let Some(j) = st.jobs.get_mut(job) else {
                continue;
            };
            if j.rec.attempts >= MAX_ATTEMPTS {
                j.finished = true;
                j.rec.status = 0;
                j.rec.done = now;
                st.remaining = st.remaining.saturating_sub(1);
            } else {
                st.queue.push_front(job);
            }
        }
        conn.transport.close();
        let _ = self.poll.registry().deregister(&mut conn.transport.socket);
        if let Some(g) = &self.cfg.open_gauge {
            g.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(r) = self.log.get_mut(idx) {
            r.closed = Some(now);
            r.completed = conn.completed;
        }
        if progress {
            self.failed_conns = 0;
        } else if let Some(reason) = error {
            self.conn_failed(idx, reason);
        } else {
            // Closed cleanly before answering anything: counts as a failure too,
            // so a server that closes every connection cannot loop forever.
            self.conn_failed(idx, "connection closed before any response".into());
        }
    }

    fn drop_conn(&mut self, idx: usize) {
        if let Some(mut conn) = self.conns.get_mut(idx).and_then(Option::take) {
            conn.transport.close();
            let _ = self.poll.registry().deregister(&mut conn.transport.socket);
            if let Some(g) = &self.cfg.open_gauge {
                g.fetch_sub(1, Ordering::Relaxed);
            }
            let now = self.epoch.elapsed();
            if let Some(r) = self.log.get_mut(idx) {
                r.closed = Some(now);
                r.completed = conn.completed;
            }
        }
    }
}

impl Drop for Fetcher {
    fn drop(&mut self) {
        self.close();
    }
}

struct BatchState {
    jobs: Vec<Job>,
    /// Job indices waiting for a connection, in priority order.
    queue: VecDeque<usize>,
    remaining: usize,
    capture: bool,
}

/// The fetcher side of [`SessionEvents`] for one connection.
struct Ev<'a> {
    conn: u32,
    slots: &'a mut Vec<Option<usize>>,
    free: &'a mut Vec<u32>,
    st: &'a mut BatchState,
    traffic: &'a mut FetchTraffic,
    completed: &'a mut u64,
    now: Duration,
    pushes: &'a mut PushCache,
}

impl Ev<'_> {
    fn job(&mut self, slot: u32) -> Option<&mut Job> {
        let job = (*self.slots.get(slot as usize)?)?;
        self.st.jobs.get_mut(job)
    }

    fn release(&mut self, slot: u32) -> Option<usize> {
        let job = self.slots.get_mut(slot as usize)?.take()?;
        self.free.push(slot);
        Some(job)
    }
}

impl SessionEvents for Ev<'_> {
    fn status(&mut self, slot: u32, status: u16) {
        let now = self.now;
        let conn = self.conn;
        if let Some(j) = self.job(slot) {
            if !j.got_status {
                j.rec.first_byte = now;
                j.rec.conn = conn;
            }
            if status >= 200 && !j.got_status {
                j.got_status = true;
                j.rec.status = status;
            }
        }
    }

    fn header_bytes(&mut self, wire: usize, decoded: usize) {
        self.traffic.response_header_bytes += wire as u64;
        self.traffic.response_header_decoded += decoded as u64;
    }

    fn body(&mut self, slot: u32, len: usize) {
        self.traffic.response_body_bytes += len as u64;
        if let Some(j) = self.job(slot) {
            j.rec.body_bytes += len as u64;
        }
    }

    fn body_data(&mut self, slot: u32, data: &[u8]) {
        if self.st.capture {
            if let Some(j) = self.job(slot) {
                j.body.extend_from_slice(data);
            }
        }
    }

    fn complete(&mut self, slot: u32) {
        let now = self.now;
        let Some(job) = self.release(slot) else {
            return;
        };
        *self.completed += 1;
        if let Some(j) = self.st.jobs.get_mut(job) {
            if !j.finished {
                j.finished = true;
                j.rec.done = now;
                self.st.remaining = self.st.remaining.saturating_sub(1);
            }
        }
    }

    fn reset(&mut self, slot: u32, _code: u32) {
        let now = self.now;
        let Some(job) = self.release(slot) else {
            return;
        };
        if let Some(j) = self.st.jobs.get_mut(job) {
            if j.rec.attempts >= MAX_ATTEMPTS {
                j.finished = true;
                j.rec.status = 0;
                j.rec.done = now;
                self.st.remaining = self.st.remaining.saturating_sub(1);
            } else {
                self.st.queue.push_front(job);
            }
        }
    }

    fn refused(&mut self, slot: u32) {
        if let Some(job) = self.release(slot) {
            if let Some(j) = self.st.jobs.get_mut(job) {
                // Not processed by the server: does not count as an attempt.
                j.rec.attempts = j.rec.attempts.saturating_sub(1);
            }
            self.st.queue.push_front(job);
        }
    }

    fn goaway(&mut self, _last_stream_id: u32, _code: u32) {}

    fn push_refused(&mut self) {}

    fn push_promise(&mut self, stream: u32, path: &[u8]) {
        self.pushes.promise(self.conn, stream, path);
    }

    fn push_status(&mut self, stream: u32, status: u16) {
        if let Some(p) = self.pushes.get(self.conn, stream) {
            p.status = status;
        }
    }

    fn push_body(&mut self, stream: u32, len: usize) {
        self.traffic.response_body_bytes += len as u64;
        let Some(p) = self.pushes.get(self.conn, stream) else {
            return;
        };
        p.bytes += len as u64;
        if let Some(j) = p.claimed.and_then(|k| self.st.jobs.get_mut(k)) {
            j.rec.body_bytes += len as u64;
        }
    }

    fn push_end(&mut self, stream: u32, complete: bool) {
        let now = self.now;
        let Some(p) = self.pushes.get(self.conn, stream) else {
            return;
        };
        p.ended = Some(now);
        p.complete = complete;
        let status = p.status;
        let Some(k) = p.claimed.take() else {
            return;
        };
        if !complete {
            // Cancelled: request it after all.
            p.used = false;
            if let Some(j) = self.st.jobs.get_mut(k) {
                j.rec.body_bytes = 0;
            }
            self.st.queue.push_front(k);
            return;
        }
        *self.completed += 1;
        if let Some(j) = self.st.jobs.get_mut(k) {
            if !j.finished {
                j.finished = true;
                j.rec.status = status;
                j.rec.first_byte = now;
                j.rec.done = now;
                self.st.remaining = self.st.remaining.saturating_sub(1);
            }
        }
    }
}
