//! The upstream's SETTINGS_MAX_CONCURRENT_STREAMS caps `--streams` from the first request:
//! a cold h2c-mux proxy does not open more streams on a new upstream connection than the
//! upstream allows before its SETTINGS arrive (they would be refused and retried). A request
//! waiting for a stream slot gets its 504 after `--upstream-timeout` of waiting.

mod common;

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{wait_until, Client};
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
use h2lab_server::ServerConfig;

const CLIENTS: usize = 40;
const EACH: usize = 5;

/// A cold proxy (`pool`, `streams`) in front of one `serve` allowing `upstream_streams`,
/// after a burst of `CLIENTS` clients sending `EACH` requests each (all must succeed).
fn cold_burst(upstream_streams: u32, pool: usize, streams: u32) -> h2lab_proxy::Stats {
    cold_burst_to(1, CLIENTS, upstream_streams, pool, streams)
}

/// [`cold_burst`] with `clients` clients, over `backends` upstreams (one proxy thread).
fn cold_burst_to(
    backends: usize,
    clients: usize,
    upstream_streams: u32,
    pool: usize,
    streams: u32,
) -> h2lab_proxy::Stats {
    let ups: Vec<_> = (0..backends)
        .map(|_| {
            h2lab_server::spawn(ServerConfig {
                max_concurrent_streams: upstream_streams,
                ..ServerConfig::local()
            })
            .expect("backend")
        })
        .collect();
    let mut cfg = ProxyConfig::local(
        ups.iter()
            .map(|u| UpstreamAddr::Tcp(u.addr().unwrap()))
            .collect(),
        UpstreamProtocol::H2cMux,
    );
    cfg.front.threads = 1;
    cfg.pool = pool;
    cfg.streams = streams;
    let p = h2lab_proxy::spawn(cfg).expect("proxy");
    let addr = p.addr().unwrap();
    // Every client is connected before any sends, so the first requests reach the proxy
    // together, before the upstream connection's SETTINGS can have arrived.
    let go = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let go = go.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                go.wait();
                (0..EACH)
                    .map(|_| c.get("/delay?ms=5").status)
                    .filter(|&s| s == 200)
                    .count()
            })
        })
        .collect();
    let ok: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let s = p.stats().snapshot(Duration::from_secs(1));
    assert_eq!(ok, clients * EACH, "{s}");
    assert_eq!(s.responses, (clients * EACH) as u64, "{s}");
    p.shutdown();
    p.join().unwrap()
}

#[test]
fn a_cold_burst_respects_the_upstreams_stream_limit() {
    // `serve --max-concurrent-streams 2`, proxy `--pool 1 --streams 20`.
    let s = cold_burst(2, 1, 20);
    assert!(s.max_streams_per_connection <= 2, "{s}");
    assert_eq!(s.upstream_retries, 0, "{s}");
    assert_eq!(s.upstream_connections_opened, 1, "{s}");
}

#[test]
fn a_cold_burst_waits_for_settings_instead_of_opening_connections() {
    // Room for all 40 clients on one connection once its SETTINGS (100 streams) are
    // known: the requests that come before them wait for them rather than open up to
    // `--pool` connections of one stream each.
    let s = cold_burst(100, 8, 100);
    assert_eq!(s.upstream_connections_opened, 1, "{s}");
    assert_eq!(s.upstream_retries, 0, "{s}");
}

#[test]
fn a_cold_burst_over_several_upstreams_waits_for_every_settings() {
    // Four upstreams, room for 4 × 25 = 100 streams once their SETTINGS are known, 100
    // clients: the first SETTINGS to arrive must not make the requests queued behind the
    // three still settling open connections of their own (up to `--pool` each). Demand
    // equals the room, so a request may come back before its predecessor's stream has
    // closed: at most two connections per upstream.
    let s = cold_burst_to(4, 100, 100, 32, 25);
    assert!(s.upstream_connections_opened <= 8, "{s}");
    assert_eq!(s.upstream_retries, 0, "{s}");
}

/// An upstream that accepts connections and never sends a byte (no SETTINGS: not an HTTP/2
/// server). Its thread holds the connections until the test process ends.
fn silent_upstream() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming() {
            match s {
                Ok(s) => held.push(s),
                Err(_) => return,
            }
        }
    });
    addr
}

const WAITERS: usize = 3;

/// One attempt with `timeout` as `--upstream-timeout`: a first request takes the one stream
/// a connection without SETTINGS carries, `WAITERS` more wait for a slot. `None` when the
/// first one timed out before the others were all waiting (a machine too slow for
/// `timeout`); else the proxy's final counters.
fn waiting_for_a_slot(upstream: SocketAddr, timeout: Duration) -> Option<h2lab_proxy::Stats> {
    let mut cfg = ProxyConfig::local(vec![UpstreamAddr::Tcp(upstream)], UpstreamProtocol::H2cMux);
    cfg.front.threads = 1;
    cfg.upstream_timeout = timeout;
    let p = h2lab_proxy::spawn(cfg).expect("proxy");
    let addr = p.addr().unwrap();
    let get = move || std::thread::spawn(move || Client::connect(addr).get("/ping").status);
    let snapshot = || p.stats().snapshot(Duration::from_secs(1));
    let mut clients = vec![get()];
    assert!(
        wait_until(20, || snapshot().upstream_requests == 1),
        "the first request is sent: {}",
        snapshot()
    );
    clients.extend((0..WAITERS).map(|_| get()));
    let mut before = snapshot();
    assert!(
        wait_until(20, || {
            before = snapshot();
            before.open_exchanges == 1 + WAITERS as u64 || before.gateway_timeout > 0
        }),
        "{before}"
    );
    let statuses: Vec<u16> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    p.shutdown();
    let s = p.join().unwrap();
    // Every request gets its 504, whether it was sent or waited.
    assert_eq!(statuses, vec![504; 1 + WAITERS], "{s}");
    assert_eq!(s.gateway_timeout, 1 + WAITERS as u64, "{s}");
    assert_eq!(s.open_exchanges, 0, "{s}");
    let all_waiting = before.gateway_timeout == 0 && before.upstream_requests == 1;
    all_waiting.then_some(s)
}

#[test]
fn a_request_waiting_for_a_stream_slot_times_out_as_a_silent_upstream() {
    let upstream = silent_upstream();
    // A longer timeout when the machine was too slow to queue the waiters within one.
    for ms in [1000, 4000] {
        let Some(s) = waiting_for_a_slot(upstream, Duration::from_millis(ms)) else {
            continue;
        };
        // The waiters time out while waiting: at most one of them (woken when the first
        // request's stream ended, before its own wait was over) is sent upstream. Without a
        // deadline of their own they were each sent in turn, one timeout after another.
        assert!(s.upstream_requests <= 2, "{s}");
        assert_eq!(s.upstream_connections_opened, 1, "{s}");
        return;
    }
    panic!("the first request timed out before the others waited, twice");
}
