//! Early data on the fetcher's connections ([`FetchConfig::zero_rtt`](super::FetchConfig)):
//! a connection that resumes a session with early data allowed starts its session before
//! the handshake completes (the shared connection driver, `conn/early.rs`), so the requests
//! the pool hands it go out as TLS 1.3 early data or QUIC 0-RTT. Once the handshake has
//! completed, the outcome is recorded ([`ConnRecord::early_data`](super::ConnRecord)); after
//! a rejection the requests it carried were never processed (RFC 8446 §4.2.10: "the client
//! will need to retransmit the data"; RFC 9001 §4.6.2), so they go back to the front of the
//! queue and a fresh session on the same connection sends them again.

use super::events::BatchState;
use super::Fetcher;
use crate::conn::ConnEnd;
use crate::error::ProtocolError;

impl Fetcher {
    /// After a read on connection `idx`: settles its early data once the handshake says
    /// whether the server took it. `Err` when the connection cannot go on.
    pub(super) fn settle_early(&mut self, idx: usize, st: &mut BatchState) -> Result<(), ConnEnd> {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return Ok(());
        };
        let Some(accepted) = conn.link.take_early_outcome() else {
            return Ok(());
        };
        let resumed = conn.link.resumed_session();
        if let Some(r) = self.log.get_mut(idx) {
            r.early_data = Some(accepted);
            r.resumed = resumed;
        }
        if accepted {
            return Ok(());
        }
        let mut lost: Vec<usize> = conn.slots.iter_mut().filter_map(Option::take).collect();
        lost.sort_unstable();
        for job in lost.into_iter().rev() {
            if let Some(j) = st.jobs.get_mut(job) {
                // Never processed: this attempt does not count.
                j.rec.attempts = j.rec.attempts.saturating_sub(1);
                j.got_status = false;
                j.body.clear();
                j.rec.body_bytes = 0;
            }
            st.queue.push_front(job);
        }
        let m = conn.slots.len() as u32;
        conn.free.clear();
        conn.free.extend((0..m).rev());
        conn.out_pos = 0;
        if self.dialer.restart_session(&mut conn.link, &mut conn.out) {
            Ok(())
        } else {
            Err(ConnEnd::Negotiation(ProtocolError::NoAlpn))
        }
    }
}
