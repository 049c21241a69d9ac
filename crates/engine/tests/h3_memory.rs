//! What a standing run's HTTP/3 connections hold in this process's heap, and that closing
//! the run gives it back. The lab keeps hundreds of such connections open at once (one arm
//! per condition and protocol), so a per-connection buffer sized for the worst case —
//! half a megabyte of UDP receive slots per connection, as each client socket once had —
//! is what its peak memory is made of.
//!
//! A counting global allocator measures the heap in use (bytes asked for and not freed,
//! whether or not the kernel backed their pages); the server runs in a child process, so
//! the figures are the client's alone. The bounds are on bytes per connection and on what
//! is left after closing, not on time.

mod child;

use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_engine::{AppProtocol, BenchConfig, NoopObserver, ProtocolChoice, StandingRun, StopFlag};

#[global_allocator]
static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;

/// Connections of the two runs compared.
const FEW: u32 = 8;
/// See [`FEW`].
const MANY: u32 = 40;
/// Most heap an open HTTP/3 client connection may hold (its QUIC state, its session): about
/// 45 KiB on 2026-11-28. A client socket's own receive slots alone were 512 KiB, and a
/// transmit buffer of its own (which quinn-proto grows to a whole GSO batch) 64 KiB more.
const PER_CONNECTION: i64 = 64 << 10;
/// Most heap left once the run is closed (lazily initialised statics, the test harness).
const LEFT_AFTER_CLOSE: i64 = 256 << 10;

fn h3_config(addr: std::net::SocketAddr, clients: u32) -> BenchConfig {
    let url = format!("https://127.0.0.1:{}/data?size=20000", addr.port());
    let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
    cfg.protocol = ProtocolChoice::Alpn(vec!["h3".into()]);
    cfg.insecure = true;
    cfg.clients = clients;
    cfg.threads = 2;
    cfg.max_concurrent_streams = 4;
    cfg.require_protocol = Some(AppProtocol::H3);
    cfg
}

/// Windows until one completes requests (the handshakes are done), then one more.
fn measure(run: &mut StandingRun) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let window = Duration::from_millis(100);
    loop {
        let r = run.measure(window, window, Arc::new(NoopObserver)).unwrap();
        assert_eq!(r.requests.failed, 0, "{:?}", r.requests);
        if r.requests.completed > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no request completed in 60 s");
    }
    let r = run.measure(window, window, Arc::new(NoopObserver)).unwrap();
    assert_eq!(r.reconnects, 0);
}

/// Heap in use while a standing run of `clients` connections is open (after its windows),
/// and after it is closed, both relative to before it opened.
fn held(addr: std::net::SocketAddr, clients: u32) -> (i64, i64) {
    let cfg = h3_config(addr, clients);
    let before = h2lab_testkit::live_bytes();
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    measure(&mut run);
    let open = h2lab_testkit::live_bytes() - before;
    run.close();
    (open, h2lab_testkit::live_bytes() - before)
}

#[test]
fn an_h3_arm_holds_little_per_connection_and_gives_it_back_when_closed() {
    let server = child::ChildServer::start_h3();
    // A first run initialises what is initialised once per process (TLS provider, ...).
    held(server.addr, FEW);
    let (few, few_left) = held(server.addr, FEW);
    let (many, many_left) = held(server.addr, MANY);
    // Per connection: the difference over the connections added (the worker threads' own
    // buffers and statistics are the same in both).
    let per = (many - few) / i64::from(MANY - FEW);
    eprintln!(
        "HTTP/3 arm, 2 threads: {FEW} connections hold {few} bytes of heap, {MANY} hold {many} \
         ({per} per connection); left after closing: {few_left}, {many_left}"
    );
    assert!(per <= PER_CONNECTION, "{per} bytes per open connection");
    assert!(
        few_left.max(many_left) <= LEFT_AFTER_CLOSE,
        "{few_left} / {many_left} bytes left after closing"
    );
}
