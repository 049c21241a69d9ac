//! Upstreams that misbehave or use less common features, played by raw sockets: trailers
//! passed to the client, an upstream that closes without answering (502), one that cuts a
//! response short (the client's response is cut too), fields an upstream's `Connection`
//! names are not passed on.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};

use common::Client;
use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};

/// Serves each accepted connection with `answer` after reading a request head.
fn fake(answer: &'static [u8], close: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut b = [0u8; 4096];
                loop {
                    while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..i + 4);
                        if s.write_all(answer).is_err() || close {
                            return;
                        }
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

fn proxy_to(addr: SocketAddr) -> h2lab_proxy::RunningProxy {
    h2lab_proxy::spawn(ProxyConfig::local(
        vec![UpstreamAddr::Tcp(addr)],
        UpstreamProtocol::H1,
    ))
    .unwrap()
}

#[test]
fn trailers_are_passed_to_the_client() {
    let up = fake(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x-checksum\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nx-checksum: abc\r\n\r\n",
        false,
    );
    let p = proxy_to(up);
    let mut c = Client::connect(p.addr().unwrap());
    for _ in 0..3 {
        // The client says it takes trailers (RFC 9110 §10.1.4).
        let r = c.send(
            "GET / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n",
            b"",
            false,
        );
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"hello world");
        assert_eq!(
            r.trailers,
            vec![("x-checksum".to_string(), "abc".to_string())]
        );
    }
    // Without `TE: trailers` they are dropped (RFC 9110 §6.5.1), the body is the same.
    let r = c.get("/");
    assert_eq!(r.body, b"hello world");
    assert!(r.trailers.is_empty(), "{:?}", r.trailers);
    drop(c);
    p.shutdown();
    let s = p.join().unwrap();
    assert_eq!(s.upstream_connections_opened, 1, "{s}");
}

#[test]
fn upstream_closing_without_an_answer_is_502() {
    let up = fake(b"", true);
    let p = proxy_to(up);
    let mut c = Client::connect(p.addr().unwrap());
    let r = c.get("/");
    assert_eq!(r.status, 502);
    drop(c);
    p.shutdown();
    let s = p.join().unwrap();
    assert_eq!(s.bad_gateway_reset, 1, "{s}");
    assert_eq!(s.open_exchanges, 0, "{s}");
}

#[test]
fn a_cut_response_cuts_the_client_response() {
    let up = fake(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part",
        true,
    );
    let p = proxy_to(up);
    let mut s = std::net::TcpStream::connect(p.addr().unwrap()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("only part"), "{text}");
}

#[test]
fn a_cut_response_resets_the_http2_clients_stream() {
    let up = fake(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part",
        true,
    );
    let p = proxy_to(up);
    let addr = p.addr().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (got, err) = rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.unwrap();
        let req = http::Request::get("http://localhost/").body(()).unwrap();
        let (fut, _) = client.send_request(req, true).unwrap();
        let resp = tokio::time::timeout(std::time::Duration::from_secs(10), fut)
            .await
            .expect("a response head")
            .unwrap();
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        let mut got = Vec::new();
        let err = loop {
            match tokio::time::timeout(std::time::Duration::from_secs(10), body.data()).await {
                Ok(Some(Ok(c))) => got.extend_from_slice(&c),
                Ok(Some(Err(e))) => break Some(e),
                Ok(None) => break None,
                Err(_) => panic!("the stream was left open"),
            }
        };
        (got, err)
    });
    assert_eq!(got, b"only part");
    let err = err.expect("the stream is reset, not ended");
    assert_eq!(err.reason(), Some(h2::Reason::INTERNAL_ERROR), "{err}");
}

#[test]
fn fields_named_by_the_upstreams_connection_are_not_passed_on() {
    let up = fake(
        b"HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Foo\r\nX-Foo: bar\r\nX-Kept: yes\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok",
        false,
    );
    let p = proxy_to(up);
    let mut c = Client::connect(p.addr().unwrap());
    for _ in 0..2 {
        let r = c.get("/");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"ok");
        assert_eq!(r.header("x-kept"), Some("yes"));
        assert_eq!(r.header("x-foo"), None, "{:?}", r.headers);
        assert_eq!(r.header("keep-alive"), None);
    }
    drop(c);
    p.shutdown();
    p.join().unwrap();
}
