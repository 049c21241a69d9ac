//! `serve --0rtt`: TLS 1.3 early data over TCP (a plain rustls client) and QUIC 0-RTT (the
//! `quinn` + `h3` oracle). Safe requests in early data are answered at once and marked early
//! (`/info` says `"early_data":true`), unsafe ones get `425 Too Early` and run only when sent
//! again after the handshake, and a replayed first flight is never executed (single-use
//! tickets).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use common::h3::{rt, start_h3};
use h2lab_server::RunningServer;
use rustls::{ClientConfig, ClientConnection};

const ANSWERED: usize = 3;
const TOO_EARLY: usize = 4;

/// A client configuration that resumes and offers early data (one shared session cache).
fn early_config(server: &RunningServer, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let base = common::tls_client_config(server.cert_path().unwrap(), alpn);
    let mut cfg = (*base).clone();
    cfg.resumption = rustls::client::Resumption::in_memory_sessions(16);
    cfg.enable_early_data = true;
    Arc::new(cfg)
}

/// What one TLS connection produced: the response bytes (read to EOF), whether early data
/// was accepted, whether the handshake resumed, and the client's first flight as written.
struct Exchange {
    response: String,
    early_accepted: bool,
    resumed: bool,
    first_flight: Vec<u8>,
}

/// Connects, sends `early` as early data when the session allows it (else after the
/// handshake), then `late` after the handshake, and reads until the server closes.
fn exchange(addr: SocketAddr, cfg: &Arc<ClientConfig>, early: &[u8], late: &[u8]) -> Exchange {
    let mut tls = ClientConnection::new(Arc::clone(cfg), "localhost".try_into().unwrap()).unwrap();
    let mut sent_early = false;
    if let Some(mut ed) = tls.early_data() {
        ed.write_all(early).unwrap();
        sent_early = true;
    }
    let mut first_flight = Vec::new();
    while tls.wants_write() {
        tls.write_tls(&mut first_flight).unwrap();
    }
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    sock.write_all(&first_flight).unwrap();
    while tls.is_handshaking() {
        tls.complete_io(&mut sock).unwrap();
    }
    let early_accepted = tls.is_early_data_accepted();
    if !early_accepted {
        // RFC 8446 §4.2.10: rejected early data is lost; the application sends it again.
        tls.writer().write_all(early).unwrap();
    }
    let _ = sent_early;
    tls.writer().write_all(late).unwrap();
    let mut response = Vec::new();
    let mut stream = rustls::Stream::new(&mut tls, &mut sock);
    let _ = stream.read_to_end(&mut response);
    let resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    Exchange {
        response: String::from_utf8_lossy(&response).into_owned(),
        early_accepted,
        resumed,
        first_flight,
    }
}

const INFO: &[u8] = b"GET /info HTTP/1.1\r\nhost: localhost\r\n\r\n";
const INFO_CLOSE: &[u8] = b"GET /info HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n";
const POST_KEEP: &[u8] = b"POST /info HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\n\r\nhi";
const POST: &[u8] =
    b"POST /info HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi";

#[test]
fn tcp_early_get_is_answered_early_and_unsafe_requests_get_425() {
    let (server, _dir) = common::start_tls(|c| {
        c.listen = None;
        c.zero_rtt = true;
    });
    let addr = server.tls_addr().unwrap();
    let cfg = early_config(&server, &[b"http/1.1"]);
    // First visit: a full handshake (tickets come after it).
    let first = exchange(addr, &cfg, INFO_CLOSE, b"");
    assert!(!first.resumed && !first.early_accepted);
    assert!(
        first.response.starts_with("HTTP/1.1 200"),
        "{}",
        first.response
    );
    assert!(!first.response.contains("early_data"), "{}", first.response);

    // Returning: the GET rides in early data and is answered from it.
    let second = exchange(addr, &cfg, INFO, INFO_CLOSE);
    assert!(second.resumed, "the second connection resumes");
    assert!(second.early_accepted, "early data accepted");
    let parts: Vec<&str> = second.response.split("HTTP/1.1 ").collect();
    assert_eq!(parts.len(), 3, "{}", second.response);
    assert!(parts[1].starts_with("200") && parts[1].contains("\"early_data\":true"));
    assert!(parts[2].starts_with("200") && !parts[2].contains("early_data"));

    // Returning with a POST in early data: 425, and the same POST sent again after the
    // handshake runs once (its handler saw it only then).
    let third = exchange(addr, &cfg, POST_KEEP, POST);
    assert!(third.early_accepted);
    let parts: Vec<&str> = third.response.split("HTTP/1.1 ").collect();
    assert!(parts[1].starts_with("425 Too Early"), "{}", third.response);
    // The 425 did not close the connection; the retry was answered.
    assert!(
        parts.get(2).is_some_and(|p| p.starts_with("200")),
        "{}",
        third.response
    );

    // A GET whose handler is marked not replayable: 425 as well.
    let fourth = exchange(
        addr,
        &cfg,
        b"GET /json?replay=unsafe HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        b"",
    );
    assert!(fourth.early_accepted);
    assert!(
        fourth.response.starts_with("HTTP/1.1 425"),
        "{}",
        fourth.response
    );
    let s = server.early_stats().snapshot();
    assert_eq!(s[ANSWERED], 1, "{s:?}");
    assert_eq!(s[TOO_EARLY], 2, "{s:?}");
}

#[test]
fn tcp_a_replayed_first_flight_is_never_executed() {
    let (server, _dir) = common::start_tls(|c| {
        c.listen = None;
        c.zero_rtt = true;
    });
    let addr = server.tls_addr().unwrap();
    let cfg = early_config(&server, &[b"http/1.1"]);
    exchange(addr, &cfg, INFO_CLOSE, b"");
    let genuine = exchange(addr, &cfg, INFO_CLOSE, b"");
    assert!(genuine.early_accepted, "{}", genuine.response);
    let before = server.early_stats().snapshot();
    assert_eq!(before[ANSWERED], 1);

    // An attacker replays the recorded ClientHello and early data.
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    sock.write_all(&genuine.first_flight).unwrap();
    // The server answers with its handshake flight once it has processed the replay.
    let mut buf = [0u8; 4096];
    let n = sock.read(&mut buf).unwrap();
    assert!(n > 0);
    drop(sock);
    let after = server.early_stats().snapshot();
    assert_eq!(
        after[ANSWERED], before[ANSWERED],
        "replay executed: {after:?}"
    );
    assert!(
        after[2] > before[2],
        "the ticket was refused the second time: {after:?}"
    );
}

#[test]
fn tcp_without_0rtt_resumes_but_refuses_early_data() {
    let (server, _dir) = common::start_tls(|c| c.listen = None);
    let addr = server.tls_addr().unwrap();
    let cfg = early_config(&server, &[b"http/1.1"]);
    exchange(addr, &cfg, INFO_CLOSE, b"");
    let second = exchange(addr, &cfg, INFO_CLOSE, b"");
    assert!(second.resumed, "resumption is on by default");
    assert!(!second.early_accepted);
    assert!(second.response.starts_with("HTTP/1.1 200"));
    assert!(!second.response.contains("early_data"));
}

/// One HTTP/3 request on `send`: (status, body).
async fn h3_fetch(
    send: &mut h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    method: &str,
    path: &str,
) -> (u16, String) {
    let req = http::Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"))
        .body(())
        .unwrap();
    let mut s = send.send_request(req).await.unwrap();
    s.finish().await.unwrap();
    let resp = s.recv_response().await.unwrap();
    let mut body = Vec::new();
    while let Some(mut chunk) = s.recv_data().await.unwrap() {
        while chunk.has_remaining() {
            let c = chunk.chunk();
            body.extend_from_slice(c);
            let n = c.len();
            chunk.advance(n);
        }
    }
    (
        resp.status().as_u16(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// A quinn endpoint whose client configuration resumes and offers 0-RTT.
fn quinn_early_endpoint(server: &RunningServer) -> quinn::Endpoint {
    let tls = early_config(server, &[b"h3"]);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from((*tls).clone()).unwrap();
    let cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(cfg);
    ep
}

#[test]
fn quic_0rtt_get_is_answered_early_and_post_gets_425() {
    let (server, _dir) = start_h3(|c| c.zero_rtt = true);
    let addr = server.h3_addr().unwrap();
    rt().block_on(async {
        let ep = quinn_early_endpoint(&server);
        // First visit: full handshake; wait for a response so the tickets have arrived.
        let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
        let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
            .await
            .unwrap();
        let d = tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let (status, body) = h3_fetch(&mut send, "GET", "/info").await;
        assert_eq!(status, 200);
        assert!(!body.contains("early_data"), "{body}");
        conn.close(0u32.into(), b"");
        drop(send);
        d.abort();

        // Returning: requests in 0-RTT.
        let connecting = ep.connect(addr, "localhost").unwrap();
        let (conn, accepted) = match connecting.into_0rtt() {
            Ok(pair) => pair,
            Err(_) => panic!("no 0-RTT keys after a resumable first connection"),
        };
        let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
            .await
            .unwrap();
        let d = tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let (get, post) = tokio::join!(
            async {
                let mut s = send.clone();
                h3_fetch(&mut s, "GET", "/info").await
            },
            async {
                let mut s = send.clone();
                h3_fetch(&mut s, "POST", "/info").await
            }
        );
        assert!(accepted.await, "0-RTT accepted");
        assert_eq!(get.0, 200);
        assert!(get.1.contains("\"early_data\":true"), "{}", get.1);
        assert_eq!(post.0, 425, "{}", post.1);
        // After the handshake the same POST runs.
        let (status, body) = h3_fetch(&mut send, "POST", "/info").await;
        assert_eq!(status, 200, "{body}");
        assert!(!body.contains("early_data"), "{body}");
        conn.close(0u32.into(), b"");
        d.abort();
        ep.wait_idle().await;
    });
    let s = server.early_stats().snapshot();
    assert!(s[ANSWERED] >= 1 && s[TOO_EARLY] >= 1, "{s:?}");
}

// ---- independent clients ----

/// OpenSSL's `s_client` (an independent TLS 1.3 stack): a first visit saves its session
/// (`-sess_out`), the returning one sends its request as early data (`-sess_in
/// -early_data`), which is accepted and answered early; the same session used again is a
/// replay: its early data is rejected.
#[test]
fn openssl_s_client_early_data_is_accepted_once() {
    let Some(openssl) = common::tool(
        "openssl",
        &[
            std::path::PathBuf::from("/usr/bin/openssl"),
            std::path::PathBuf::from("/usr/local/bin/openssl"),
        ],
    ) else {
        return;
    };
    let (server, dir) = common::start_tls(|c| {
        c.listen = None;
        c.zero_rtt = true;
        // The replayed connection's request is lost with its early data: s_client then
        // waits for the server to close it.
        c.idle_timeout = Duration::from_secs(2);
    });
    let addr = server.tls_addr().unwrap();
    let sess = dir.path().join("sess.pem");
    let req = dir.path().join("req.txt");
    std::fs::write(&req, INFO_CLOSE).unwrap();
    let s_client = |extra: &[&std::ffi::OsStr], stdin: std::process::Stdio| {
        let mut c = std::process::Command::new(&openssl);
        c.arg("s_client")
            .arg("-connect")
            .arg(addr.to_string())
            .args(["-alpn", "http/1.1", "-ign_eof"])
            .args(extra)
            .stdin(stdin);
        let out = c.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let first = s_client(
        &["-sess_out".as_ref(), sess.as_os_str()],
        std::fs::File::open(&req).unwrap().into(),
    );
    assert!(first.contains("HTTP/1.1 200"), "{first}");
    assert!(sess.exists(), "the session was saved");
    let early = [
        "-sess_in".as_ref(),
        sess.as_os_str(),
        "-early_data".as_ref(),
        req.as_os_str(),
    ];
    let second = s_client(&early, std::process::Stdio::null());
    assert!(second.contains("Reused, TLSv1.3"), "{second}");
    assert!(second.contains("Early data was accepted"), "{second}");
    assert!(second.contains("\"early_data\":true"), "{second}");
    // A replay of the same ticket: refused, the handshake is a full one.
    let third = s_client(&early, std::process::Stdio::null());
    assert!(third.contains("Early data was rejected"), "{third}");
    assert!(!third.contains("\"early_data\":true"), "{third}");
    assert_eq!(server.early_stats().snapshot()[ANSWERED], 1);
}

/// quic-go's example client (an independent QUIC stack) against `--h3 --0rtt`: it keeps no
/// session cache (it has no option for one), so it does full handshakes; they work as before.
#[test]
fn quic_go_client_works_against_a_0rtt_server() {
    let mut c = vec![
        std::path::PathBuf::from("/usr/local/bin/quic-go-client"),
        std::path::PathBuf::from("/usr/bin/quic-go-client"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        c.push(std::path::Path::new(&home).join("go/bin/quic-go-client"));
    }
    let Some(client) = common::tool("quic-go-client", &c) else {
        return;
    };
    let (server, _dir) = start_h3(|c| c.zero_rtt = true);
    let addr = server.h3_addr().unwrap();
    let out = std::process::Command::new(&client)
        .arg("-insecure")
        .arg(format!("https://{addr}/info"))
        .arg(format!("https://{addr}/info"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(text.matches("\"protocol\":\"HTTP/3\"").count(), 2, "{text}");
    assert!(!text.contains("early_data"), "{text}");
}
