//! Load shapes against the real h2lab server: the open model's exact rate (HTTP/1.1 and
//! HTTP/2), coordinated omission made visible by a server stopped with SIGSTOP (open versus
//! closed model), ramps (`--stages`) of the request rate and of the connections, the bounded
//! queue, and h2load's pacing flags (`--rps`, `--timing-script-file`, `-r`).
//!
//! Timing: the rate tests run 10 s each (the issue's `--rate 2000 -D 10`), the stall tests
//! 5 s per model; assertions are counts and orders of magnitude, never exact latencies.

mod child;

use std::net::SocketAddr;
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use h2lab_engine::{
    AppProtocol, BenchConfig, IntervalRow, NoopObserver, Observer, Profile, ProtocolChoice,
    RunResult, Stage, StopFlag, TlsInfo,
};

fn local_server() -> h2lab_server::RunningServer {
    h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap()
}

fn config(addr: SocketAddr, path: &str, h1: bool) -> BenchConfig {
    let mut cfg = BenchConfig::from_uris(&[format!("http://{addr}{path}")], None).unwrap();
    if h1 {
        cfg.protocol = ProtocolChoice::H1;
    }
    cfg
}

fn run(cfg: &BenchConfig) -> RunResult {
    h2lab_engine::run(cfg, &NoopObserver, &StopFlag::new()).unwrap()
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Calls `on_row` with each time-series row as the collector emits it.
struct RowHook<F: Fn(&IntervalRow) + Sync>(F);

impl<F: Fn(&IntervalRow) + Sync> Observer for RowHook<F> {
    fn progress(&self, _: u64, _: u64, _: Duration, _: u64) {}
    fn tls_info(&self, _: &TlsInfo) {}
    fn protocol(&self, _: AppProtocol) {}
    fn interval(&self, row: &IntervalRow) {
        (self.0)(row)
    }
    fn phase(&self, _: u32, _: h2lab_engine::TimedRunPhase) {}
}

/// `--arrival-rate 2000 -D 10` completes 20,000 ± 1% requests.
fn rate_2000_for_10s(h1: bool) {
    let srv = local_server();
    let mut cfg = config(srv.addr().unwrap(), "/", h1);
    cfg.clients = 8;
    cfg.max_concurrent_streams = 8;
    cfg.duration = Some(Duration::from_secs(10));
    cfg.load.arrival_rate = Some(2000.0);
    let r = run(&cfg);
    let p = r.pacing.clone().unwrap();
    eprintln!(
        "h1={h1}: {:?}, {p:?}, corrected p99 {:.2} ms, from send p99 {:.2} ms",
        r.requests,
        ms(r.request_time_corrected.value_at_quantile(0.99)),
        ms(r.request_time.value_at_quantile(0.99)),
    );
    let want = if h1 {
        AppProtocol::Http11
    } else {
        AppProtocol::H2c
    };
    assert_eq!(r.app_protocol, Some(want));
    let done = r.requests.completed;
    assert!(
        (19_800..=20_200).contains(&done),
        "completed {done}, expected 20000 ± 1%"
    );
    assert_eq!(r.requests.succeeded, done);
    assert_eq!(p.scheduled, 20_000, "{p:?}");
    assert_eq!(p.dropped, 0, "{p:?}");
    // Only requests due in the last moments can still wait for a slot when the run ends.
    assert!(p.unsent <= 200, "{p:?}");
    assert!(p.on_time + p.late + p.unsent <= p.scheduled, "{p:?}");
    assert_eq!(r.request_time_corrected.len(), done);
    assert_eq!(r.request_time.len(), done);
    // Measured from the intended start, latency can only be longer.
    assert!(r.request_time_corrected.max() >= r.request_time.min());
}

#[test]
fn rate_2000_for_10s_http2() {
    rate_2000_for_10s(false);
}

#[test]
fn rate_2000_for_10s_http1() {
    rate_2000_for_10s(true);
}

/// One run against a child server that is frozen for 1 s once the row of interval 2 has been
/// written (about 1.5 s into the run).
fn stalled_run(child: &child::ChildServer, open: bool) -> RunResult {
    // /delay?ms=1 keeps the closed model near the open model's rate (and the CPU cool).
    let mut cfg = config(child.addr, "/delay?ms=1", false);
    cfg.clients = 2;
    cfg.max_concurrent_streams = if open { 8 } else { 2 };
    cfg.duration = Some(Duration::from_secs(5));
    cfg.load.interval = Some(Duration::from_millis(500));
    if open {
        cfg.load.arrival_rate = Some(2000.0);
    }
    let pid = child.raw_pid();
    let stall: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);
    let hook = RowHook(|row: &IntervalRow| {
        if row.index == 2 {
            let h = std::thread::spawn(move || child::stall(pid, Duration::from_secs(1)));
            *stall.lock().unwrap() = Some(h);
        }
    });
    let r = h2lab_engine::run(&cfg, &hook, &StopFlag::new()).unwrap();
    let h = stall
        .lock()
        .unwrap()
        .take()
        .expect("the stall was triggered");
    h.join().unwrap();
    r
}

fn print_series(label: &str, r: &RunResult) {
    for row in &r.timeseries {
        eprintln!(
            "{label} t={:.1}s completed={:5} p99={:8.2}ms max={:8.2}ms uncorrected p99={:8.2}ms max={:8.2}ms",
            row.start.as_secs_f64(),
            row.completed,
            ms(row.latency.p99),
            ms(row.latency.max),
            ms(row.latency_uncorrected.p99),
            ms(row.latency_uncorrected.max),
        );
    }
}

/// Coordinated omission, shown: while the server is frozen for 1 s, the open model keeps
/// scheduling requests and charges their wait to the latency measured from the intended start;
/// the latency from the send, and the closed model (which stops sending while it waits), hide
/// the stall from every percentile except the maximum.
#[test]
fn stalled_server_open_versus_closed_model() {
    let child = child::ChildServer::start();
    let open = stalled_run(&child, true);
    print_series("open  ", &open);
    let closed = stalled_run(&child, false);
    print_series("closed", &closed);

    let q = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q);
    let open_corr = q(&open.request_time_corrected, 0.99);
    let open_send = q(&open.request_time, 0.99);
    let closed_p99 = q(&closed.request_time, 0.99);
    eprintln!(
        "open model: {} requests, corrected p50 {:.2} ms p99 {:.2} ms max {:.2} ms; from send p99 \
         {:.2} ms max {:.2} ms; {:?}",
        open.requests.completed,
        ms(q(&open.request_time_corrected, 0.5)),
        ms(open_corr),
        ms(open.request_time_corrected.max()),
        ms(open_send),
        ms(open.request_time.max()),
        open.pacing,
    );
    eprintln!(
        "closed model: {} requests, p50 {:.2} ms p99 {:.2} ms max {:.2} ms",
        closed.requests.completed,
        ms(q(&closed.request_time, 0.5)),
        ms(closed_p99),
        ms(closed.request_time.max()),
    );

    // The open model sees the stall in its percentiles (about 20% of the requests were due
    // during the second the server was frozen) ...
    assert!(ms(open_corr) >= 500.0, "corrected p99 {} ms", ms(open_corr));
    assert_eq!(open.pacing.as_ref().unwrap().dropped, 0);
    // ... the latency from the send does not (only the few requests in flight waited) ...
    assert!(
        open_send * 5 <= open_corr,
        "from send p99 {} ms",
        ms(open_send)
    );
    // ... and neither does the closed model, although its requests in flight waited just as
    // long (the stall shows only in its maximum).
    assert!(
        closed_p99 * 5 <= open_corr,
        "closed p99 {} ms",
        ms(closed_p99)
    );
    assert!(ms(closed.request_time.max()) >= 500.0);

    // The time series shows where it happened: an interval with (almost) nothing completed,
    // then, in the open model, one whose corrected maximum is the stall.
    for (label, r) in [("open", &open), ("closed", &closed)] {
        let quiet = r
            .timeseries
            .iter()
            .position(|row| row.index >= 2 && row.length.as_millis() >= 500 && row.completed <= 10)
            .unwrap_or_else(|| panic!("{label}: no stalled interval in the series"));
        if label == "open" {
            let after = &r.timeseries[quiet + 1..];
            assert!(
                after.iter().any(|row| ms(row.latency.max) >= 500.0),
                "open: no interval after the stall shows it"
            );
        }
    }
}

/// `--stages` in the open model: the completed requests per interval follow the ramp's mean
/// rate within 5%.
#[test]
fn stages_ramp_the_request_rate() {
    let srv = local_server();
    let mut cfg = config(srv.addr().unwrap(), "/", false);
    cfg.clients = 4;
    cfg.max_concurrent_streams = 8;
    let stages = vec![
        Stage {
            duration: Duration::from_secs(4),
            target: 1000.0,
        },
        Stage {
            duration: Duration::from_secs(4),
            target: 1000.0,
        },
        Stage {
            duration: Duration::from_secs(4),
            target: 400.0,
        },
    ];
    cfg.load.arrival_rate = Some(200.0);
    cfg.load.stages = stages.clone();
    cfg.load.interval = Some(Duration::from_secs(2));
    let r = run(&cfg);
    let profile = Profile::stages(200.0, &stages);
    assert_eq!(r.timeseries.len(), 6, "{:#?}", r.timeseries);
    for row in r.timeseries.iter().skip(1) {
        let t0 = row.start.as_secs_f64();
        let want = profile.mean_level(t0, t0 + 2.0);
        assert!((row.target.unwrap() - want).abs() < 1e-6, "{row:?}");
        let got = row.rps();
        eprintln!("t={t0}s target {want:.1} req/s, got {got:.1}");
        assert!(
            (got - want).abs() <= 0.05 * want,
            "interval at {t0}s: {got:.1} req/s, target {want:.1}"
        );
    }
    let total: f64 = profile.cumulative(12.0);
    let done = r.requests.completed as f64;
    assert!((done - total).abs() <= 0.01 * total, "{done} vs {total}");
}

/// `--stages` in the closed model: the number of open connections follows the ramp (virtual
/// users come and go).
#[test]
fn stages_ramp_the_connections() {
    let srv = local_server();
    let mut cfg = config(srv.addr().unwrap(), "/delay?ms=2", false);
    let stages = vec![
        Stage {
            duration: Duration::from_secs(2),
            target: 6.0,
        },
        Stage {
            duration: Duration::from_secs(1),
            target: 6.0,
        },
        Stage {
            duration: Duration::from_secs(2),
            target: 0.0,
        },
    ];
    cfg.load.stages = stages.clone();
    cfg.load.interval = Some(Duration::from_millis(500));
    cfg.validate().unwrap();
    let r = run(&cfg);
    let profile = Profile::stages(0.0, &stages);
    assert!(r.timeseries.len() >= 9, "{:#?}", r.timeseries);
    for row in &r.timeseries {
        let end = (row.start + row.length).as_secs_f64();
        let want = profile.level_at(end).round();
        let got = row.active_connections as f64;
        eprintln!("t={end:.1}s level {want} connections {got}");
        assert!(
            (got - want).abs() <= 1.0,
            "at {end}s: {got} open, {want} wanted"
        );
    }
    let top = r.timeseries.iter().map(|r| r.active_connections).max();
    assert_eq!(top, Some(6));
    assert!(r.requests.succeeded > 0);
}

/// With every slot busy for good, due requests fill the queue; the rest are dropped, and what
/// is still queued at the end was not sent either.
#[test]
fn queue_overflow_is_counted() {
    let srv = local_server();
    let mut cfg = config(srv.addr().unwrap(), "/delay?ms=60000", true);
    cfg.clients = 1;
    cfg.max_concurrent_streams = 2;
    cfg.duration = Some(Duration::from_millis(1000));
    cfg.load.arrival_rate = Some(500.0);
    cfg.load.queue_limit = Some(50);
    let r = run(&cfg);
    let p = r.pacing.unwrap();
    eprintln!("{p:?}");
    // HTTP/1.1 with -m 2: two requests in flight, never answered (late if they were due
    // before the connection was up).
    assert_eq!(p.on_time + p.late, 2, "{p:?}");
    assert_eq!(p.unsent, 50, "{p:?}");
    assert_eq!(p.scheduled, 500, "{p:?}");
    assert_eq!(p.on_time + p.late + p.dropped + p.unsent, p.scheduled);
    assert_eq!(p.queue_limit, 50);
    assert_eq!(r.requests.completed, 0);
}

/// `-n` with the open model: exactly that many requests, paced.
#[test]
fn count_limited_open_model() {
    let srv = local_server();
    let mut cfg = config(srv.addr().unwrap(), "/", false);
    cfg.requests = 300;
    cfg.clients = 3;
    cfg.threads = 2;
    cfg.max_concurrent_streams = 4;
    cfg.load.arrival_rate = Some(1000.0);
    let t0 = Instant::now();
    let r = run(&cfg);
    // The last request is due at 299.5 ms.
    assert!(t0.elapsed() >= Duration::from_micros(299_500));
    assert_eq!(r.requests.total, 300);
    assert_eq!(r.requests.succeeded, 300);
    assert_eq!(r.pacing.unwrap().scheduled, 300);
    assert_eq!(r.request_time_corrected.len(), 300);
}

/// h2load's pacing flags: `--rps` (per client), `--timing-script-file`, `-r`/`--rate-period`.
/// Each can only make a run slower than its schedule, so the checks are lower bounds.
#[test]
fn h2load_pacing_flags() {
    let srv = local_server();
    let addr = srv.addr().unwrap();

    // --rps 40 -c 2 -n 10: each client 5 requests at 0, 25, ..., 100 ms.
    let mut cfg = config(addr, "/", false);
    cfg.clients = 2;
    cfg.requests = 10;
    cfg.load.rps = Some(40.0);
    let t0 = Instant::now();
    let r = run(&cfg);
    assert!(t0.elapsed() >= Duration::from_millis(100));
    assert_eq!(r.requests.succeeded, 10);
    assert_eq!(r.request_time_corrected.len(), 10);
    assert!(r.pacing.is_none(), "open-model accounting only");

    // A timing script: offsets 0, 50, 150 ms per client; -n counts per client.
    let mut cfg = BenchConfig::from_uris(
        &[
            format!("http://{addr}/a"),
            format!("http://{addr}/b"),
            format!("http://{addr}/c"),
        ],
        None,
    )
    .unwrap();
    cfg.clients = 2;
    cfg.requests = 3;
    cfg.load.timing_script = Some(
        vec![
            Duration::ZERO,
            Duration::from_millis(50),
            Duration::from_millis(150),
        ]
        .into(),
    );
    let t0 = Instant::now();
    let r = run(&cfg);
    assert!(t0.elapsed() >= Duration::from_millis(150));
    assert_eq!(r.requests.total, 6);
    assert_eq!(r.requests.completed, 6);

    // -r 1 --rate-period 100ms -c 3 -n 6: the third client starts at 200 ms.
    let mut cfg = config(addr, "/", true);
    cfg.clients = 3;
    cfg.requests = 6;
    cfg.load.connection_rate = Some((1, Duration::from_millis(100)));
    let t0 = Instant::now();
    let r = run(&cfg);
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert_eq!(r.requests.succeeded, 6);
    assert_eq!(r.connect_time.len(), 3);
}

/// The rows reach the observer while the run is going on, in order: an observer that stops
/// the run at the second row ends a run planned for 60 s (240 rows) at once. Were the rows
/// handed over only when the run had ended, the stop would come too late to shorten it.
#[test]
fn rows_are_emitted_during_the_run() {
    let srv = local_server();
    let mut cfg = config(srv.addr().unwrap(), "/", false);
    cfg.duration = Some(Duration::from_secs(60));
    cfg.threads = 2;
    cfg.clients = 2;
    cfg.load.arrival_rate = Some(400.0);
    cfg.load.interval = Some(Duration::from_millis(250));
    let stop = StopFlag::new();
    let (tx, rx) = channel::<u64>();
    let tx: Mutex<Sender<u64>> = Mutex::new(tx);
    let hook = RowHook(|row: &IntervalRow| {
        let _ = tx.lock().unwrap().send(row.index);
        if row.index == 1 {
            stop.stop();
        }
    });
    let r = h2lab_engine::run(&cfg, &hook, &stop).unwrap();
    let seen: Vec<u64> = rx.try_iter().collect();
    // Stopped by the observer, not by the duration: far fewer rows than 240.
    assert!(seen.len() >= 2 && seen.len() < 120, "{seen:?}");
    assert_eq!(seen, (0..seen.len() as u64).collect::<Vec<_>>(), "in order");
    assert!(r.timeseries.len() >= 2 && r.timeseries.len() < 120);
    let sum: u64 = r.timeseries.iter().map(|r| r.completed).sum();
    assert_eq!(sum, r.requests.completed);
    assert!(r
        .timeseries
        .iter()
        .take(2)
        .all(|row| row.active_connections == 2));
}
