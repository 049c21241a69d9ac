//! HTTP/2 (h2c) behaviour against a scripted mock peer built from raw frames
//! (`h2lab_wire::h2::testing`): request counts, SETTINGS, MAX_CONCURRENT_STREAMS
//! below `-m`, GOAWAY mid-run, RST_STREAM, zero send window then
//! WINDOW_UPDATE, receive flow control for large bodies, connection closed
//! mid-frame, PING.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use h2lab_engine::{AppProtocol, BenchConfig};
use h2lab_wire::h2::testing::{self, kind, setting, TestPeer};

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;

#[derive(Clone, Default)]
struct Script {
    /// SETTINGS the peer sends first.
    settings: Vec<(u16, u32)>,
    /// Response body length.
    body_len: usize,
    /// Per connection: after this many responses, GOAWAY(last = that stream).
    goaway_after: Option<u64>,
    /// Reset every k-th request (counted over the whole run) with INTERNAL_ERROR.
    reset_every: Option<u64>,
    /// Refuse streams beyond this many open ones (REFUSED_STREAM), like a
    /// server enforcing its SETTINGS_MAX_CONCURRENT_STREAMS.
    max_streams: Option<usize>,
    /// Answer only when this many streams are open, or when the last of
    /// `expected` requests are in (forces the client to fill the limit).
    batch_open: Option<(usize, u64)>,
    /// On HEADERS, open the stream's send window by this much.
    window_update_on_headers: Option<u32>,
    /// Send half of a DATA frame for the first request and close.
    close_mid_frame: bool,
    /// Send a PING first.
    ping: bool,
    /// After this many responses on a connection, send SETTINGS MAX_CONCURRENT_STREAMS = v.
    lower_mcs_after: Option<(u64, u32)>,
}

#[derive(Default)]
struct PeerStats {
    requests: AtomicU64,
    conns: AtomicU64,
    max_open: AtomicU64,
    /// Max open streams after the client acknowledged a lowered limit.
    max_open_after_lower: AtomicU64,
    /// Max open streams after the client acknowledged our first SETTINGS.
    max_open_after_ack: AtomicU64,
    refused: AtomicU64,
    client_settings: Mutex<Vec<(u16, u32)>>,
    conn_window_update: AtomicU64,
    ping_acked: AtomicBool,
    request_body_bytes: AtomicU64,
    window_updates_received: AtomicU64,
}

struct StreamState {
    body: usize,
}

struct PeerConn<'a> {
    s: TcpStream,
    sc: &'a Script,
    st: &'a PeerStats,
    hp: TestPeer,
    /// Client-side receive windows (our send windows).
    conn_win: i64,
    stream_init: i64,
    stream_win: BTreeMap<u32, i64>,
    open: BTreeMap<u32, StreamState>,
    ready: VecDeque<u32>,
    /// Response bodies waiting for window: (stream, remaining).
    pending: VecDeque<(u32, usize)>,
    answered: u64,
    goaway_last: Option<u32>,
    lowered: bool,
    lower_acked: bool,
    acked: bool,
}

impl PeerConn<'_> {
    fn send(&mut self, b: &[u8]) -> bool {
        self.s.write_all(b).is_ok()
    }

    fn run(mut self) {
        let mut buf = Vec::new();
        let mut tmp = vec![0u8; 64 * 1024];
        let mut preface_done = false;
        let mut out = Vec::new();
        testing::settings(&mut out, &self.sc.settings);
        if self.sc.ping {
            testing::ping(&mut out, false, *b"h2labpng");
        }
        if !self.send(&out) {
            return;
        }
        loop {
            let n = match self.s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            buf.extend_from_slice(&tmp[..n]);
            if !preface_done {
                if buf.len() < 24 {
                    continue;
                }
                assert_eq!(&buf[..24], b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
                buf.drain(..24);
                preface_done = true;
            }
            let frames = testing::read_frames(&buf);
            let used: usize = frames.iter().map(|f| 9 + f.payload.len()).sum();
            buf.drain(..used);
            for f in frames {
                if !self.on_frame(f) {
                    return;
                }
            }
            if !self.respond() {
                return;
            }
        }
    }

    fn on_frame(&mut self, f: testing::RawFrame) -> bool {
        match f.kind {
            kind::SETTINGS if f.flags & ACK == 0 => {
                let params = f.settings();
                for &(id, v) in &params {
                    if id == setting::INITIAL_WINDOW_SIZE {
                        let delta = i64::from(v) - self.stream_init;
                        self.stream_init = i64::from(v);
                        for w in self.stream_win.values_mut() {
                            *w += delta;
                        }
                    }
                }
                self.st.client_settings.lock().unwrap().extend(params);
                let mut out = Vec::new();
                testing::settings_ack(&mut out);
                return self.send(&out);
            }
            kind::SETTINGS => {
                self.acked = true;
                if self.lowered {
                    self.lower_acked = true;
                }
            }
            kind::WINDOW_UPDATE => {
                let inc = i64::from(f.increment().unwrap_or(0));
                self.st
                    .window_updates_received
                    .fetch_add(1, Ordering::SeqCst);
                if f.stream == 0 {
                    self.conn_win += inc;
                    self.st
                        .conn_window_update
                        .fetch_max(inc as u64, Ordering::SeqCst);
                } else if let Some(w) = self.stream_win.get_mut(&f.stream) {
                    *w += inc;
                }
            }
            kind::PING if f.flags & ACK != 0 => {
                assert_eq!(f.payload, b"h2labpng");
                self.st.ping_acked.store(true, Ordering::SeqCst);
            }
            kind::HEADERS => {
                if self.sc.max_streams.is_some_and(|m| self.open.len() >= m) {
                    // RFC 9113 §5.1.2: a peer exceeding the limit gets
                    // PROTOCOL_ERROR or REFUSED_STREAM; refused ones may be retried.
                    self.st.refused.fetch_add(1, Ordering::SeqCst);
                    let mut out = Vec::new();
                    testing::rst_stream(&mut out, f.stream, 0x7);
                    return self.send(&out);
                }
                self.st.requests.fetch_add(1, Ordering::SeqCst);
                self.open.insert(f.stream, StreamState { body: 0 });
                self.stream_win.insert(f.stream, self.stream_init);
                let open = self.open.len() as u64;
                self.st.max_open.fetch_max(open, Ordering::SeqCst);
                if self.lower_acked {
                    self.st
                        .max_open_after_lower
                        .fetch_max(open, Ordering::SeqCst);
                }
                if self.acked {
                    self.st.max_open_after_ack.fetch_max(open, Ordering::SeqCst);
                }
                if let Some(n) = self.sc.window_update_on_headers {
                    let mut out = Vec::new();
                    testing::window_update(&mut out, f.stream, n);
                    if !self.send(&out) {
                        return false;
                    }
                }
                if f.flags & END_STREAM != 0 {
                    self.ready.push_back(f.stream);
                }
            }
            kind::DATA => {
                self.st
                    .request_body_bytes
                    .fetch_add(f.payload.len() as u64, Ordering::SeqCst);
                if let Some(s) = self.open.get_mut(&f.stream) {
                    s.body += f.payload.len();
                }
                if f.flags & END_STREAM != 0 {
                    self.ready.push_back(f.stream);
                }
            }
            kind::GOAWAY => return false,
            kind::RST_STREAM => {
                self.open.remove(&f.stream);
            }
            _ => {}
        }
        true
    }

    fn respond(&mut self) -> bool {
        if let Some((b, expected)) = self.sc.batch_open {
            let last = self.st.requests.load(Ordering::SeqCst) >= expected;
            if self.open.len() < b && self.pending.is_empty() && !last {
                return true;
            }
        }
        let mut out = Vec::new();
        while let Some(id) = self.ready.pop_front() {
            if self.goaway_last.is_some_and(|l| id > l) {
                continue; // not processed: the client must retry it elsewhere
            }
            self.answered += 1;
            let global = self.answered_global();
            if self.sc.reset_every.is_some_and(|k| global % k == 0) {
                testing::rst_stream(&mut out, id, 0x2);
                self.open.remove(&id);
            } else if self.sc.close_mid_frame {
                let block = self.hp.response_block(200, &[]);
                testing::headers(&mut out, id, &block, false);
                let mut frame = Vec::new();
                testing::data(&mut frame, id, &[b'x'; 100], true);
                out.extend_from_slice(&frame[..9 + 10]);
                let _ = self.send(&out);
                return false;
            } else {
                let block = self.hp.response_block(200, &[("server", "mock")]);
                testing::headers(&mut out, id, &block, self.sc.body_len == 0);
                if self.sc.body_len == 0 {
                    self.open.remove(&id);
                } else {
                    self.pending.push_back((id, self.sc.body_len));
                }
            }
            if let Some((after, v)) = self.sc.lower_mcs_after {
                if self.answered == after && !self.lowered {
                    self.lowered = true;
                    testing::settings(&mut out, &[(setting::MAX_CONCURRENT_STREAMS, v)]);
                }
            }
            if self.sc.goaway_after == Some(self.answered) {
                testing::goaway(&mut out, id, 0, b"bye");
                self.goaway_last = Some(id);
            }
        }
        // Bodies, within the client's windows.
        let mut still = VecDeque::new();
        while let Some((id, mut left)) = self.pending.pop_front() {
            let sw = self.stream_win.get(&id).copied().unwrap_or(0);
            let can = left
                .min(sw.max(0) as usize)
                .min(self.conn_win.max(0) as usize);
            let mut sent = 0;
            while sent < can {
                let n = (can - sent).min(16384);
                let fin = sent + n == left;
                testing::data(&mut out, id, &ZEROS[..n], fin);
                sent += n;
                if out.len() > 1 << 20 {
                    if !self.send(&out) {
                        return false;
                    }
                    out.clear();
                }
            }
            self.conn_win -= can as i64;
            if let Some(w) = self.stream_win.get_mut(&id) {
                *w -= can as i64;
            }
            left -= can;
            if left > 0 {
                still.push_back((id, left));
            } else {
                self.open.remove(&id);
            }
        }
        self.pending = still;
        if !out.is_empty() && !self.send(&out) {
            return false;
        }
        // After GOAWAY, close once every stream at or below last is answered.
        if let Some(l) = self.goaway_last {
            if self.pending.is_empty() && self.open.keys().all(|&id| id > l) {
                return false;
            }
        }
        true
    }

    fn answered_global(&self) -> u64 {
        GLOBAL_ANSWERED.fetch_add(1, Ordering::SeqCst) + 1
    }
}

static ZEROS: [u8; 16384] = [b'z'; 16384];
static GLOBAL_ANSWERED: AtomicU64 = AtomicU64::new(0);

fn mock(script: Script) -> (SocketAddr, Arc<PeerStats>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let st = Arc::new(PeerStats::default());
    let st2 = Arc::clone(&st);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            st2.conns.fetch_add(1, Ordering::SeqCst);
            let (sc, st) = (script.clone(), Arc::clone(&st2));
            std::thread::spawn(move || {
                let _ = s.set_nodelay(true);
                PeerConn {
                    s,
                    sc: &sc,
                    st: &st,
                    hp: TestPeer::new(),
                    conn_win: 65535,
                    stream_init: 65535,
                    stream_win: BTreeMap::new(),
                    open: BTreeMap::new(),
                    ready: VecDeque::new(),
                    pending: VecDeque::new(),
                    answered: 0,
                    goaway_last: None,
                    lowered: false,
                    lower_acked: false,
                    acked: false,
                }
                .run()
            });
        }
    });
    (addr, st)
}

fn config(addr: SocketAddr) -> BenchConfig {
    let mut cfg = BenchConfig::from_uris(&[format!("http://{addr}/")], None).unwrap();
    cfg.connection_inactivity_timeout = Some(Duration::from_secs(20));
    cfg
}

// The reset test counts responses over the whole process; keep it serial with a lock.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn h2c_counts_settings_and_ping() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, st) = mock(Script {
        body_len: 653,
        ping: true,
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 200;
    cfg.clients = 2;
    cfg.max_concurrent_streams = 10;
    let r = common::run(&cfg).unwrap();
    let q = &r.requests;
    assert_eq!(
        (q.total, q.started, q.done, q.succeeded, q.failed),
        (200, 200, 200, 200, 0)
    );
    assert_eq!(st.requests.load(Ordering::SeqCst), 200);
    assert_eq!(r.traffic.bytes_body, 200 * 653);
    assert!(r.traffic.bytes_head > 0 && r.traffic.bytes_head < r.traffic.bytes_head_decomp);
    assert_eq!(r.app_protocol, Some(AppProtocol::H2c));
    assert_eq!(r.status.s2xx, 200);
    assert_eq!(r.request_time.len(), 200);
    // Our SETTINGS: push disabled, stream window 2^30-1 (-w 30); connection
    // window raised with WINDOW_UPDATE (-W 30).
    let s = st.client_settings.lock().unwrap().clone();
    assert!(s.contains(&(setting::ENABLE_PUSH, 0)), "{s:?}");
    assert!(
        s.contains(&(setting::INITIAL_WINDOW_SIZE, (1 << 30) - 1)),
        "{s:?}"
    );
    assert_eq!(
        st.conn_window_update.load(Ordering::SeqCst),
        (1 << 30) - 1 - 65535
    );
    assert!(st.ping_acked.load(Ordering::SeqCst));
}

#[test]
fn max_concurrent_streams_below_m_caps_concurrency() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, st) = mock(Script {
        settings: vec![(setting::MAX_CONCURRENT_STREAMS, 3)],
        max_streams: Some(3),
        batch_open: Some((3, 30)),
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 30;
    cfg.max_concurrent_streams = 10;
    let r = common::run(&cfg).unwrap();
    // Requests sent before our SETTINGS arrived were refused and retried.
    let q = &r.requests;
    assert_eq!(
        (q.total, q.started, q.done, q.succeeded, q.failed),
        (30, 30, 30, 30, 0)
    );
    assert_eq!(st.requests.load(Ordering::SeqCst), 30);
    assert_eq!(st.max_open.load(Ordering::SeqCst), 3);
    assert!(st.max_open_after_ack.load(Ordering::SeqCst) <= 3);
}

#[test]
fn lowered_max_concurrent_streams_mid_run_is_respected() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, st) = mock(Script {
        lower_mcs_after: Some((10, 2)),
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 100;
    cfg.max_concurrent_streams = 8;
    let r = common::run(&cfg).unwrap();
    assert_eq!(r.requests.succeeded, 100);
    assert!(st.max_open.load(Ordering::SeqCst) > 2);
    assert!(st.max_open_after_lower.load(Ordering::SeqCst) <= 2);
}

#[test]
fn goaway_mid_run_reconnects_and_retries_refused_streams() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, st) = mock(Script {
        goaway_after: Some(25),
        body_len: 10,
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 100;
    cfg.max_concurrent_streams = 10;
    let r = common::run(&cfg).unwrap();
    let q = &r.requests;
    assert_eq!(
        (q.total, q.done, q.succeeded, q.failed, q.errored),
        (100, 100, 100, 0, 0)
    );
    assert_eq!(q.started, 100);
    assert!((3..=4).contains(&r.goaways), "{}", r.goaways);
    assert_eq!(r.reconnects, 3);
    assert_eq!(st.conns.load(Ordering::SeqCst), 4);
    assert_eq!(r.traffic.bytes_body, 1000);
    assert!(r.errors.goaway_errors.is_empty());
}

#[test]
fn rst_stream_counts_as_failed_and_errored() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    GLOBAL_ANSWERED.store(0, Ordering::SeqCst);
    let (addr, _st) = mock(Script {
        reset_every: Some(5),
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 50;
    cfg.max_concurrent_streams = 4;
    let r = common::run(&cfg).unwrap();
    let q = &r.requests;
    assert_eq!((q.done, q.succeeded, q.failed, q.errored), (50, 40, 10, 10));
    assert_eq!(r.errors.stream_resets.get(&2), Some(&10));
    GLOBAL_ANSWERED.store(0, Ordering::SeqCst);
}

#[test]
fn zero_send_window_then_window_update_sends_request_bodies() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, st) = mock(Script {
        settings: vec![(setting::INITIAL_WINDOW_SIZE, 0)],
        window_update_on_headers: Some(1000),
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 10;
    cfg.max_concurrent_streams = 2;
    cfg.body = Some(Arc::from(vec![b'b'; 1000]));
    let r = common::run(&cfg).unwrap();
    assert_eq!(r.requests.succeeded, 10);
    assert_eq!(st.request_body_bytes.load(Ordering::SeqCst), 10_000);
}

#[test]
fn large_responses_complete_with_small_receive_windows() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, st) = mock(Script {
        body_len: 12 * 1024 * 1024,
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 2;
    cfg.max_concurrent_streams = 2;
    cfg.window_bits = 16;
    cfg.connection_window_bits = 16;
    let r = common::run(&cfg).unwrap();
    assert_eq!(r.requests.succeeded, 2);
    assert_eq!(r.traffic.bytes_body, 2 * 12 * 1024 * 1024);
    assert!(st.window_updates_received.load(Ordering::SeqCst) > 100);
}

#[test]
fn connection_closed_mid_frame_fails_the_request() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (addr, _st) = mock(Script {
        close_mid_frame: true,
        ..Default::default()
    });
    let mut cfg = config(addr);
    cfg.requests = 1;
    let r = common::run(&cfg).unwrap();
    let q = &r.requests;
    assert_eq!((q.total, q.succeeded, q.failed, q.errored), (1, 0, 1, 1));
    assert_eq!(r.errors.io, 1);
    assert!(!r.errors.messages.is_empty());
}
