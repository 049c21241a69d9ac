//! Test support: the server's per-connection processing (protocol detection, the HTTP/1.1
//! and HTTP/2 halves, the endpoint router, `/delay` timers, timeouts and shutdown) over
//! in-memory bytes, without sockets or TLS. The fuzz target `server_conn` drives it; the
//! worker loop drives the same protocol code through `Conn` (`conn.rs`).
//!
//! ```
//! use h2lab_server::testing::{MemoryConn, Transport};
//! let mut c = MemoryConn::new(h2lab_server::ServerConfig::local(), Transport::Cleartext).unwrap();
//! c.feed(b"GET /ping HTTP/1.1\r\nhost: x\r\n\r\n");
//! assert!(c.output().starts_with(b"HTTP/1.1 200 OK\r\n"));
//! ```

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::config::ServerConfig;
use crate::ctx::{Ctx, InBuf, Io, Next, Shared, Timers};
use crate::date::DateCache;
use crate::endpoints::Router;
use crate::out::{Out, MAX_IOV, OWNED_HIGH_WATER};
use crate::proto::{Handshake, Protocol};
use crate::shutdown::Shutdown;
use crate::worker::input_limit;
use crate::ServerError;

/// The transport the bytes pretend to arrive on (the TLS layer itself is not run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A cleartext port: HTTP/1.1, h2c by prior knowledge or `Upgrade: h2c`.
    Cleartext,
    /// A TLS port whose handshake chose `h2` by ALPN.
    TlsH2,
    /// A TLS port whose handshake chose HTTP/1.1 (or no ALPN).
    TlsH1,
}

/// One server connection over memory: [`MemoryConn::feed`] bytes in, [`MemoryConn::output`]
/// what the server wrote.
pub struct MemoryConn {
    shared: Shared,
    date: DateCache,
    timers: Timers,
    inbuf: InBuf,
    out: Out,
    proto: Protocol,
    handshake: Handshake,
    read_eof: bool,
    closed: bool,
    written: Vec<u8>,
    output_limit: usize,
}

impl MemoryConn {
    /// A connection as accepted on a `transport` port of a server with `config`.
    pub fn new(config: ServerConfig, transport: Transport) -> Result<Self, ServerError> {
        config.validate().map_err(ServerError::Config)?;
        let router = Router::new(&config).map_err(|source| ServerError::Io {
            context: "--root".into(),
            source,
        })?;
        let max_input = input_limit(&config);
        let mut date = DateCache::default();
        date.update();
        Ok(MemoryConn {
            shared: Shared {
                config,
                router,
                tls: None,
                shutdown: Shutdown::new(),
                alt_svc: None,
            },
            date,
            timers: Timers::default(),
            inbuf: InBuf::new(max_input),
            out: Out::default(),
            proto: Protocol::Detect,
            handshake: match transport {
                Transport::Cleartext => Handshake::Cleartext,
                Transport::TlsH2 => Handshake::TlsDone { h2: true },
                Transport::TlsH1 => Handshake::TlsDone { h2: false },
            },
            read_eof: false,
            closed: false,
            written: Vec::new(),
            output_limit: usize::MAX,
        })
    }

    /// Stops "writing" once `limit` bytes have been written, like a client that stopped
    /// reading (large bodies then wait in the output queue).
    pub fn set_output_limit(&mut self, limit: usize) {
        self.output_limit = limit;
    }

    /// Whether the server has closed the connection (it takes no more input).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Everything the server has written so far.
    pub fn output(&self) -> &[u8] {
        &self.written
    }

    /// Delivers `bytes` as the socket would (in reads of at most the input buffer's free
    /// space), processing after each read as the worker loop does; the queued output is
    /// "written" after each step. Bytes the server can no longer take are dropped.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !self.closed {
            if !bytes.is_empty() && !self.inbuf.is_full() {
                let spare = self.inbuf.spare();
                let n = spare.len().min(bytes.len());
                spare[..n].copy_from_slice(&bytes[..n]);
                self.inbuf.commit(n);
                bytes = &bytes[n..];
            }
            let before = (self.inbuf.len(), self.written.len(), bytes.len());
            self.process();
            if before == (self.inbuf.len(), self.written.len(), bytes.len()) {
                break;
            }
        }
    }

    /// The peer closed its sending side.
    pub fn close_input(&mut self) {
        self.read_eof = true;
        self.feed(&[]);
    }

    /// Fires every armed timer (`/delay`) at once, as if its deadline had passed.
    pub fn fire_timers(&mut self) {
        let far = Instant::now() + Duration::from_secs(3600);
        while let Some((_, _, tag)) = self.timers.pop_expired(far) {
            if self.closed {
                continue;
            }
            let (mut io, mut ctx, proto) = self.parts();
            proto.on_timer(tag, &mut io, &mut ctx);
            self.flush();
            self.feed(&[]);
        }
    }

    /// The idle timeout check, with the connection idle (and any unread input stalled)
    /// for the whole timeout.
    pub fn idle_timeout(&mut self) {
        if self.closed {
            return;
        }
        let idle = self.shared.config.idle_timeout;
        let now = Instant::now();
        let last_active = now.checked_sub(idle).unwrap_or(now);
        let stalled = !self.inbuf.is_empty();
        let (mut io, _, proto) = self.parts();
        if proto.check_timeout(&mut io, now, last_active, idle, stalled) {
            self.closed = true;
        }
        self.flush();
    }

    /// Server shutdown (HTTP/2 sends a GOAWAY).
    pub fn shutdown(&mut self) {
        let (mut io, _, proto) = self.parts();
        proto.on_shutdown(&mut io);
        self.closed = true;
        self.flush();
    }

    fn parts(&mut self) -> (Io<'_>, Ctx<'_>, &mut Protocol) {
        let io = Io {
            inbuf: &mut self.inbuf,
            out: &mut self.out,
            read_eof: self.read_eof,
            tls: self.handshake != Handshake::Cleartext,
            early: false,
            peer: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
        };
        let ctx = Ctx {
            shared: &self.shared,
            now: Instant::now(),
            date: &self.date,
            timers: &mut self.timers,
            slot: 0,
            gen: 0,
        };
        (io, ctx, &mut self.proto)
    }

    fn process(&mut self) {
        let handshake = self.handshake;
        let (mut io, mut ctx, proto) = self.parts();
        match proto.process(&mut io, &mut ctx, handshake) {
            Next::Continue => {}
            Next::CloseAfterFlush => self.closed = true,
            Next::CloseNow => {
                // The connection drops what is queued.
                self.closed = true;
                let n = self.out.len();
                self.out.advance(n);
            }
        }
        self.proto.take_lowat();
        self.flush();
    }

    /// "Writes" the queued output.
    fn flush(&mut self) {
        while !self.out.is_empty() && self.written.len() < self.output_limit {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let k = self.out.io_slices(&mut iov);
            // A short write once the limit is reached, as from a full socket buffer.
            let mut room = self.output_limit - self.written.len();
            let mut n = 0;
            for s in &iov[..k] {
                let take = s.len().min(room);
                self.written.extend_from_slice(&s[..take]);
                room -= take;
                n += take;
            }
            self.out.advance(n);
        }
        self.out.compact(OWNED_HIGH_WATER);
    }
}

/// Serves HTTP/3 (the `serve --h3` loop) on `socket` with its send and receive buffers set
/// to `buffer` bytes (the kernel doubles the figure) instead of 4 MiB, until `shutdown`:
/// small buffers make sends find the socket full, the path a lost wake-up would stall.
/// Returns the send path's counters (sends that found the socket full, sends refused).
pub fn serve_h3_with_buffers(
    socket: std::net::UdpSocket,
    config: &ServerConfig,
    buffer: usize,
    shutdown: &Shutdown,
) -> Result<crate::quic::udp::SendCounts, ServerError> {
    let quic = crate::http3::quic_server_config(config)?;
    let io =
        crate::quic::UdpIo::new(socket, config.h3_gso).map_err(crate::io_err("HTTP/3 socket"))?;
    io.set_buffer_sizes(buffer, buffer)
        .map_err(crate::io_err("HTTP/3 socket buffers"))?;
    crate::http3::run_on(io, config, quic, shutdown).map_err(crate::io_err("HTTP/3 loop"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(transport: Transport) -> MemoryConn {
        let mut config = ServerConfig::local();
        config.quiet = true;
        MemoryConn::new(config, transport).unwrap()
    }

    /// Frame types in `out`, in order.
    fn frame_types(mut out: &[u8]) -> Vec<u8> {
        let mut kinds = Vec::new();
        while out.len() >= 9 {
            let len =
                (usize::from(out[0]) << 16) | (usize::from(out[1]) << 8) | usize::from(out[2]);
            kinds.push(out[3]);
            out = &out[(9 + len).min(out.len())..];
        }
        kinds
    }

    #[test]
    fn http1_requests_are_answered_in_order_and_delays_wait_for_timers() {
        let mut c = conn(Transport::Cleartext);
        c.feed(
            b"GET /ping HTTP/1.1\r\nhost: t\r\n\r\nGET /delay?ms=10 HTTP/1.1\r\nhost: t\r\n\r\n",
        );
        let text = String::from_utf8_lossy(c.output()).into_owned();
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("pong"),
            "{text}"
        );
        c.fire_timers();
        assert!(String::from_utf8_lossy(c.output()).ends_with("delayed 10 ms\n"));
        c.feed(b"GET /nope HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n");
        assert!(c.is_closed());
        assert!(String::from_utf8_lossy(c.output()).contains("HTTP/1.1 404 "));
    }

    #[test]
    fn http2_by_preface_or_alpn_answers_and_says_goaway_on_shutdown() {
        for transport in [Transport::Cleartext, Transport::TlsH2] {
            let mut c = conn(transport);
            let mut input = h2lab_wire::frame::PREFACE.to_vec();
            input.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]); // empty SETTINGS
            c.feed(&input);
            assert_eq!(frame_types(c.output()), [4, 4], "SETTINGS and the ACK");
            c.shutdown();
            assert_eq!(frame_types(c.output()).last(), Some(&7), "GOAWAY");
            assert!(c.is_closed());
        }
    }

    #[test]
    fn tls_without_h2_is_http1_and_output_limit_holds_large_bodies() {
        let mut c = conn(Transport::TlsH1);
        c.set_output_limit(1000);
        c.feed(b"GET /data?size=10m HTTP/1.1\r\nhost: t\r\n\r\n");
        assert!(c.output().starts_with(b"HTTP/1.1 200 OK\r\n"));
        assert!(c.output().len() < 1 << 20);
        assert!(!c.is_closed());
    }
}
