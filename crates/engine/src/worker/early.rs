//! The worker's side of resumption and 0-RTT (`--tls-resume`, `--0rtt`): counting
//! handshakes, and settling a connection whose session started in early data once its
//! handshake completes: accepted, nothing to do; rejected, the requests it carried are put
//! back and sent again on the same connection by a fresh session (RFC 8446 §4.2.10: "the
//! client will need to retransmit the data"; RFC 9001 §4.6.2 for QUIC).

use super::client::Core;
use crate::config::AppProtocol;
use crate::conn::{ConnEnd, Connection, Dialer};
use crate::error::ProtocolError;
use crate::stats::WorkerStats;

/// A handshake completed without early data: count it (and whether it resumed), and
/// remember the protocol the server chose (what a later early session will speak).
pub(super) fn count_handshake(
    stats: &mut WorkerStats,
    dialer: &Dialer,
    conn: &Connection,
    proto: AppProtocol,
) {
    if !dialer.resumes || (!conn.transport.is_tls() && proto != AppProtocol::H3) {
        return;
    }
    stats.run.resume.handshakes += 1;
    if conn.resumed_session() {
        stats.run.tls_resumed += 1;
        stats.run.resume.resumed += 1;
    }
    if proto != AppProtocol::H3 {
        dialer.early_proto.set(Some(proto));
    }
}

/// After a read on a connection in early data: once the handshake has completed, counts the
/// outcome; after a rejection puts the in-flight requests back (they were never processed)
/// and restarts the session. `Some` when the connection cannot go on.
pub(super) fn settle(
    conn: &mut Connection,
    core: &mut Core,
    stats: &mut WorkerStats,
    dialer: &Dialer,
    measuring: bool,
) -> Option<ConnEnd> {
    let accepted = conn.take_early_outcome()?;
    core.early_phase = false;
    stats.run.resume.handshakes += 1;
    if accepted {
        stats.run.resume.early_accepted += 1;
        stats.run.resume.resumed += 1;
        if conn.transport.is_tls() {
            stats.run.tls_resumed += 1;
        }
        return None;
    }
    stats.run.resume.early_rejected += 1;
    if conn.resumed_session() {
        stats.run.resume.resumed += 1;
        stats.run.tls_resumed += 1;
    }
    for s in core.slots.iter_mut().filter(|s| s.in_use) {
        s.in_use = false;
        stats.run.resume.replayed += 1;
        if s.measured && measuring {
            stats.run.requests.started = stats.run.requests.started.saturating_sub(1);
        }
        if let Some(i) = s.intended {
            if core.retry.len() < core.retry.capacity() {
                core.retry.push(i);
            }
        }
        if !core.unbounded {
            core.req_left += 1;
            core.active_deadline = None;
        }
    }
    core.free.clear();
    core.free.extend((0..core.slots.len() as u32).rev());
    core.unstamped.clear();
    core.req_inflight = 0;
    core.out_pos = 0;
    core.issued_on_conn = 0;
    if dialer.restart_session(conn, &mut core.out) {
        None
    } else {
        Some(ConnEnd::Negotiation(ProtocolError::NoAlpn))
    }
}
