//! Raw samples (`BenchConfig::max_samples`, for h2load's `--output-file`): bounded reservoirs
//! that exist only when asked for. A counting global allocator watches this process (the server
//! runs in a child process): runs of 2,000 and 8,000 requests allocate the same, with and
//! without samples (the reservoirs stop growing at their cap), and without the option no
//! samples are kept at all.

mod child;

use h2lab_engine::{BenchConfig, NoopObserver, StopFlag};

#[global_allocator]
static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;

fn run(cfg: &BenchConfig, n: u64) -> (u64, h2lab_engine::RunResult) {
    let mut cfg = cfg.clone();
    cfg.requests = n;
    let before = h2lab_testkit::allocations();
    let r = h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new()).unwrap();
    let after = h2lab_testkit::allocations();
    assert_eq!(r.requests.succeeded, n);
    (after - before, r)
}

#[test]
fn samples_are_bounded_and_only_kept_when_asked_for() {
    let child = child::ChildServer::start();
    let mut cfg = BenchConfig::from_uris(&[format!("http://{}/", child.addr)], None).unwrap();
    cfg.clients = 4;
    cfg.max_concurrent_streams = 8;
    run(&cfg, 500); // warm up lazily initialised things

    // Off (the default): nothing kept, nothing allocated per request.
    assert_eq!(cfg.max_samples, None);
    let (short, r) = run(&cfg, 2_000);
    assert!(r.samples.is_none());
    let (long, _) = run(&cfg, 8_000);
    assert!(long <= short + 100, "{long} allocations vs {short}");

    // On, with a cap below the request count: exactly the cap is kept, sorted, in seconds.
    cfg.max_samples = Some(1_000);
    let (short_s, r) = run(&cfg, 2_000);
    let s = r.samples.expect("samples kept");
    assert_eq!(s.request.len(), 1_000);
    assert!(s.request.windows(2).all(|w| w[0] <= w[1]));
    assert!(s.request.iter().all(|t| *t > 0.0 && *t < 30.0));
    assert_eq!(s.connect.len(), 4);
    assert_eq!(s.ttfb.len(), 4);
    let (long_s, r) = run(&cfg, 8_000);
    assert_eq!(r.samples.unwrap().request.len(), 1_000);
    // The reservoir is full after 1,000 requests: 6,000 more allocate nothing more.
    assert!(long_s <= short_s + 100, "{long_s} allocations vs {short_s}");

    // Fewer requests than the cap: every one is kept.
    let (_, r) = run(&cfg, 600);
    assert_eq!(r.samples.unwrap().request.len(), 600);
}
