//! The UDP flow table: one upstream socket per client address and port, expired when idle.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};

use super::super::shaper::Nanos;
use super::super::stats::UdpCounters;

/// Tokens from here on: `FIRST_FLOW + slot` is a flow's upstream socket.
pub(super) const FIRST_FLOW: usize = 2;

/// One client address and port, and the upstream socket that speaks for it.
pub(super) struct Flow {
    /// Tells a reused slot from the flow a queued datagram was meant for.
    pub(super) gen: u64,
    pub(super) client: SocketAddr,
    /// Bound to an ephemeral port and connected to the upstream: the upstream sees one peer
    /// per client, as it would through a NAT.
    pub(super) socket: UdpSocket,
    /// The last datagram either way (for the idle expiry).
    pub(super) last: Nanos,
}

/// The flows, by slot and by client address.
#[derive(Default)]
pub(super) struct Flows {
    slots: Vec<Option<Flow>>,
    free: Vec<usize>,
    by_client: HashMap<SocketAddr, usize>,
    next_gen: u64,
}

fn unspecified(of: SocketAddr) -> SocketAddr {
    let ip = match of {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    SocketAddr::new(ip, 0)
}

impl Flows {
    /// The flow of `client` as (slot, gen), opened (and registered with `registry`) if new.
    pub(super) fn get_or_open(
        &mut self,
        client: SocketAddr,
        upstream: SocketAddr,
        registry: &Registry,
        counters: &UdpCounters,
        now: Nanos,
    ) -> io::Result<(usize, u64)> {
        if let Some(&slot) = self.by_client.get(&client) {
            if let Some(flow) = self.slots[slot].as_mut() {
                flow.last = now;
                return Ok((slot, flow.gen));
            }
        }
        let mut socket = UdpSocket::bind(unspecified(upstream))?;
        super::big_buffers(&socket);
        socket.connect(upstream)?;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        if let Err(e) = registry.register(&mut socket, Token(FIRST_FLOW + slot), Interest::READABLE)
        {
            self.free.push(slot);
            return Err(e);
        }
        self.next_gen += 1;
        self.slots[slot] = Some(Flow {
            gen: self.next_gen,
            client,
            socket,
            last: now,
        });
        self.by_client.insert(client, slot);
        counters.flows.fetch_add(1, Relaxed);
        counters.active_flows.fetch_add(1, Relaxed);
        Ok((slot, self.next_gen))
    }

    /// The flow in `slot`, if it is still the one of generation `gen`.
    pub(super) fn get(&mut self, slot: usize, gen: u64) -> Option<&mut Flow> {
        self.slots
            .get_mut(slot)
            .and_then(Option::as_mut)
            .filter(|f| f.gen == gen)
    }

    /// The flow in `slot`, whatever its generation.
    pub(super) fn at(&mut self, slot: usize) -> Option<&mut Flow> {
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    /// Whether no flow is open.
    pub(super) fn is_empty(&self) -> bool {
        self.by_client.is_empty()
    }

    /// Closes the flows idle for `idle` or longer at `now`.
    pub(super) fn expire(
        &mut self,
        now: Nanos,
        idle: Nanos,
        registry: &Registry,
        counters: &UdpCounters,
    ) {
        for slot in 0..self.slots.len() {
            let expired = self.slots[slot]
                .as_ref()
                .is_some_and(|f| now.saturating_sub(f.last) >= idle);
            if expired {
                self.close(slot, registry, counters);
                counters.expired_flows.fetch_add(1, Relaxed);
            }
        }
    }

    /// Closes every flow.
    pub(super) fn close_all(&mut self, registry: &Registry, counters: &UdpCounters) {
        for slot in 0..self.slots.len() {
            self.close(slot, registry, counters);
        }
    }

    fn close(&mut self, slot: usize, registry: &Registry, counters: &UdpCounters) {
        let Some(mut flow) = self.slots.get_mut(slot).and_then(Option::take) else {
            return;
        };
        let _ = registry.deregister(&mut flow.socket);
        self.by_client.remove(&flow.client);
        self.free.push(slot);
        counters.active_flows.fetch_sub(1, Relaxed);
    }
}
