//! End to end: clients → `h2lab proxy` → four in-process `h2lab serve` backends, for every
//! upstream protocol: statuses, body bytes, forwarded fields, upstream connection counts.

mod common;

use std::time::Duration;

use common::{backends, proxy, Client};
use h2lab_proxy::UpstreamProtocol;

const ALL: [UpstreamProtocol; 4] = [
    UpstreamProtocol::H1,
    UpstreamProtocol::H10,
    UpstreamProtocol::H2c,
    UpstreamProtocol::H2cMux,
];

#[test]
fn every_upstream_protocol_forwards_requests() {
    let b = backends(4);
    for proto in ALL {
        let p = proxy(&b, proto, |_| {});
        let mut c = Client::connect(p.addr().unwrap());
        for _ in 0..10 {
            let r = c.get("/ping");
            assert_eq!(r.status, 200, "{proto:?}");
            assert!(r.keep_alive, "{proto:?}: the client connection persists");
            let r = c.get("/data?size=100000");
            assert_eq!(r.status, 200);
            assert_eq!(r.body.len(), 100_000, "{proto:?}");
            let r = c.get("/json");
            assert_eq!(r.status, 200);
            assert!(!r.body.is_empty());
            let r = c.get("/status/404");
            assert_eq!(r.status, 404, "{proto:?}");
        }
        let h = c.send(
            "HEAD /data?size=5000 HTTP/1.1\r\nHost: x\r\n\r\n",
            b"",
            true,
        );
        assert_eq!(h.status, 200);
        assert!(h.body.is_empty());
        assert_eq!(h.header("content-length"), Some("5000"), "{proto:?}");
        drop(c);
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.requests, 41, "{proto:?}: {s}");
        assert_eq!(s.responses, 41, "{proto:?}: {s}");
        assert_eq!(s.upstream_requests, 41);
        assert_eq!(
            s.bad_gateway_refused + s.bad_gateway_reset + s.gateway_timeout,
            0
        );
        match proto {
            // One client, one request at a time: one connection per backend, reused.
            UpstreamProtocol::H1 | UpstreamProtocol::H2c | UpstreamProtocol::H2cMux => {
                assert_eq!(s.upstream_connections_opened, 4, "{proto:?}: {s}");
                assert_eq!(s.upstream_connections_reused, 37, "{proto:?}: {s}");
            }
            UpstreamProtocol::H10 => {
                assert_eq!(s.upstream_connections_opened, 41, "{s}");
                assert_eq!(s.upstream_connections_reused, 0);
            }
        }
    }
}

#[test]
fn forwarding_fields_are_set_and_hop_by_hop_fields_dropped() {
    let b = backends(1);
    for proto in ALL {
        let p = proxy(&b, proto, |_| {});
        let mut c = Client::connect(p.addr().unwrap());
        let r = c.send(
            "GET /info HTTP/1.1\r\nHost: front.example\r\nX-Forwarded-For: 192.0.2.7\r\nConnection: keep-alive, x-hop\r\nKeep-Alive: timeout=5\r\nX-Custom: yes\r\nX-Hop: 1\r\nX-Foo: bar\r\nconnection: X-Foo\r\n\r\n",
            b"",
            false,
        );
        assert_eq!(r.status, 200);
        let info: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let headers: Vec<(String, String)> = info["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_ascii_lowercase(),
                    p[1].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        let host = if proto.is_h2() {
            get(":authority").or(get("host"))
        } else {
            get("host")
        };
        assert_eq!(host, Some("front.example"), "{proto:?} {headers:?}");
        assert_eq!(get("x-forwarded-for"), Some("192.0.2.7, 127.0.0.1"));
        assert_eq!(get("x-real-ip"), Some("127.0.0.1"));
        assert_eq!(get("x-forwarded-proto"), Some("http"));
        assert_eq!(get("x-custom"), Some("yes"));
        assert_eq!(get("keep-alive"), None, "{proto:?}");
        assert_eq!(get("connection"), None, "{proto:?}");
        // Named by the client's `Connection` fields: hop-by-hop (RFC 9110 §7.6.1).
        assert_eq!(get("x-hop"), None, "{proto:?} {headers:?}");
        assert_eq!(get("x-foo"), None, "{proto:?} {headers:?}");
        let expect_proto = match proto {
            UpstreamProtocol::H1 => "HTTP/1.1",
            UpstreamProtocol::H10 => "HTTP/1.0",
            _ => "HTTP/2",
        };
        assert_eq!(info["protocol"], expect_proto);
    }
}

#[test]
fn ten_megabytes_up_and_down() {
    let b = backends(2);
    let body = vec![b'x'; 10 * 1024 * 1024];
    for proto in ALL {
        let p = proxy(&b, proto, |_| {});
        let mut c = Client::connect(p.addr().unwrap());
        let r = c.get("/data?size=10485760");
        assert_eq!(r.status, 200, "{proto:?}");
        assert_eq!(r.body.len(), 10 * 1024 * 1024, "{proto:?}");
        let r = c.send(
            &format!(
                "POST /info HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                body.len()
            ),
            &body,
            false,
        );
        assert_eq!(r.status, 200, "{proto:?}");
        let info: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(info["body_length"], 10 * 1024 * 1024, "{proto:?}");
        if proto != UpstreamProtocol::H10 {
            // Chunked upload (HTTP/1.0 upstreams cannot take one: 411).
            let mut chunked = Vec::new();
            for c in body.chunks(1_000_000) {
                chunked.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                chunked.extend_from_slice(c);
                chunked.extend_from_slice(b"\r\n");
            }
            chunked.extend_from_slice(b"0\r\n\r\n");
            let r = c.send(
                "POST /ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                &chunked,
                false,
            );
            assert_eq!(r.status, 200, "{proto:?}");
        }
        drop(c);
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.open_exchanges, 0, "{s}");
    }
}

#[test]
fn refused_upstream_is_502() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    for proto in ALL {
        let c = h2lab_proxy::ProxyConfig::local(vec![h2lab_proxy::UpstreamAddr::Tcp(port)], proto);
        let p = h2lab_proxy::spawn(c).unwrap();
        let mut c = Client::connect(p.addr().unwrap());
        for _ in 0..3 {
            let r = c.get("/ping");
            assert_eq!(r.status, 502, "{proto:?}");
        }
        drop(c);
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.bad_gateway_refused, 3, "{proto:?}: {s}");
    }
    // A UNIX socket path where nobody listens.
    let c = h2lab_proxy::ProxyConfig::local(
        vec![h2lab_proxy::UpstreamAddr::Unix(
            "/nonexistent/h2lab.sock".into(),
        )],
        UpstreamProtocol::H1,
    );
    let p = h2lab_proxy::spawn(c).unwrap();
    let mut c = Client::connect(p.addr().unwrap());
    assert_eq!(c.get("/ping").status, 502);
}

#[test]
fn silent_upstream_is_504() {
    // Accepts and never answers.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let mut socks = Vec::new();
        l.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline && socks.len() < 8 {
            if let Ok((s, _)) = l.accept() {
                socks.push(s);
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        socks
    });
    for proto in ALL {
        let mut c =
            h2lab_proxy::ProxyConfig::local(vec![h2lab_proxy::UpstreamAddr::Tcp(addr)], proto);
        c.upstream_timeout = Duration::from_millis(200);
        let p = h2lab_proxy::spawn(c).unwrap();
        let mut c = Client::connect(p.addr().unwrap());
        let r = c.get("/ping");
        assert_eq!(r.status, 504, "{proto:?}");
        drop(c);
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.gateway_timeout, 1, "{s}");
        assert_eq!(s.open_exchanges, 0, "{s}");
    }
    drop(held);
}

#[test]
fn unix_socket_upstream() {
    let b = backends(1);
    // A UNIX socket relay in front of the TCP backend (h2lab serve listens on TCP only).
    let dir = std::env::temp_dir().join(format!("h2lab-proxy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("up.sock");
    let _ = std::fs::remove_file(&path);
    let ul = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let target = b[0].addr().unwrap();
    std::thread::spawn(move || {
        for s in ul.incoming().flatten() {
            let t = std::net::TcpStream::connect(target).unwrap();
            let (mut a, mut b) = (s.try_clone().unwrap(), t.try_clone().unwrap());
            std::thread::spawn(move || std::io::copy(&mut a, &mut { t }));
            std::thread::spawn(move || std::io::copy(&mut b, &mut { s }));
        }
    });
    let c = h2lab_proxy::ProxyConfig::local(
        vec![h2lab_proxy::UpstreamAddr::Unix(path.clone())],
        UpstreamProtocol::H1,
    );
    let p = h2lab_proxy::spawn(c).unwrap();
    let mut c = Client::connect(p.addr().unwrap());
    for _ in 0..5 {
        let r = c.get("/data?size=3000");
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), 3000);
    }
    let _ = std::fs::remove_file(&path);
}
