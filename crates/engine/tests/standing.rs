//! Standing runs (`h2lab_engine::StandingRun`): workers that connect once and measure several
//! windows on the same connections. Against a counting HTTP/1.1 responder (connections
//! accepted, requests answered) and the real h2lab server over h2c.
//!
//! Timing: the assertions are counts (connections, completed and failed requests, phases);
//! the windows only have to complete something, which on loopback they do whatever the load.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{h1_config, tcp_server, Behavior};
use h2lab_engine::{
    AppProtocol, BenchConfig, IntervalRow, NoopObserver, Observer, ProtocolChoice, ShardLanes,
    Stage, StandingRefusal, StandingRun, StopFlag, TimedRunPhase, TlsInfo,
};

/// Records the phases a window's workers report.
#[derive(Default)]
struct Phases(Mutex<Vec<(u32, TimedRunPhase)>>);

impl Observer for Phases {
    fn progress(&self, _done: u64, _total: u64, _elapsed: Duration, _errors: u64) {}
    fn tls_info(&self, _info: &TlsInfo) {}
    fn protocol(&self, _p: AppProtocol) {}
    fn interval(&self, _row: &IntervalRow) {}
    fn phase(&self, thread: u32, phase: TimedRunPhase) {
        self.0.lock().unwrap().push((thread, phase));
    }
}

const WARM: Duration = Duration::from_millis(30);
const MEASURED: Duration = Duration::from_millis(120);

/// Measures `windows` windows; every one completes requests, fails none, and reports its
/// workers' phases in order.
fn windows(run: &mut StandingRun, windows: u32, threads: u32) -> u64 {
    let mut total = 0;
    for _ in 0..windows {
        let phases = Arc::new(Phases::default());
        let r = run.measure(WARM, MEASURED, phases.clone()).unwrap();
        assert!(r.requests.completed > 0, "{:?}", r.requests);
        assert_eq!(r.requests.failed, 0, "{:?}", r.requests);
        assert_eq!(r.elapsed, MEASURED);
        assert_eq!(r.request_time.len(), r.requests.completed);
        let p = phases.0.lock().unwrap().clone();
        for t in 0..threads {
            let mine: Vec<TimedRunPhase> =
                p.iter().filter(|(w, _)| *w == t).map(|(_, x)| *x).collect();
            assert_eq!(
                mine,
                vec![
                    TimedRunPhase::WarmUpStarted,
                    TimedRunPhase::MainStarted,
                    TimedRunPhase::MainOver
                ],
                "worker {t}"
            );
        }
        total += r.requests.completed;
    }
    assert_eq!(run.windows(), windows);
    total
}

#[test]
fn h1_windows_reuse_the_connections_opened_once() {
    let (addr, counters) = tcp_server(Behavior {
        body_len: 100,
        ..Behavior::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.clients = 6;
    cfg.threads = 2;
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    let done = windows(&mut run, 4, 2);
    run.close();
    assert_eq!(
        counters.conns.load(Ordering::SeqCst),
        6,
        "one connection per client"
    );
    // Requests answered: the measured ones, plus warm-ups and the ones in flight at each
    // window's end (at most one per client per window: no pipelining).
    let answered = counters.requests.load(Ordering::SeqCst);
    assert!(answered >= done, "{answered} < {done}");
}

#[test]
fn h2c_windows_against_the_real_server() {
    let srv = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let addr = srv.addr().unwrap();
    let mut cfg = BenchConfig::from_uris(&[format!("http://{addr}/data?size=1k")], None).unwrap();
    cfg.protocol = ProtocolChoice::H2;
    cfg.clients = 2;
    cfg.max_concurrent_streams = 5;
    cfg.require_protocol = Some(AppProtocol::H2c);
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    windows(&mut run, 3, 1);
    let r = run.measure(WARM, MEASURED, Arc::new(NoopObserver)).unwrap();
    assert_eq!(r.reconnects, 0, "the connections stayed open");
    // Bodies of the completed requests, plus what arrived of those in flight at the
    // window's two edges (2 connections × 5 streams each): bytes count while measuring,
    // completions only for requests started in the measured period.
    let expected = r.requests.completed * 1024;
    assert!(
        r.traffic.bytes_body >= expected && r.traffic.bytes_body - expected <= 2 * 10 * 1024,
        "{} vs {expected}",
        r.traffic.bytes_body
    );
    drop(run);
}

#[test]
fn no_connection_is_an_error_and_pacing_is_refused() {
    // A port nothing listens on (bound, then closed).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = h1_config(&format!("http://{addr}/"));
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    let e = run.measure(WARM, MEASURED, Arc::new(NoopObserver));
    assert!(e.is_err(), "{e:?}");

    let mut paced = h1_config(&format!("http://{addr}/"));
    paced.load.rps = Some(10.0);
    let e = StandingRun::open(&paced, &StopFlag::new()).err().unwrap();
    assert!(e.to_string().contains("closed model"), "{e}");
}

/// `base` with the one option that makes a standing run refuse it for `r` (the match is
/// exhaustive, so a new reason needs a case here).
fn refused_for(base: &BenchConfig, r: StandingRefusal) -> BenchConfig {
    let mut cfg = base.clone();
    let l = &mut cfg.load;
    match r {
        StandingRefusal::Rps => l.rps = Some(10.0),
        StandingRefusal::ArrivalRate => l.arrival_rate = Some(100.0),
        StandingRefusal::Stages => {
            l.stages = vec![Stage {
                duration: Duration::from_secs(1),
                target: 2.0,
            }]
        }
        StandingRefusal::TimingScript => {
            l.timing_script = Some(vec![Duration::ZERO].into());
        }
        StandingRefusal::ConnectionRate => l.connection_rate = Some((1, Duration::from_secs(1))),
        StandingRefusal::TimeSeries => l.interval = Some(Duration::from_secs(1)),
        StandingRefusal::LogFile => cfg.log_file = Some("requests.log".into()),
        StandingRefusal::QlogFile => cfg.qlog_file_base = Some("conn".into()),
    }
    cfg
}

#[test]
fn supports_answers_what_open_refuses() {
    // A port nothing listens on: a refused configuration must fail before connecting.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let base = h1_config(&format!("http://{addr}/"));
    assert!(StandingRun::supports(&base));
    assert_eq!(StandingRun::refusal(&base), None);
    StandingRun::open(&base, &StopFlag::new()).unwrap().close();
    // Raw samples and a shard are measured, not refused (see
    // `raw_samples_are_per_window_and_a_shard_stands`).
    let mut kept = base.clone();
    kept.max_samples = Some(1000);
    kept.load.shard = Some(ShardLanes {
        index: 0,
        count: 2,
        whole_clients: 2,
    });
    assert!(StandingRun::supports(&kept));
    assert_eq!(StandingRun::refusal(&kept), None);
    StandingRun::open(&kept, &StopFlag::new()).unwrap().close();
    for r in StandingRefusal::ALL {
        let cfg = refused_for(&base, r);
        assert!(!StandingRun::supports(&cfg), "{r:?}");
        assert_eq!(StandingRun::refusal(&cfg), Some(r));
        let e = StandingRun::open(&cfg, &StopFlag::new()).err().unwrap();
        assert!(e.to_string().contains(&r.to_string()), "{r:?}: {e}");
        assert!(e.to_string().contains("closed model"), "{e}");
    }
    // With every reason at once, the first in ALL's order is the one named.
    let all = StandingRefusal::ALL
        .iter()
        .fold(base.clone(), |c, &r| refused_for(&c, r));
    assert_eq!(StandingRun::refusal(&all), Some(StandingRefusal::ALL[0]));
}

/// Neither `max_samples` nor a shard is a refusal: raw samples are kept per window (each
/// window's reservoirs hold that window's requests and connections, as its histograms do),
/// and a shard's slice stands as any closed-model configuration (its connections only).
#[test]
fn raw_samples_are_per_window_and_a_shard_stands() {
    let (addr, counters) = tcp_server(Behavior::default());
    let mut cfg = h1_config(&format!("http://{addr}/"));
    // Shard 1 of 2 of a 6-connection run: 3 connections.
    cfg.clients = 3;
    cfg.load.shard = Some(ShardLanes {
        index: 1,
        count: 2,
        whole_clients: 6,
    });
    // Larger than the windows' requests on loopback, so every one is kept.
    cfg.max_samples = Some(10_000_000);
    assert!(StandingRun::supports(&cfg));
    assert_eq!(StandingRun::refusal(&cfg), None);
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    let mut connects = 0;
    for w in 0..3 {
        let r = run.measure(WARM, MEASURED, Arc::new(NoopObserver)).unwrap();
        assert!(r.requests.completed > 0, "{:?}", r.requests);
        let s = r
            .samples
            .as_ref()
            .unwrap_or_else(|| panic!("window {w} has no samples"));
        // This window's requests only (not the earlier windows' nor its warm-up's).
        assert_eq!(s.request.len() as u64, r.request_time.len(), "window {w}");
        assert_eq!(s.request.len() as u64, r.requests.completed, "window {w}");
        assert_eq!(s.connect.len() as u64, r.connect_time.len(), "window {w}");
        assert!(s.request.windows(2).all(|p| p[0] <= p[1]), "sorted");
        connects += s.connect.len() as u64;
    }
    run.close();
    let accepted = counters.conns.load(Ordering::SeqCst);
    assert_eq!(accepted, 3, "the shard's connections");
    assert!(
        connects <= accepted,
        "{connects} connect samples, {accepted} connections"
    );
}

#[test]
fn a_stop_ends_the_window_early() {
    let (addr, _) = tcp_server(Behavior::default());
    let stop = StopFlag::new();
    let mut run = StandingRun::open(&h1_config(&format!("http://{addr}/")), &stop).unwrap();
    stop.stop();
    // The worker ends at once; the window reports it as interrupted rather than hanging.
    let r = run.measure(WARM, Duration::from_secs(600), Arc::new(NoopObserver));
    match r {
        Ok(r) => assert!(r.interrupted, "{r:?}"),
        Err(e) => panic!("{e}"),
    }
}

/// A standing run over h2c against the real server, every request answered after `delay`.
fn delayed_run(delay_ms: u64, srv: &h2lab_server::RunningServer) -> StandingRun {
    let addr = srv.addr().unwrap();
    let mut cfg =
        BenchConfig::from_uris(&[format!("http://{addr}/delay?ms={delay_ms}")], None).unwrap();
    cfg.protocol = ProtocolChoice::H2;
    cfg.clients = 1;
    cfg.max_concurrent_streams = 4;
    StandingRun::open(&cfg, &StopFlag::new()).unwrap()
}

/// One window of 10 ms of warm-up and 10 ms measured, and how long `measure` took.
fn short_window(run: &mut StandingRun) -> (Duration, h2lab_engine::RunResult) {
    let short = Duration::from_millis(10);
    let t0 = std::time::Instant::now();
    let r = run.measure(short, short, Arc::new(NoopObserver)).unwrap();
    assert_eq!(r.elapsed, short);
    (t0.elapsed(), r)
}

#[test]
fn a_draining_window_returns_once_its_requests_in_flight_completed() {
    let srv = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let delay = Duration::from_millis(400);
    // Requests take 400 ms; the window ends with 4 in flight, none completed. With a drain
    // cap it returns only when they have completed, which the server cannot make happen
    // before 400 ms from the first request.
    let mut run = delayed_run(400, &srv);
    run.drain_before_reply(Duration::from_secs(30));
    let (took, r) = short_window(&mut run);
    assert!(took >= delay, "{took:?}");
    assert_eq!(
        r.requests.completed, 0,
        "completions after the period are not counted"
    );
    // The next window starts with nothing of this one in flight: it sends a full set of
    // streams at once, and again has them all completed before it returns.
    let (took, r) = short_window(&mut run);
    assert!(took >= delay, "{took:?}");
    assert_eq!(r.requests.failed, 0, "{:?}", r.requests);
    drop(run);

    // The cap bounds the wait: with requests taking 20 s and a 50 ms cap, the window
    // returns long before any of them could complete.
    let mut run = delayed_run(20_000, &srv);
    run.drain_before_reply(Duration::from_millis(50));
    let (took, r) = short_window(&mut run);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(r.requests.completed, 0);
}
