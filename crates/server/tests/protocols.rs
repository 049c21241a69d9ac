//! One protocol test matrix for `serve`: every behaviour test runs over each row of
//! [`Proto::ALL`] (HTTP/1.1 cleartext and over TLS, h2c, HTTP/2 over TLS) through the same
//! [`Conn`] API, so a new protocol is one more row in `common/matrix.rs`. Protocol-specific
//! tests (pipelining details, h2c upgrade, frame-level defences, push, priorities) stay in
//! `http1.rs`, `h2.rs`, `h2_raw.rs`, `h2_push.rs` and `h2_priority.rs`.

mod common;

use std::time::{Duration, Instant};

use common::matrix::{Conn, Ended, Proto, Target};
use common::{start_tls, Resp};

fn json(r: &Resp) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.text()))
}

/// The filler `/data` serves.
fn is_filler(body: &[u8]) -> bool {
    body.chunks(64)
        .all(|ch| ch == &h2lab_server::body::filler()[..ch.len()])
}

/// Runs `test` once per row, against a fresh server configured by `config`.
fn each_protocol(config: impl Fn(&mut h2lab_server::ServerConfig), test: impl Fn(Proto, &Target)) {
    for proto in Proto::ALL {
        let (s, _dir) = start_tls(&config);
        let target = Target::of(&s);
        eprintln!("--- {proto:?}");
        test(proto, &target);
    }
}

#[test]
fn every_endpoint() {
    each_protocol(|_| {}, every_endpoint_over);
}

/// Every endpoint through one fresh keep-alive connection.
fn every_endpoint_over(proto: Proto, target: &Target) {
    let mut c = Conn::open(proto, target);
    let r = c.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r.text().contains("h2lab"));
    assert_eq!(r.header("server"), Some("h2lab"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let date = r.header("date").unwrap();
    assert!(date.ends_with(" GMT") && date.len() == 29, "{date}");

    let r = c.get("/ping");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]));
    assert_eq!(r.header("content-length"), Some("4"));

    let r = c.get("/json");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(json(&r)["server"], "h2lab");
    assert!((150..=260).contains(&r.body.len()));

    for (q, n) in [
        ("0", 0usize),
        ("653", 653),
        ("10k", 10240),
        ("100k", 102_400),
        ("10m", 10 << 20),
    ] {
        let r = c.get(&format!("/data?size={q}"));
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), n, "size={q}");
        assert_eq!(r.header("content-length"), Some(n.to_string().as_str()));
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert!(is_filler(&r.body));
    }
    assert_eq!(c.get("/data").body.len(), 653);

    let r = c.get("/compute?work=100000");
    assert_eq!(r.status, 200);
    let v = json(&r);
    assert_eq!(v["work"], 100000);
    let again = json(&c.get("/compute?work=100000"));
    assert_eq!(v["result"], again["result"], "deterministic");
    assert!((100..=200).contains(&r.body.len()), "{}", r.body.len());
    assert_eq!(json(&c.get("/compute?work=1000"))["work"], 1000);

    let r = c.send("GET", "/info?x=1", &[("x-probe", "a\"b\\c")], None);
    let v = json(&r);
    assert_eq!(v["method"], "GET");
    assert_eq!(v["target"], "/info?x=1");
    assert_eq!(v["protocol"], proto.info_name());
    assert_eq!(v["tls"], proto.is_tls());
    let headers = v["headers"].as_array().unwrap();
    assert!(headers
        .iter()
        .any(|h| h[0] == "x-probe" && h[1] == "a\"b\\c"));
    if proto.is_h2() {
        assert!(headers.iter().any(|h| h[0] == ":method" && h[1] == "GET"));
    }

    let t = Instant::now();
    let r = c.get("/delay?ms=30");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"delayed 30 ms\n");
    assert!(t.elapsed() >= Duration::from_millis(30));

    assert_eq!(c.get("/status/418").status, 418);
    let r = c.get("/status/204");
    assert_eq!((r.status, r.header("content-length")), (204, None));
    assert_eq!(c.get("/status/503").status, 503);
    assert_eq!(c.get("/status/42").status, 400);

    let r = c.get("/page?n=30&min=1k&max=2k&seed=5");
    assert_eq!(r.status, 200);
    let html = r.text();
    let srcs: Vec<String> = html
        .split("src=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect();
    assert_eq!(srcs.len(), 30);
    // Fetch the assets all at once, like a browser.
    for (src, a) in srcs.iter().zip(c.get_all(&srcs)) {
        let size: usize = src
            .rsplit('-')
            .next()
            .unwrap()
            .trim_end_matches(".png")
            .parse()
            .unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(a.header("content-type"), Some("image/png"));
        assert_eq!(a.body.len(), size);
        assert!((1024..=2048).contains(&size));
    }

    // HEAD: same head, no body.
    let r = c.send("HEAD", "/data?size=5000", &[], None);
    assert_eq!(
        (r.header("content-length"), r.body.len()),
        (Some("5000"), 0)
    );
    assert_eq!(
        c.get("/ping").body,
        b"pong",
        "the HEAD response had no body"
    );

    let r = c.get("/json?cache=max-age=60");
    assert_eq!(r.header("cache-control"), Some("max-age=60"));

    assert_eq!(c.get("/nope").status, 404);
    let r = c.send("DELETE", "/ping", &[], None);
    assert_eq!(r.status, 405);
    assert!(r.header("allow").unwrap().contains("GET"));
    let r = c.send("POST", "/info", &[], Some(&[7u8; 70_000]));
    assert_eq!(json(&r)["body_length"], 70_000);
    // Still alive after all of that.
    assert_eq!(c.get("/ping").body, b"pong");
}

/// Exact counts: every request gets its own response, with the status and the body bytes
/// it asked for, none lost or duplicated, over one connection.
#[test]
fn exact_counts_statuses_and_body_bytes() {
    each_protocol(
        |_| {},
        |proto, target| {
            let mut c = Conn::open(proto, target);
            let paths: Vec<String> = (0..300)
                .map(|i| match i % 3 {
                    0 => format!("/data?size={}", i * 101),
                    1 => format!("/status/{}", 200 + i % 300),
                    _ => "/ping".to_string(),
                })
                .collect();
            let (mut data, mut pongs, mut statuses) = (0usize, 0usize, 0usize);
            for batch in paths.chunks(30) {
                let responses = c.get_all(batch);
                assert_eq!(responses.len(), batch.len());
                for (p, r) in batch.iter().zip(responses) {
                    if let Some(n) = p.strip_prefix("/data?size=") {
                        assert_eq!(r.status, 200, "{proto:?} {p}");
                        assert_eq!(r.body.len(), n.parse::<usize>().unwrap(), "{proto:?} {p}");
                        assert!(is_filler(&r.body));
                        data += r.body.len();
                    } else if let Some(s) = p.strip_prefix("/status/") {
                        assert_eq!(r.status.to_string(), s, "{proto:?} {p}");
                        statuses += 1;
                    } else {
                        assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]));
                        pongs += 1;
                    }
                }
            }
            let expected: usize = (0..300).filter(|i| i % 3 == 0).map(|i| i * 101).sum();
            assert_eq!((data, statuses, pongs), (expected, 100, 100), "{proto:?}");
            // The connection is still in step: the next answer is this request's.
            assert_eq!(c.get("/data?size=7").body.len(), 7);
        },
    );
}

/// Large bodies both ways: a 64 MiB response and a 4 MiB request body.
#[test]
fn large_bodies() {
    each_protocol(
        |_| {},
        |proto, target| {
            let mut c = Conn::open(proto, target);
            let r = c.get("/data?size=64m");
            assert_eq!(r.status, 200);
            assert_eq!(r.body.len(), 64 << 20, "{proto:?}");
            assert!(is_filler(&r.body));
            let body = vec![b'x'; 4 << 20];
            let r = c.send("POST", "/info", &[], Some(&body));
            assert_eq!(json(&r)["body_length"], 4 << 20, "{proto:?}");
            let r = c.send("PUT", "/ping", &[], Some(&body));
            assert_eq!(r.body, b"pong");
        },
    );
}

/// The server allows fewer concurrent streams than the client has requests in flight:
/// HTTP/2 clients queue to the advertised limit, HTTP/1.1 pipelines; every response
/// arrives complete.
#[test]
fn streams_limit_below_client_concurrency() {
    each_protocol(
        |c| {
            c.max_concurrent_streams = 16;
            c.threads = 2;
        },
        |proto, target| {
            let mut c = Conn::open(proto, target);
            let sizes: Vec<usize> = (0..64usize).map(|i| 30_000 + i * 997).collect();
            let paths: Vec<String> = sizes.iter().map(|n| format!("/data?size={n}")).collect();
            for (n, r) in sizes.iter().zip(c.get_all(&paths)) {
                assert_eq!(r.status, 200);
                assert_eq!(r.body.len(), *n, "{proto:?}");
            }
        },
    );
}

/// A `/delay` on one connection does not hold up other connections on the same worker.
#[test]
fn delay_does_not_block_other_connections() {
    each_protocol(
        |c| c.threads = 1,
        |proto, target| {
            let t = Instant::now();
            let slow = {
                let target = target.clone();
                std::thread::spawn(move || {
                    let mut c = Conn::open(proto, &target);
                    let r = c.get("/delay?ms=800");
                    (Instant::now(), r.body)
                })
            };
            let mut fast = Conn::open(proto, target);
            let mut fast2 = Conn::open(proto, target);
            for _ in 0..10 {
                assert_eq!(fast.get("/ping").body, b"pong");
                assert_eq!(fast2.get("/ping").body, b"pong");
            }
            let fast_done = Instant::now();
            let (slow_done, body) = slow.join().unwrap();
            assert_eq!(body, b"delayed 800 ms\n");
            assert!(slow_done > fast_done);
            assert!(slow_done.duration_since(t) >= Duration::from_millis(800));
        },
    );
}

/// Keep-alive: one connection serves request after request; when it goes idle the server
/// ends it cleanly (no error), and the client reconnects and carries on.
#[test]
fn keep_alive_idle_close_and_reconnect() {
    each_protocol(
        |c| c.idle_timeout = Duration::from_millis(400),
        |proto, target| {
            let mut c = Conn::open(proto, target);
            for i in 0..50 {
                assert_eq!(c.get(&format!("/data?size={i}")).body.len(), i);
            }
            assert_eq!(c.wait_end(), Ended::Clean, "{proto:?}");
            let mut again = Conn::open(proto, target);
            assert_eq!(again.get("/ping").body, b"pong");
        },
    );
}

/// `--max-requests-per-connection 3`: three requests are answered, then the server ends the
/// connection cleanly (HTTP/1.1: `connection: close` on the third response; HTTP/2: GOAWAY,
/// then close once the accepted streams are answered), long before the idle timeout; a new
/// connection is served again.
#[test]
fn max_requests_per_connection_ends_connections_cleanly() {
    each_protocol(
        |c| c.max_requests_per_connection = Some(3),
        |proto, target| {
            let mut c = Conn::open(proto, target);
            // (`Conn::open` makes one exchange over HTTP/2.)
            let first = usize::from(proto.is_h2());
            for i in first..3 {
                let r = c.get("/ping");
                assert_eq!(r.body, b"pong", "{proto:?}");
                if !proto.is_h2() {
                    let close = (i == 2).then_some("close");
                    assert_eq!(r.header("connection"), close, "{proto:?} response {i}");
                }
            }
            assert_eq!(c.wait_end(), Ended::Clean, "{proto:?}");
            let mut again = Conn::open(proto, target);
            assert_eq!(again.get("/ping").body, b"pong");
        },
    );
}

/// Graceful stop: `run` on given listeners returns once shut down, open connections end
/// cleanly after their answered requests, and the ports close.
#[test]
fn graceful_stop() {
    for proto in Proto::ALL {
        let dir = tempfile::tempdir().unwrap();
        let l = h2lab_server::Listener::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let lt = h2lab_server::Listener::bind("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let (addr, tls_addr) = (l.local_addr().unwrap(), lt.local_addr().unwrap());
        let sd = h2lab_server::Shutdown::new();
        let sd2 = sd.clone();
        let mut cfg = h2lab_server::ServerConfig::local();
        cfg.threads = 2;
        cfg.cert_dir = Some(dir.path().to_path_buf());
        cfg.quiet = true;
        // Generated now; `run` finds and uses the same pair.
        let cert = h2lab_server::tls::ensure_certificate(&cfg).unwrap().cert;
        let t = std::thread::spawn(move || h2lab_server::run(vec![l, lt], cfg, sd2));
        let target = Target {
            addr,
            tls_addr,
            cert,
        };
        let mut c = Conn::open(proto, &target);
        assert_eq!(c.get("/ping").body, b"pong");
        sd.trigger();
        t.join().unwrap().unwrap();
        assert_eq!(c.wait_end(), Ended::Clean, "{proto:?}");
        assert!(std::net::TcpStream::connect(addr).is_err());
        assert!(std::net::TcpStream::connect(tls_addr).is_err());
    }
}
