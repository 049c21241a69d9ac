//! Early data (TLS 1.3 0-RTT on TCP, QUIC 0-RTT) for `serve --0rtt`: the single-use ticket
//! store that keeps early data from being replayed, the rule that decides which requests may
//! be answered from early data (RFC 8470), and the counters tests and the banner read.
//!
//! RFC 8446 §8.1: "The server MUST ensure that any instance of it (be it a machine, a thread,
//! or any other entity within the relevant serving infrastructure) would accept 0-RTT for the
//! same 0-RTT handshake at most once". rustls accepts early data only with stateful
//! resumption (no ticketer), looking each ticket up with `take`: [`SingleUseTickets`] hands
//! every ticket out once, so a replayed first flight finds no session and its early data is
//! rejected (the handshake falls back to a full one).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rustls::server::StoresServerSessions;

use crate::endpoints::{query_param, split_target, Method, Request};

/// Largest early data a client may send on TCP (rustls' `max_early_data_size`): room for a
/// few requests. QUIC has no such limit in TLS (quinn requires the maximum).
pub const MAX_EARLY_DATA: u32 = 16 * 1024;

/// Counters of a server's early-data handling, shared by its workers (touched only by
/// handshakes and requests that arrived early, never on the ordinary request path).
#[derive(Debug, Default)]
pub struct EarlyStats {
    /// Tickets stored (sessions a client may resume).
    pub tickets_issued: AtomicU64,
    /// Tickets a client presented that were still there (each is then gone).
    pub tickets_redeemed: AtomicU64,
    /// Tickets presented that were unknown or already used (replays among them).
    pub tickets_refused: AtomicU64,
    /// Requests answered from early data (their handler ran before the handshake completed).
    pub early_answered: AtomicU64,
    /// Requests refused with `425 Too Early`.
    pub too_early: AtomicU64,
}

impl EarlyStats {
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot: (issued, redeemed, refused, early answered, 425 sent).
    pub fn snapshot(&self) -> [u64; 5] {
        [
            self.tickets_issued.load(Ordering::Relaxed),
            self.tickets_redeemed.load(Ordering::Relaxed),
            self.tickets_refused.load(Ordering::Relaxed),
            self.early_answered.load(Ordering::Relaxed),
            self.too_early.load(Ordering::Relaxed),
        ]
    }
}

/// A bounded session store whose `take` removes the session: each ticket resumes at most one
/// handshake. When full, the oldest half is dropped (clients then do a full handshake).
#[derive(Debug)]
pub struct SingleUseTickets {
    map: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    max: usize,
    stats: Arc<EarlyStats>,
}

impl SingleUseTickets {
    /// A store holding up to `max` sessions, counting into `stats`.
    pub fn new(max: usize, stats: Arc<EarlyStats>) -> Self {
        SingleUseTickets {
            map: Mutex::new(HashMap::new()),
            max: max.max(1),
            stats,
        }
    }
}

impl StoresServerSessions for SingleUseTickets {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= self.max {
            // No ordering is kept: dropping any half bounds the memory, which is all a test
            // server needs; a dropped ticket only costs its client a full handshake.
            let drop: Vec<Vec<u8>> = map.keys().take(self.max / 2 + 1).cloned().collect();
            for k in drop {
                map.remove(&k);
            }
        }
        map.insert(key, value);
        EarlyStats::bump(&self.stats.tickets_issued);
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        // TLS 1.2 session IDs (no early data there): reusable, as in rustls' own cache.
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let v = self
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        EarlyStats::bump(if v.is_some() {
            &self.stats.tickets_redeemed
        } else {
            &self.stats.tickets_refused
        });
        v
    }

    fn can_cache(&self) -> bool {
        true
    }
}

/// Whether `req` may be answered although it arrived in early data (and so could be a
/// replay). RFC 8470 §3: "A server can limit the risk of replay attacks by ... only allowing
/// early data for requests that are safe"; GET and HEAD are safe (RFC 9110 §9.2.1) unless the
/// target marks its handler as not replayable with `?replay=unsafe`.
pub fn replay_safe(req: &Request<'_>) -> bool {
    if !matches!(req.method, Method::Get | Method::Head) {
        return false;
    }
    let (_, query) = split_target(req.target);
    query_param(query, b"replay") != Some(b"unsafe".as_slice())
}

/// Whether the request carries `Early-Data: 1` (RFC 8470 §5.1: an intermediary forwarded it
/// from early data).
pub fn has_early_data_field(req: &Request<'_>) -> bool {
    let mut found = false;
    req.headers.for_each(&mut |name, value| {
        if name.eq_ignore_ascii_case(b"early-data") && value == b"1" {
            found = true;
        }
    });
    found
}

/// Counts a request routed from early data; `refused`: it got a 425.
pub fn count(stats: &EarlyStats, refused: bool) {
    EarlyStats::bump(if refused {
        &stats.too_early
    } else {
        &stats.early_answered
    });
}
