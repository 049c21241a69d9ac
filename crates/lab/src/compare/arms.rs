//! The arms' standing connections: each cell measured gets an
//! [`h2lab_engine::StandingRun`] (its client threads and connections, opened once) that its
//! later runs reuse, so a round costs its warm-ups and measured periods rather than thread
//! start, connection and TLS set-up and teardown per run. The pool keeps the arms of the
//! conditions measured last open, up to a connection cap (file descriptors: every client
//! connection is also a server connection, and on a shaped link two more in the relay);
//! older arms are closed when a new one would exceed it. A second cap bounds the memory
//! the open arms hold ([`footprint`]): a connection relayed by a shaped link holds the
//! relay's buffers, up to a quarter of a megabyte per direction, and 1,000 of them held
//! most of the default run's 1.5 GB.

use std::time::Instant;

use h2lab_engine::{BenchConfig, EngineError, StandingRun, StopFlag};

use super::matrix::CellKey;
use crate::link::LinkProfile;
use crate::proto::LabProtocol;

/// Most client connections kept open at once (when the file limit allows).
pub const MAX_OPEN_CONNECTIONS: u32 = 2_000;

/// Most bytes the open arms may hold by [`footprint`]'s estimate. With the process's own
/// 60–90 MB (threads, histograms, the server's buffers) this keeps the default matrix under
/// 250 MB of peak RSS.
pub const MEMORY_CAP: u64 = 128 << 20;

/// What one open client connection is presumed to hold in this process, by kind: a TCP
/// connection on loopback (the server's buffers for it and the client's share), an HTTP/3
/// connection (the QUIC and HTTP/3 state on both ends: about 45 KiB on the client's side,
/// measured by the engine's `h3_memory` test; its socket's receive slots and transmit
/// buffer are its worker thread's, not its own), and a connection relayed by a shaped link
/// (the relay reads up to 256 KiB ahead per direction; heap profile of the default run:
/// 485 MB of the relay's rings at the peak, with about 1,000 linked connections open).
pub const CONN_BYTES: u64 = 32 << 10;
/// See [`CONN_BYTES`].
pub const H3_CONN_BYTES: u64 = 96 << 10;
/// See [`CONN_BYTES`].
pub const LINKED_CONN_BYTES: u64 = 512 << 10;

/// The memory cell `key`'s arm is presumed to hold with `connections` open ([`CONN_BYTES`]).
pub fn footprint(key: &CellKey, connections: u32) -> u64 {
    let per = if key.cond.link != LinkProfile::Loopback && key.proto != LabProtocol::H3 {
        LINKED_CONN_BYTES
    } else if key.proto == LabProtocol::H3 {
        H3_CONN_BYTES
    } else {
        CONN_BYTES
    };
    per * u64::from(connections)
}

struct OpenArm {
    cell: usize,
    run: StandingRun,
    connections: u32,
    bytes: u64,
    last_use: u64,
}

/// Open arms, by cell index (see the module docs).
pub struct Arms {
    open: Vec<OpenArm>,
    cap: u32,
    memory_cap: u64,
    clock: u64,
}

impl Default for Arms {
    fn default() -> Self {
        Arms::new(connection_cap())
    }
}

/// [`MAX_OPEN_CONNECTIONS`], or a quarter of the process's file limit if that is lower.
pub fn connection_cap() -> u32 {
    let files = open_files_limit().unwrap_or(1024);
    MAX_OPEN_CONNECTIONS.min(u32::try_from(files / 4).unwrap_or(u32::MAX))
}

pub use crate::os::{open_files_limit, raise_open_files_limit};

impl Arms {
    /// A pool that keeps at most `cap` client connections open.
    pub fn new(cap: u32) -> Arms {
        Arms {
            open: Vec::new(),
            cap,
            memory_cap: MEMORY_CAP,
            clock: 0,
        }
    }

    /// Bytes the open arms are presumed to hold ([`footprint`]).
    pub fn bytes(&self) -> u64 {
        self.open.iter().map(|a| a.bytes).sum()
    }

    /// Client connections open now.
    pub fn connections(&self) -> u32 {
        self.open.iter().map(|a| a.connections).sum()
    }

    /// Whether cell `cell` has its arm open.
    pub fn is_open(&self, cell: usize) -> bool {
        self.open.iter().any(|a| a.cell == cell)
    }

    /// The standing run of cell `cell`, opened with `cfg` (`connections` client
    /// connections, presumed to hold `bytes`: [`footprint`]) if it is not open yet —
    /// closing the least recently used arms not in `keep` while either cap would be
    /// exceeded. Returns the run and how long opening (and closing others) took.
    pub fn get(
        &mut self,
        cell: usize,
        cfg: &BenchConfig,
        (connections, bytes): (u32, u64),
        keep: &[usize],
        stop: &StopFlag,
    ) -> Result<(&mut StandingRun, std::time::Duration), EngineError> {
        self.clock += 1;
        let t0 = Instant::now();
        if !self.is_open(cell) {
            while self.connections() + connections > self.cap
                || self.bytes() + bytes > self.memory_cap
            {
                let victim = self
                    .open
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| !keep.contains(&a.cell))
                    .min_by_key(|(_, a)| a.last_use)
                    .map(|(i, _)| i);
                let Some(i) = victim else { break };
                self.open.swap_remove(i).run.close();
            }
            let run = StandingRun::open(cfg, stop)?;
            self.open.push(OpenArm {
                cell,
                run,
                connections,
                bytes,
                last_use: 0,
            });
        }
        let took = t0.elapsed();
        let clock = self.clock;
        let arm = self
            .open
            .iter_mut()
            .find(|a| a.cell == cell)
            .expect("opened above");
        arm.last_use = clock;
        Ok((&mut arm.run, took))
    }

    /// Closes cell `cell`'s arm (after an error: the next run opens it anew).
    pub fn close(&mut self, cell: usize) {
        if let Some(i) = self.open.iter().position(|a| a.cell == cell) {
            self.open.swap_remove(i).run.close();
        }
    }

    /// Closes every arm.
    pub fn close_all(&mut self) {
        for a in self.open.drain(..) {
            a.run.close();
        }
    }
}

impl Drop for Arms {
    fn drop(&mut self) {
        self.close_all();
    }
}
