//! What h2load 1.69+ reports about QUIC (`--h3` runs): the UDP datagrams sent and received,
//! and per client the minimum and smoothed RTT and the packets sent, received and lost of
//! its last QUIC connection, plus how many datagrams each receive call returned (GRO).
//!
//! Collected without allocation on the hot path: the datagram counters and the GRO counts
//! live in the connection's transport and are read once when the connection goes away; the
//! RTTs and packet counts come from quinn-proto's `ConnectionStats` at that moment. Each
//! client keeps the figures of its last connection (as h2load overwrites its client stat
//! when a QUIC connection is freed) and contributes one sample at the end of the run.

use std::time::Duration;

/// Most datagrams one receive call is counted with: Linux builds GRO batches of at most 64
/// segments (a larger count, never seen, is counted as 64).
pub const GRO_MAX: usize = 64;

/// The figures of one QUIC connection, read from quinn-proto when it goes away.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuicConnSample {
    /// Smallest RTT seen (quinn-proto's `min_rtt`).
    pub min_rtt: Duration,
    /// Smoothed RTT (RFC 9002; quinn-proto's `rtt`).
    pub smoothed_rtt: Duration,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// Datagrams the connection processed (quinn-proto counts received datagrams, not the
    /// QUIC packets coalesced in them: during the handshake one datagram may carry two).
    pub packets_recv: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
}

/// What a QUIC run measured about QUIC (`None` in `RunResult::quic` for TCP runs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuicStats {
    /// UDP datagrams sent (a GSO batch counts its segments).
    pub datagrams_sent: u64,
    /// UDP datagrams received (a GRO batch counts its segments).
    pub datagrams_recv: u64,
    /// Per client: minimum RTT of its last connection, in seconds.
    pub min_rtt: Vec<f64>,
    /// Per client: smoothed RTT of its last connection, in seconds.
    pub smoothed_rtt: Vec<f64>,
    /// Per client: packets sent on its last connection.
    pub packets_sent: Vec<u64>,
    /// Per client: packets received on its last connection.
    pub packets_recv: Vec<u64>,
    /// Per client: packets lost on its last connection.
    pub packets_lost: Vec<u64>,
    /// `gro_counts[k]`: how many receive calls returned `k` datagrams (index 0 unused,
    /// at most [`GRO_MAX`] + 1 entries; h2load's "GRO packets" samples).
    pub gro_counts: Vec<u64>,
}

impl QuicStats {
    /// Adds one client's sample (its last connection; zeros when it never connected).
    pub fn push_client(&mut self, s: &QuicConnSample) {
        self.min_rtt.push(s.min_rtt.as_secs_f64());
        self.smoothed_rtt.push(s.smoothed_rtt.as_secs_f64());
        self.packets_sent.push(s.packets_sent);
        self.packets_recv.push(s.packets_recv);
        self.packets_lost.push(s.packets_lost);
    }

    /// Adds `gro` (counts indexed by datagrams per receive call) to the GRO counts.
    pub fn add_gro(&mut self, gro: &[u64]) {
        if self.gro_counts.len() < gro.len() {
            self.gro_counts.resize(gro.len(), 0);
        }
        for (a, b) in self.gro_counts.iter_mut().zip(gro) {
            *a += b;
        }
    }

    /// Merges another worker's (or shard's) figures into these.
    pub fn merge(&mut self, o: &QuicStats) {
        self.datagrams_sent += o.datagrams_sent;
        self.datagrams_recv += o.datagrams_recv;
        self.min_rtt.extend_from_slice(&o.min_rtt);
        self.smoothed_rtt.extend_from_slice(&o.smoothed_rtt);
        self.packets_sent.extend_from_slice(&o.packets_sent);
        self.packets_recv.extend_from_slice(&o.packets_recv);
        self.packets_lost.extend_from_slice(&o.packets_lost);
        self.add_gro(&o.gro_counts);
    }

    /// Number of receive calls counted in [`QuicStats::gro_counts`].
    pub fn receive_calls(&self) -> u64 {
        self.gro_counts.iter().sum()
    }
}

/// The transport's counters of one QUIC connection (read when it goes away).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkCounters {
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Datagrams received.
    pub datagrams_recv: u64,
    /// Receive calls by datagrams returned (see [`QuicStats::gro_counts`]).
    pub gro: [u64; GRO_MAX + 1],
}

impl Default for LinkCounters {
    fn default() -> LinkCounters {
        LinkCounters {
            datagrams_sent: 0,
            datagrams_recv: 0,
            gro: [0; GRO_MAX + 1],
        }
    }
}

impl LinkCounters {
    /// One receive call returned `n` datagrams.
    #[inline]
    pub fn on_receive(&mut self, n: usize) {
        if n > 0 {
            if let Some(c) = self.gro.get_mut(n.min(GRO_MAX)) {
                *c += 1;
            }
        }
    }

    /// Adds these counters to `q`.
    pub fn add_to(&self, q: &mut QuicStats) {
        q.datagrams_sent += self.datagrams_sent;
        q.datagrams_recv += self.datagrams_recv;
        q.add_gro(&self.gro);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_concatenates_client_samples() {
        let mut a = QuicStats::default();
        let mut l = LinkCounters {
            datagrams_sent: 3,
            datagrams_recv: 5,
            ..LinkCounters::default()
        };
        l.on_receive(1);
        l.on_receive(4);
        l.on_receive(100);
        l.add_to(&mut a);
        a.push_client(&QuicConnSample {
            min_rtt: Duration::from_micros(100),
            packets_sent: 7,
            ..QuicConnSample::default()
        });
        let mut b = a.clone();
        b.merge(&a);
        assert_eq!((b.datagrams_sent, b.datagrams_recv), (6, 10));
        assert_eq!(b.packets_sent, vec![7, 7]);
        assert_eq!(b.min_rtt, vec![1e-4, 1e-4]);
        assert_eq!(b.receive_calls(), 6);
        assert_eq!(
            (b.gro_counts[1], b.gro_counts[4], b.gro_counts[GRO_MAX]),
            (2, 2, 2)
        );
    }
}
