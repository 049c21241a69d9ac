//! Counters of a running link, readable from any thread while it runs.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counters of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirStats {
    /// Bytes read from the sources.
    pub bytes_in: u64,
    /// Bytes written to the destinations.
    pub bytes_out: u64,
    /// Bytes dropped because their destination failed.
    pub bytes_dropped: u64,
    /// Chunks scheduled through the shaper.
    pub chunks: u64,
    /// Chunks the loss model delayed as retransmissions.
    pub lost_chunks: u64,
    /// Largest bottleneck-queue depth seen, in bytes.
    pub max_queue_bytes: u64,
    /// Largest number of bytes held for a single connection (queued or in flight).
    pub max_conn_held: u64,
}

/// A snapshot of a link's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Client connections accepted.
    pub connections: u64,
    /// Connections currently open.
    pub active: u64,
    /// Upstream connections that could not be established.
    pub connect_failures: u64,
    /// Connections ended by a reset or an I/O error rather than by FINs.
    pub resets: u64,
    /// Client to upstream.
    pub up: DirStats,
    /// Upstream to client.
    pub down: DirStats,
}

impl fmt::Display for DirStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes relayed in {} chunks ({} delayed as lost), max queue {} B, \
             max held per connection {} B",
            self.bytes_out, self.chunks, self.lost_chunks, self.max_queue_bytes, self.max_conn_held
        )?;
        if self.bytes_dropped > 0 {
            write!(f, ", {} B dropped", self.bytes_dropped)?;
        }
        Ok(())
    }
}

impl fmt::Display for LinkStats {
    /// Three lines: connections, then the up and down directions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "connections: {} accepted, {} open, {} upstream connect failures, {} reset",
            self.connections, self.active, self.connect_failures, self.resets
        )?;
        writeln!(f, "up:   {}", self.up)?;
        write!(f, "down: {}", self.down)
    }
}

#[derive(Debug, Default)]
pub(crate) struct DirCounters {
    pub(crate) bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) bytes_dropped: AtomicU64,
    pub(crate) chunks: AtomicU64,
    pub(crate) lost_chunks: AtomicU64,
    pub(crate) max_queue_bytes: AtomicU64,
    pub(crate) max_conn_held: AtomicU64,
}

impl DirCounters {
    fn snapshot(&self) -> DirStats {
        DirStats {
            bytes_in: self.bytes_in.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            bytes_dropped: self.bytes_dropped.load(Relaxed),
            chunks: self.chunks.load(Relaxed),
            lost_chunks: self.lost_chunks.load(Relaxed),
            max_queue_bytes: self.max_queue_bytes.load(Relaxed),
            max_conn_held: self.max_conn_held.load(Relaxed),
        }
    }
}

/// The shared counters behind [`LinkStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections: AtomicU64,
    pub(crate) active: AtomicU64,
    pub(crate) connect_failures: AtomicU64,
    pub(crate) resets: AtomicU64,
    pub(crate) dirs: [DirCounters; 2],
}

impl Counters {
    pub(crate) fn snapshot(&self) -> LinkStats {
        LinkStats {
            connections: self.connections.load(Relaxed),
            active: self.active.load(Relaxed),
            connect_failures: self.connect_failures.load(Relaxed),
            resets: self.resets.load(Relaxed),
            up: self.dirs[0].snapshot(),
            down: self.dirs[1].snapshot(),
        }
    }
}
