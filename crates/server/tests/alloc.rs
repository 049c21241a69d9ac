//! The hot path allocates nothing per request: a counting global allocator watches the
//! whole process while a client that itself never allocates (fixed buffers, pre-built
//! requests) runs requests against a warmed-up, single-worker server.

use std::io::{Read, Write};
use std::net::TcpStream;

#[global_allocator]
static GLOBAL: h2lab_testkit::CountingAlloc = h2lab_testkit::CountingAlloc;

/// The tests count process-wide: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Reads exactly `n` bytes into `buf` (a fixed scratch buffer, reused).
fn read_exact_discard(sock: &mut TcpStream, mut n: usize, buf: &mut [u8]) {
    while n > 0 {
        let want = n.min(buf.len());
        let got = sock.read(&mut buf[..want]).unwrap();
        assert!(got > 0, "EOF");
        n -= got;
    }
}

/// Length of one full HTTP/1.1 response to `req` (head + content-length).
fn h1_response_len(sock: &mut TcpStream, req: &[u8]) -> usize {
    sock.write_all(req).unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(sock.read(&mut b).unwrap(), 1);
        head.push(b[0]);
    }
    let text = String::from_utf8(head.clone()).unwrap();
    let cl: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut scratch = vec![0u8; 65536];
    read_exact_discard(sock, cl, &mut scratch);
    head.len() + cl
}

#[test]
fn http1_requests_do_not_allocate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cfg = h2lab_server::ServerConfig::local();
    cfg.threads = 1;
    let server = h2lab_server::spawn(cfg).unwrap();
    let mut sock = TcpStream::connect(server.addr().unwrap()).unwrap();
    sock.set_nodelay(true).unwrap();
    let mut scratch = vec![0u8; 65536];
    for target in [
        "/ping",
        "/json",
        "/data?size=653",
        "/data?size=100k",
        "/asset/1/7.png",
        "/",
    ] {
        let req =
            format!("GET {target} HTTP/1.1\r\nhost: localhost\r\nuser-agent: alloc-test\r\n\r\n");
        let req = req.as_bytes();
        // Warm up: buffers reach their working size, the date is cached.
        let len = h1_response_len(&mut sock, req);
        for _ in 0..50 {
            sock.write_all(req).unwrap();
            read_exact_discard(&mut sock, len, &mut scratch);
        }
        let before = h2lab_testkit::allocations();
        let n = 500;
        for _ in 0..n {
            sock.write_all(req).unwrap();
            read_exact_discard(&mut sock, len, &mut scratch);
        }
        let allocs = h2lab_testkit::allocations() - before;
        // A few allocations may come from a second boundary (nothing per request).
        assert!(
            allocs <= 4,
            "{target}: {allocs} allocations for {n} requests"
        );
    }
}

/// A minimal HTTP/2 client over fixed buffers.
struct H2Client {
    sock: TcpStream,
    next_id: u32,
    scratch: Vec<u8>,
}

impl H2Client {
    fn connect(addr: std::net::SocketAddr) -> Self {
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_nodelay(true).unwrap();
        let mut hello = Vec::new();
        hello.extend_from_slice(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        // SETTINGS: INITIAL_WINDOW_SIZE = 2^31-1 (no WINDOW_UPDATE needed per stream).
        hello.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xff]);
        // WINDOW_UPDATE on the connection: +2^31-1-65535.
        let inc: u32 = 0x7fff_ffff - 65_535;
        hello.extend_from_slice(&[0, 0, 4, 8, 0, 0, 0, 0, 0]);
        hello.extend_from_slice(&inc.to_be_bytes());
        sock.write_all(&hello).unwrap();
        H2Client {
            sock,
            next_id: 1,
            scratch: vec![0u8; 1 << 17],
        }
    }

    /// Sends GET `path` (literal fields without indexing: the peer's HPACK table never
    /// changes, so the block is the same bytes every time) into `frame` (reused).
    fn send(&mut self, frame: &mut Vec<u8>, block: &[u8]) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        frame.clear();
        let len = block.len() as u32;
        frame.extend_from_slice(&len.to_be_bytes()[1..]);
        frame.extend_from_slice(&[1, 0x5]);
        frame.extend_from_slice(&id.to_be_bytes());
        frame.extend_from_slice(block);
        self.sock.write_all(frame).unwrap();
        id
    }

    /// Reads frames until END_STREAM on `id`; acknowledges SETTINGS.
    fn finish(&mut self, id: u32) {
        loop {
            let mut h = [0u8; 9];
            self.sock.read_exact(&mut h).unwrap();
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            let (kind, flags) = (h[3], h[4]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            read_exact_discard(&mut self.sock, len, &mut self.scratch);
            assert_ne!(kind, 3, "RST_STREAM");
            assert_ne!(kind, 7, "GOAWAY");
            if kind == 4 && flags & 1 == 0 {
                self.sock.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0]).unwrap();
            }
            if stream == id && (kind == 0 || kind == 1) && flags & 1 == 1 {
                return;
            }
        }
    }
}

fn get_block(path: &str) -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x04, path.len() as u8];
    b.extend_from_slice(path.as_bytes());
    b.extend_from_slice(&[0x01, 9]);
    b.extend_from_slice(b"localhost");
    b
}

#[test]
fn http2_requests_do_not_allocate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cfg = h2lab_server::ServerConfig::local();
    cfg.threads = 1;
    let server = h2lab_server::spawn(cfg).unwrap();
    let mut c = H2Client::connect(server.addr().unwrap());
    let mut frame = Vec::with_capacity(256);
    for path in [
        "/ping",
        "/json",
        "/data?size=653",
        "/data?size=100k",
        "/asset/1/7.png",
        "/",
    ] {
        let block = get_block(path);
        let run = |c: &mut H2Client, frame: &mut Vec<u8>, n: usize| {
            for _ in 0..n {
                // Ten streams in flight at a time.
                let first = c.next_id;
                for _ in 0..10 {
                    c.send(frame, &block);
                }
                for k in 0..10 {
                    c.finish(first + 2 * k);
                }
            }
        };
        run(&mut c, &mut frame, 10);
        let before = h2lab_testkit::allocations();
        run(&mut c, &mut frame, 50);
        let allocs = h2lab_testkit::allocations() - before;
        assert!(allocs <= 4, "{path}: {allocs} allocations for 500 requests");
    }
}
