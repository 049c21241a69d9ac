//! `run`: validate, resolve, spawn workers, report progress, merge.

use std::fs::File;
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{BaseUri, BenchConfig, Scheme};
use crate::conn::quic::QuicDial;
use crate::conn::{AlpnOffer, Dialer};
use crate::error::{ProtocolError, TimeoutError};
use crate::h2::H2Settings;
use crate::pacing::{OpenPacer, Pacer};
use crate::plan::Plan;
use crate::request::Prepared;
use crate::result::RunResult;
use crate::stats::{merge, WorkerStats};
use crate::timeseries::{Collector, SeriesRecorder};
use crate::transport::{self, Endpoint};
use crate::worker::{Progress, Worker, WorkerOutcome, WorkerSetup};
use crate::{EngineError, Observer, StopFlag};

/// HTTP/3 (`--h3`, `-p h3`: `h3` first in the ALPN list): how to open QUIC connections.
/// `keep_alive`: send a PING after that long without sending anything (a standing run's
/// connections idle between windows; a bench run sends none).
pub(crate) fn quic_dial(
    cfg: &BenchConfig,
    alpn: &[String],
    keep_alive: Option<Duration>,
) -> Result<Option<QuicDial>, EngineError> {
    if alpn.first().map(String::as_str) != Some("h3") {
        return Ok(None);
    }
    let invalid = |msg: &str| {
        Err(EngineError::Config(crate::ConfigError::Invalid(
            msg.to_owned(),
        )))
    };
    if cfg.scheme() != Scheme::Https {
        return invalid("h3: HTTP/3 needs an https:// URI");
    }
    let mut config =
        crate::h3::quic_client_config(cfg.insecure, &cfg.tls).map_err(EngineError::Tls)?;
    let mut transport = crate::conn::quic::transport_config(cfg.max_udp_payload_size);
    transport.keep_alive_interval(keep_alive);
    config.transport_config(Arc::new(transport));
    Ok(Some(QuicDial {
        config,
        server_name: cfg.server_name(),
        gso: !cfg.no_udp_gso,
        max_udp_payload_size: cfg.max_udp_payload_size,
        qlog: cfg
            .qlog_file_base
            .clone()
            .map(|base| crate::conn::quic::QlogFiles { base, worker: 0 }),
    }))
}

/// How often the calling thread reports progress.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Runs the benchmark described by `cfg`.
///
/// Clients and `-n` are distributed over threads like h2load (the first
/// `c % t` threads get one more client, the first `n % t` one more request),
/// then over the clients of each thread the same way. Progress goes to
/// `observer` from the calling thread; setting `stop` ends the run early.
///
/// Returns `Err` for invalid configurations, unresolvable hosts, and runs in
/// which *no* connection could be established (the first connect/TLS/protocol
/// error is reported), or when `--require-protocol` does not match. Otherwise
/// errors are counted in [`RunResult::errors`].
pub fn run(
    cfg: &BenchConfig,
    observer: &dyn Observer,
    stop: &StopFlag,
) -> Result<RunResult, EngineError> {
    cfg.validate()?;
    let endpoint = resolve(cfg)?;
    let alpn = cfg.effective_alpn();
    let tls = tls_of(cfg, &alpn)?;
    let prep = Prepared::new(cfg)?;
    let quic = quic_dial(cfg, &alpn, None)?;
    let log = match &cfg.log_file {
        Some(p) => Some(File::create(p).map_err(|e| EngineError::Io {
            context: format!("cannot open log file {}", p.display()),
            source: e,
        })?),
        None => None,
    };
    let plan = Plan::new(cfg);
    let timing = plan.timing;
    let nthreads = cfg.threads;
    let total = (0..nthreads).map(|i| plan.requests_of(i)).sum::<u64>();
    let abort = Arc::new(AtomicBool::new(false));
    let (series_tx, series_rx) = std::sync::mpsc::channel();

    let mut setups = Vec::with_capacity(nthreads as usize);
    let mut progresses = Vec::with_capacity(nthreads as usize);
    let start = Instant::now();
    let measure_start = start + timing.map_or(Duration::ZERO, |(w, _)| w);
    for i in 0..nthreads {
        let nclients = plan.clients_of(i);
        let req_todo = plan.requests_of(i);
        let log = match &log {
            Some(f) => Some(f.try_clone().map_err(|e| EngineError::Io {
                context: "cannot duplicate log file handle".into(),
                source: e,
            })?),
            None => None,
        };
        let progress = Arc::new(Progress::default());
        progresses.push(Arc::clone(&progress));
        setups.push(WorkerSetup {
            id: i,
            nclients,
            req_todo,
            dialer: worker_dialer(
                cfg,
                &endpoint,
                &tls,
                &alpn,
                &prep,
                // Resuming: each worker its own session store (a configuration of its own).
                match quic.is_some() && cfg.tls.resumes() {
                    true => quic_dial(cfg, &alpn, None)?,
                    false => quic.clone(),
                }
                .map(|mut q| {
                    if let Some(f) = q.qlog.as_mut() {
                        f.worker = i;
                    }
                    q
                }),
            ),
            require: cfg.require_protocol,
            timing,
            active_timeout: cfg.connection_active_timeout,
            inactivity_timeout: cfg.connection_inactivity_timeout,
            start,
            stop: stop.clone(),
            abort: Arc::clone(&abort),
            progress,
            observer: None,
            phases: timing.map(|_| observer),
            log,
            verbose: cfg.verbose,
            pacer: match (plan.arrival_schedule(i), &plan.per_client) {
                (Some(sched), _) => {
                    let end = timing.map(|(w, d)| w + d);
                    let limit = plan.queue_limit_of(i);
                    Pacer::Open(Box::new(OpenPacer::new(sched, limit, start, end)))
                }
                (None, Some(c)) => Pacer::PerClient(c.clone()),
                (None, None) => Pacer::Closed,
            },
            gate: plan.gate_of(i),
            series: plan.interval.map(|iv| {
                let paced = cfg.load.is_paced();
                let stop_at = timing.map(|(w, d)| start + w + d);
                Box::new(SeriesRecorder::new(
                    series_tx.clone(),
                    i,
                    measure_start,
                    iv,
                    paced,
                    stop_at,
                ))
            }),
            coalesce: cfg.coalesce,
            read_wait: cfg.read_wait,
            max_samples: cfg
                .max_samples
                .map(|m| crate::samples::per_worker_cap(m, cfg.threads)),
        });
    }
    drop(series_tx);
    let mut rows = Vec::new();

    let main = std::thread::current();
    // Workers that have returned (counted before they unpark this thread, so
    // the wake-up is never lost: `JoinHandle::is_finished` turns true only
    // a moment after the worker's last statement).
    let finished_workers = AtomicUsize::new(0);
    let finished_workers = &finished_workers;
    let outcomes: Vec<Result<WorkerOutcome, EngineError>> = std::thread::scope(|sc| {
        if let Some(iv) = plan.interval {
            // The time series collector: merges the workers' intervals and hands each row to
            // the observer as soon as it is complete; joined when the scope ends.
            let warm = timing.map_or(Duration::ZERO, |(w, _)| w);
            let c = Collector::new(
                nthreads,
                measure_start,
                iv,
                plan.target.clone().map(|p| (p, warm)),
                cfg.load.interval_histograms,
            );
            let rows = &mut rows;
            let spawned = std::thread::Builder::new()
                .name("h2lab-series".into())
                .spawn_scoped(sc, move || {
                    *rows = c.run(series_rx, &mut |r| observer.interval(r))
                });
            if spawned.is_err() {
                abort.store(true, Ordering::Relaxed);
            }
        }
        let mut handles = Vec::with_capacity(setups.len());
        for (i, mut setup) in setups.into_iter().enumerate() {
            if i == 0 {
                setup.observer = Some(observer);
            }
            let main = main.clone();
            let h = std::thread::Builder::new()
                .name(format!("h2lab-worker-{i}"))
                .spawn_scoped(sc, move || {
                    let r = Worker::new(setup)
                        .map(Worker::run)
                        .map_err(|e| EngineError::Io {
                            context: "cannot create event loop".into(),
                            source: e,
                        });
                    finished_workers.fetch_add(1, Ordering::Release);
                    main.unpark();
                    r
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    abort.store(true, Ordering::Relaxed);
                    let mut v: Vec<_> = handles.into_iter().map(join).collect();
                    v.push(Err(EngineError::Io {
                        context: "cannot spawn worker thread".into(),
                        source: e,
                    }));
                    return v;
                }
            }
        }
        loop {
            let finished = finished_workers.load(Ordering::Acquire) >= handles.len();
            let (done, errors) = progresses.iter().fold((0, 0), |(d, e), p| {
                (
                    d + p.done.load(Ordering::Relaxed),
                    e + p.errors.load(Ordering::Relaxed),
                )
            });
            observer.progress(done, total, start.elapsed(), errors);
            if finished {
                break;
            }
            std::thread::park_timeout(PROGRESS_INTERVAL);
        }
        handles.into_iter().map(join).collect()
    });
    let end = Instant::now();

    let mut stats: Vec<WorkerStats> = Vec::with_capacity(outcomes.len());
    let mut fatal = None;
    let mut connected = false;
    let mut interrupted = false;
    let mut first_connect = None;
    let mut first_tls = None;
    let mut first_proto = None;
    for o in outcomes {
        match o {
            Ok(o) => {
                connected |= o.connected;
                interrupted |= o.interrupted;
                if fatal.is_none() {
                    fatal = o.fatal;
                }
                if first_connect.is_none() {
                    first_connect = o.first_connect_error;
                }
                if first_tls.is_none() {
                    first_tls = o.first_tls_error;
                }
                if first_proto.is_none() {
                    first_proto = o.first_protocol_error;
                }
                stats.push(o.stats);
            }
            Err(e) => {
                if fatal.is_none() {
                    fatal = Some(e);
                }
            }
        }
    }
    if let Some(e) = fatal {
        return Err(e);
    }
    if !connected && !interrupted {
        if let Some((addr, source)) = first_connect {
            return Err(EngineError::Connect { addr, source });
        }
        if let Some(e) = first_tls {
            return Err(EngineError::Tls(e));
        }
        if let Some(e) = first_proto {
            return Err(EngineError::Protocol(e));
        }
        let timeouts: u64 = stats.iter().map(|s| s.run.errors.timeout).sum();
        if timeouts > 0 {
            return Err(EngineError::Timeout(TimeoutError::NoConnection));
        }
    }
    let measured_from = start + timing.map_or(Duration::ZERO, |(w, _)| w);
    let elapsed = match timing {
        Some((_, d)) if !interrupted => d,
        _ => end.saturating_duration_since(measured_from),
    };
    let mut r = merge(stats, elapsed, timing.is_some(), interrupted);
    r.timeseries = rows;
    Ok(r)
}

fn join(
    h: std::thread::ScopedJoinHandle<'_, Result<WorkerOutcome, EngineError>>,
) -> Result<WorkerOutcome, EngineError> {
    h.join().unwrap_or_else(|_| {
        Err(EngineError::Io {
            context: "worker thread panicked".into(),
            source: std::io::Error::other("panic"),
        })
    })
}

/// The TLS client configuration and server name of `cfg` (`None` for cleartext).
pub(crate) fn tls_of(
    cfg: &BenchConfig,
    alpn: &[String],
) -> Result<Option<(rustls::ClientConfig, rustls::pki_types::ServerName<'static>)>, EngineError> {
    if cfg.scheme() != Scheme::Https {
        return Ok(None);
    }
    let c = transport::client_config(alpn, cfg.insecure, &cfg.tls).map_err(EngineError::Tls)?;
    let name = transport::server_name(&cfg.server_name()).map_err(EngineError::Tls)?;
    Ok(Some((c, name)))
}

/// One worker's dialer: its own copies of the TLS configuration and the prepared requests
/// (nothing shared between workers on the hot path).
pub(crate) fn worker_dialer(
    cfg: &BenchConfig,
    endpoint: &Endpoint,
    tls: &Option<(rustls::ClientConfig, rustls::pki_types::ServerName<'static>)>,
    alpn: &[String],
    prep: &Prepared,
    quic: Option<QuicDial>,
) -> Dialer {
    let own_store = |c: &rustls::ClientConfig| {
        let mut c = c.clone();
        if cfg.tls.resumes() {
            // The worker's connections share sessions; no other worker sees them.
            crate::resume::SessionStore::new().apply(&mut c, cfg.tls.zero_rtt);
        }
        Arc::new(c)
    };
    Dialer {
        endpoint: endpoint.clone(),
        tls: tls.as_ref().map(|(c, n)| (own_store(c), n.clone())),
        alpn: AlpnOffer::of(alpn),
        cleartext: cfg.cleartext_protocol(),
        prep: Arc::new(prep.clone()),
        max_streams: cfg.max_concurrent_streams,
        h2: H2Settings::of(cfg),
        qpack: crate::h3::QpackSettings::of(cfg),
        verbose: cfg.verbose,
        zero_rtt: cfg.tls.zero_rtt,
        early_proto: std::cell::Cell::new(None),
        reconnect_every: cfg.reconnect_every.unwrap_or(0),
        resumes: cfg.tls.resumes(),
        quic,
    }
}

/// Resolves where connections go (once, before the run, like h2load).
pub(crate) fn resolve(cfg: &BenchConfig) -> Result<Endpoint, EngineError> {
    if let Some(BaseUri::Unix(p)) = &cfg.base_uri {
        return Ok(Endpoint::Unix(p.clone()));
    }
    let Some((host, port)) = cfg.connect_addr() else {
        return Err(EngineError::Protocol(ProtocolError::NoAddress));
    };
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve {
            host: host.clone(),
            source: e,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(EngineError::Resolve {
            host,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address returned"),
        });
    }
    Ok(Endpoint::Tcp(addrs))
}
