//! HTTP/3 crosses the link: `h2lab serve --h3` reached through the link's UDP relay
//! by an independent HTTP/3 client (`h3` + `h3-quinn` + `quinn`, the server tests' oracle), with
//! the added round trip visible in the handshake and in every request, and QUIC recovering
//! from the datagrams the link drops.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h2lab_link::{self as link, LinkConfig};
use h2lab_server::{RunningServer, ServerConfig};

mod common;

/// `h2lab serve --h3` on 127.0.0.1 (port 0), with a certificate generated into a temp dir.
fn start_h3() -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ServerConfig::local();
    cfg.listen = None;
    cfg.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    cfg.cert_dir = Some(dir.path().to_path_buf());
    cfg.h3 = true;
    (h2lab_server::spawn(cfg).expect("server starts"), dir)
}

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// Connects to `addr` over HTTP/3: the endpoint, the request sender and the handshake time.
async fn connect(
    server: &RunningServer,
    addr: SocketAddr,
) -> (quinn::Endpoint, SendRequest, Duration) {
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(common::h3_client_config(server.cert_path().unwrap()));
    let t = Instant::now();
    let conn = ep.connect(addr, "localhost").unwrap().await.unwrap();
    let handshake = t.elapsed();
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    (ep, send, handshake)
}

/// GET `path`: status, body length and the time the exchange took.
async fn get(send: &mut SendRequest, path: &str) -> (u16, usize, Duration) {
    let t = Instant::now();
    let req = http::Request::builder()
        .uri(format!("https://localhost{path}"))
        .body(())
        .unwrap();
    let mut s = send.send_request(req).await.unwrap();
    s.finish().await.unwrap();
    let resp = s.recv_response().await.unwrap();
    let mut len = 0;
    while let Some(chunk) = s.recv_data().await.unwrap() {
        len += chunk.remaining();
    }
    (resp.status().as_u16(), len, t.elapsed())
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn http3_crosses_the_link_with_its_rtt() {
    let (server, _dir) = start_h3();
    let h3_addr = server.h3_addr().unwrap();
    let mut c = LinkConfig::new("127.0.0.1:0".parse().unwrap(), h3_addr);
    c.rtt = Duration::from_millis(40);
    let link = link::spawn(c).unwrap();
    let via = link.udp_addr().unwrap();
    rt().block_on(async {
        let (_ep, mut send, direct_hs) = connect(&server, h3_addr).await;
        let mut direct = Vec::new();
        for _ in 0..5 {
            let (st, len, t) = get(&mut send, "/data?size=653").await;
            assert_eq!((st, len), (200, 653));
            direct.push(t);
        }
        let (_ep, mut send, linked_hs) = connect(&server, via).await;
        let mut linked = Vec::new();
        for _ in 0..5 {
            let (st, len, t) = get(&mut send, "/data?size=653").await;
            assert_eq!((st, len), (200, 653));
            linked.push(t);
        }
        let (direct, linked) = (median(direct), median(linked));
        println!(
            "HTTP/3 direct: handshake {direct_hs:?}, GET {direct:?}; \
             through a 40 ms link: handshake {linked_hs:?}, GET {linked:?}"
        );
        // One round trip per request, one for QUIC's handshake (at least).
        assert!(linked >= Duration::from_millis(40), "{linked:?}");
        assert!(linked < direct + Duration::from_millis(140), "{linked:?}");
        assert!(linked_hs >= Duration::from_millis(40), "{linked_hs:?}");
    });
    let st = link.stats();
    assert_eq!(st.udp.flows, 1);
    assert!(
        st.udp.up.datagrams_out >= 6 && st.udp.down.datagrams_out >= 6,
        "{st:?}"
    );
    assert_eq!(st.connections, 0, "no TCP: everything went over UDP");
}

#[test]
fn http3_recovers_from_the_links_datagram_loss() {
    let (server, _dir) = start_h3();
    let mut c = LinkConfig::new("127.0.0.1:0".parse().unwrap(), server.h3_addr().unwrap());
    c.rtt = Duration::from_millis(4);
    c.loss = 0.03;
    c.down_bps = Some(50_000_000);
    let link = link::spawn(c).unwrap();
    let via = link.udp_addr().unwrap();
    rt().block_on(async {
        let (_ep, mut send, _) = connect(&server, via).await;
        for _ in 0..10 {
            let (st, len, _) = get(&mut send, "/data?size=100000").await;
            assert_eq!((st, len), (200, 100_000));
        }
    });
    let st = link.stats();
    // About 3% of ~700 datagrams each way: some were certainly dropped, and QUIC resent them.
    assert!(st.udp.down.lost + st.udp.up.lost > 0, "{st:?}");
    println!("{st}");
}
