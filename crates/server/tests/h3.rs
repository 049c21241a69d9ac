//! HTTP/3 (`--h3`): the server driven over QUIC on loopback by an independent client stack
//! (`h3` + `h3-quinn` + `quinn`, the oracle), by raw QUIC streams carrying the wire crate's
//! frames (attacks the oracle cannot make: a QPACK dynamic-table bomb, abandoned streams,
//! GOAWAY on a graceful stop), and by quic-go's example client when installed.

mod common;

use common::h3::{filler, get_frame, quinn_endpoint, rt, start_h3};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use h2lab_server::RunningServer;
use h2lab_testkit::Bound;
use h2lab_wire::h3::control::{ControlEvent, ControlReader};
use h2lab_wire::h3::stream::UniStreamType;
use h2lab_wire::h3::Role;

async fn quic_connect(server: &RunningServer) -> (quinn::Endpoint, quinn::Connection) {
    let ep = quinn_endpoint(server);
    let addr: SocketAddr = server.h3_addr().unwrap();
    let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
    (ep, conn)
}

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An `h3` client connection; its driver runs on the runtime.
async fn h3_client(server: &RunningServer) -> (quinn::Endpoint, SendRequest) {
    let (ep, conn) = quic_connect(server).await;
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    (ep, send)
}

/// GET (or another method) `path`: (status, headers, body).
async fn fetch(
    send: &mut SendRequest,
    method: &str,
    path: &str,
) -> (u16, http::HeaderMap, Vec<u8>) {
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
    (resp.status().as_u16(), resp.headers().clone(), body)
}

#[test]
fn small_responses_statuses_and_head() {
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, mut send) = h3_client(&server).await;
        let (st, h, body) = fetch(&mut send, "GET", "/ping").await;
        assert_eq!((st, body.as_slice()), (200, &b"pong"[..]));
        assert_eq!(h["content-length"], "4");
        assert_eq!(h["server"], "h2lab");
        // The same head again (reused section bytes) on another stream.
        let (st, h2, body) = fetch(&mut send, "GET", "/ping").await;
        assert_eq!((st, body.as_slice()), (200, &b"pong"[..]));
        assert_eq!(h2["content-length"], "4");
        assert_eq!(h2["content-type"], h["content-type"]);
        let (st, _, body) = fetch(&mut send, "GET", "/status/404").await;
        assert_eq!(st, 404);
        assert!(!body.is_empty());
        let (st, _, body) = fetch(&mut send, "GET", "/status/204").await;
        assert_eq!((st, body.len()), (204, 0));
        let (st, h, body) = fetch(&mut send, "HEAD", "/data?size=1000").await;
        assert_eq!((st, body.len()), (200, 0));
        assert_eq!(h["content-length"], "1000");
        let (st, _, body) = fetch(&mut send, "GET", "/info").await;
        assert_eq!(st, 200);
        let info = String::from_utf8(body).unwrap();
        assert!(info.contains(r#""protocol":"HTTP/3""#), "{info}");
        assert!(info.contains(r#""tls":true"#), "{info}");
        let (st, _, body) = fetch(&mut send, "GET", "/data?size=653").await;
        assert_eq!((st, body), (200, filler(653)));
        let (st, _, _) = fetch(&mut send, "DELETE", "/ping").await;
        assert_eq!(st, 405);
    });
}

#[test]
fn ten_megabytes_exact_bytes() {
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, mut send) = h3_client(&server).await;
        let n = 10 * 1024 * 1024;
        let (st, h, body) = fetch(&mut send, "GET", "/data?size=10m").await;
        assert_eq!(st, 200);
        assert_eq!(h["content-length"], n.to_string().as_str());
        assert_eq!(body.len(), n);
        assert!(body == filler(n), "body bytes differ from the filler");
    });
}

#[test]
fn static_files_are_streamed() {
    let root = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(root.path().join("big.bin"), &data).unwrap();
    let r = root.path().to_path_buf();
    // Two TCP workers (and the acceptor): HTTP/3 has its own thread either way.
    let (server, _dir) = start_h3(move |c| {
        c.root = Some(r);
        c.threads = 2;
    });
    rt().block_on(async {
        let (_ep, mut send) = h3_client(&server).await;
        let (st, _, body) = fetch(&mut send, "GET", "/big.bin").await;
        assert_eq!(st, 200);
        assert!(body == data, "file body differs ({} bytes)", body.len());
    });
}

#[test]
fn every_http3_socket_is_bound_before_the_address_is_published() {
    // The kernel picks an SO_REUSEPORT group member by the 4-tuple's hash modulo the group
    // size: a socket joining after a client connected re-routes that connection's datagrams
    // to a thread whose QUIC endpoint does not know it (the transfer stalled until the idle
    // timeout). So the whole group exists when `spawn` returns the address.
    let (server, _dir) = start_h3(|c| c.threads = 3);
    let port = server.h3_addr().unwrap().port();
    // The UDP sockets on the port that this process (the server's threads) holds.
    let me = [std::process::id()];
    assert_eq!(h2lab_testkit::held_sockets(&me, Bound::Udp, port).len(), 3);
}

/// With one HTTP/3 thread the UDP socket is bound alone (no SO_REUSEPORT): another socket
/// (this process's here, standing for any program of the same user) cannot join the port
/// and take a share of the clients' connections, whose requests it would answer as it
/// pleases (a `/data?size=4m` once came back with a 4-byte body and a 127-byte head).
#[test]
fn a_single_http3_socket_cannot_be_joined() {
    use socket2::{Domain, Protocol, Socket, Type};
    let (server, _dir) = start_h3(|c| c.threads = 1);
    let addr = server.h3_addr().unwrap();
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    s.set_reuse_port(true).unwrap();
    let joined = s.bind(&addr.into());
    assert_eq!(
        joined.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::AddrInUse),
        "another socket joined the HTTP/3 port"
    );
}

#[test]
fn many_concurrent_streams_beyond_max_streams() {
    // 3x the stream limit at once on one connection: QUIC's MAX_STREAMS makes the client
    // wait; every request completes with its exact body.
    let (server, _dir) = start_h3(|c| c.max_concurrent_streams = 20);
    rt().block_on(async {
        let (_ep, send) = h3_client(&server).await;
        let mut tasks = Vec::new();
        for i in 0..60usize {
            let mut send = send.clone();
            tasks.push(tokio::spawn(async move {
                let size = 1000 + i * 97;
                let (st, _, body) = fetch(&mut send, "GET", &format!("/data?size={size}")).await;
                assert_eq!(st, 200);
                assert!(body == filler(size));
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn two_http3_threads_serve_many_connections() {
    // `--threads 2`: two HTTP/3 threads, each with its own SO_REUSEPORT socket and QUIC
    // endpoint (Linux). 24 connections (each its own client socket, so the kernel's 4-tuple
    // hash spreads them) x 10 requests: every response exact, on whichever thread.
    let (server, _dir) = start_h3(|c| c.threads = 2);
    let h3_threads = || {
        server
            .thread_ids()
            .iter()
            .filter(|tid| {
                std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .is_ok_and(|n| n.trim() == "h2lab-h3")
            })
            .count()
    };
    if cfg!(target_os = "linux") {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while h3_threads() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(h3_threads(), 2);
    }
    let ok = rt().block_on(async {
        let mut tasks = Vec::new();
        for c in 0..24usize {
            let (ep, send) = h3_client(&server).await;
            tasks.push(tokio::spawn(async move {
                let _ep = ep;
                let mut n = 0;
                for i in 0..10usize {
                    let mut send = send.clone();
                    let size = 100 + c * 31 + i;
                    let (st, _, body) =
                        fetch(&mut send, "GET", &format!("/data?size={size}")).await;
                    assert_eq!(st, 200);
                    assert!(body == filler(size));
                    n += 1;
                }
                n
            }));
        }
        let mut ok = 0;
        for t in tasks {
            ok += t.await.unwrap();
        }
        ok
    });
    assert_eq!(ok, 240);
}

#[test]
fn delayed_responses_do_not_block_others() {
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, send) = h3_client(&server).await;
        let mut slow_send = send.clone();
        let slow = tokio::spawn(async move { fetch(&mut slow_send, "GET", "/delay?ms=300").await });
        let mut fast_send = send.clone();
        let (st, _, body) = fetch(&mut fast_send, "GET", "/ping").await;
        assert_eq!((st, body.as_slice()), (200, &b"pong"[..]));
        assert!(
            !slow.is_finished(),
            "the delayed response came before the fast one"
        );
        let (st, _, _) = slow.await.unwrap();
        assert_eq!(st, 200);
    });
}

// ---- raw QUIC streams with the wire crate's frames ----

/// Opens our control stream (SETTINGS with a 4096-byte QPACK table) and the QPACK encoder
/// stream; returns the encoder stream.
async fn raw_setup(conn: &quinn::Connection) -> (quinn::SendStream, quinn::SendStream) {
    let mut ctrl = conn.open_uni().await.unwrap();
    let mut buf = Vec::new();
    let settings = h2lab_wire::h3::frame::Settings {
        qpack_max_table_capacity: 0,
        qpack_blocked_streams: 0,
        ..Default::default()
    };
    h2lab_wire::h3::control::write_control_stream_start(settings, &mut buf);
    ctrl.write_all(&buf).await.unwrap();
    let mut enc = conn.open_uni().await.unwrap();
    buf.clear();
    UniStreamType::QpackEncoder.write(&mut buf);
    enc.write_all(&buf).await.unwrap();
    (ctrl, enc)
}

/// Sends a GET on a new stream and returns the raw response stream bytes.
async fn raw_get(conn: &quinn::Connection, path: &str) -> Vec<u8> {
    let (mut tx, mut rx) = conn.open_bi().await.unwrap();
    tx.write_all(&get_frame(path)).await.unwrap();
    tx.finish().unwrap();
    rx.read_to_end(64 << 20).await.unwrap()
}

#[test]
fn qpack_dynamic_table_bomb_is_a_stream_error() {
    // One 4000-byte entry referenced 2000 times: 8 MB of decoded fields from a 2 KB section.
    // The decoder stops at SETTINGS_MAX_FIELD_SECTION_SIZE: the stream is reset with
    // H3_EXCESSIVE_LOAD, the connection keeps serving.
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, conn) = quic_connect(&server).await;
        let (_ctrl, mut enc) = raw_setup(&conn).await;
        let mut ins = Vec::new();
        h2lab_wire::qpack::instructions::write_set_capacity(4096, &mut ins);
        h2lab_wire::qpack::instructions::write_insert_with_literal_name(
            b"x-bomb",
            &vec![b'a'; 4000],
            &mut ins,
        );
        enc.write_all(&ins).await.unwrap();
        // Required Insert Count 1 (encoded 2 with 128 max entries), Base 1, then indexed
        // dynamic field lines with relative index 0.
        let mut section = vec![0x02, 0x00];
        section.extend(std::iter::repeat_n(0x80u8, 2000));
        let mut frame = Vec::new();
        h2lab_wire::h3::request::write_headers(&section, &mut frame);
        let (mut tx, mut rx) = conn.open_bi().await.unwrap();
        tx.write_all(&frame).await.unwrap();
        tx.finish().unwrap();
        let err = rx.read_to_end(1 << 20).await.unwrap_err();
        assert!(
            matches!(err, quinn::ReadToEndError::Read(quinn::ReadError::Reset(code)) if code == quinn::VarInt::from_u32(0x0107)),
            "{err:?}"
        );
        let body = raw_get(&conn, "/ping").await;
        assert!(body.ends_with(b"pong"), "{body:?}");
    });
}

#[test]
fn bytes_behind_a_blocked_section_are_bounded() {
    // A header section that needs a dynamic-table insert the client never sends blocks the
    // stream; reading what follows returns flow-control credit, so the server must bound what
    // it queues behind the section: past 1 MiB the stream is reset with H3_EXCESSIVE_LOAD
    // (0x0107) and the connection keeps serving.
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, conn) = quic_connect(&server).await;
        let (_ctrl, _enc) = raw_setup(&conn).await;
        // Required Insert Count 1 (encoded 2), Base 1, one indexed dynamic field line: blocked.
        let section = [0x02u8, 0x00, 0x80];
        let mut frame = Vec::new();
        h2lab_wire::h3::request::write_headers(&section, &mut frame);
        let body = vec![b'b'; 4 << 20];
        h2lab_wire::h3::request::write_data_header(body.len() as u64, &mut frame);
        let (mut tx, mut rx) = conn.open_bi().await.unwrap();
        // The write ends early when the server stops the stream; that is expected.
        let _ = tx.write_all(&frame).await;
        let _ = tx.write_all(&body).await;
        let _ = tx.finish();
        let err = rx.read_to_end(1 << 20).await.unwrap_err();
        assert!(
            matches!(err, quinn::ReadToEndError::Read(quinn::ReadError::Reset(code)) if code == quinn::VarInt::from_u32(0x0107)),
            "{err:?}"
        );
        let body = raw_get(&conn, "/ping").await;
        assert!(body.ends_with(b"pong"), "{body:?}");
    });
}

#[test]
fn abandoned_streams_are_forgotten() {
    // Many large responses abandoned mid-way (STOP_SENDING and RESET_STREAM): the server
    // drops them and keeps serving the connection.
    let (server, _dir) = start_h3(|c| c.max_concurrent_streams = 16);
    rt().block_on(async {
        let (_ep, conn) = quic_connect(&server).await;
        let (_ctrl, _enc) = raw_setup(&conn).await;
        for _round in 0..4 {
            let mut streams = Vec::new();
            for _ in 0..16 {
                let (mut tx, mut rx) = conn.open_bi().await.unwrap();
                tx.write_all(&get_frame("/data?size=50m")).await.unwrap();
                tx.finish().unwrap();
                let mut buf = [0u8; 1000];
                let n = rx.read(&mut buf).await.unwrap().unwrap();
                assert!(n > 0);
                streams.push(rx);
            }
            for mut rx in streams {
                rx.stop(0x010cu32.into()).unwrap();
            }
        }
        // Half-sent requests abandoned with RESET_STREAM.
        for _ in 0..16 {
            let (mut tx, _rx) = conn.open_bi().await.unwrap();
            tx.write_all(&get_frame("/ping")[..3]).await.unwrap();
            tx.reset(0x010cu32.into()).unwrap();
        }
        let body = tokio::time::timeout(Duration::from_secs(20), raw_get(&conn, "/ping"))
            .await
            .expect("the connection still serves");
        assert!(body.ends_with(b"pong"));
    });
}

#[test]
fn graceful_stop_sends_goaway() {
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, conn) = quic_connect(&server).await;
        let (_ctrl, _enc) = raw_setup(&conn).await;
        let body = raw_get(&conn, "/ping").await;
        assert!(body.ends_with(b"pong"));
        // The server's control stream: type, SETTINGS, and at the stop GOAWAY.
        let mut control = None;
        for _ in 0..3 {
            let mut rx = conn.accept_uni().await.unwrap();
            let mut first = [0u8; 1];
            rx.read_exact(&mut first).await.unwrap();
            if first[0] == 0x00 {
                control = Some(rx);
                break;
            }
        }
        let mut control = control.expect("a control stream");
        server.shutdown();
        let mut reader = ControlReader::new(Role::Client);
        let mut data = Vec::new();
        let mut goaway = None;
        let mut settings = false;
        let mut buf = [0u8; 4096];
        while goaway.is_none() {
            match control.read(&mut buf).await {
                Ok(Some(n)) => data.extend_from_slice(&buf[..n]),
                _ => break,
            }
            let used = reader
                .recv(&data, false, |ev| match ev {
                    ControlEvent::GoAway(id) => goaway = Some(id),
                    ControlEvent::Settings(_) => settings = true,
                    _ => {}
                })
                .unwrap();
            data.drain(..used);
        }
        assert!(settings, "SETTINGS first");
        // Stream 0 was the one request: the first unprocessed one is 4.
        assert_eq!(goaway, Some(4));
        drop(server);
    });
}

#[test]
fn a_client_that_never_reads_does_not_stall_others() {
    // Ten 50 MB responses nobody reads: QUIC flow control stops them at the client's
    // window; the server's loop keeps serving this connection's other streams and other
    // connections.
    let (server, _dir) = start_h3(|_| {});
    rt().block_on(async {
        let (_ep, slow) = quic_connect(&server).await;
        let (_ctrl, _enc) = raw_setup(&slow).await;
        let mut unread = Vec::new();
        for _ in 0..10 {
            let (mut tx, rx) = slow.open_bi().await.unwrap();
            tx.write_all(&get_frame("/data?size=50m")).await.unwrap();
            tx.finish().unwrap();
            unread.push(rx);
        }
        let (_ep2, other) = quic_connect(&server).await;
        let (_c2, _e2) = raw_setup(&other).await;
        for conn in [&other, &slow] {
            let body = tokio::time::timeout(Duration::from_secs(20), raw_get(conn, "/ping"))
                .await
                .expect("served while a reader stalls");
            assert!(body.ends_with(b"pong"));
        }
        drop(unread);
    });
}

// ---- independent client ----

fn quic_go_client() -> Option<std::path::PathBuf> {
    let mut c = vec![
        std::path::PathBuf::from("/usr/local/bin/quic-go-client"),
        std::path::PathBuf::from("/usr/bin/quic-go-client"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        c.push(std::path::Path::new(&home).join("go/bin/quic-go-client"));
    }
    common::tool("quic-go-client", &c)
}

#[test]
fn quic_go_client_gets_exact_bodies() {
    let Some(client) = quic_go_client() else {
        return;
    };
    let (server, _dir) = start_h3(|_| {});
    let addr = server.h3_addr().unwrap();
    let out = std::process::Command::new(&client)
        .arg("-insecure")
        .arg(format!("https://{addr}/ping"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Response Body (4 bytes):"), "{text}");
    assert!(text.contains("pong"), "{text}");
    // -q: bodies are read but not printed; the sizes are logged.
    let out = std::process::Command::new(&client)
        .arg("-insecure")
        .arg("-q")
        .arg(format!("https://{addr}/data?size=10m"))
        .arg(format!("https://{addr}/data?size=653"))
        .arg(format!("https://{addr}/status/404"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Response Body: 10485760 bytes"), "{text}");
    assert!(text.contains("Response Body: 653 bytes"), "{text}");
    assert!(text.contains("StatusCode:404"), "{text}");
}

// ---- Alt-Svc on the TCP side ----

#[test]
fn tls_responses_advertise_h3_and_cleartext_ones_do_not() {
    let (server, _dir) = common::start_tls(|c| c.h3 = true);
    let tls = server.tls_addr().unwrap();
    let want = format!("h3=\":{}\"", tls.port());
    assert_eq!(server.h3_addr(), Some(tls));
    // HTTP/1.1 over TLS.
    let mut c = common::connect_tls(tls, server.cert_path().unwrap(), &[b"http/1.1"]);
    let r = c.get("/ping");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("alt-svc"), Some(want.as_str()));
    // Cleartext: no HTTP/3 there to advertise.
    let mut c = common::connect(server.addr().unwrap());
    let r = c.get("/ping");
    assert_eq!(r.header("alt-svc"), None);
    // HTTP/2 over TLS, twice (the second head comes from the HPACK head cache).
    rt().block_on(async {
        let cfg = common::tls_client_config(server.cert_path().unwrap(), &[b"h2"]);
        let tcp = tokio::net::TcpStream::connect(tls).await.unwrap();
        let stream = tokio_rustls::TlsConnector::from(cfg)
            .connect("localhost".try_into().unwrap(), tcp)
            .await
            .unwrap();
        let (client, conn) = h2::client::handshake(stream).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        for _ in 0..2 {
            let mut client = client.clone().ready().await.unwrap();
            let req = http::Request::get("https://localhost/ping")
                .body(())
                .unwrap();
            let (fut, _) = client.send_request(req, true).unwrap();
            let resp = fut.await.unwrap();
            assert_eq!(resp.status(), 200);
            assert_eq!(resp.headers()["alt-svc"], want.as_str());
        }
    });
    // Without --h3 nothing is advertised.
    let (plain, _dir2) = common::start_tls(|_| {});
    let mut c = common::connect_tls(
        plain.tls_addr().unwrap(),
        plain.cert_path().unwrap(),
        &[b"http/1.1"],
    );
    assert_eq!(c.get("/ping").header("alt-svc"), None);
    assert_eq!(plain.h3_addr(), None);
}

#[test]
fn h3_without_a_tls_port_is_a_configuration_error() {
    let mut cfg = h2lab_server::ServerConfig::local();
    cfg.h3 = true;
    let err = h2lab_server::spawn(cfg).unwrap_err();
    assert!(matches!(err, h2lab_server::ServerError::Config(_)), "{err}");
}

/// oha with HTTP/3 takes about 20 minutes to build (`INSTALL_OHA_H3=1
/// .ci/install-anchors.sh`), so CI does not install it: this test runs only with
/// `H2LAB_TEST_OHA_H3=1` (then a missing or HTTP/3-less oha fails it).
#[test]
fn oha_http3_gets_every_response() {
    if std::env::var("H2LAB_TEST_OHA_H3").as_deref() != Ok("1") {
        println!("skipped: set H2LAB_TEST_OHA_H3=1 to run oha over HTTP/3");
        return;
    }
    let oha = h2lab_testkit::which("oha")
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            let p = std::path::Path::new(&home).join(".cargo/bin/oha");
            p.exists().then_some(p)
        })
        .expect("H2LAB_TEST_OHA_H3=1 but oha is not installed");
    let (server, _dir) = start_h3(|_| {});
    let addr = server.h3_addr().unwrap();
    let out = std::process::Command::new(oha)
        .args(["--http-version", "3", "--insecure", "--no-tui"])
        .args(["--output-format", "json", "-n", "2000", "-c", "10"])
        .arg(format!("https://{addr}/data?size=653"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["statusCodeDistribution"],
        serde_json::json!({"200": 2000}),
        "{v}"
    );
    assert_eq!(v["errorDistribution"], serde_json::json!({}), "{v}");
}

/// Full socket buffers must not lose a wake-up. The server's UDP socket gets 8 KiB send and
/// receive buffers (16 KiB once the kernel doubles them) instead of 4 MiB, and the client's
/// receive buffer is as small: datagrams are dropped at the receivers (loss recovery's
/// timers must wake the server up), and where the kernel holds sent datagrams the server's
/// sends find the socket full (kept until it is writable: writable interest only then).
/// Three 3 MB responses at once on one connection and one more on a second connection all
/// arrive byte-exact; a lost wake-up would stall a transfer into the client's idle timeout
/// (this test's own deadline is 120 s). The drops are asserted: they are what the test is
/// for. A full send buffer is not: on loopback the kernel hands each datagram to the
/// receiver within the send call (the sender's buffer is freed at once), so the sends never
/// block there, and the count is only printed.
#[test]
fn full_socket_buffers_lose_no_wake_up() {
    let (sends, drops) = serve_and_fetch(8192, Some(8192), 3_000_000);
    assert!(
        drops > 0,
        "no datagram was dropped at a full receive buffer: the test did not test"
    );
    eprintln!(
        "datagrams dropped at full receive buffers: {drops}; server sends that found the \
         socket buffer full: {}",
        sends.blocked
    );
}

/// Every GSO batch the server sends is one the kernel takes. Large responses on loopback
/// grow the congestion window past 64 datagrams, and 64 datagrams of 1,452 octets (92,928)
/// exceed what one `sendmsg` may carry: the kernel refused each such batch (EMSGSIZE),
/// every datagram in it was lost, and the transfer waited a probe timeout for each (about
/// 27 ms on loopback: 100 KB responses at `-c10` ran at a quarter of HTTP/2's rate). With
/// the batch capped at 65,507 octets no send fails. (Loss recovery hides the failures from
/// the byte counts, so the test counts them at the socket.)
#[test]
fn gso_batches_are_never_refused_by_the_kernel() {
    let (sends, _) = serve_and_fetch(4 << 20, None, 3_000_000);
    assert_eq!(sends.failed, 0, "sends the kernel refused: {sends:?}");
}

/// Serves HTTP/3 on a socket with `buffer`-byte socket buffers, fetches three `size`-byte
/// responses at once on one connection and one on a second (the client's receive buffer
/// set to `client_rcvbuf` if given), checks each body byte for byte, stops the server and
/// returns its send counters and the datagrams the kernel dropped at the two sockets' full
/// receive buffers (0 where `/proc` cannot tell).
fn serve_and_fetch(
    buffer: usize,
    client_rcvbuf: Option<usize>,
    size: usize,
) -> (h2lab_server::quic::udp::SendCounts, u64) {
    let dir = tempfile::tempdir().unwrap();
    let config = h2lab_server::ServerConfig {
        tls_listen: Some("127.0.0.1:0".parse().unwrap()),
        cert_dir: Some(dir.path().to_path_buf()),
        h3: true,
        ..h2lab_server::ServerConfig::local()
    };
    let paths = h2lab_server::tls::ensure_certificate(&config).unwrap();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    let shutdown = h2lab_server::Shutdown::new();
    let server = {
        let (config, shutdown) = (config.clone(), shutdown.clone());
        std::thread::spawn(move || {
            h2lab_server::testing::serve_h3_with_buffers(socket, &config, buffer, &shutdown)
        })
    };
    let tls = common::tls_client_config(&paths.cert, &[b"h3"]);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from((*tls).clone()).unwrap();
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut tc = quinn::TransportConfig::default();
    tc.max_concurrent_uni_streams(16u32.into());
    cfg.transport_config(Arc::new(tc));
    let drops = rt().block_on(async {
        let fetch_all = async {
            let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let client_port = client.local_addr().unwrap().port();
            if let Some(rcvbuf) = client_rcvbuf {
                let state = quinn::udp::UdpSocketState::new((&client).into()).unwrap();
                state
                    .set_recv_buffer_size((&client).into(), rcvbuf)
                    .unwrap();
            }
            let mut ep = quinn::Endpoint::new(
                quinn::EndpointConfig::default(),
                None,
                client,
                Arc::new(quinn::TokioRuntime),
            )
            .unwrap();
            ep.set_default_client_config(cfg);
            let mut tasks = Vec::new();
            for conn_no in 0..2 {
                let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
                let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
                    .await
                    .unwrap();
                tokio::spawn(async move {
                    let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
                });
                for _ in 0..(if conn_no == 0 { 3 } else { 1 }) {
                    let mut send = send.clone();
                    tasks.push(tokio::spawn(async move {
                        fetch(&mut send, "GET", &format!("/data?size={size}")).await
                    }));
                }
            }
            for t in tasks {
                let (st, _, body) = t.await.unwrap();
                assert_eq!(st, 200);
                assert!(body == filler(size), "body differs ({} bytes)", body.len());
            }
            // Counted while both sockets are open.
            let drops: u64 = h2lab_procnet::entries(h2lab_procnet::Proto::Udp)
                .iter()
                .filter(|e| e.local_port == client_port || e.local_port == addr.port())
                .map(|e| e.drops)
                .sum();
            (ep, drops)
        };
        let (ep, drops) = tokio::time::timeout(Duration::from_secs(120), fetch_all)
            .await
            .expect("the transfers stalled");
        ep.close(0u32.into(), b"");
        drops
    });
    shutdown.trigger();
    (server.join().unwrap().unwrap(), drops)
}
