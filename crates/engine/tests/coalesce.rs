//! Request coalescing (`BenchConfig::coalesce`, opt-in `--coalesce`) against a
//! scripted HTTP/2 peer that answers some streams of a connection and keeps
//! one open. What is asserted is ordering, never timing: a PING sent after the
//! answers is acknowledged by the client in the turn that reads it, so the
//! requests it sent for the freed slots by then are the ones it did not hold.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use h2lab_engine::BenchConfig;
use h2lab_wire::h2::testing::{self, kind, RawFrame, TestPeer};

const ACK: u8 = 0x1;

/// One scripted server connection.
struct Peer {
    s: TcpStream,
    buf: Vec<u8>,
    hp: TestPeer,
    /// Streams the client opened that we have not answered.
    open: BTreeSet<u32>,
    /// Every request stream seen, in order.
    seen: Vec<u32>,
    eof: bool,
}

impl Peer {
    fn accept(l: &TcpListener) -> Peer {
        let (s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut p = Peer {
            s,
            buf: Vec::new(),
            hp: TestPeer::new(),
            open: BTreeSet::new(),
            seen: Vec::new(),
            eof: false,
        };
        let mut out = Vec::new();
        testing::settings(&mut out, &[]);
        p.s.write_all(&out).unwrap();
        p
    }

    /// Reads once and handles what arrived; returns the frames (other than
    /// SETTINGS and WINDOW_UPDATE bookkeeping).
    fn read_once(&mut self) -> Vec<RawFrame> {
        let mut tmp = [0u8; 16 * 1024];
        let n = self.s.read(&mut tmp).unwrap_or(0);
        if n == 0 {
            self.eof = true;
            return Vec::new();
        }
        self.buf.extend_from_slice(&tmp[..n]);
        let frames = testing::read_frames(&self.buf);
        let used: usize = frames.iter().map(|f| 9 + f.payload.len()).sum();
        let preface = if self.buf.starts_with(b"PRI * HTTP/2.0") {
            24
        } else {
            0
        };
        self.buf.drain(..used + preface);
        let mut out = Vec::new();
        for f in &frames {
            match f.kind {
                kind::SETTINGS if f.flags & ACK == 0 => testing::settings_ack(&mut out),
                kind::HEADERS => {
                    self.open.insert(f.stream);
                    self.seen.push(f.stream);
                }
                kind::GOAWAY => self.eof = true,
                _ => {}
            }
        }
        if !out.is_empty() {
            self.s.write_all(&out).unwrap();
        }
        frames
    }

    /// Reads until `n` more requests have arrived.
    fn wait_requests(&mut self, n: usize) {
        let want = self.seen.len() + n;
        while self.seen.len() < want && !self.eof {
            self.read_once();
        }
        assert!(self.seen.len() >= want, "connection ended early");
    }

    /// Answers the given open streams (200, no body), in one write.
    fn answer(&mut self, streams: &[u32]) {
        let mut out = Vec::new();
        for &id in streams {
            assert!(self.open.remove(&id), "stream {id} is not open");
            let block = self.hp.response_block(200, &[]);
            testing::headers(&mut out, id, &block, true);
        }
        self.s.write_all(&out).unwrap();
    }

    /// Sends a PING and reads until its ACK; returns how many requests arrived
    /// meanwhile (including in the read that carried the ACK).
    fn ping_roundtrip(&mut self, tag: [u8; 8]) -> usize {
        let before = self.seen.len();
        let mut out = Vec::new();
        testing::ping(&mut out, false, tag);
        self.s.write_all(&out).unwrap();
        loop {
            let frames = self.read_once();
            if frames
                .iter()
                .any(|f| f.kind == kind::PING && f.has(ACK) && f.payload == tag)
            {
                return self.seen.len() - before;
            }
            assert!(!self.eof, "connection ended before the PING ACK");
        }
    }

    /// Answers everything until the client is done.
    fn serve_rest(mut self) -> Vec<u32> {
        loop {
            let open: Vec<u32> = self.open.iter().copied().collect();
            if !open.is_empty() {
                self.answer(&open);
            }
            if self.eof {
                return self.seen;
            }
            self.read_once();
        }
    }
}

/// A listener on port 0 and a thread running `script` on its first connection.
fn scripted<T: Send + 'static>(
    script: impl FnOnce(&mut Peer) -> T + Send + 'static,
) -> (SocketAddr, JoinHandle<(T, Vec<u32>)>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let mut p = Peer::accept(&l);
        let t = script(&mut p);
        (t, p.serve_rest())
    });
    (addr, h)
}

fn config(addr: SocketAddr, n: u64, m: u32, coalesce: Option<Duration>) -> BenchConfig {
    let mut cfg = BenchConfig::from_uris(&[format!("http://{addr}/")], None).unwrap();
    cfg.requests = n;
    cfg.clients = 1;
    cfg.max_concurrent_streams = m;
    cfg.coalesce = coalesce;
    // Safety net: a client that never sends fails the test instead of hanging it.
    cfg.connection_inactivity_timeout = Some(Duration::from_secs(30));
    cfg
}

fn run_client(cfg: BenchConfig) -> mpsc::Receiver<h2lab_engine::RunResult> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = common::run(&cfg).unwrap();
        let _ = tx.send(r);
    });
    rx
}

#[test]
fn freed_slots_wait_for_the_connections_last_stream_then_leave_together() {
    let (addr, peer) = scripted(|p| {
        p.wait_requests(4);
        let first: Vec<u32> = p.seen.clone();
        // Three of four streams done, one still open.
        p.answer(&first[..3]);
        let while_held = p.ping_roundtrip(*b"held....");
        // The last one done: all four slots free, four requests arrive (well
        // before the 60 s hold limit, or the 30 s inactivity timeout fails the run).
        p.answer(&first[3..]);
        p.wait_requests(4);
        while_held
    });
    let r = run_client(config(addr, 8, 4, Some(Duration::from_secs(60))))
        .recv()
        .unwrap();
    let (while_held, seen) = peer.join().unwrap();
    assert_eq!(while_held, 0, "requests were sent while a stream was open");
    assert_eq!(seen.len(), 8);
    assert_eq!(r.requests.succeeded, 8);
}

/// Answers three of the first four streams, then waits until three new requests
/// arrive while the fourth stream is still open (with the client's run completing
/// 8 requests in all).
fn refilled_while_a_stream_stays_open(cfg_for: impl FnOnce(SocketAddr) -> BenchConfig) {
    let (addr, peer) = scripted(|p| {
        p.wait_requests(4);
        let first: Vec<u32> = p.seen.clone();
        p.answer(&first[..3]);
        p.wait_requests(3);
        assert_eq!(p.open.len(), 4);
        assert!(p.open.contains(&first[3]));
    });
    let r = run_client(cfg_for(addr)).recv().unwrap();
    let ((), seen) = peer.join().unwrap();
    assert_eq!(seen.len(), 8);
    assert_eq!(r.requests.succeeded, 8);
}

#[test]
fn without_coalescing_each_freed_slot_is_refilled_at_once() {
    refilled_while_a_stream_stays_open(|a| config(a, 8, 4, None));
}

#[test]
fn by_default_each_freed_slot_is_refilled_at_once_like_h2load() {
    refilled_while_a_stream_stays_open(|a| {
        let mut cfg = config(a, 8, 4, Some(Duration::from_secs(60)));
        cfg.coalesce = BenchConfig::new(Vec::new()).coalesce;
        assert_eq!(cfg.coalesce, None, "coalescing must be opt-in");
        cfg
    });
}

#[test]
fn a_hold_ends_at_its_limit_when_a_stream_stays_open() {
    refilled_while_a_stream_stays_open(|a| config(a, 8, 4, Some(Duration::from_millis(5))));
}

#[test]
fn paced_runs_never_hold() {
    refilled_while_a_stream_stays_open(|a| {
        let mut cfg = config(a, 8, 4, Some(Duration::from_secs(60)));
        cfg.load.arrival_rate = Some(1000.0);
        cfg
    });
}

#[test]
fn a_connection_with_nothing_in_flight_is_never_held() {
    // -m1: every completion frees the only slot; the next request goes at once.
    let (addr, peer) = scripted(|p| {
        for _ in 0..5 {
            p.wait_requests(1);
            let id = *p.seen.last().unwrap();
            p.answer(&[id]);
        }
    });
    let r = run_client(config(addr, 5, 1, Some(Duration::from_secs(60))))
        .recv()
        .unwrap();
    let ((), seen) = peer.join().unwrap();
    assert_eq!(seen.len(), 5);
    assert_eq!(r.requests.succeeded, 5);
}
