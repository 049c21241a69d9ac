//! Memory stays bounded in the open model: nothing is allocated per request. A counting global
//! allocator watches this process (the server runs in a child process) while open-model runs
//! of 1 s and 4 s at the same rate make 2,000 and 8,000 requests; the longer run may allocate
//! a little more per time-series interval, never per request. (Histograms are fixed-size and
//! the queue is a ring allocated once — see the unit tests of `pacing`.)

mod child;

use std::time::Duration;

use h2lab_engine::{BenchConfig, NoopObserver, ProtocolChoice, StopFlag};

#[global_allocator]
static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;

/// Allocations and completed requests of one open-model run of `secs` seconds.
fn run(cfg: &BenchConfig, secs: u64) -> (u64, u64) {
    let mut cfg = cfg.clone();
    cfg.duration = Some(Duration::from_secs(secs));
    let before = h2lab_testkit::allocations();
    let r = h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new()).unwrap();
    let after = h2lab_testkit::allocations();
    assert_eq!(r.pacing.unwrap().dropped, 0);
    (after - before, r.requests.completed)
}

fn no_per_request_allocation(h1: bool) {
    let child = child::ChildServer::start();
    let mut cfg = BenchConfig::from_uris(&[format!("http://{}/", child.addr)], None).unwrap();
    if h1 {
        cfg.protocol = ProtocolChoice::H1;
    }
    cfg.clients = 4;
    cfg.max_concurrent_streams = 8;
    cfg.load.arrival_rate = Some(2000.0);
    cfg.load.interval = Some(Duration::from_secs(1));
    run(&cfg, 1); // warm up lazily initialised things (TLS-free, but the resolver, ...)
    let (short, n_short) = run(&cfg, 1);
    let (long, n_long) = run(&cfg, 4);
    eprintln!("h1={h1}: {short} allocations for {n_short} requests, {long} for {n_long}");
    assert!(n_long >= n_short + 5_000, "{n_short} vs {n_long}");
    // 3 more intervals (a few allocations each: histograms, channel nodes, rows), nothing
    // per request: 6,000 more requests must not show up.
    assert!(
        long <= short + 100,
        "{long} allocations for {n_long} requests vs {short} for {n_short}"
    );
}

/// The tests count process-wide: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn open_model_allocates_nothing_per_request_http2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    no_per_request_allocation(false);
}

#[test]
fn open_model_allocates_nothing_per_request_http1() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    no_per_request_allocation(true);
}
