//! A client connection (HTTP/1.1 over TCP or TLS) and the response it is being sent: the
//! upstream side calls [`Front::resp_head`], [`Front::resp_body`], [`Front::resp_end`] and
//! [`Front::resp_fail`] as the upstream's answer arrives, and the bytes are queued in the
//! client's output in HTTP/1.1 form (chunked when the length is not known).

use std::io::Write;
use std::net::SocketAddr;
use std::time::Instant;

use h2lab_wire::h1::{
    encode_chunk, push_decimal, reason_phrase, BodyDecoder, Limits, RequestParser,
};

use crate::buf::{Buf, InBuf};
use crate::fields::IpText;
use crate::io::FrontIo;
use crate::stats::Stats;

/// Body chunks at least this large are written to the client's socket directly (behind what
/// is queued) instead of being copied into its output buffer first.
const WRITE_THROUGH_MIN: usize = 8 * 1024;
/// ... when no more than this is queued before them.
const WRITE_THROUGH_MAX_QUEUED: usize = 16 * 1024;

/// Which upstream connection (and stream) serves the current request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// Upstream connection slot.
    pub up: usize,
    /// Its generation.
    pub gen: u32,
    /// HTTP/2 stream id (0 for HTTP/1.x).
    pub stream: u32,
}

/// Connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FState {
    /// Waiting for a request head.
    Head,
    /// A request is being forwarded / answered.
    Exchange,
    /// Write what is queued, then close.
    Closing,
}

/// The response being sent to the client.
#[derive(Debug, Default, Clone, Copy)]
pub struct Resp {
    /// Head written.
    pub started: bool,
    /// Body sent with chunked coding.
    pub chunked: bool,
    /// No body may be sent (HEAD, 204, 304).
    pub no_body: bool,
    /// Complete.
    pub done: bool,
}

/// A client connection.
pub struct Front {
    /// Transport.
    pub io: FrontIo,
    /// Unread input.
    pub inbuf: InBuf,
    /// Queued output.
    pub out: Buf,
    /// Client address.
    pub peer: SocketAddr,
    /// Its IP address as text (for `X-Real-IP` / `X-Forwarded-For`).
    pub ip: IpText,
    /// State.
    pub state: FState,
    /// Request head parser.
    pub parser: RequestParser,
    /// The upstream serving the current request (cleared by the upstream side when its
    /// part of the exchange is over).
    pub link: Option<Link>,
    /// Request body still to read.
    pub body: Option<BodyDecoder>,
    /// Decoded request body not yet taken by the upstream.
    pub pending: Buf,
    /// The request body ended (what is in `pending` is its last part).
    pub body_ended: bool,
    /// The whole request was handed to the upstream.
    pub req_done: bool,
    /// The response.
    pub resp: Resp,
    /// Keep the connection after this exchange.
    pub persist: bool,
    /// The client speaks HTTP/1.0.
    pub http10: bool,
    /// The request is HEAD.
    pub is_head: bool,
    /// Readable readiness not yet consumed.
    pub want_read: bool,
    /// The poller reported the peer's FIN (or an error): reads go on until EOF shows.
    pub hup: bool,
    /// The client closed its sending side.
    pub read_eof: bool,
    /// Waiting for an upstream stream slot (h2c-mux at its connection limit).
    pub waiting: bool,
    /// When the current request stops waiting for a stream slot: the upstream timeout from
    /// its first wait (then 504, as an upstream without progress).
    pub wait_deadline: Option<Instant>,
    /// On the worker's work list.
    pub queued: bool,
    /// Last input.
    pub last_active: Instant,
    /// Bytes were written to the client since the last sweep (output progress).
    pub wrote: bool,
    /// Last output progress seen by the sweep: a client that neither sends nor takes
    /// anything for the idle timeout while the proxy holds output for it is cut off.
    pub last_write: Instant,
    /// When the current head started arriving.
    pub head_started: Option<Instant>,
    /// Upstream timeout deadline of the current exchange.
    pub deadline: Option<Instant>,
    /// Trailer lines of the current response.
    pub trailers: Vec<u8>,
    /// A virtual connection: the HTTP/2 client connection (slot, generation) whose stream it
    /// serves.
    pub parent: Option<(usize, u32)>,
    /// HTTP/2 state, once the connection speaks HTTP/2.
    pub h2: Option<Box<crate::front_h2::H2Front>>,
    /// The protocol (HTTP/1.1 or HTTP/2) is not decided yet.
    pub fresh: bool,
    /// Bytes of the current request's head kept at the start of `inbuf` so that it can be
    /// sent again (a request without body, not retried yet); consumed when the exchange ends.
    pub held: usize,
    /// The current request is being sent a second time (it is never retried again).
    pub retried: bool,
    /// The current request's method is idempotent (RFC 9110 §9.2.2).
    pub idempotent: bool,
    /// The current request went on an upstream connection that had carried one before.
    pub reused: bool,
    /// Response DATA bytes received on the current exchange's h2c stream and not yet
    /// returned to the upstream (WINDOW_UPDATE) because they are still queued here.
    pub unreleased: usize,
    /// HTTP/1.1 trailers may be sent to this client (`TE: trailers`, or an HTTP/2 stream).
    pub te_trailers: bool,
    /// Trailer lines of the current request body (`name: value\r\n` each).
    pub req_trailers: Vec<u8>,
}

/// What is known of an upstream request that failed before any of its response arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// The upstream said it did not process it: a stream above a GOAWAY's last stream id,
    /// or RST_STREAM(REFUSED_STREAM) (RFC 9113 §8.7).
    Refused,
    /// The connection closed (or was reset) before any of the response arrived: the
    /// request may or may not have been processed.
    Lost,
}

impl Front {
    /// A new connection.
    pub fn new(
        io: FrontIo,
        peer: SocketAddr,
        config: &h2lab_server::ServerConfig,
        now: Instant,
    ) -> Self {
        let limits = Limits {
            max_request_line: (config.max_header_list_size as usize).max(1024),
            max_header_bytes: config.max_header_list_size as usize,
            max_headers: h2lab_wire::h1::MAX_HEADERS,
            max_body: config.max_request_body,
        };
        Front {
            io,
            inbuf: InBuf::default(),
            out: Buf::default(),
            peer,
            ip: IpText::new(peer.ip()),
            state: FState::Head,
            parser: RequestParser::new(limits),
            link: None,
            body: None,
            pending: Buf::default(),
            body_ended: false,
            req_done: false,
            resp: Resp::default(),
            persist: true,
            http10: false,
            is_head: false,
            want_read: true,
            hup: false,
            read_eof: false,
            waiting: false,
            wait_deadline: None,
            queued: false,
            last_active: now,
            wrote: false,
            last_write: now,
            head_started: None,
            deadline: None,
            trailers: Vec::new(),
            parent: None,
            h2: None,
            fresh: true,
            held: 0,
            retried: false,
            idempotent: false,
            reused: false,
            unreleased: 0,
            te_trailers: false,
            req_trailers: Vec::new(),
        }
    }

    /// Sets the current request up to be sent again on a fresh upstream connection instead
    /// of answering 502, when that is safe: it has no body (its head is still held), it was
    /// not retried already, nothing of the response arrived, and either the upstream refused
    /// it ([`Unsent::Refused`], any method) or a reused keep-alive connection closed under
    /// an idempotent request ([`Unsent::Lost`], RFC 9110 §9.2.2). True: it will be retried
    /// (the worker re-reads the held head).
    pub fn retry(&mut self, why: Unsent, stats: &mut Stats) -> bool {
        let safe = match why {
            Unsent::Refused => true,
            Unsent::Lost => self.idempotent && self.reused,
        };
        if !safe
            || self.held == 0
            || self.retried
            || self.link.is_none()
            || self.resp.started
            || self.resp.done
        {
            return false;
        }
        self.retried = true;
        self.held = 0;
        self.link = None;
        self.deadline = None;
        self.state = FState::Head;
        stats.upstream_retries += 1;
        true
    }

    /// Forwards the upstream's `103 Early Hints` (RFC 8297; `lines` as for
    /// [`Front::resp_head`]) ahead of the final response, as nginx 1.29 does. RFC 9110
    /// §15.2: "A proxy MUST forward 1xx responses unless the proxy itself requested the
    /// generation of the 1xx response" — other 1xx codes are this proxy's own business
    /// (`100 Continue` answers its own request) and are not passed on; nor is anything to
    /// an HTTP/1.0 client ("a server MUST NOT send a 1xx response to an HTTP/1.0 client").
    pub fn resp_interim(&mut self, status: u16, lines: &[u8]) {
        if status != 103 || self.resp.started || self.resp.done || self.http10 {
            return;
        }
        let out = self.out.tail();
        out.extend_from_slice(b"HTTP/1.1 103 Early Hints\r\n");
        out.extend_from_slice(lines);
        out.extend_from_slice(b"\r\n");
    }

    /// Writes the response head. `lines`: forwarded fields (`name: value\r\n` each);
    /// `end_stream`: the upstream said there is no body.
    pub fn resp_head(
        &mut self,
        status: u16,
        lines: &[u8],
        content_length: Option<u64>,
        end_stream: bool,
    ) {
        if self.resp.started || self.resp.done {
            return;
        }
        let no_body = self.is_head || status == 204 || status == 304 || status < 200;
        let out = self.out.tail();
        out.extend_from_slice(b"HTTP/1.1 ");
        push_decimal(out, u64::from(status));
        out.push(b' ');
        out.extend_from_slice(reason_phrase(status).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(lines);
        let mut chunked = false;
        match content_length {
            Some(n) if status != 204 => {
                out.extend_from_slice(b"content-length: ");
                push_decimal(out, n);
                out.extend_from_slice(b"\r\n");
            }
            Some(_) => {}
            None if no_body => {}
            None if end_stream => out.extend_from_slice(b"content-length: 0\r\n"),
            None if !self.http10 => {
                out.extend_from_slice(b"transfer-encoding: chunked\r\n");
                chunked = true;
            }
            None => self.persist = false, // close-delimited for an HTTP/1.0 client
        }
        if !self.persist {
            out.extend_from_slice(b"connection: close\r\n\r\n");
        } else if self.http10 {
            out.extend_from_slice(b"connection: keep-alive\r\n\r\n");
        } else {
            out.extend_from_slice(b"\r\n");
        }
        self.resp = Resp {
            started: true,
            chunked,
            no_body,
            done: false,
        };
    }

    /// Queues body bytes.
    pub fn resp_body(&mut self, data: &[u8]) {
        if !self.resp.started || self.resp.done || self.resp.no_body || data.is_empty() {
            return;
        }
        if self.resp.chunked {
            encode_chunk(self.out.tail(), data);
            return;
        }
        let mut data = data;
        if data.len() >= WRITE_THROUGH_MIN && self.out.len() <= WRITE_THROUGH_MAX_QUEUED {
            // A large chunk and little queued before it: write both now (one copy fewer).
            let before = self.out.len();
            let n = self.io.write_through(&mut self.out, data);
            self.wrote |= n > 0 || self.out.len() < before;
            data = &data[n..];
        }
        self.out.tail().extend_from_slice(data);
    }

    /// Trailer fields (`name: value\r\n` lines) to send with the end of a chunked body.
    pub fn resp_trailers(&mut self, lines: &[u8]) {
        self.trailers.clear();
        self.trailers.extend_from_slice(lines);
    }

    /// The response is complete.
    pub fn resp_end(&mut self, stats: &mut Stats) {
        if !self.resp.started || self.resp.done {
            return;
        }
        if self.resp.chunked && !self.resp.no_body {
            let out = self.out.tail();
            out.extend_from_slice(b"0\r\n");
            if self.te_trailers && self.parent.is_none() {
                // Otherwise dropped, as RFC 9110 §6.5.1 allows.
                out.extend_from_slice(&self.trailers);
            }
            out.extend_from_slice(b"\r\n");
        }
        if self.parent.is_none() {
            self.trailers.clear();
        } // An HTTP/2 stream's trailers are taken from here by its connection (`pump`).

        self.resp.done = true;
        self.link = None;
        self.deadline = None;
        stats.responses += 1;
    }

    /// The upstream failed: the proxy's own `status` (502, 504) when nothing was sent yet,
    /// otherwise the response is cut (the connection closes without completing it).
    pub fn resp_fail(&mut self, status: u16, stats: &mut Stats) {
        self.link = None;
        self.deadline = None;
        if self.resp.done {
            return;
        }
        if self.resp.started {
            self.resp.done = true;
            self.persist = false;
            self.state = FState::Closing;
            return;
        }
        if !self.req_done {
            self.persist = false;
        }
        write_error(self.out.tail(), status, self.persist, self.is_head);
        self.resp = Resp {
            started: true,
            chunked: false,
            no_body: true,
            done: true,
        };
        stats.responses += 1;
    }
}

/// Writes a complete error response of the proxy's own.
pub fn write_error(out: &mut Vec<u8>, status: u16, persist: bool, head_only: bool) {
    let reason = reason_phrase(status);
    let body_len = 3 + 1 + reason.len() + 1;
    let _ = write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nserver: h2lab-proxy\r\ncontent-type: text/plain\r\ncontent-length: {body_len}\r\n{}\r\n",
        if persist { "" } else { "connection: close\r\n" }
    );
    if !head_only {
        let _ = writeln!(out, "{status} {reason}");
    }
}
