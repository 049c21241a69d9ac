//! The HTTP/3 client connection ([`h2lab_engine::h3::H3Client`]) on the QUIC shell against
//! `h2lab serve --h3` on loopback: exact request counts, statuses and body bytes, a server
//! stream limit below `-m`, GOAWAY on a server stop.

use std::time::{Duration, Instant};

use h2lab_engine::h3::{quic_client_config, H3Client, H3Counts, H3Work};
use h2lab_quic::{Shell, UdpIo};
use h2lab_server::{RunningServer, ServerConfig};
use h2lab_wire::qpack::{EncoderConfig, RequestTemplate};
use mio::{Events, Interest, Poll, Token};

fn start_h3(f: impl FnOnce(&mut ServerConfig)) -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ServerConfig::local();
    c.listen = None;
    c.tls_listen = Some("127.0.0.1:0".parse().unwrap());
    c.cert_dir = Some(dir.path().to_path_buf());
    c.h3 = true;
    f(&mut c);
    (h2lab_server::spawn(c).unwrap(), dir)
}

fn template(path: &str) -> RequestTemplate {
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b"user-agent", b"h2lab-test"),
    ];
    RequestTemplate::new(
        fields,
        [path.as_bytes()],
        EncoderConfig {
            use_dynamic_table: false,
            max_table_capacity: 0,
        },
    )
    .unwrap()
}

/// Runs `n` requests for `path` on `c` connections with `m` streams each; `on_turn` sees the
/// counts every loop turn (to stop the server mid-run). Bounded by a 60 s deadline.
fn run(
    server: &RunningServer,
    path: &str,
    n: u64,
    c: usize,
    m: u32,
    mut on_turn: impl FnMut(&H3Counts),
) -> H3Counts {
    let addr = server.h3_addr().unwrap();
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut shell: Shell<H3Client> = Shell::new(UdpIo::new(sock, true).unwrap(), None, c);
    let mut poll = Poll::new().unwrap();
    poll.registry()
        .register(
            shell.io().socket(),
            Token(0),
            Interest::READABLE | Interest::WRITABLE,
        )
        .unwrap();
    let cfg = quic_client_config(true, &Default::default()).unwrap();
    let now = Instant::now();
    for _ in 0..c {
        shell
            .connect(
                cfg.clone(),
                addr,
                "localhost",
                now,
                H3Client::new(template(path), m),
            )
            .unwrap();
    }
    let mut work = H3Work {
        todo: n,
        counts: H3Counts::default(),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut events = Events::with_capacity(16);
    loop {
        let now = Instant::now();
        assert!(now < deadline, "run did not finish: {:?}", work.counts);
        shell.drive(now, &mut work);
        on_turn(&work.counts);
        let c = &work.counts;
        let finished = c.completed + c.reset + c.refused + c.lost;
        if shell.connections() == 0 || (work.todo == 0 && finished == c.started) {
            break;
        }
        let timeout = shell
            .next_deadline()
            .map(|t| t.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(100))
            .min(Duration::from_millis(100));
        poll.poll(&mut events, Some(timeout)).unwrap();
        for ev in events.iter() {
            if ev.is_writable() {
                shell.on_writable();
            }
        }
        while shell.read(Instant::now(), |_| unreachable!()).unwrap() {}
    }
    work.counts
}

#[test]
fn small_responses_exact_counts() {
    let (server, _dir) = start_h3(|_| {});
    let counts = run(&server, "/data?size=653", 200, 2, 10, |_| {});
    assert_eq!(counts.started, 200);
    assert_eq!(counts.completed, 200, "{counts:?}");
    assert_eq!(counts.status, [200, 0, 0, 0]);
    assert_eq!(counts.body_bytes, 200 * 653);
    assert_eq!(counts.protocol_errors, 0);
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
    // Every request sent is accounted for, and far fewer were sent than asked for.
    assert_eq!(
        counts.completed + counts.reset + counts.refused + counts.lost,
        counts.started,
        "{counts:?}"
    );
    assert!(counts.started < 1_000_000);
    assert_eq!(counts.body_bytes, counts.completed * 653);
    assert_eq!(counts.protocol_errors, 0);
}
