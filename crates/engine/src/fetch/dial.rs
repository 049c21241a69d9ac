//! Where a [`Fetcher`](super::Fetcher) connects and how it sets up TLS and QUIC, including
//! the session store a returning visit resumes from ([`TlsSessions`]).
//!
//! A browser keeps the TLS sessions (RFC 8446 §2.2: a `NewSessionTicket` after the
//! handshake, offered as a pre-shared key on the next connection to the same server) in
//! memory for as long as it runs; a page loader that wants a returning visit gives the
//! fetchers of both visits the same [`TlsSessions`] ([`FetchConfig::sessions`]). Without one,
//! every connection does a full handshake, as h2load does.
//!
//! Resumption without early data still costs the handshake's round trip (the client's
//! Finished comes after the server's flight): it saves the certificate and its signature,
//! not time on the wire. Early data (0-RTT) is the step that saves the round trip: a store
//! made with [`TlsSessions::with_early_data`] gives its fetchers a configuration with
//! `enable_early_data`, and a fetcher with [`FetchConfig::zero_rtt`] then sends the first
//! requests of a resumed connection as TLS 1.3 early data or QUIC 0-RTT.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustls::client::{ClientSessionMemoryCache, ClientSessionStore, Resumption};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

use super::FetchConfig;
use crate::config::Scheme;
use crate::conn::quic::QuicDial;
use crate::error::TransportError;
use crate::transport::Endpoint;
use crate::EngineError;

/// An in-memory TLS session store shared by the fetchers of one browser "session"
/// (TCP and QUIC alike: both keep their tickets in rustls), counting what it did.
///
/// It also keeps the rustls client configuration per ALPN list: rustls resumes a stored
/// session only with the configuration (its certificate verifier) that made it, so the
/// fetchers of a returning visit must share it, as a browser's connections do.
#[derive(Debug)]
pub struct TlsSessions {
    inner: ClientSessionMemoryCache,
    offered: AtomicU64,
    stored: AtomicU64,
    early_data: bool,
    configs: Mutex<Vec<(Vec<String>, Arc<rustls::ClientConfig>)>>,
}

/// What a [`TlsSessions`] store did, cumulative since its creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// Handshakes that offered a stored TLS 1.3 ticket (a resumption attempt; the server may
    /// still decline it and do a full handshake).
    pub offered: u64,
    /// TLS 1.3 tickets received from servers and stored.
    pub stored: u64,
}

impl Default for TlsSessions {
    fn default() -> Self {
        TlsSessions::new()
    }
}

impl TlsSessions {
    /// An empty store (room for the tickets of 32 servers, like rustls' default of 256
    /// sessions, scaled to a page's few origins).
    pub fn new() -> TlsSessions {
        TlsSessions {
            inner: ClientSessionMemoryCache::new(32),
            offered: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            early_data: false,
            configs: Mutex::new(Vec::new()),
        }
    }

    /// An empty store whose fetchers' TLS configuration enables early data (rustls
    /// `enable_early_data`): a resumed handshake can carry 0-RTT data when the fetcher asks
    /// for it ([`FetchConfig::zero_rtt`]). Both visits must use the same store, so both get
    /// this configuration (rustls resumes a session only with the configuration that made
    /// it); a fetcher without `zero_rtt` writes no early data on it.
    pub fn with_early_data() -> TlsSessions {
        TlsSessions {
            early_data: true,
            ..TlsSessions::new()
        }
    }

    /// Whether this store's configuration enables early data.
    pub fn early_data(&self) -> bool {
        self.early_data
    }

    /// Counters so far.
    pub fn counts(&self) -> SessionCounts {
        SessionCounts {
            offered: self.offered.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
        }
    }

    /// The rustls resumption setting that uses this store.
    pub(crate) fn resumption(self: &Arc<Self>) -> Resumption {
        Resumption::store(Arc::clone(self) as Arc<dyn ClientSessionStore>)
    }
}

impl ClientSessionStore for TlsSessions {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.inner.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner.kx_hint(server_name)
    }

    fn set_tls12_session(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(server_name, value);
    }

    fn tls12_session(
        &self,
        server_name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        let s = self.inner.tls12_session(server_name);
        if s.is_some() {
            self.offered.fetch_add(1, Ordering::Relaxed);
        }
        s
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.stored.fetch_add(1, Ordering::Relaxed);
        self.inner.insert_tls13_ticket(server_name, value);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let t = self.inner.take_tls13_ticket(server_name);
        if t.is_some() {
            self.offered.fetch_add(1, Ordering::Relaxed);
        }
        t
    }
}

/// The rustls client configuration of a fetcher: bench's (no certificate check), with the
/// fetcher's session store when it has one (then the store's one configuration per ALPN
/// list, made on first use).
pub(super) fn tls_config(
    alpn: &[String],
    sessions: Option<&Arc<TlsSessions>>,
) -> Result<Arc<rustls::ClientConfig>, TransportError> {
    let Some(s) = sessions else {
        return crate::transport::client_config(alpn, true, &Default::default()).map(Arc::new);
    };
    let mut configs = s.configs.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = configs.iter().find(|(a, _)| a.as_slice() == alpn) {
        return Ok(Arc::clone(c));
    }
    let mut c = crate::transport::client_config(alpn, true, &Default::default())?;
    c.resumption = s.resumption();
    c.enable_early_data = s.early_data;
    let c = Arc::new(c);
    configs.push((alpn.to_vec(), Arc::clone(&c)));
    Ok(c)
}

/// How an HTTP/3 fetcher opens QUIC connections: bench's client configuration (no
/// certificate check, as for TLS), ALPN `h3`, a stream receive window as large as the
/// HTTP/2 fetcher's (so one connection can carry a page's responses at once), and the
/// fetcher's session store (QUIC's TLS tickets live in the same rustls store).
pub(super) fn quic_dial(cfg: &FetchConfig, endpoint: &Endpoint) -> Result<QuicDial, EngineError> {
    let invalid = |msg: &str| EngineError::Config(crate::ConfigError::Invalid(msg.to_owned()));
    if cfg.origin.scheme != Scheme::Https {
        return Err(invalid("h3: HTTP/3 needs an https:// origin"));
    }
    if matches!(endpoint, Endpoint::Unix(_)) {
        return Err(invalid("h3: HTTP/3 runs over UDP, not a UNIX socket"));
    }
    let mut config = match &cfg.sessions {
        None => crate::h3::quic_client_config(true, &Default::default()),
        Some(s) => tls_config(&["h3".to_owned()], Some(s)).and_then(quic_client_config),
    }
    .map_err(EngineError::Tls)?;
    let mut tc = h2lab_quic::quinn_proto::TransportConfig::default();
    tc.max_concurrent_uni_streams(16u32.into());
    tc.max_concurrent_bidi_streams(0u32.into());
    let window = 1u32 << cfg.h2.window_bits.min(30);
    let conn_window = 1u32 << cfg.h2.connection_window_bits.min(30);
    tc.stream_receive_window(window.into());
    tc.receive_window(conn_window.into());
    config.transport_config(Arc::new(tc));
    Ok(QuicDial {
        config,
        server_name: cfg.sni.clone().unwrap_or_else(|| cfg.origin.host.clone()),
        gso: true,
        max_udp_payload_size: None,
        qlog: None,
    })
}

/// A QUIC client configuration around a rustls one (TLS 1.3 with a QUIC suite).
fn quic_client_config(
    tls: Arc<rustls::ClientConfig>,
) -> Result<h2lab_quic::quinn_proto::ClientConfig, TransportError> {
    use h2lab_quic::quinn_proto::crypto::rustls::QuicClientConfig;
    let crypto = QuicClientConfig::try_from(tls).map_err(|_| {
        TransportError::Setup(rustls::Error::General(
            "QUIC needs TLS 1.3 with TLS_AES_128_GCM_SHA256".into(),
        ))
    })?;
    Ok(h2lab_quic::quinn_proto::ClientConfig::new(Arc::new(crypto)))
}

/// Where a fetcher's connections go: a UNIX socket, the `connect_to` address, or
/// every address the origin's host resolves to (tried in order, like bench).
pub(super) fn endpoint(cfg: &FetchConfig) -> Result<Endpoint, EngineError> {
    if let Some(p) = &cfg.unix_socket {
        return Ok(Endpoint::Unix(p.clone()));
    }
    if !cfg.connect_to.is_empty() {
        return Ok(Endpoint::Tcp(cfg.connect_to.clone()));
    }
    let host = cfg.origin.host.as_str();
    let addrs: Vec<SocketAddr> = (host, cfg.origin.port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve {
            host: host.to_owned(),
            source: e,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(EngineError::Resolve {
            host: host.to_owned(),
            source: io::Error::new(io::ErrorKind::NotFound, "no address returned"),
        });
    }
    Ok(Endpoint::Tcp(addrs))
}
