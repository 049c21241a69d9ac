//! Session resumption and early data within a run: the client-side session store and the
//! counters of what resumption and 0-RTT did.
//!
//! rustls keeps client sessions in memory only (it cannot write them to a file, which is why
//! h2load's `--tls-session-file` is refused); a [`SessionStore`] is that memory, made an
//! explicit object so that its owner decides who shares it: a bench worker's connections
//! (never two workers: nothing is shared between them), or a page fetcher's loads (a
//! returning visit resumes the first visit's sessions). TLS 1.3 tickets are single-use on
//! servers that accept early data, so a store holds several per server (rustls keeps up to 8
//! and every handshake brings new ones).

use std::sync::Arc;

use rustls::client::{ClientSessionMemoryCache, Resumption};

/// Server names whose sessions a store keeps (rustls evicts the oldest beyond this).
const SERVER_NAMES: usize = 256;

/// An in-memory client session store (TLS 1.2 session IDs and TLS 1.3 tickets) to share
/// between connections: clones share the same sessions.
#[derive(Debug, Clone)]
pub struct SessionStore {
    cache: Arc<ClientSessionMemoryCache>,
}

impl Default for SessionStore {
    fn default() -> Self {
        SessionStore::new()
    }
}

impl SessionStore {
    /// An empty store.
    pub fn new() -> SessionStore {
        SessionStore {
            cache: Arc::new(ClientSessionMemoryCache::new(SERVER_NAMES)),
        }
    }

    /// Makes `cfg` resume from (and save into) this store; `early_data`: also offer TLS 1.3
    /// early data (QUIC 0-RTT when `cfg` becomes a QUIC configuration) on resumed
    /// connections. The caller must then send early data itself (see rustls'
    /// `ClientConnection::early_data`) and send it again if the server rejects it.
    pub fn apply(&self, cfg: &mut rustls::ClientConfig, early_data: bool) {
        let store: Arc<dyn rustls::client::ClientSessionStore> = self.cache.clone();
        cfg.resumption = Resumption::store(store);
        cfg.enable_early_data = early_data;
    }
}

/// What resumption and early data did during a run (connections of the warm-up included,
/// like the connect times). All zero unless `--tls-resume` or `--0rtt` was given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResumeStats {
    /// TLS or QUIC handshakes completed.
    pub handshakes: u64,
    /// Of those, handshakes that resumed a session.
    pub resumed: u64,
    /// Connections that sent requests as early data (TLS 1.3) or in 0-RTT (QUIC).
    pub early_offered: u64,
    /// The server accepted the early data.
    pub early_accepted: u64,
    /// The server rejected it (the requests were sent again after the handshake).
    pub early_rejected: u64,
    /// Requests sent again after a rejection of their early data.
    pub replayed: u64,
    /// Requests the server answered `425 Too Early` (RFC 8470), sent again after the
    /// handshake; the 425 itself is not counted as a response.
    pub too_early: u64,
}

impl ResumeStats {
    /// Adds `o` (merging workers or shards).
    pub fn merge(&mut self, o: &ResumeStats) {
        self.handshakes += o.handshakes;
        self.resumed += o.resumed;
        self.early_offered += o.early_offered;
        self.early_accepted += o.early_accepted;
        self.early_rejected += o.early_rejected;
        self.replayed += o.replayed;
        self.too_early += o.too_early;
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == ResumeStats::default()
    }
}
