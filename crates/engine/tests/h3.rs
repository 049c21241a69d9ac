//! The HTTP/3 client session ([`h2lab_engine::h3::H3Session`]) on the QUIC shell against
//! `h2lab serve --h3` on loopback: exact request counts, statuses and body bytes, a server
//! stream limit below `-m`, GOAWAY on a server stop; and against Caddy (HTTP/3 by quic-go)
//! (started by `h2lab-testkit`; skipped locally when it is not installed, a failure in CI).

mod support;

use std::net::SocketAddr;

use h2lab_engine::h3::QpackSettings;
use h2lab_server::RunningServer;
use support::{start_serve as start_h3, template, Counts, Run};

/// Runs `n` requests for `path` on `c` connections with `m` streams each; `on_turn` sees the
/// counts every loop turn (to stop the server mid-run). Bounded by a 60 s deadline.
fn run(
    server: &RunningServer,
    path: &str,
    n: u64,
    c: usize,
    m: u32,
    on_turn: impl FnMut(&Counts),
) -> Counts {
    run_at(
        server.h3_addr().unwrap(),
        "localhost",
        path,
        n,
        c,
        m,
        on_turn,
    )
}

/// [`run`] against any HTTP/3 server at `addr` (static-only QPACK).
fn run_at(
    addr: SocketAddr,
    authority: &str,
    path: &str,
    n: u64,
    c: usize,
    m: u32,
    on_turn: impl FnMut(&Counts),
) -> Counts {
    let t = template(authority, path, &[], QpackSettings::STATIC);
    Run::new(addr, t, n, c, m).run(on_turn)
}

#[test]
fn small_responses_exact_counts() {
    let (server, _dir) = start_h3(|_| {});
    let counts = run(&server, "/data?size=653", 200, 2, 10, |_| {});
    assert_eq!(counts.started, 200);
    assert_eq!(counts.completed, 200, "{counts:?}");
    assert_eq!(counts.status, [200, 0, 0, 0]);
    assert_eq!(counts.body_bytes, 200 * 653);
    assert!(counts.errors.is_empty(), "{counts:?}");
}

#[test]
fn ten_megabyte_responses() {
    let (server, _dir) = start_h3(|_| {});
    let size = 10 * 1024 * 1024;
    let counts = run(&server, &format!("/data?size={size}"), 3, 1, 2, |_| {});
    assert_eq!(counts.completed, 3, "{counts:?}");
    assert_eq!(counts.status, [3, 0, 0, 0]);
    assert_eq!(counts.body_bytes, 3 * size);
}

#[test]
fn server_stream_limit_below_m() {
    let (server, _dir) = start_h3(|c| c.max_concurrent_streams = 4);
    let counts = run(&server, "/data?size=100", 100, 1, 32, |_| {});
    assert_eq!(counts.completed, 100, "{counts:?}");
    assert_eq!(counts.reset + counts.refused, 0);
    assert_eq!(counts.body_bytes, 100 * 100);
}

#[test]
fn goaway_on_server_stop() {
    let (server, _dir) = start_h3(|_| {});
    let mut stopped = false;
    let counts = run(&server, "/data?size=653", 1_000_000, 1, 10, |c| {
        if !stopped && c.completed >= 50 {
            stopped = true;
            server.shutdown();
        }
    });
    assert!(stopped);
    assert_eq!(counts.goaways, 1, "{counts:?}");
    assert!(counts.completed >= 50, "{counts:?}");
    // The server drains before it closes: what it accepted is answered and acknowledged,
    // so nothing in flight is lost with the connection (requests sent after the GOAWAY are
    // refused instead).
    assert_eq!(counts.lost, 0, "{counts:?}");
    // Every request sent is accounted for, and far fewer were sent than asked for.
    assert_eq!(
        counts.completed + counts.reset + counts.refused + counts.lost,
        counts.started,
        "{counts:?}"
    );
    assert!(counts.started < 1_000_000);
    assert_eq!(counts.body_bytes, counts.completed * 653);
    assert!(counts.errors.is_empty(), "{counts:?}");
}

#[test]
fn caddy_small_and_ten_megabyte_responses() {
    let big = 10 * 1024 * 1024;
    h2lab_testkit::require_anchor!("caddy");
    let caddy = h2lab_testkit::Caddy::builder()
        .file_size("file653", 653)
        .file_size("file10m", big)
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = caddy.addr();
    let authority = addr.to_string();
    let counts = run_at(addr, &authority, "/file653", 300, 3, 10, |_| {});
    assert_eq!(counts.completed, 300, "{counts:?}");
    assert_eq!(counts.status, [300, 0, 0, 0]);
    assert_eq!(counts.body_bytes, 300 * 653);
    assert!(counts.errors.is_empty(), "{counts:?}");
    let counts = run_at(addr, &authority, "/file10m", 3, 1, 3, |_| {});
    assert_eq!(counts.completed, 3, "{counts:?}");
    assert_eq!(counts.status, [3, 0, 0, 0]);
    assert_eq!(counts.body_bytes, 3 * big as u64);
}
