//! Hostile clients vs the server (in-process): rapid reset, CONTINUATION flood, HPACK bomb,
//! slowloris, thousands of idle connections, a zero window that never opens while the server
//! has data to send, huge request bodies, invalid prefaces. While each attack runs, a
//! well-behaved HTTP/1.1 client keeps getting answers with bounded latency (50 requests,
//! each under 1 s), and the process's resident memory stays bounded.
//!
//! The attacks run one at a time (a lock) so that the memory figures do not mix. Run with
//! `--nocapture` to see the figures: the good client's latency under each attack, RSS growth,
//! and what the attack achieved.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::start;
use h2lab_server::ServerConfig;
use h2lab_wire::h2::testing::{self, kind, setting, TestPeer};

/// One attack at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Requests of the well-behaved client per attack. Each must be answered while the attack
/// goes on (the attackers stop only after the last one; a starved request fails at the
/// client's 20 s read timeout); how long they took is a figure (`FIGURES` lines), not an
/// assertion: it depends on the machine and its load.
const GOOD_REQUESTS: usize = 50;
/// Growth of the process's RSS (server + attackers + good client) allowed during an attack.
const MAX_RSS_GROWTH_KB: u64 = 64 * 1024;

/// A field of this process's /proc status, in kB.
fn proc_status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// What an attack did, counted by its threads.
#[derive(Default)]
struct Tally {
    /// Connections opened.
    conns: AtomicU64,
    /// Connections the server closed (EOF or reset seen).
    closed: AtomicU64,
    /// Attack units sent (requests, frames, bytes: see each attack).
    units: AtomicU64,
    /// Responses or GOAWAYs seen that show the defence (431, 413, GOAWAY, ...).
    defended: AtomicU64,
}

/// Figures of one attack.
struct Figures {
    good_p50: Duration,
    good_max: Duration,
    rss_growth_kb: u64,
}

/// Runs `attack` on `threads` threads against a server configured by `cfg`, and meanwhile the
/// well-behaved client; returns the figures after checking latency, memory and that the
/// server still answers afterwards. `engaged` decides when the attack is in full swing.
fn under_attack<A>(
    name: &str,
    cfg: impl FnOnce(&mut ServerConfig),
    threads: usize,
    engaged: impl Fn(&Tally) -> bool,
    attack: A,
) -> (Figures, Arc<Tally>)
where
    A: Fn(SocketAddr, &AtomicBool, &Tally) + Send + Sync + 'static,
{
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = start(cfg);
    let addr = server.addr().unwrap();
    // Warm up (first connection, first response) before the baseline.
    assert_eq!(common::connect(addr).get("/ping").status, 200);
    let rss0 = proc_status_kb("VmRSS:");

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let attack = Arc::new(attack);
    let mut handles = Vec::new();
    for _ in 0..threads {
        let (stop, tally, attack) = (stop.clone(), tally.clone(), attack.clone());
        handles.push(std::thread::spawn(move || attack(addr, &stop, &tally)));
    }
    // Sample RSS while the attack runs.
    let peak = Arc::new(AtomicU64::new(rss0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(proc_status_kb("VmRSS:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let t0 = Instant::now();
    while !engaged(&tally) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{name}: the attack never got going"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let ramp = t0.elapsed();

    // The well-behaved client (connecting now, so that short idle timeouts do not end its
    // connection while the attack gets going): 50 requests spread over about a second.
    let mut good = common::connect(addr);
    let mut lat = Vec::with_capacity(GOOD_REQUESTS);
    for _ in 0..GOOD_REQUESTS {
        let t = Instant::now();
        let r = good.get("/ping");
        lat.push(t.elapsed());
        assert_eq!((r.status, r.text().as_str()), (200, "pong"), "{name}");
        std::thread::sleep(Duration::from_millis(20));
    }
    peak.fetch_max(proc_status_kb("VmRSS:"), Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    sampler.join().unwrap();

    // Still serving.
    let mut after = common::connect(addr);
    assert_eq!(
        after.get("/ping").status,
        200,
        "{name}: server dead after the attack"
    );

    lat.sort_unstable();
    let f = Figures {
        good_p50: lat[lat.len() / 2],
        good_max: lat[lat.len() - 1],
        rss_growth_kb: peak.load(Ordering::Relaxed).saturating_sub(rss0),
    };
    println!(
        "FIGURES {name:<22} good p50 {:>9.3?} max {:>9.3?} | RSS +{:>6} kB | attack (ramp \
         {ramp:.1?}): {} conns, {} closed by the server, {} units, {} defended",
        f.good_p50,
        f.good_max,
        f.rss_growth_kb,
        tally.conns.load(Ordering::Relaxed),
        tally.closed.load(Ordering::Relaxed),
        tally.units.load(Ordering::Relaxed),
        tally.defended.load(Ordering::Relaxed),
    );
    assert!(
        f.rss_growth_kb < MAX_RSS_GROWTH_KB,
        "{name}: RSS grew by {} kB",
        f.rss_growth_kb
    );
    (f, tally)
}

// ---- raw HTTP/2 attacker -------------------------------------------------------------------

/// A raw client socket; reads are non-blocking so attackers can keep sending.
struct Raw {
    sock: TcpStream,
    buf: Vec<u8>,
    closed: bool,
}

impl Raw {
    fn connect(addr: SocketAddr, tally: &Tally) -> Option<Raw> {
        let sock = TcpStream::connect(addr).ok()?;
        sock.set_nodelay(true).ok()?;
        sock.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
        tally.conns.fetch_add(1, Ordering::Relaxed);
        Some(Raw {
            sock,
            buf: Vec::new(),
            closed: false,
        })
    }

    /// Connects with the HTTP/2 preface and empty SETTINGS (plus `settings`).
    fn h2(addr: SocketAddr, tally: &Tally, settings: &[(u16, u32)]) -> Option<Raw> {
        let mut r = Raw::connect(addr, tally)?;
        let mut b = Vec::new();
        testing::preface(&mut b);
        testing::settings(&mut b, settings);
        r.send(&b).then_some(r)
    }

    fn send(&mut self, b: &[u8]) -> bool {
        if self.sock.write_all(b).is_err() {
            self.closed = true;
        }
        !self.closed
    }

    /// Reads what is available without blocking; notes EOF/reset. Returns the bytes read.
    fn poll(&mut self) -> usize {
        let _ = self.sock.set_nonblocking(true);
        let mut tmp = [0u8; 64 * 1024];
        let mut got = 0;
        loop {
            match self.sock.read(&mut tmp) {
                Ok(0) => {
                    self.closed = true;
                    break;
                }
                Ok(n) => {
                    got += n;
                    // Keep only a bounded tail: attackers look for GOAWAY and statuses.
                    self.buf.extend_from_slice(&tmp[..n]);
                    if self.buf.len() > 1 << 20 {
                        let cut = self.buf.len() - (1 << 16);
                        self.buf.drain(..cut);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.closed = true;
                    break;
                }
            }
        }
        let _ = self.sock.set_nonblocking(false);
        got
    }

    /// Blocks until the server closes the connection (or `limit` passes); true if it did.
    fn wait_close(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.closed && Instant::now() < deadline {
            let _ = self.sock.set_read_timeout(Some(Duration::from_millis(50)));
            let mut tmp = [0u8; 16 * 1024];
            match self.sock.read(&mut tmp) {
                Ok(0) => self.closed = true,
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => self.closed = true,
            }
        }
        self.closed
    }

    /// Waits (up to `limit`) for the server to end the attack connection, then tallies it:
    /// closed by the server, and defended when `goaway` is given and a GOAWAY with that code
    /// came first.
    fn tally_end(&mut self, tally: &Tally, limit: Duration, goaway: Option<u32>) {
        self.wait_close(limit);
        if goaway.is_some_and(|code| self.saw_goaway(code)) {
            tally.defended.fetch_add(1, Ordering::Relaxed);
        }
        if self.closed {
            tally.closed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A GOAWAY frame with this error code is among the frames read.
    fn saw_goaway(&self, code: u32) -> bool {
        let frames = testing::read_frames(&self.buf);
        frames
            .iter()
            .any(|f| f.kind == kind::GOAWAY && f.error_code().map(|c| c.0) == Some(code))
    }
}

/// A request header block with the static-table method/scheme and literal path/authority.
fn request_block(peer: &mut TestPeer, path: &str) -> Vec<u8> {
    peer.request_block("GET", path, &[])
}

// ---- the attacks ---------------------------------------------------------------------------

#[test]
fn rapid_reset() {
    // CVE-2023-44487: HEADERS then RST_STREAM, as fast as possible, reconnecting after the
    // server's GOAWAY ENHANCE_YOUR_CALM.
    let (_, tally) = under_attack(
        "rapid reset",
        |_| {},
        2,
        |t| t.defended.load(Ordering::Relaxed) >= 2,
        |addr, stop, tally| {
            while !stop.load(Ordering::Relaxed) {
                let Some(mut r) = Raw::h2(addr, tally, &[]) else {
                    continue;
                };
                let mut peer = TestPeer::new();
                let mut id = 1u32;
                while !r.closed && !stop.load(Ordering::Relaxed) && id < 100_000 {
                    let mut b = Vec::new();
                    for _ in 0..100 {
                        testing::headers(&mut b, id, &request_block(&mut peer, "/ping"), true);
                        testing::rst_stream(&mut b, id, 0x8);
                        id += 2;
                    }
                    r.send(&b);
                    r.poll();
                    tally.units.fetch_add(100, Ordering::Relaxed);
                }
                // ENHANCE_YOUR_CALM
                r.tally_end(tally, Duration::from_secs(2), Some(0xb));
            }
        },
    );
    assert!(tally.defended.load(Ordering::Relaxed) >= 2);
}

#[test]
fn continuation_flood() {
    let (_, tally) = under_attack(
        "CONTINUATION flood",
        |_| {},
        2,
        |t| t.defended.load(Ordering::Relaxed) >= 2,
        |addr, stop, tally| {
            while !stop.load(Ordering::Relaxed) {
                let Some(mut r) = Raw::h2(addr, tally, &[]) else {
                    continue;
                };
                let mut peer = TestPeer::new();
                let block = peer.request_block("GET", "/ping", &[("x-pad", &"p".repeat(100))]);
                let mut b = Vec::new();
                testing::headers_flags(&mut b, 1, &block[..4], true, false);
                r.send(&b);
                while !r.closed && !stop.load(Ordering::Relaxed) {
                    let mut b = Vec::new();
                    for i in 0..100 {
                        testing::continuation(&mut b, 1, &block[4 + i % 50..][..1], false);
                    }
                    r.send(&b);
                    r.poll();
                    tally.units.fetch_add(100, Ordering::Relaxed);
                }
                // ENHANCE_YOUR_CALM
                r.tally_end(tally, Duration::from_secs(2), Some(0xb));
            }
        },
    );
    assert!(tally.closed.load(Ordering::Relaxed) >= 2);
}

#[test]
fn hpack_bomb() {
    // Each connection: one 4 KB block that decodes to 4 MB, then more requests referencing
    // the bomb entry (index 62 stays the bomb: nothing else is inserted).
    let (_, tally) = under_attack(
        "HPACK bomb",
        |_| {},
        1,
        |t| t.units.load(Ordering::Relaxed) >= 20,
        |addr, stop, tally| {
            while !stop.load(Ordering::Relaxed) {
                let Some(mut r) = Raw::h2(addr, tally, &[]) else {
                    continue;
                };
                let mut b = Vec::new();
                testing::headers(&mut b, 1, &testing::hpack_bomb_block(1000), true);
                let mut id = 3;
                while id < 200 {
                    // Indexed :method GET, :scheme http, then :path/:authority from the
                    // dynamic table are gone (evicted by the bomb): use literals again.
                    let mut blk = vec![0x82, 0x86, 0x04, 5];
                    blk.extend_from_slice(b"/ping");
                    blk.extend_from_slice(&[0x01, 9]);
                    blk.extend_from_slice(b"localhost");
                    blk.extend(std::iter::repeat(0xbe).take(1000));
                    testing::headers(&mut b, id, &blk, true);
                    id += 2;
                }
                r.send(&b);
                tally.units.fetch_add(100, Ordering::Relaxed);
                // Closed loop: the next connection once the server has dealt with all 100
                // (refused, 431, or GOAWAY), so the attack runs at the server's pace.
                let ended = |r: &Raw| {
                    testing::read_frames(&r.buf)
                        .iter()
                        .filter(|f| {
                            f.kind == kind::RST_STREAM
                                || f.kind == kind::GOAWAY
                                || ((f.kind == kind::HEADERS || f.kind == kind::DATA) && f.has(0x1))
                        })
                        .count()
                };
                let until = Instant::now() + Duration::from_secs(5);
                while !r.closed && ended(&r) < 100 && Instant::now() < until {
                    r.wait_close(Duration::from_millis(20));
                }
                tally
                    .defended
                    .fetch_add(ended(&r) as u64, Ordering::Relaxed);
                if r.closed {
                    tally.closed.fetch_add(1, Ordering::Relaxed);
                }
            }
        },
    );
    assert!(tally.defended.load(Ordering::Relaxed) > 0);
}

#[test]
fn slowloris() {
    // 20 HTTP/1.1 request heads and 20 HTTP/2 HEADERS frames, one byte a second: each byte
    // comes before the 1.5 s idle timeout, yet the server must drop every connection about
    // 1.5 s after its first byte, because the head (the frame) never completes. Told by
    // order, not by the clock: the server closes each connection while the client still has
    // bytes of the head to trickle (it would trickle for 30 s and more; a server that only
    // restarted its idle timer on each byte would hold them all that time).
    let closed_after = Arc::new(Mutex::new(Vec::<(Duration, bool)>::new()));
    let c2 = closed_after.clone();
    let (_, tally) = under_attack(
        "slowloris",
        |c| c.idle_timeout = Duration::from_millis(1500),
        2,
        |t| t.conns.load(Ordering::Relaxed) >= 40,
        move |addr, stop, tally| {
            let mut conns: Vec<(Raw, Vec<u8>, usize, Instant)> = Vec::new();
            for i in 0..20 {
                let h2 = i % 2 == 1;
                let Some(r) = (if h2 {
                    Raw::h2(addr, tally, &[])
                } else {
                    Raw::connect(addr, tally)
                }) else {
                    continue;
                };
                let payload = if h2 {
                    let mut peer = TestPeer::new();
                    let mut b = Vec::new();
                    let block = peer.request_block("GET", "/ping", &[("x-slow", "1")]);
                    testing::headers(&mut b, 1, &block, true);
                    b
                } else {
                    b"GET /ping HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n\r\n".to_vec()
                };
                conns.push((r, payload, 0, Instant::now()));
            }
            // Keeps trickling after the good client is done, until the server has dropped
            // every connection (or 25 s, still before any head is out of bytes: then the
            // assertions below fail).
            let _ = stop;
            let mut next = Instant::now();
            let give_up = Instant::now() + Duration::from_secs(25);
            while Instant::now() < give_up && conns.iter().any(|c| !c.0.closed) {
                if Instant::now() >= next {
                    next += Duration::from_secs(1);
                    for (r, payload, sent, _) in conns.iter_mut() {
                        // Never the last byte: the request must not complete.
                        if !r.closed && *sent + 1 < payload.len() {
                            r.send(&payload[*sent..*sent + 1]);
                            *sent += 1;
                            tally.units.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                for (r, payload, sent, started) in conns.iter_mut() {
                    if !r.closed && r.wait_close(Duration::from_millis(1)) {
                        tally.closed.fetch_add(1, Ordering::Relaxed);
                        let trickling = *sent + 1 < payload.len();
                        c2.lock().unwrap().push((started.elapsed(), trickling));
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        },
    );
    let closed = closed_after.lock().unwrap();
    let worst = closed.iter().map(|c| c.0).max().unwrap_or_default();
    println!(
        "FIGURES slowloris: {} of {} trickling connections closed by the server, the last \
         after {worst:?}",
        closed.len(),
        tally.conns.load(Ordering::Relaxed)
    );
    assert_eq!(closed.len() as u64, tally.conns.load(Ordering::Relaxed));
    assert!(
        closed.iter().all(|c| c.1),
        "a connection outlived the trickle of its head: {closed:?}"
    );
}

/// Server-side TCP sockets on `port` (local port) still open in the server: ESTABLISHED or
/// CLOSE_WAIT in /proc/net/tcp{,6} (a socket the server closed is FIN_WAIT or gone).
fn server_held(port: u16) -> usize {
    use h2lab_procnet::{Proto, TCP_CLOSE_WAIT, TCP_ESTABLISHED};
    h2lab_procnet::entries(Proto::Tcp)
        .iter()
        .filter(|e| e.local_port == port && matches!(e.state, TCP_ESTABLISHED | TCP_CLOSE_WAIT))
        .count()
}

/// Raises the soft RLIMIT_NOFILE of this process to at least `want` (up to the hard limit)
/// with util-linux `prlimit`; returns the soft limit in force.
fn raise_nofile(want: u64) -> u64 {
    let read = || -> (u64, u64) {
        let s = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let line = s
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap_or_default()
            .to_string();
        let v: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        (
            v.first().copied().unwrap_or(1024),
            v.get(1).copied().unwrap_or(1024),
        )
    };
    let (soft, hard) = read();
    if soft >= want {
        return soft;
    }
    let target = want.min(hard);
    let _ = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", std::process::id()))
        .arg(format!("--nofile={target}:{hard}"))
        .status();
    read().0
}

#[test]
fn thousands_of_idle_connections() {
    // 2000 connections that never send a request (half of them after an HTTP/2 preface);
    // each side of each needs a descriptor in this process.
    let limit = raise_nofile(4 * 1024 + 256);
    let n = 2000.min(limit.saturating_sub(256) / 2) as usize;
    assert!(n >= 400, "RLIMIT_NOFILE too low: {limit}");
    // Long enough for the connections to pile up (a debug build accepts a few hundred per
    // second), short enough to watch the server reap them.
    let idle = Duration::from_secs(15);
    let report = Arc::new(Mutex::new(String::new()));
    let r2 = report.clone();
    let (f, tally) = under_attack(
        "2000 idle connections",
        move |c| c.idle_timeout = idle,
        1,
        move |t| t.conns.load(Ordering::Relaxed) >= n as u64,
        move |addr, stop, tally| {
            let mut conns = Vec::with_capacity(n);
            for i in 0..n {
                let r = if i % 2 == 0 {
                    Raw::connect(addr, tally)
                } else {
                    Raw::h2(addr, tally, &[])
                };
                conns.extend(r);
            }
            let ramp_done = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            // Held by the server while the good client ran (minus the good client's).
            let held = server_held(addr.port()).saturating_sub(1);
            // Then reaped after the idle timeout: waited for, with a deadline far beyond it
            // (how soon a loaded machine gets round to it is not what is tested).
            let deadline = ramp_done + idle + Duration::from_secs(30);
            for r in conns.iter_mut() {
                if r.wait_close(deadline.saturating_duration_since(Instant::now())) {
                    tally.closed.fetch_add(1, Ordering::Relaxed);
                }
            }
            *r2.lock().unwrap() = format!(
                "{held} held by the server while the good client ran; {} of {} closed by the \
                 server {:?} after the last one was opened",
                tally.closed.load(Ordering::Relaxed),
                conns.len(),
                ramp_done.elapsed()
            );
            assert!(held >= n / 2, "only {held} connections held at once");
        },
    );
    let conns = tally.conns.load(Ordering::Relaxed);
    println!(
        "FIGURES idle connections: {} (RLIMIT_NOFILE {limit}); {}; RSS +{} kB ({} B per \
         connection, both ends)",
        conns,
        report.lock().unwrap(),
        f.rss_growth_kb,
        f.rss_growth_kb * 1024 / conns.max(1)
    );
    assert_eq!(tally.closed.load(Ordering::Relaxed), conns);
}

#[test]
fn zero_window_that_never_opens() {
    // 10 HTTP/2 clients with SETTINGS_INITIAL_WINDOW_SIZE = 0 ask for 100 MB bodies on 50
    // streams and never send WINDOW_UPDATE; 10 HTTP/1.1 clients ask for 1 GB and never read.
    // The server must not buffer what it cannot send, and must not hold such connections
    // forever.
    let (_, tally) = under_attack(
        "zero window",
        |c| c.idle_timeout = Duration::from_secs(2),
        1,
        |t| t.units.load(Ordering::Relaxed) >= 10 * (50 + 1),
        |addr, stop, tally| {
            let mut held = Vec::new();
            for _ in 0..10 {
                if let Some(mut r) = Raw::h2(addr, tally, &[(setting::INITIAL_WINDOW_SIZE, 0)]) {
                    let mut peer = TestPeer::new();
                    let mut b = Vec::new();
                    for i in 0..50u32 {
                        let block = request_block(&mut peer, "/data?size=100000000");
                        testing::headers(&mut b, 1 + 2 * i, &block, true);
                    }
                    r.send(&b);
                    tally.units.fetch_add(50, Ordering::Relaxed);
                    held.push(r);
                }
                if let Some(mut r) = Raw::connect(addr, tally) {
                    // Small receive buffer: the server's writes stall quickly.
                    r.send(b"GET /data?size=1000000000 HTTP/1.1\r\nHost: x\r\n\r\n");
                    tally.units.fetch_add(1, Ordering::Relaxed);
                    held.push(r);
                }
            }
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
            }
            // Stalled without progress, they are dropped after the idle timeout (2 s). The
            // attackers read nothing (that is the attack), so the server's side is watched
            // in /proc/net/tcp: only the good client's connection may remain.
            let t = Instant::now();
            let mut held_now = server_held(addr.port());
            // Waited for, with a deadline far beyond the idle timeout (a loaded machine may
            // get round to it late; that is not what is tested).
            while held_now > 1 && t.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
                held_now = server_held(addr.port());
            }
            let dropped = held.len().saturating_sub(held_now.saturating_sub(1));
            tally.closed.fetch_add(dropped as u64, Ordering::Relaxed);
            println!(
                "FIGURES zero window: {dropped} of {} dropped {:?} after the good client was done",
                held.len(),
                t.elapsed()
            );
        },
    );
    let (conns, closed) = (
        tally.conns.load(Ordering::Relaxed),
        tally.closed.load(Ordering::Relaxed),
    );
    assert_eq!(closed, conns, "stalled connections held by the server");
}

#[test]
fn huge_request_bodies() {
    // Uploads far above max_request_body (1 MiB here): HTTP/1.1 with a huge Content-Length,
    // chunked without end, and HTTP/2 DATA within the flow-control windows.
    let (_, tally) = under_attack(
        "huge request bodies",
        |c| c.max_request_body = 1 << 20,
        3,
        |t| t.defended.load(Ordering::Relaxed) >= 3,
        |addr, stop, tally| {
            let chunk = vec![b'u'; 64 * 1024];
            let mut kind_of = 0u32;
            while !stop.load(Ordering::Relaxed) {
                kind_of += 1;
                let Some(mut r) = (match kind_of % 3 {
                    2 => Raw::h2(addr, tally, &[]),
                    _ => Raw::connect(addr, tally),
                }) else {
                    continue;
                };
                match kind_of % 3 {
                    0 => {
                        r.send(
                            b"POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n",
                        );
                    }
                    1 => {
                        r.send(
                            b"POST /ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                        );
                    }
                    _ => {
                        let mut peer = TestPeer::new();
                        let block = peer.request_block("POST", "/ping", &[]);
                        let mut b = Vec::new();
                        testing::headers(&mut b, 1, &block, false);
                        r.send(&b);
                    }
                }
                let mut sent = 0u64;
                let started = Instant::now();
                while !r.closed && !stop.load(Ordering::Relaxed) && sent < (64 << 20) {
                    let ok = match kind_of % 3 {
                        0 => r.send(&chunk),
                        1 => r.send(b"10000\r\n") && r.send(&chunk[..0x10000]) && r.send(b"\r\n"),
                        _ => {
                            // Within the default 65535-byte windows, then whatever the server
                            // grants: 16 KB frames.
                            let mut b = Vec::new();
                            testing::data(&mut b, 1, &chunk[..16 * 1024], false);
                            r.send(&b)
                        }
                    };
                    if !ok {
                        break;
                    }
                    sent += chunk.len() as u64;
                    tally.units.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    r.poll();
                    let text = String::from_utf8_lossy(&r.buf);
                    let frames = testing::read_frames(&r.buf);
                    if text.contains(" 413 ")
                        || frames
                            .iter()
                            .any(|f| f.kind == kind::GOAWAY || f.kind == kind::RST_STREAM)
                        || (kind_of % 3 == 2 && frames.iter().any(|f| f.kind == kind::HEADERS))
                    {
                        tally.defended.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                    if started.elapsed() > Duration::from_secs(5) {
                        break;
                    }
                }
                let _ = r.sock.shutdown(Shutdown::Write);
                r.tally_end(tally, Duration::from_secs(3), None);
            }
        },
    );
    assert!(tally.defended.load(Ordering::Relaxed) >= 3);
}

#[test]
fn invalid_prefaces() {
    let garbage: Vec<Vec<u8>> = vec![
        (0..200u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
            .collect(),
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".to_vec(),
        {
            // A good preface, then a frame that is not SETTINGS.
            let mut b = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            testing::ping(&mut b, false, [0; 8]);
            b
        },
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
    ];
    let garbage = Arc::new(garbage);
    // Bytes that cannot start a request but hold no line end yet (random bytes, a TLS
    // ClientHello on the cleartext port) are only dropped with the idle timeout: 1 s here.
    let (_, tally) = under_attack(
        "invalid prefaces",
        |c| c.idle_timeout = Duration::from_secs(1),
        2,
        |t| t.closed.load(Ordering::Relaxed) >= 10,
        move |addr, stop, tally| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let Some(mut r) = Raw::connect(addr, tally) else {
                    continue;
                };
                r.send(&garbage[i % garbage.len()]);
                tally.units.fetch_add(1, Ordering::Relaxed);
                r.tally_end(tally, Duration::from_secs(3), None);
            }
        },
    );
    // Every garbage connection was closed by the server (not left open).
    let (conns, closed) = (
        tally.conns.load(Ordering::Relaxed),
        tally.closed.load(Ordering::Relaxed),
    );
    assert_eq!(closed, conns);
}
