//! Standing runs over HTTP/3 (`h2lab_engine::StandingRun` with `--h3`) against
//! `h2lab serve --h3` in process: every client keeps one QUIC connection across the
//! windows, through pauses longer than the server's idle timeout (the paused worker keeps
//! serving quinn's timers and ACKs, and the connections send keep-alive PINGs).
//!
//! The connections are counted from outside the client: each QUIC connection has a UDP
//! socket of its own, connected to the server, so the set of local ports connected to the
//! server's port (`/proc/net/udp`) is the set of connections — a reconnect would show as a
//! new port. Timing: the assertions are counts. The pause longer than the server's idle
//! timeout is not a sleep of a guessed length: it lasts until a witness — a QUIC connection
//! to the same server opened after the pause began, which then sends nothing — has been
//! closed by that idle timeout (see [`idle_witness`]).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_engine::h3::quic_client_config;
use h2lab_quic::quinn_proto::{Connection, ConnectionError, Event};
use h2lab_quic::{ConnApp, Shell, UdpIo};
use mio::{Events, Interest, Poll, Token};

use h2lab_engine::{AppProtocol, BenchConfig, NoopObserver, ProtocolChoice, StandingRun, StopFlag};
use h2lab_server::{RunningServer, ServerConfig};

const WARM: Duration = Duration::from_millis(30);
const MEASURED: Duration = Duration::from_millis(150);
const BODY: u64 = 1000;

/// `h2lab serve --h3` on loopback with the given idle timeout.
fn server(idle: Duration) -> RunningServer {
    let dir = std::env::temp_dir().join(format!("h2lab-standing-h3-test-{}", std::process::id()));
    h2lab_server::spawn(ServerConfig {
        tls_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        cert_dir: Some(dir),
        h3: true,
        idle_timeout: idle,
        ..ServerConfig::local()
    })
    .unwrap()
}

fn h3_config(addr: SocketAddr, clients: u32, threads: u32, streams: u32) -> BenchConfig {
    let url = format!("https://127.0.0.1:{}/data?size={BODY}", addr.port());
    let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
    cfg.protocol = ProtocolChoice::Alpn(vec!["h3".into()]);
    cfg.insecure = true;
    cfg.clients = clients;
    cfg.threads = threads;
    cfg.max_concurrent_streams = streams;
    cfg.require_protocol = Some(AppProtocol::H3);
    cfg
}

/// The local ports of the UDP sockets connected to `server` (Linux: from
/// `/proc/net/udp`; other systems: `None`).
fn quic_ports(server: SocketAddr) -> Option<Vec<u16>> {
    if !h2lab_procnet::has_proc() {
        return None;
    }
    let mut ports: Vec<u16> = h2lab_procnet::entries(h2lab_procnet::Proto::Udp)
        .iter()
        .filter(|e| e.remote_port == server.port() && !e.remote_unspecified)
        .map(|e| e.local_port)
        .collect();
    ports.sort_unstable();
    Some(ports)
}

/// One window: requests completed and none failed, every completed request a 200 with its
/// whole body (give or take the `in_flight` at the window's edges), no reconnect.
fn window(run: &mut StandingRun, in_flight: u64) -> u64 {
    let r = run.measure(WARM, MEASURED, Arc::new(NoopObserver)).unwrap();
    assert!(
        r.requests.completed > 0,
        "window {}: {:?} {:?}",
        run.windows(),
        r.requests,
        r.quic
    );
    assert_eq!(r.requests.failed, 0, "{:?}", r.requests);
    assert_eq!(r.requests.errored, 0, "{:?}", r.requests);
    assert_eq!(
        r.requests.succeeded, r.requests.completed,
        "{:?}",
        r.requests
    );
    // Statuses count at the response's header, completions at its end: they differ by the
    // responses in flight at the window's edges.
    assert!(
        r.status.s2xx.abs_diff(r.requests.completed) <= in_flight,
        "{:?} vs {:?}",
        r.status,
        r.requests
    );
    assert_eq!(r.status.s4xx + r.status.s5xx, 0, "{:?}", r.status);
    assert_eq!(r.request_time.len(), r.requests.completed);
    assert_eq!(r.reconnects, 0, "the connections stayed open");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.app_protocol, Some(AppProtocol::H3));
    assert_eq!(r.elapsed, MEASURED);
    // Body bytes count while measuring, completions only for requests started in the
    // measured period: the bytes exceed the completed requests' bodies by what arrived of
    // the responses in flight at BOTH edges (started in the warm-up, or unfinished at the
    // end), never fall short of them. Under load both edges are full (20.9 responses' worth
    // once, against a bound of one edge's 20).
    let expected = r.requests.completed * BODY;
    assert!(
        r.traffic.bytes_body >= expected && r.traffic.bytes_body - expected <= 2 * in_flight * BODY,
        "{} vs {expected}",
        r.traffic.bytes_body
    );
    r.requests.completed
}

/// Windows until one completes a request: the connections' QUIC handshakes (started by
/// `StandingRun::open`, which does not wait for them) are done. On a busy machine a debug
/// build's handshakes can outlast the first warm-up and measured period (at a load of 15
/// on 2 cores both tests' first windows completed nothing, having started 6 and 10
/// requests); that is the machine, not what these tests check. Returns the windows taken.
fn settle(run: &mut StandingRun) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut n = 0;
    loop {
        let r = run.measure(WARM, MEASURED, Arc::new(NoopObserver)).unwrap();
        n += 1;
        assert_eq!(r.requests.failed, 0, "{:?}", r.requests);
        assert_eq!(r.reconnects, 0, "the connections stayed open");
        if r.requests.completed > 0 {
            return n;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no request completed in 30 s: {:?}",
            r.requests
        );
    }
}

#[test]
fn h3_windows_keep_one_quic_connection_per_client() {
    let srv = server(Duration::from_secs(60));
    let addr = srv.h3_addr().unwrap();
    let cfg = h3_config(addr, 4, 2, 5);
    assert!(StandingRun::supports(&cfg));
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    let settled = settle(&mut run);
    let mut seen = None;
    for _ in 0..4 {
        window(&mut run, 4 * 5);
        // Paused between windows: exactly one connected socket per client, the same ones.
        if let Some(ports) = quic_ports(addr) {
            assert_eq!(ports.len(), 4, "one QUIC connection per client: {ports:?}");
            match &seen {
                None => seen = Some(ports),
                Some(first) => assert_eq!(&ports, first, "no reconnect"),
            }
        }
    }
    assert_eq!(run.windows(), settled + 4);
    run.close();
    if let Some(ports) = quic_ports(addr) {
        assert!(ports.is_empty(), "closed: {ports:?}");
    }
}

#[test]
fn h3_connections_outlive_a_pause_longer_than_the_idle_timeout() {
    // The server closes a QUIC connection after 2 s without a packet; the pause below lasts
    // until a connection that sends nothing has been closed by that timeout, so only the
    // client's keep-alive PINGs (answered by the server's ACKs, which the paused worker
    // reads) keep the standing connections open.
    let idle = Duration::from_secs(2);
    let srv = server(idle);
    let addr = srv.h3_addr().unwrap();
    let cfg = h3_config(addr, 2, 1, 3);
    let mut run = StandingRun::open(&cfg, &StopFlag::new()).unwrap();
    settle(&mut run);
    window(&mut run, 2 * 3);
    let before = quic_ports(addr);
    // Paused from here until a connection opened now has sat idle for the idle timeout:
    // the standing connections have been paused longer.
    let lost = idle_witness(addr);
    assert!(matches!(lost, ConnectionError::TimedOut), "{lost:?}");
    window(&mut run, 2 * 3);
    if let Some(before) = before {
        assert_eq!(before.len(), 2, "{before:?}");
        assert_eq!(quic_ports(addr), Some(before), "the same connections");
    }
    drop(run);
}

/// A QUIC application that completes the handshake, then sends nothing (no keep-alive) and
/// notes how its connection ended (the shell drops a drained connection with its state).
#[derive(Default)]
struct Quiet {
    lost: Rc<RefCell<Option<ConnectionError>>>,
}

impl ConnApp for Quiet {
    type Ctx = ();
    fn drive(&mut self, conn: &mut Connection, _: &mut (), _: Instant) {
        while let Some(ev) = conn.poll() {
            if let Event::ConnectionLost { reason } = ev {
                *self.lost.borrow_mut() = Some(reason);
            }
        }
    }
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn on_shutdown(&mut self, _: &mut Connection, _: Instant) {}
}

/// Opens a QUIC connection to `server`, lets it sit idle and returns how it ended: with
/// the server's idle timeout (the smaller of the two ends' timeouts, RFC 9000 §10.1)
/// `ConnectionError::TimedOut`, once neither end has heard from the other for that long.
/// Bounded by a 60 s deadline.
fn idle_witness(server: SocketAddr) -> ConnectionError {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(server).unwrap();
    let mut shell: Shell<Quiet> = Shell::new(UdpIo::new(sock, false).unwrap(), None, 1);
    let mut poll = Poll::new().unwrap();
    poll.registry()
        .register(shell.io().socket(), Token(0), Interest::READABLE)
        .unwrap();
    let cfg = quic_client_config(true, &Default::default()).unwrap();
    let witness = Quiet::default();
    let lost = Rc::clone(&witness.lost);
    let ch = shell
        .connect(cfg, server, "localhost", Instant::now(), witness)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut events = Events::with_capacity(8);
    loop {
        let now = Instant::now();
        shell.drive(now, &mut ());
        if let Some(e) = lost.borrow_mut().take() {
            return e;
        }
        assert!(
            shell.get_mut(ch).is_some(),
            "the witness connection went away without saying why"
        );
        assert!(now < deadline, "the witness is still open after 60 s");
        let wait = shell
            .next_deadline()
            .map_or(Duration::from_secs(1), |t| t.saturating_duration_since(now));
        poll.poll(&mut events, Some(wait.min(Duration::from_secs(1))))
            .unwrap();
        shell
            .read(Instant::now(), &mut (), |_| Quiet::default())
            .unwrap();
    }
}
