//! Per-stream flow control on a shared h2c-mux upstream connection: a client that reads
//! nothing of a 10 MB response stops only its own upstream stream (at its window); another
//! client on the same upstream connection goes on; the slow one later gets every byte; the
//! proxy's queue for the slow client stays bounded.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{backends, proxy, Client};
use h2lab_proxy::UpstreamProtocol;

const SIZE: usize = 10 * 1024 * 1024;
/// What the proxy may hold for one client: the upstream stream window (256 KiB), the output
/// high-water mark (64 KiB) and a frame or two of slack.
const QUEUE_BOUND: u64 = 512 * 1024;
const UPSTREAM_TIMEOUT: Duration = Duration::from_millis(300);

/// A client socket with a small receive buffer, so that the kernel cannot absorb the body.
fn small_window_client(addr: SocketAddr) -> std::net::TcpStream {
    let sock = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .unwrap();
    sock.set_recv_buffer_size(16 * 1024).unwrap();
    sock.connect(&addr.into()).unwrap();
    let s: std::net::TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

#[test]
fn a_stalled_client_stops_only_its_own_stream() {
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H2cMux, |c| {
        c.front.threads = 1;
        c.pool = 1;
        c.streams = 8;
        // Short, so that the stall below outlasts it: holding a slow client's stream back
        // is the proxy's doing, not an upstream timeout.
        c.upstream_timeout = UPSTREAM_TIMEOUT;
    });
    let addr = p.addr().unwrap();
    let path = format!("/data?size={SIZE}");

    // The slow client asks for 10 MB and reads nothing.
    let mut slow = small_window_client(addr);
    write!(slow, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let stalled = common::wait_until(20, || {
        let s = p.stats().snapshot(Duration::from_secs(1));
        s.upstream_requests == 1 && s.largest_client_queue > 0
    });
    assert!(stalled, "the slow client's request went upstream");

    // Another client, same upstream connection (pool 1), completes 100 requests (and goes
    // on until the stall lasted three upstream timeouts).
    let mut fast = Client::connect(addr);
    let t0 = Instant::now();
    let mut k = 0;
    while k < 100 || t0.elapsed() < 3 * UPSTREAM_TIMEOUT {
        k += 1;
        let r = fast.get("/data?size=10000");
        assert_eq!(r.status, 200, "request {k}");
        assert_eq!(r.body.len(), 10_000, "request {k}");
    }
    let s = p.stats().snapshot(Duration::from_secs(1));
    assert_eq!(
        s.upstream_connections_opened, 1,
        "one shared connection: {s}"
    );
    assert_eq!(s.upstream_requests, 1 + k as u64, "{s}");
    // The slow client's stream is still open upstream (stopped at its window, not drained
    // into the proxy), and what the proxy holds for it is bounded.
    assert_eq!(s.open_upstream_streams, 1, "{s}");
    assert!(s.largest_client_queue <= QUEUE_BOUND, "{s}");

    // Now the slow client reads: every byte arrives, the same bytes as from the backend.
    let mut got = Vec::with_capacity(SIZE + 1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut head_end = None;
    let mut peak = 0;
    while head_end.is_none_or(|h| got.len() < h + SIZE) {
        let n = slow.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
        if head_end.is_none() {
            head_end = got.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
        }
        if got.len() % (1024 * 1024) < n {
            let s = p.stats().snapshot(Duration::from_secs(1));
            peak = peak.max(s.largest_client_queue);
        }
    }
    let h = head_end.unwrap();
    let head = String::from_utf8_lossy(&got[..h]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains(&format!("content-length: {SIZE}")), "{head}");
    assert_eq!(got.len(), h + SIZE);
    let direct = Client::connect(b[0].addr().unwrap()).get(&path);
    assert!(
        direct.body == got[h..],
        "the body differs from the backend's"
    );
    assert!(peak <= QUEUE_BOUND, "queue peaked at {peak}");

    drop(slow);
    drop(fast);
    let settled = common::wait_until(10, || {
        let s = p.stats().snapshot(Duration::from_secs(1));
        s.open_exchanges == 0 && s.open_upstream_streams == 0
    });
    assert!(settled);
    p.shutdown();
    let s = p.join().unwrap();
    assert_eq!(s.bad_gateway_reset + s.gateway_timeout, 0, "{s}");
}

/// The same with an HTTP/2 client (the `h2` crate) as the slow one: it takes none of a 10 MB
/// response (no flow-control credit back to the proxy) while an HTTP/1.1 client completes 100
/// requests on the same upstream connection; then it reads everything.
#[test]
fn a_stalled_http2_client_stops_only_its_own_stream() {
    use bytes::Bytes;
    let b = backends(1);
    let p = proxy(&b, UpstreamProtocol::H2cMux, |c| {
        c.front.threads = 1;
        c.pool = 1;
        c.streams = 8;
    });
    let addr = p.addr().unwrap();
    let path = format!("/data?size={SIZE}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut body, _conn) = rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.unwrap();
        let req = http::Request::get(format!("http://localhost{path}"))
            .body(())
            .unwrap();
        let (fut, _) = client.send_request(req, true).unwrap();
        let resp = fut.await.unwrap();
        assert_eq!(resp.status(), 200);
        (resp.into_body(), conn)
    });
    // The h2 crate's windows (64 KiB) fill and stay full: nothing is released.
    let stalled = common::wait_until(20, || {
        rt.block_on(tokio::task::yield_now());
        let s = p.stats().snapshot(Duration::from_secs(1));
        s.largest_client_queue > 128 * 1024
    });
    assert!(
        stalled,
        "the proxy holds bytes for the stalled HTTP/2 client"
    );

    let mut fast = Client::connect(addr);
    for k in 0..100 {
        let r = fast.get("/data?size=10000");
        assert_eq!(r.status, 200, "request {k}");
        assert_eq!(r.body.len(), 10_000, "request {k}");
    }
    let s = p.stats().snapshot(Duration::from_secs(1));
    assert_eq!(s.upstream_connections_opened, 1, "{s}");
    assert_eq!(s.open_upstream_streams, 1, "{s}");
    assert!(s.largest_client_queue <= QUEUE_BOUND, "{s}");

    let got = rt.block_on(async {
        let mut got = Vec::with_capacity(SIZE);
        while let Some(chunk) = body.data().await {
            let chunk: Bytes = chunk.unwrap();
            got.extend_from_slice(&chunk);
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        got
    });
    assert_eq!(got.len(), SIZE);
    let direct = Client::connect(b[0].addr().unwrap()).get(&path);
    assert!(direct.body == got, "the body differs from the backend's");
    drop(fast);
    p.shutdown();
    let s = p.join().unwrap();
    assert_eq!(s.bad_gateway_reset + s.gateway_timeout, 0, "{s}");
}
