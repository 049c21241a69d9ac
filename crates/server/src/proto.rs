//! The protocol running on one connection, without its transport: detection (the HTTP/2
//! preface, `Upgrade: h2c`, or ALPN after a TLS handshake) and dispatch to the HTTP/1.1
//! ([`H1`]) or HTTP/2 ([`H2`]) half. Sans-IO: bytes come in through [`Io`], output goes to
//! its queue; `Conn` (`conn.rs`) owns the socket and TLS around it.

use std::time::{Duration, Instant};

use crate::ctx::{Ctx, Io, Next};
use crate::http1::{Step, Upgrade, H1};
use crate::http2::H2;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Where the connection's transport stands, for protocol detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Cleartext: the first bytes tell the HTTP/2 preface from HTTP/1.1.
    Cleartext,
    /// TLS, handshake not finished.
    TlsPending,
    /// TLS, handshake done; `h2`: ALPN chose HTTP/2.
    TlsDone {
        /// ALPN selected `h2`.
        h2: bool,
    },
}

/// The protocol running on a connection.
#[allow(clippy::large_enum_variant)] // one per connection; boxing would add a pointer chase per event
pub enum Protocol {
    /// Cleartext: waiting for enough bytes to tell the HTTP/2 preface from HTTP/1.1.
    /// TLS: waiting for the handshake (ALPN) to finish.
    Detect,
    /// HTTP/1.1 (and 1.0).
    H1(H1),
    /// HTTP/2.
    H2(Box<H2>),
}

impl Protocol {
    /// Runs the protocol over the buffered input (detecting it first if needed).
    pub fn process(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>, handshake: Handshake) -> Next {
        if let Protocol::Detect = self {
            match handshake {
                Handshake::TlsPending => {
                    return if io.read_eof {
                        Next::CloseNow
                    } else {
                        Next::Continue
                    };
                }
                Handshake::TlsDone { h2: true } => self.start_h2(io, ctx, None),
                Handshake::TlsDone { h2: false } => *self = Protocol::H1(H1::new(ctx.shared)),
                Handshake::Cleartext => {
                    let data = io.inbuf.data();
                    let n = data.len().min(PREFACE.len());
                    if data[..n] != PREFACE[..n] {
                        *self = Protocol::H1(H1::new(ctx.shared));
                    } else if n == PREFACE.len() {
                        self.start_h2(io, ctx, None);
                    } else {
                        return if io.read_eof {
                            Next::CloseAfterFlush
                        } else {
                            Next::Continue
                        };
                    }
                }
            }
        }
        match self {
            Protocol::Detect => Next::Continue,
            Protocol::H1(h1) => match h1.process(io, ctx) {
                Step::Next(n) => n,
                Step::Upgrade(up) => {
                    self.start_h2(io, ctx, Some(up));
                    self.process(io, ctx, handshake)
                }
            },
            Protocol::H2(h2) => h2.process(io, ctx),
        }
    }

    fn start_h2(&mut self, io: &mut Io<'_>, ctx: &mut Ctx<'_>, upgrade: Option<Box<Upgrade>>) {
        let h2 = H2::new(ctx, io.out, upgrade);
        *self = Protocol::H2(Box::new(h2));
    }

    /// The TCP_NOTSENT_LOWAT the connection should set on its socket, once (HTTP/2 with
    /// priorities).
    pub fn take_lowat(&mut self) -> Option<u32> {
        match self {
            Protocol::H2(h2) => h2.take_lowat(),
            _ => None,
        }
    }

    /// A timer armed through [`Ctx`] fired.
    pub fn on_timer(&mut self, tag: u32, io: &mut Io<'_>, ctx: &mut Ctx<'_>) {
        match self {
            Protocol::H1(h1) => h1.on_timer(io, ctx),
            Protocol::H2(h2) => h2.on_timer(tag, io, ctx),
            Protocol::Detect => {}
        }
    }

    /// Whether processing could make progress without new input; `input`: more input is
    /// buffered or may be readable.
    pub fn has_pending_work(&self, input: bool) -> bool {
        match self {
            Protocol::Detect => false,
            Protocol::H1(h1) => h1.has_pending_work() || (input && h1.accepts_input()),
            Protocol::H2(h2) => h2.has_pending_work() || input,
        }
    }

    /// The timeout check: whether the connection has been idle (or, over HTTP/2, had its
    /// input `stalled`) too long; HTTP/2 then queues its GOAWAY.
    pub fn check_timeout(
        &mut self,
        io: &mut Io<'_>,
        now: Instant,
        last_active: Instant,
        idle: Duration,
        stalled: bool,
    ) -> bool {
        match self {
            Protocol::Detect => now.duration_since(last_active) >= idle,
            Protocol::H1(h1) => h1.timed_out(now, last_active, idle),
            Protocol::H2(h2) => {
                // Slowloris over HTTP/2: a frame trickled in more slowly than it would take
                // to time out, byte by byte, keeps the connection active but never
                // completes. Like an HTTP/1.1 request head, unread input must be consumed
                // within the idle timeout.
                if stalled || h2.timed_out(now, last_active, idle) {
                    h2.on_idle_timeout(io);
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Server shutdown: HTTP/2 queues a GOAWAY.
    pub fn on_shutdown(&mut self, io: &mut Io<'_>) {
        if let Protocol::H2(h2) = self {
            h2.on_idle_timeout(io);
        }
    }
}
