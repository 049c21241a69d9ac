//! Trailers through the proxy, with the `h2` crate as the oracle on both sides: an HTTP/2
//! upstream that echoes the request trailers it received into its response trailers, and an
//! HTTP/2 client (h2c prior knowledge) that sends request trailers and reads the response's.
//! HTTP/1.1 clients get chunked trailers only when they sent `TE: trailers`.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::Client;
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
use http::{HeaderMap, HeaderValue, Request, Response};

/// Response body size (several stream windows of the h2 crate's default 64 KiB).
const RESP_LEN: usize = 300_000;

/// An HTTP/2 upstream (the `h2` crate): reads the request body and trailers, answers
/// `x-body-len` (+ `content-length` when the path is `/cl`), a body of `RESP_LEN` bytes, and
/// trailers `x-upstream: done` plus `x-echo-NAME: VALUE` per request trailer.
fn h2_upstream() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            loop {
                let Ok((sock, _)) = l.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(sock).await else {
                        return;
                    };
                    while let Some(Ok((req, respond))) = conn.accept().await {
                        tokio::spawn(answer(req, respond));
                    }
                });
            }
        });
    });
    rx.recv().unwrap()
}

async fn answer(req: Request<h2::RecvStream>, mut respond: h2::server::SendResponse<Bytes>) {
    let (parts, mut body) = req.into_parts();
    let mut len = 0;
    while let Some(Ok(chunk)) = body.data().await {
        len += chunk.len();
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let got = body.trailers().await.ok().flatten().unwrap_or_default();
    let te = parts
        .headers
        .get("te")
        .map_or("none", |v| v.to_str().unwrap());
    let mut resp = Response::builder()
        .status(200)
        .header("x-body-len", len.to_string())
        .header("x-te", te);
    if parts.uri.path() == "/cl" {
        resp = resp.header("content-length", RESP_LEN.to_string());
    }
    let Ok(mut send) = respond.send_response(resp.body(()).unwrap(), false) else {
        return;
    };
    let body: Vec<u8> = (0..RESP_LEN).map(|i| (i % 251) as u8).collect();
    let _ = send.send_data(Bytes::from(body), false);
    let mut t = HeaderMap::new();
    t.insert("x-upstream", HeaderValue::from_static("done"));
    for (n, v) in got.iter() {
        let name = http::HeaderName::from_bytes(format!("x-echo-{n}").as_bytes()).unwrap();
        t.insert(name, v.clone());
    }
    let _ = send.send_trailers(t);
}

fn expected_body() -> Vec<u8> {
    (0..RESP_LEN).map(|i| (i % 251) as u8).collect()
}

fn proxy_to(up: SocketAddr, proto: UpstreamProtocol) -> h2lab_proxy::RunningProxy {
    let mut c = ProxyConfig::local(vec![UpstreamAddr::Tcp(up)], proto);
    c.front.threads = 1;
    h2lab_proxy::spawn(c).unwrap()
}

struct Got {
    body: Vec<u8>,
    headers: HeaderMap,
    trailers: HeaderMap,
}

/// One request through `addr` with the `h2` crate: `body` in two DATA frames, then trailers.
async fn h2_request(addr: SocketAddr, path: &str, body: &[u8], trailers: HeaderMap) -> Got {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = client.ready().await.unwrap();
    let req = Request::builder()
        .method("POST")
        .uri(format!("http://localhost{path}"))
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (fut, mut send) = client.send_request(req, false).unwrap();
    let (a, b) = body.split_at(body.len() / 2);
    send.send_data(Bytes::copy_from_slice(a), false).unwrap();
    send.send_data(Bytes::copy_from_slice(b), false).unwrap();
    send.send_trailers(trailers).unwrap();
    let resp = fut.await.unwrap();
    let (parts, mut recv) = resp.into_parts();
    assert_eq!(parts.status, 200);
    let mut data = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        data.extend_from_slice(&chunk);
        let _ = recv.flow_control().release_capacity(chunk.len());
    }
    let trailers = recv.trailers().await.unwrap().unwrap_or_default();
    Got {
        body: data,
        headers: parts.headers,
        trailers,
    }
}

fn text(m: &HeaderMap, n: &str) -> Option<String> {
    m.get(n).map(|v| v.to_str().unwrap().to_string())
}

#[test]
fn http2_client_trailers_both_ways_over_h2c_upstreams() {
    let up = h2_upstream();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for proto in [UpstreamProtocol::H2c, UpstreamProtocol::H2cMux] {
        let p = proxy_to(up, proto);
        let addr = p.addr().unwrap();
        for path in ["/chunked", "/cl"] {
            let mut t = HeaderMap::new();
            t.insert("x-checksum", HeaderValue::from_static("abc123"));
            t.insert("x-count", HeaderValue::from_static("2"));
            let g = rt.block_on(h2_request(addr, path, &[b'q'; 70_000], t));
            assert_eq!(
                text(&g.headers, "x-body-len").as_deref(),
                Some("70000"),
                "{proto:?} {path}"
            );
            assert!(g.body == expected_body(), "{proto:?} {path}: body differs");
            // `te: trailers` reaches an HTTP/2 upstream.
            assert_eq!(text(&g.headers, "x-te").as_deref(), Some("trailers"));
            let mut want = HeaderMap::new();
            want.insert("x-upstream", HeaderValue::from_static("done"));
            want.insert("x-echo-x-checksum", HeaderValue::from_static("abc123"));
            want.insert("x-echo-x-count", HeaderValue::from_static("2"));
            assert_eq!(g.trailers, want, "{proto:?} {path}");
        }
        p.shutdown();
        let s = p.join().unwrap();
        assert_eq!(s.responses, 2, "{s}");
        assert_eq!(s.bad_gateway_reset, 0, "{s}");
    }
}

#[test]
fn http1_clients_get_trailers_only_with_te_trailers() {
    let up = h2_upstream();
    for proto in [UpstreamProtocol::H2c, UpstreamProtocol::H2cMux] {
        let p = proxy_to(up, proto);
        let mut c = Client::connect(p.addr().unwrap());
        let body = b"5\r\nhello\r\n0\r\nx-checksum: abc123\r\n\r\n";
        for te in [true, false] {
            let head = format!(
                "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n{}\r\n",
                if te { "TE: trailers\r\n" } else { "" }
            );
            let r = c.send(&head, body, false);
            assert_eq!(r.status, 200, "{proto:?}");
            assert_eq!(r.header("x-body-len"), Some("5"), "{proto:?}");
            let te_seen = if te { "trailers" } else { "none" };
            assert_eq!(r.header("x-te"), Some(te_seen), "{proto:?}");
            assert!(r.body == expected_body(), "{proto:?}");
            let mut t = r.trailers.clone();
            t.sort();
            if te {
                let want = vec![
                    ("x-echo-x-checksum".to_string(), "abc123".to_string()),
                    ("x-upstream".to_string(), "done".to_string()),
                ];
                assert_eq!(t, want, "{proto:?}");
            } else {
                assert!(t.is_empty(), "{proto:?}: no TE: trailers, none sent: {t:?}");
            }
            assert!(r.keep_alive);
        }
        drop(c);
        let settled = common::wait_until(10, || {
            let s = p.stats().snapshot(Duration::from_secs(1));
            s.open_exchanges == 0 && s.open_upstream_streams == 0
        });
        assert!(settled, "{proto:?}");
    }
}

/// An HTTP/1.1 upstream played by a raw socket: reads a chunked request, answers a chunked
/// body `hello` with trailers `x-upstream: done` and `x-echo-NAME: VALUE` per request trailer.
fn h1_upstream() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = Vec::new();
                let mut b = [0u8; 4096];
                loop {
                    // The end of a chunked body: the last chunk and the trailer section.
                    let end = buf
                        .windows(5)
                        .position(|w| w == b"\r\n0\r\n")
                        .and_then(|i| {
                            let rest = &buf[i + 5..];
                            if rest.starts_with(b"\r\n") {
                                return Some((i + 5, i + 7));
                            }
                            let e = rest.windows(4).position(|w| w == b"\r\n\r\n")?;
                            Some((i + 5, i + 5 + e + 4))
                        });
                    if let Some((t0, t1)) = end {
                        let section = String::from_utf8_lossy(&buf[t0..t1]).to_string();
                        buf.drain(..t1);
                        let mut resp = String::from(
                            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-upstream: done\r\n",
                        );
                        for line in section.split("\r\n").filter(|l| !l.is_empty()) {
                            let (n, v) = line.split_once(':').unwrap();
                            resp.push_str(&format!("x-echo-{}: {}\r\n", n.trim(), v.trim()));
                        }
                        resp.push_str("\r\n");
                        if s.write_all(resp.as_bytes()).is_err() {
                            return;
                        }
                        continue;
                    }
                    match s.read(&mut b) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn http2_client_trailers_both_ways_over_an_http1_upstream() {
    let up = h1_upstream();
    let p = proxy_to(up, UpstreamProtocol::H1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..2 {
        let mut t = HeaderMap::new();
        t.insert("x-checksum", HeaderValue::from_static("abc123"));
        let g = rt.block_on(h2_request(p.addr().unwrap(), "/", &[b'q'; 20_000], t));
        assert_eq!(g.body, b"hello");
        let mut want = HeaderMap::new();
        want.insert("x-upstream", HeaderValue::from_static("done"));
        want.insert("x-echo-x-checksum", HeaderValue::from_static("abc123"));
        assert_eq!(g.trailers, want);
    }
    p.shutdown();
    let s = p.join().unwrap();
    assert_eq!(s.responses, 2, "{s}");
    assert_eq!(s.upstream_connections_opened, 1, "{s}");
}
