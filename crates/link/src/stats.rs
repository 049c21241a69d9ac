//! Counters of a running link, readable from any thread while it runs.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::tcp_model::TcpModelKind;

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
    /// Stream segments (MSS bytes on each connection's own offsets) the loss model drew for.
    pub segments: u64,
    /// Segments the loss model drew lost (the per-segment loss rate is this over `segments`).
    pub lost_segments: u64,
    /// Largest bottleneck-queue depth seen, in bytes.
    pub max_queue_bytes: u64,
    /// Largest number of bytes held for a single connection (queued or in flight).
    pub max_conn_held: u64,
    /// Times a modelled loss cut a connection's congestion window (see
    /// [`tcp_model`](super::tcp_model)).
    pub window_cuts: u64,
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
    /// The UDP relay.
    pub udp: UdpStats,
    /// The congestion window applied to relayed TCP connections (`None`: no window, because
    /// `--tcp-model none` or no added RTT).
    pub tcp_model: Option<TcpModelKind>,
}

/// Counters of one direction of the UDP relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdpDirStats {
    /// Datagrams received from the sources.
    pub datagrams_in: u64,
    /// Datagrams sent to the destinations.
    pub datagrams_out: u64,
    /// Payload bytes received.
    pub bytes_in: u64,
    /// Payload bytes sent.
    pub bytes_out: u64,
    /// Datagrams the loss model dropped.
    pub lost: u64,
    /// Datagrams dropped at the tail of the full bottleneck queue (or over the memory cap).
    pub queue_drops: u64,
    /// Datagrams dropped because the destination socket refused them (or its flow expired).
    pub send_drops: u64,
}

/// Counters of the UDP relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdpStats {
    /// Flows (client address and port) seen.
    pub flows: u64,
    /// Flows open now.
    pub active_flows: u64,
    /// Flows closed after their idle time.
    pub expired_flows: u64,
    /// Flows whose upstream socket could not be opened.
    pub flow_failures: u64,
    /// Client to upstream.
    pub up: UdpDirStats,
    /// Upstream to client.
    pub down: UdpDirStats,
}

impl fmt::Display for UdpDirStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} datagrams ({} B) relayed of {} received, {} lost, {} dropped at the queue, \
             {} undeliverable",
            self.datagrams_out,
            self.bytes_out,
            self.datagrams_in,
            self.lost,
            self.queue_drops,
            self.send_drops
        )
    }
}

impl fmt::Display for DirStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes relayed in {} chunks ({} delayed as lost), max queue {} B, \
             max held per connection {} B",
            self.bytes_out, self.chunks, self.lost_chunks, self.max_queue_bytes, self.max_conn_held
        )?;
        if self.lost_segments > 0 {
            write!(
                f,
                ", {} of {} segments modelled lost",
                self.lost_segments, self.segments
            )?;
        }
        if self.bytes_dropped > 0 {
            write!(f, ", {} B dropped", self.bytes_dropped)?;
        }
        if self.window_cuts > 0 {
            write!(f, ", {} window cuts", self.window_cuts)?;
        }
        Ok(())
    }
}

impl fmt::Display for LinkStats {
    /// Three lines: connections, then the up and down directions (three more for UDP flows,
    /// if there were any).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "path: {}", crate::PathKind::Relay.describe())?;
        writeln!(
            f,
            "connections: {} accepted, {} open, {} upstream connect failures, {} reset",
            self.connections, self.active, self.connect_failures, self.resets
        )?;
        if let Some(model) = self.tcp_model {
            writeln!(
                f,
                "tcp model: {model} (a congestion window per connection and direction)"
            )?;
        }
        writeln!(f, "up:   {}", self.up)?;
        write!(f, "down: {}", self.down)?;
        if self.udp.flows > 0 {
            write!(
                f,
                "\nudp flows: {} seen, {} open, {} expired, {} failed\nudp up:   {}\nudp down: {}",
                self.udp.flows,
                self.udp.active_flows,
                self.udp.expired_flows,
                self.udp.flow_failures,
                self.udp.up,
                self.udp.down
            )?;
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
pub(crate) struct DirCounters {
    pub(crate) bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) bytes_dropped: AtomicU64,
    pub(crate) chunks: AtomicU64,
    pub(crate) lost_chunks: AtomicU64,
    pub(crate) segments: AtomicU64,
    pub(crate) lost_segments: AtomicU64,
    pub(crate) max_queue_bytes: AtomicU64,
    pub(crate) max_conn_held: AtomicU64,
    pub(crate) window_cuts: AtomicU64,
}

impl DirCounters {
    fn snapshot(&self) -> DirStats {
        DirStats {
            bytes_in: self.bytes_in.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            bytes_dropped: self.bytes_dropped.load(Relaxed),
            chunks: self.chunks.load(Relaxed),
            lost_chunks: self.lost_chunks.load(Relaxed),
            segments: self.segments.load(Relaxed),
            lost_segments: self.lost_segments.load(Relaxed),
            max_queue_bytes: self.max_queue_bytes.load(Relaxed),
            max_conn_held: self.max_conn_held.load(Relaxed),
            window_cuts: self.window_cuts.load(Relaxed),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct UdpDirCounters {
    pub(crate) datagrams_in: AtomicU64,
    pub(crate) datagrams_out: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) queue_drops: AtomicU64,
    pub(crate) send_drops: AtomicU64,
}

impl UdpDirCounters {
    fn snapshot(&self) -> UdpDirStats {
        UdpDirStats {
            datagrams_in: self.datagrams_in.load(Relaxed),
            datagrams_out: self.datagrams_out.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            lost: self.lost.load(Relaxed),
            queue_drops: self.queue_drops.load(Relaxed),
            send_drops: self.send_drops.load(Relaxed),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct UdpCounters {
    pub(crate) flows: AtomicU64,
    pub(crate) active_flows: AtomicU64,
    pub(crate) expired_flows: AtomicU64,
    pub(crate) flow_failures: AtomicU64,
    pub(crate) dirs: [UdpDirCounters; 2],
}

impl UdpCounters {
    fn snapshot(&self) -> UdpStats {
        UdpStats {
            flows: self.flows.load(Relaxed),
            active_flows: self.active_flows.load(Relaxed),
            expired_flows: self.expired_flows.load(Relaxed),
            flow_failures: self.flow_failures.load(Relaxed),
            up: self.dirs[0].snapshot(),
            down: self.dirs[1].snapshot(),
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
    pub(crate) udp: UdpCounters,
    pub(crate) tcp_model: Option<TcpModelKind>,
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
            udp: self.udp.snapshot(),
            tcp_model: self.tcp_model,
        }
    }
}
