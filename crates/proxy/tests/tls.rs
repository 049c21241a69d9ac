//! The TLS front with a client that offers only HTTP/1.1 (ALPN `http/1.1`; HTTP/2 over TLS
//! is covered by tests/h2spec.rs): the server crate's generated certificate,
//! `X-Forwarded-Proto: https` upstream.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use h2lab_proxy::{ProxyConfig, UpstreamAddr, UpstreamProtocol};
use rustls::pki_types::ServerName;

mod common;

#[test]
fn http11_over_tls_is_forwarded_with_https_proto() {
    let backend = h2lab_server::spawn(h2lab_server::ServerConfig::local()).unwrap();
    let dir = std::env::temp_dir().join(format!("h2lab-proxy-tls-{}", std::process::id()));
    let mut cfg = ProxyConfig::local(
        vec![UpstreamAddr::Tcp(backend.addr().unwrap())],
        UpstreamProtocol::H2cMux,
    );
    cfg.listen = None;
    cfg.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    cfg.front.cert_dir = Some(dir.clone());
    let proxy = h2lab_proxy::spawn(cfg).unwrap();

    let cc = common::h2raw::client_config(&proxy, b"http/1.1");
    let conn =
        rustls::ClientConnection::new(cc, ServerName::try_from("localhost").unwrap()).unwrap();
    let sock = TcpStream::connect(proxy.tls_addr().unwrap()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(b"GET /info HTTP/1.1\r\nHost: secure.example\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = Vec::new();
    let _ = tls.read_to_end(&mut resp);
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let text = String::from_utf8_lossy(&resp);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("[\"x-forwarded-proto\",\"https\"]"), "{text}");
    assert!(
        text.contains("[\":authority\",\"secure.example\"]"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
