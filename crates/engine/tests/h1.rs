//! HTTP/1.1 end-to-end tests against an in-test responder.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{h1_config, run, tcp_server, tls_server, unix_server, Behavior, Recorder};
use h2lab_engine::{AppProtocol, BaseUri, EngineError, ProtocolError, StopFlag, TransportError};

#[test]
fn exact_request_counts() {
    let (addr, c) = tcp_server(Behavior {
        body_len: 653,
        ..Default::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/index.html"));
    cfg.requests = 100;
    cfg.clients = 4;
    let r = run(&cfg).unwrap();
    assert_eq!(c.requests.load(Ordering::SeqCst), 100);
    let q = &r.requests;
    assert_eq!(
        (
            q.total,
            q.started,
            q.done,
            q.succeeded,
            q.failed,
            q.errored,
            q.timeout
        ),
        (100, 100, 100, 100, 0, 0, 0)
    );
    assert_eq!(q.completed, 100);
    assert_eq!(r.status.s2xx, 100);
    assert_eq!(r.traffic.bytes_body, 100 * 653);
    // Header bytes like h2load for HTTP/1.1: names + values of the fields.
    let fields = ("Server".len() + "test".len() + "Content-Length".len() + 3) as u64;
    assert_eq!(r.traffic.bytes_head, 100 * fields);
    assert!(r.traffic.bytes_total > r.traffic.bytes_body + r.traffic.bytes_head);
    assert_eq!(r.request_time.len(), 100);
    assert_eq!(r.connect_time.len(), 4);
    assert_eq!(r.ttfb.len(), 4);
    assert_eq!(r.client_rps.len(), 4);
    assert_eq!(r.app_protocol, Some(AppProtocol::Http11));
    assert!(!r.protocol_fallback && !r.interrupted);
    assert_eq!(r.reconnects, 0);
    assert_eq!(c.conns.load(Ordering::SeqCst), 4);
    let head = c.heads.lock().unwrap()[0].clone();
    assert!(
        head.starts_with(&format!(
            "GET /index.html HTTP/1.1\r\nHost: {addr}\r\nuser-agent: h2lab/"
        )),
        "{head}"
    );
}

#[test]
fn requests_split_over_threads_and_clients_like_h2load() {
    let (addr, c) = tcp_server(Behavior::default());
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 103;
    cfg.clients = 5;
    cfg.threads = 2;
    cfg.max_concurrent_streams = 3;
    let r = run(&cfg).unwrap();
    assert_eq!(r.requests.succeeded, 103);
    // Thread 0: 3 clients, 52 requests -> 18, 17, 17; thread 1: 2 clients, 51 -> 26, 25.
    let mut per = c.per_conn_when(5);
    per.sort_unstable();
    assert_eq!(per, vec![17, 17, 18, 25, 26]);
}

#[test]
fn pipelining_depth_is_m() {
    // The responder answers only once 8 requests are buffered: without
    // pipelining this would stall (and the -N safety timeout would fail it).
    let (addr, c) = tcp_server(Behavior {
        batch: 8,
        body_len: 10,
        ..Default::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 64;
    cfg.max_concurrent_streams = 8;
    let r = run(&cfg).unwrap();
    assert_eq!(r.requests.succeeded, 64);
    assert_eq!(c.max_pipelined.load(Ordering::SeqCst), 8);
    assert_eq!(r.traffic.bytes_body, 640);
}

#[test]
fn connection_close_reconnects_and_retries_unanswered() {
    let (addr, c) = tcp_server(Behavior {
        close_after: Some(10),
        body_len: 5,
        ..Default::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 100;
    cfg.clients = 2;
    cfg.max_concurrent_streams = 4;
    let r = run(&cfg).unwrap();
    assert_eq!(c.requests.load(Ordering::SeqCst), 100);
    let q = &r.requests;
    assert_eq!(
        (q.total, q.started, q.done, q.succeeded, q.failed),
        (100, 100, 100, 100, 0)
    );
    assert_eq!(r.reconnects, 8); // 10 connections of 10 requests, 2 of them initial
    assert_eq!(c.conns.load(Ordering::SeqCst), 10);
    assert_eq!(r.traffic.bytes_body, 500);
}

#[test]
fn large_bodies_are_counted_not_stored() {
    for chunked in [false, true] {
        let (addr, _c) = tcp_server(Behavior {
            body_len: 10 * 1024 * 1024 + 7,
            chunked,
            ..Default::default()
        });
        let mut cfg = h1_config(&format!("http://{addr}/big"));
        cfg.requests = 3;
        let r = run(&cfg).unwrap();
        assert_eq!(r.requests.succeeded, 3, "chunked={chunked}");
        assert_eq!(r.traffic.bytes_body, 3 * (10 * 1024 * 1024 + 7));
    }
}

#[test]
fn status_codes_decide_success() {
    let (addr, _c) = tcp_server(Behavior {
        status: 404,
        ..Default::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 10;
    let r = run(&cfg).unwrap();
    let q = &r.requests;
    assert_eq!(
        (q.done, q.succeeded, q.failed, q.errored, q.completed),
        (10, 0, 10, 0, 10)
    );
    assert_eq!(r.status.s4xx, 10);
}

#[test]
fn stop_flag_abandons_in_flight_and_reports_what_was_done() {
    let stop = StopFlag::new();
    let (addr, _c) = tcp_server(Behavior {
        respond_limit: Some(10),
        stop_flag: Some(stop.clone()),
        ..Default::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 1000;
    let r = h2lab_engine::run(&cfg, &h2lab_engine::NoopObserver, &stop).unwrap();
    assert!(r.interrupted);
    assert_eq!(r.requests.done, 10);
    assert_eq!(r.requests.succeeded, 10);
    assert_eq!(r.requests.total, 10);
    assert_eq!(r.requests.started, 11);
}

#[test]
fn refused_connection_is_a_clear_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 5;
    match run(&cfg) {
        Err(EngineError::Connect { addr: a, source }) => {
            assert_eq!(a, addr.to_string());
            assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
    let e = run(&cfg).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("could not connect to {addr}")),
        "{e}"
    );
}

#[test]
fn unresolvable_host_and_bad_config_are_errors() {
    let cfg = h1_config("http://no-such-host.invalid/");
    assert!(matches!(run(&cfg), Err(EngineError::Resolve { .. })));
    let mut cfg = h1_config("http://127.0.0.1:1/");
    cfg.clients = 0;
    assert!(matches!(run(&cfg), Err(EngineError::Config(_))));
}

#[test]
fn unix_socket_with_base_uri() {
    let (_dir, path, c) = unix_server(Behavior {
        body_len: 100,
        ..Default::default()
    });
    let mut cfg = h1_config("http://example.com/x");
    cfg.base_uri = Some(BaseUri::Unix(path));
    cfg.requests = 20;
    cfg.clients = 2;
    cfg.max_concurrent_streams = 2;
    let r = run(&cfg).unwrap();
    assert_eq!(r.requests.succeeded, 20);
    assert_eq!(c.requests.load(Ordering::SeqCst), 20);
    assert!(c.heads.lock().unwrap()[0].contains("Host: example.com\r\n"));
}

#[test]
fn inactivity_timeout_counts_timed_out_requests() {
    let (addr, _c) = tcp_server(Behavior {
        silent: true,
        ..Default::default()
    });
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 10;
    cfg.max_concurrent_streams = 2;
    cfg.connection_inactivity_timeout = Some(Duration::from_millis(200));
    let r = run(&cfg).unwrap();
    let q = &r.requests;
    assert_eq!((q.total, q.started, q.done), (10, 2, 0));
    assert_eq!(
        (q.succeeded, q.failed, q.errored, q.timeout),
        (0, 10, 10, 2)
    );
    assert_eq!(r.errors.timeout, 1);
}

#[test]
fn duration_mode_with_warm_up() {
    let (addr, _c) = tcp_server(Behavior::default());
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.clients = 2;
    cfg.duration = Some(Duration::from_millis(300));
    cfg.warm_up = Some(Duration::from_millis(100));
    let r = run(&cfg).unwrap();
    assert!(r.requests.succeeded > 0);
    assert_eq!(r.requests.total, r.requests.done);
    assert_eq!(r.elapsed, Duration::from_millis(300));
    assert_eq!(r.request_time.len(), r.requests.completed);
    assert!(r.requests.started >= r.requests.done);
}

#[test]
fn tls_alpn_fallback_to_http11_and_tls_info() {
    let (addr, c) = tls_server(
        Behavior {
            body_len: 1000,
            ..Default::default()
        },
        &["http/1.1"],
    );
    // Default protocol (h2 offered first), server only speaks http/1.1.
    let mut cfg = h2lab_engine::BenchConfig::from_uris(
        &[format!("https://localhost:{}/", addr.port())],
        None,
    )
    .unwrap();
    cfg.connect_to = Some(("127.0.0.1".into(), 0));
    cfg.requests = 20;
    cfg.clients = 2;
    cfg.connection_inactivity_timeout = Some(Duration::from_secs(20));
    let rec = Recorder::default();
    let r = h2lab_engine::run(&cfg, &rec, &StopFlag::new()).unwrap();
    assert_eq!(r.requests.succeeded, 20);
    assert_eq!(c.requests.load(Ordering::SeqCst), 20);
    assert_eq!(r.app_protocol, Some(AppProtocol::Http11));
    assert!(r.protocol_fallback);
    let tls = r.tls.clone().unwrap();
    assert_eq!(tls.protocol, "TLSv1.3");
    assert!(tls.cipher.starts_with("TLS_"), "{}", tls.cipher);
    assert_eq!(tls.server_temp_key.as_deref(), Some("X25519 253 bits"));
    assert_eq!(tls.alpn.as_deref(), Some("http/1.1"));
    assert_eq!(rec.tls.lock().unwrap().clone(), Some(tls));
    assert_eq!(*rec.proto.lock().unwrap(), Some(AppProtocol::Http11));
    assert_eq!(r.traffic.bytes_body, 20_000);

    // --require-protocol h2 turns the fallback into an error.
    cfg.require_protocol = Some(AppProtocol::H2);
    match run(&cfg) {
        Err(EngineError::Protocol(
            e @ ProtocolError::RequiredProtocol {
                required: AppProtocol::H2,
                negotiated: AppProtocol::Http11,
                fallback: true,
            },
        )) => assert!(e.to_string().contains("http/1.1"), "{e}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[test]
fn tls_handshake_failure_is_reported() {
    // A plain-text peer behind an https:// URI: the handshake fails.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            use std::io::Write;
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let mut cfg = h1_config(&format!("https://{addr}/"));
    cfg.requests = 2;
    match run(&cfg) {
        Err(EngineError::Tls(e)) => {
            assert!(
                matches!(
                    e,
                    TransportError::Handshake(_) | TransportError::HandshakeEof
                ),
                "{e:?}"
            );
            assert!(!e.to_string().is_empty());
        }
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

#[test]
fn log_file_has_one_line_per_request() {
    let (addr, _c) = tcp_server(Behavior::default());
    let mut cfg = h1_config(&format!("http://{addr}/"));
    cfg.requests = 7;
    let path = std::env::temp_dir().join(format!("h2lab-engine-log-{}.txt", std::process::id()));
    cfg.log_file = Some(path.clone());
    run(&cfg).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 7);
    for l in lines {
        let f: Vec<_> = l.split('\t').collect();
        assert_eq!(f.len(), 3);
        assert_eq!(f[1], "200");
        assert!(f[0].parse::<u64>().unwrap() > 1_600_000_000_000_000);
    }
}
