//! The upstream's SETTINGS_MAX_CONCURRENT_STREAMS caps `--streams` from the first request:
//! a cold h2c-mux proxy does not open more streams on a new upstream connection than the
//! upstream allows before its SETTINGS arrive (they would be refused and retried).

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::Client;
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
use h2lab_server::ServerConfig;

const CLIENTS: usize = 40;
const EACH: usize = 5;

/// A cold proxy (`pool`, `streams`) in front of one `serve` allowing `upstream_streams`,
/// after a burst of `CLIENTS` clients sending `EACH` requests each (all must succeed).
fn cold_burst(upstream_streams: u32, pool: usize, streams: u32) -> h2lab_proxy::Stats {
    let up = h2lab_server::spawn(ServerConfig {
        max_concurrent_streams: upstream_streams,
        ..ServerConfig::local()
    })
    .expect("backend");
    let mut cfg = ProxyConfig::local(
        vec![UpstreamAddr::Tcp(up.addr().unwrap())],
        UpstreamProtocol::H2cMux,
    );
    cfg.pool = pool;
    cfg.streams = streams;
    let p = h2lab_proxy::spawn(cfg).expect("proxy");
    let addr = p.addr().unwrap();
    // Every client is connected before any sends, so the first requests reach the proxy
    // together, before the upstream connection's SETTINGS can have arrived.
    let go = Arc::new(Barrier::new(CLIENTS));
    let threads: Vec<_> = (0..CLIENTS)
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
    assert_eq!(ok, CLIENTS * EACH, "{s}");
    assert_eq!(s.responses, (CLIENTS * EACH) as u64, "{s}");
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
