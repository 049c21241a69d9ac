//! Test support: the server's per-connection processing (protocol detection, the HTTP/1.1
//! and HTTP/2 halves, the endpoint router, `/delay` timers, timeouts and shutdown) over
//! in-memory bytes, without sockets or TLS. The fuzz target `server_conn` drives it; the
//! worker loop drives the same [`Protocol`] through [`crate::conn::Conn`].
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
            let n: usize = iov[..k].iter().map(|s| s.len()).sum();
            for s in &iov[..k] {
                self.written.extend_from_slice(s);
            }
            self.out.advance(n);
        }
        self.out.compact(OWNED_HIGH_WATER);
    }
}
