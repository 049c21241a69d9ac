//! The HTTP/3 client session ([`h2lab_engine::h3::H3Session`]) on the QUIC shell against
//! `h2lab serve --h3` on loopback: exact request counts, statuses and body bytes, a server
//! stream limit below `-m`, GOAWAY on a server stop; and against Caddy (HTTP/3 by quic-go)
//! (started by `h2lab-testkit`; skipped locally when it is not installed, a failure in CI).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use h2lab_engine::h3::{quic_client_config, H3Session};
use h2lab_engine::session::SessionEvents;
use h2lab_quic::quinn_proto::Connection;
use h2lab_quic::{ConnApp, Shell, UdpIo};
use h2lab_server::{RunningServer, ServerConfig};
use h2lab_wire::qpack::{EncoderConfig, RequestTemplate};
use mio::{Events, Interest, Poll, Token};

/// What the sessions of one run reported (the test's stand-in for the worker's statistics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct H3Counts {
    started: u64,
    completed: u64,
    /// Final statuses by class: 2xx, 3xx, 4xx, 5xx.
    status: [u64; 4],
    body_bytes: u64,
    reset: u64,
    refused: u64,
    goaways: u64,
    /// In flight when the connection was lost.
    lost: u64,
    protocol_errors: u64,
}

/// Requests left to send and the counts (the shell's context).
struct Work {
    todo: u64,
    counts: H3Counts,
}

impl SessionEvents for Work {
    fn status(&mut self, _slot: u32, status: u16) {
        if let Some(c) = self
            .counts
            .status
            .get_mut(usize::from(status / 100).wrapping_sub(2))
        {
            *c += 1;
        }
    }
    fn header_bytes(&mut self, _wire: usize, _decoded: usize) {}
    fn body(&mut self, _slot: u32, len: usize) {
        self.counts.body_bytes += len as u64;
    }
    fn complete(&mut self, _slot: u32) {
        self.counts.completed += 1;
    }
    fn reset(&mut self, _slot: u32, _code: u32) {
        self.counts.reset += 1;
    }
    fn refused(&mut self, _slot: u32) {
        self.counts.refused += 1;
    }
    fn goaway(&mut self, _last_stream_id: u32, _code: u32) {
        self.counts.goaways += 1;
    }
    fn push_refused(&mut self) {}
}

/// A session on the shell, submitting while there is work (slots are not reused here).
struct App {
    session: H3Session,
    lost_counted: bool,
}

impl ConnApp for App {
    type Ctx = Work;
    fn drive(&mut self, conn: &mut Connection, work: &mut Work, _now: Instant) {
        self.session.on_quic(conn, work);
        while work.todo > 0 && self.session.can_submit() {
            let slot = work.counts.started as u32;
            if self.session.submit(conn, slot, 0).is_err() {
                break;
            }
            work.todo -= 1;
            work.counts.started += 1;
        }
        self.session.flush(conn);
        if self.session.wants_close() {
            self.session.terminate(conn);
        }
        if self.session.is_closed() && !self.lost_counted {
            self.lost_counted = true;
            work.counts.lost += u64::from(self.session.in_flight());
            work.counts.protocol_errors += u64::from(self.session.error().is_some());
        }
    }
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn on_shutdown(&mut self, conn: &mut Connection, _now: Instant) {
        self.session.terminate(conn);
    }
}

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

fn template(authority: &str, path: &str) -> RequestTemplate {
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", authority.as_bytes()),
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
    on_turn: impl FnMut(&H3Counts),
) -> H3Counts {
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

/// [`run`] against any HTTP/3 server at `addr`.
fn run_at(
    addr: SocketAddr,
    authority: &str,
    path: &str,
    n: u64,
    c: usize,
    m: u32,
    mut on_turn: impl FnMut(&H3Counts),
) -> H3Counts {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut shell: Shell<App> = Shell::new(UdpIo::new(sock, true).unwrap(), None, c);
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
                App {
                    session: H3Session::new(template(authority, path), m),
                    lost_counted: false,
                },
            )
            .unwrap();
    }
    let mut work = Work {
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
    assert_eq!(counts.protocol_errors, 0);
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
    assert_eq!(counts.protocol_errors, 0);
    let counts = run_at(addr, &authority, "/file10m", 3, 1, 3, |_| {});
    assert_eq!(counts.completed, 3, "{counts:?}");
    assert_eq!(counts.status, [3, 0, 0, 0]);
    assert_eq!(counts.body_bytes, 3 * big as u64);
}
