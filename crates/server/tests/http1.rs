//! HTTP/1.1-specific end-to-end tests over raw sockets (cleartext and TLS): pipelining,
//! keep-alive options, HTTP/1.0, request bodies, 100-continue, limits, timeouts, static
//! files. The behaviour shared with HTTP/2 (every endpoint, counts, large bodies,
//! concurrency, delays, keep-alive, graceful stop) is in `protocols.rs`.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{connect, connect_tls, start, start_tls, Resp};

fn json(r: &Resp) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.text()))
}

#[test]
fn tls_without_alpn_is_http1() {
    // Every endpoint over TLS with ALPN http/1.1: tests/protocols.rs.
    let (s, _dir) = start_tls(|_| {});
    // No ALPN at all also means HTTP/1.1.
    let mut c = connect_tls(s.tls_addr().unwrap(), s.cert_path().unwrap(), &[]);
    assert_eq!(c.get("/ping").body, b"pong");
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = start(|_| {});
    let mut c = connect(s.addr().unwrap());
    let mut batch = Vec::new();
    for i in 0..50 {
        batch.extend_from_slice(
            format!("GET /data?size={} HTTP/1.1\r\nhost: t\r\n\r\n", i * 1000).as_bytes(),
        );
    }
    batch.extend_from_slice(
        b"GET /delay?ms=20 HTTP/1.1\r\nhost: t\r\n\r\nGET /ping HTTP/1.1\r\nhost: t\r\n\r\n",
    );
    c.send(&batch);
    for i in 0..50 {
        assert_eq!(c.read_response(false).body.len(), i * 1000);
    }
    assert!(c.read_response(false).text().starts_with("delayed"));
    assert_eq!(c.read_response(false).body, b"pong");
}

#[test]
fn keep_alive_off_closes_after_each_response() {
    let s = start(|c| c.keep_alive = false);
    let mut c = connect(s.addr().unwrap());
    let r = c.get("/ping");
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.body, b"pong");
    c.expect_eof();
    // Pipelined second request is not answered.
    let mut c = connect(s.addr().unwrap());
    c.send(b"GET /ping HTTP/1.1\r\nhost: t\r\n\r\nGET /json HTTP/1.1\r\nhost: t\r\n\r\n");
    assert_eq!(c.read_response(false).body, b"pong");
    c.expect_eof();
}

#[test]
fn http10_close_and_keep_alive() {
    let s = start(|_| {});
    let mut c = connect(s.addr().unwrap());
    c.send(b"GET /ping HTTP/1.0\r\n\r\n");
    let r = c.read_response(false);
    assert_eq!(r.body, b"pong");
    c.expect_eof();
    let mut c = connect(s.addr().unwrap());
    c.send(b"GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.read_response(false);
    assert_eq!(r.header("connection"), Some("keep-alive"));
    c.send(b"GET /info HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(json(&c.read_response(false))["protocol"], "HTTP/1.0");
    // Client asks to close.
    c.send(b"GET /ping HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n");
    assert_eq!(c.read_response(false).header("connection"), Some("close"));
    c.expect_eof();
}

#[test]
fn request_bodies_are_read_and_discarded() {
    let s = start(|c| c.max_request_body = 100_000);
    let mut c = connect(s.addr().unwrap());
    c.send(b"POST /info HTTP/1.1\r\nhost: t\r\ncontent-length: 11\r\n\r\nhello world");
    let r = c.read_response(false);
    assert_eq!(json(&r)["body_length"], 11);
    // Chunked, split at awkward places.
    c.send(b"POST /ping HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel");
    c.send(b"lo\r\n6;ext=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n");
    assert_eq!(c.read_response(false).body, b"pong");
    // Expect: 100-continue.
    c.send(b"PUT /ping HTTP/1.1\r\nhost: t\r\ncontent-length: 3\r\nexpect: 100-continue\r\n\r\n");
    let r = c.read_response(false);
    assert_eq!(r.status, 100);
    c.send(b"abc");
    assert_eq!(c.read_response(false).body, b"pong");
    // Too large: 413 and close, without reading the body.
    c.send(b"POST /ping HTTP/1.1\r\nhost: t\r\ncontent-length: 100001\r\n\r\n");
    let r = c.read_response(false);
    assert_eq!(r.status, 413);
    assert_eq!(r.header("connection"), Some("close"));
    c.expect_eof();
    // Chunked too large.
    let mut c = connect(s.addr().unwrap());
    c.send(b"POST /ping HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n186a1\r\n");
    assert_eq!(c.read_response(false).status, 413);
    c.expect_eof();
    // 100-continue on an error route: final status at once, then close.
    let mut c = connect(s.addr().unwrap());
    c.send(b"POST /nope HTTP/1.1\r\nhost: t\r\ncontent-length: 3\r\nexpect: 100-continue\r\n\r\n");
    assert_eq!(c.read_response(false).status, 404);
    c.expect_eof();
}

#[test]
fn malformed_requests_get_400_and_close() {
    let s = start(|_| {});
    for bad in [
        &b"GET /ping HTTP/1.1\r\n\r\n"[..],                                  // no Host
        b"GET /ping HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n",                // two Hosts
        b"POST /ping HTTP/1.1\r\nhost: a\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
        b"POST /ping HTTP/1.1\r\nhost: a\r\ncontent-length: 1, 2\r\n\r\n",
        b"POST /ping HTTP/1.1\r\nhost: a\r\ntransfer-encoding: gzip\r\n\r\n",
        b"POST /ping HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"GET /ping HTTP/1.1\r\nhost: a\r\nbad header\r\n\r\n",
    ] {
        let mut c = connect(s.addr().unwrap());
        c.send(bad);
        let r = c.read_response(false);
        assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(bad));
        assert_eq!(r.header("connection"), Some("close"));
        c.expect_eof();
    }
    // Not HTTP at all (TLS on the cleartext port, a broken HTTP/2 preface): closed without
    // an answer.
    for junk in [
        &b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n"[..],
        b"INVALID CONNECTION PREFACE\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
    ] {
        let mut c = connect(s.addr().unwrap());
        c.send(junk);
        c.expect_eof();
    }
    // Other clients are unaffected.
    assert_eq!(connect(s.addr().unwrap()).get("/ping").body, b"pong");
}

#[test]
fn oversized_heads_get_431() {
    let s = start(|c| c.max_header_list_size = 4096);
    let mut c = connect(s.addr().unwrap());
    let big = "a".repeat(5000);
    c.send(format!("GET /ping HTTP/1.1\r\nhost: t\r\nx-big: {big}\r\n\r\n").as_bytes());
    let r = c.read_response(false);
    assert_eq!(r.status, 431);
    c.expect_eof();
    // Too many fields.
    let mut c = connect(s.addr().unwrap());
    let mut req = String::from("GET /ping HTTP/1.1\r\nhost: t\r\n");
    for i in 0..200 {
        req.push_str(&format!("x{i}: 1\r\n"));
    }
    req.push_str("\r\n");
    c.send(req.as_bytes());
    assert_eq!(c.read_response(false).status, 431);
}

#[test]
fn idle_and_slowloris_connections_are_closed() {
    let s = start(|c| c.idle_timeout = Duration::from_millis(400));
    // Idle: nothing sent.
    let mut idle = connect(s.addr().unwrap());
    // Slowloris: a byte every 100 ms keeps it "active", but the head never completes.
    let mut slow = connect(s.addr().unwrap());
    let t = Instant::now();
    slow.send(b"GET /ping HTTP/1.1\r\n");
    let mut closed = false;
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(100));
        if slow.stream.write_all(b"x").is_err() {
            closed = true;
            break;
        }
        slow.stream.set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        if let Ok(0) = slow.stream.read(&mut b) {
            closed = true;
            break;
        }
        slow.stream.set_nonblocking(false).unwrap();
    }
    assert!(
        closed,
        "slowloris connection still open after {:?}",
        t.elapsed()
    );
    idle.expect_eof();
    // A kept-alive connection that goes idle is closed too; a busy one is not.
    let mut c = connect(s.addr().unwrap());
    assert_eq!(c.get("/ping").body, b"pong");
    c.expect_eof();
}

#[test]
fn multi_threaded_workers_serve_concurrent_clients() {
    let s = start(|c| c.threads = 3);
    let addr = s.addr().unwrap();
    let handles: Vec<_> = (0..12)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = connect(addr);
                for j in 0..50 {
                    let n = (i * 50 + j) * 37 % 5000;
                    assert_eq!(c.get(&format!("/data?size={n}")).body.len(), n);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn static_files_without_path_traversal() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("www");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("hello.txt"), b"hello file\n").unwrap();
    std::fs::write(root.join("sub/index.html"), b"<p>sub</p>").unwrap();
    std::fs::write(root.join("style.css"), b"p{}").unwrap();
    std::fs::write(base.path().join("secret.txt"), b"TOP SECRET").unwrap();
    std::os::unix::fs::symlink(base.path().join("secret.txt"), root.join("link.txt")).unwrap();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let s = start(|c| c.root = Some(root.clone()));
    let mut c = connect(s.addr().unwrap());
    let r = c.get("/hello.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello file\n"[..]));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(
        c.get("/style.css").header("content-type"),
        Some("text/css; charset=utf-8")
    );
    assert_eq!(c.get("/sub/").body, b"<p>sub</p>");
    assert_eq!(c.get("/sub").body, b"<p>sub</p>");
    assert_eq!(c.get("/big.bin").body, big);
    assert_eq!(c.get("/hello%2etxt").status, 200);
    assert_eq!(c.get("/missing").status, 404);
    // Built-in endpoints still win.
    assert_eq!(c.get("/ping").body, b"pong");
    for attack in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/sub/../../secret.txt",
        "/sub/%2E%2E/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/link.txt",
        "/%00",
        "/hello.txt%00.png",
    ] {
        let mut c = connect(s.addr().unwrap());
        let r = c.get(attack);
        assert!(
            matches!(r.status, 400 | 403 | 404),
            "{attack}: {}",
            r.status
        );
        assert!(!r.text().contains("SECRET"), "{attack}");
    }
    // Methods other than GET/HEAD on files.
    let mut c = connect(s.addr().unwrap());
    c.send(b"POST /hello.txt HTTP/1.1\r\nhost: t\r\ncontent-length: 0\r\n\r\n");
    assert_eq!(c.read_response(false).status, 405);
}

#[test]
fn curl_http11_cleartext_and_tls() {
    let Some(curl) = common::curl() else { return };
    let (s, _dir) = start_tls(|_| {});
    let url = format!("http://{}/data?size=100k", s.addr().unwrap());
    let out = std::process::Command::new(curl)
        .args([
            "-s",
            "--http1.1",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{size_download} %{http_version}",
            &url,
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200 102400 1.1");
    let url = format!("https://localhost:{}/json", s.tls_addr().unwrap().port());
    let out = std::process::Command::new(curl)
        .args(["-s", "--http1.1", "--cacert"])
        .arg(s.cert_path().unwrap())
        .args(["-w", "\n%{http_code} %{http_version}", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with("\n200 1.1"), "{text}");
    assert!(text.contains("\"server\":\"h2lab\""));
}
