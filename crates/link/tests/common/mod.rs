//! Tiny blocking servers for the link tests: echo, source (sends N bytes), sink (counts bytes).
#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// A server on 127.0.0.1:0 that runs `handle` on a thread per connection.
pub fn serve(handle: fn(TcpStream)) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let _ = stream.set_nodelay(true);
            thread::spawn(move || handle(stream));
        }
    });
    addr
}

/// Echoes everything, then half-closes after the client's FIN.
pub fn echo(mut s: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if s.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
    let _ = s.shutdown(Shutdown::Write);
}

/// Reads an 8-byte big-endian length N, writes N bytes, closes.
pub fn source(mut s: TcpStream) {
    let mut len = [0u8; 8];
    if s.read_exact(&mut len).is_err() {
        return;
    }
    let mut left = u64::from_be_bytes(len);
    let buf = vec![0x5au8; 256 * 1024];
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        if s.write_all(&buf[..n]).is_err() {
            return;
        }
        left -= n as u64;
    }
}

/// Reads until EOF, then writes back (big-endian) the byte count, the size of the first read
/// and the nanoseconds from the first read to the last, and closes.
pub fn sink(mut s: TcpStream) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    let mut first = 0u64;
    let mut t0 = None;
    let mut last = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                last = Instant::now();
                if t0.is_none() {
                    t0 = Some(last);
                    first = n as u64;
                }
                total += n as u64;
            }
            Err(_) => return,
        }
    }
    let span = t0.map_or(0, |t0| (last - t0).as_nanos() as u64);
    let mut reply = [0u8; 24];
    reply[..8].copy_from_slice(&total.to_be_bytes());
    reply[8..16].copy_from_slice(&first.to_be_bytes());
    reply[16..].copy_from_slice(&span.to_be_bytes());
    let _ = s.write_all(&reply);
}

/// A connected client with generous timeouts, so a broken link fails the test instead of
/// hanging it.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// One echo round trip of `msg`.
pub fn round_trip(s: &mut TcpStream, msg: &[u8]) -> io::Result<Duration> {
    let mut back = vec![0u8; msg.len()];
    let t = Instant::now();
    s.write_all(msg)?;
    s.read_exact(&mut back)?;
    let rtt = t.elapsed();
    assert_eq!(back, msg);
    Ok(rtt)
}

/// Median of the samples.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One transfer through a link: the receiver's rate and the whole transfer's duration.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    /// Bits per second at the receiver, from its first read to its last (so the link's
    /// latency, which delays the start, is not counted).
    pub rate: f64,
    /// From the client's first write (its request, or its first bytes up) to the client
    /// seeing the transfer end (the last byte down, or the sink's reply): a receiver or a
    /// relay that waited for the CPU makes this longer, never shorter.
    pub elapsed: Duration,
    /// When the client started writing (after connecting).
    pub start: Instant,
}

/// Downloads `n` bytes from a `source` server at `addr` and returns the receive rate in bits
/// per second, measured from the first read to the last (so the link's latency, which delays
/// the start, is not counted).
pub fn download_rate(addr: SocketAddr, n: u64) -> f64 {
    download(addr, n).rate
}

/// Downloads `n` bytes from a `source` server at `addr` (see [`Transfer`]).
pub fn download(addr: SocketAddr, n: u64) -> Transfer {
    let mut s = connect(addr);
    let start = Instant::now();
    s.write_all(&n.to_be_bytes()).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let first = s.read(&mut buf).unwrap();
    assert!(first > 0);
    let t0 = Instant::now();
    let mut got = first as u64;
    let mut t_last = t0;
    while got < n {
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "EOF after {got} of {n} bytes");
        got += k as u64;
        t_last = Instant::now();
    }
    let secs = (t_last - t0).as_secs_f64();
    Transfer {
        rate: (n - first as u64) as f64 * 8.0 / secs,
        elapsed: t_last - start,
        start,
    }
}

/// Uploads `n` bytes to a `sink` server at `addr` and returns the rate in bits per second at
/// which the sink received them, from its first read to its last (as [`download_rate`]).
pub fn upload_rate(addr: SocketAddr, n: u64) -> f64 {
    upload(addr, n).rate
}

/// Uploads `n` bytes to a `sink` server at `addr` (see [`Transfer`]).
pub fn upload(addr: SocketAddr, n: u64) -> Transfer {
    let mut s = connect(addr);
    let buf = vec![0xa5u8; 256 * 1024];
    let start = Instant::now();
    let mut left = n;
    while left > 0 {
        let k = left.min(buf.len() as u64) as usize;
        s.write_all(&buf[..k]).unwrap();
        left -= k as u64;
    }
    s.shutdown(Shutdown::Write).unwrap();
    let (total, first, span) = sink_reply(&mut s);
    let elapsed = start.elapsed();
    assert_eq!(total, n);
    Transfer {
        rate: (n - first) as f64 * 8.0 / (span as f64 / 1e9),
        elapsed,
        start,
    }
}

/// Reads a `sink` reply: (bytes received, size of the first read, nanoseconds first to last).
pub fn sink_reply(s: &mut TcpStream) -> (u64, u64, u64) {
    let mut reply = [0u8; 24];
    s.read_exact(&mut reply).unwrap();
    let word = |i: usize| u64::from_be_bytes(reply[i..i + 8].try_into().unwrap());
    (word(0), word(8), word(16))
}

/// A quinn client configuration for HTTP/3 (`h3` in ALPN) that trusts the certificate in the
/// PEM file `cert` (the built-in server's self-signed one).
pub fn h3_client_config(cert: &std::path::Path) -> quinn::ClientConfig {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    quinn::ClientConfig::new(std::sync::Arc::new(crypto))
}
