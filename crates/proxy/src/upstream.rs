//! An upstream connection: HTTP/1.x (one exchange at a time, kept alive in the pool) or h2c
//! (one stream, or up to `--streams` multiplexed), and the translation of what it answers
//! into calls on the client connections it serves.

use std::time::Instant;

use h2lab_wire::h1::{Event, ResponseParser};
use h2lab_wire::h2::{
    Connection, ErrorCode, Events, HeadersDone, HeadersKind, Limits, LocalSettings, Role, StreamId,
};

use crate::buf::{Buf, InBuf};
use crate::fields::{push_response_field, push_response_fields};
use crate::front::{Front, Unsent};
use crate::io::UpSock;
use crate::slab::Slab;
use crate::stats::Stats;

/// Protocol state of an upstream connection.
pub enum UpKind {
    /// HTTP/1.x.
    H1 {
        /// Response parser.
        parser: ResponseParser,
        /// The client connection (slot, generation) being served.
        link: Option<(usize, u32)>,
        /// The whole request (head and body) was queued.
        req_done: bool,
    },
    /// h2c.
    H2 {
        /// The HTTP/2 connection.
        conn: Box<Connection>,
        /// Open streams: (stream id, client slot, client generation).
        streams: Vec<(u32, usize, u32)>,
    },
}

/// Streams the proxy may cancel on one h2c upstream connection before it stops using it for
/// new requests. Each cancellation (a client reset or went away) is an RST_STREAM to the
/// upstream, and upstreams defend against rapid reset (CVE-2023-44487) by counting them:
/// `h2lab serve` (the wire's `Limits::rapid_reset_budget`) closes the connection with GOAWAY
/// ENHANCE_YOUR_CALM after 200 resets in 1,000 streams, failing the other clients' requests
/// in flight on it. A connection is therefore retired after half that, and a new one opened.
pub const CANCELS_PER_CONNECTION: u32 = 100;

/// An upstream connection.
pub struct Up {
    /// Socket.
    pub sock: UpSock,
    /// Unread input.
    pub inbuf: InBuf,
    /// Queued output.
    pub out: Buf,
    /// Index of the upstream address.
    pub target: usize,
    /// The connect completed.
    pub connected: bool,
    /// Requests sent so far.
    pub used: u64,
    /// To be closed once `out` is written (h2 GOAWAY / error).
    pub closing: bool,
    /// Readable readiness not yet consumed.
    pub want_read: bool,
    /// The poller reported the peer's FIN (or an error): reads go on until EOF shows.
    pub hup: bool,
    /// On the worker's work list.
    pub queued: bool,
    /// In its upstream's idle list.
    pub idle: bool,
    /// The current HTTP/1.1 request body is sent chunked.
    pub chunked_request: bool,
    /// h2c: the upstream's first SETTINGS arrived (until then one stream is opened on the
    /// connection, [`Up::new`], and h2c-mux opens no other connection to that upstream).
    pub peer_settings: bool,
    /// h2c: streams the proxy cancelled (RST_STREAM) on this connection, for its clients.
    pub cancels: u32,
    /// h2c: takes no new stream (too many cancelled, [`CANCELS_PER_CONNECTION`]); closed once
    /// its streams are done.
    pub retired: bool,
    /// Protocol state.
    pub kind: UpKind,
}

impl Up {
    /// A connection being opened; h2 connections queue their preface.
    pub fn new(sock: UpSock, target: usize, h2: bool) -> Self {
        let mut out = Buf::default();
        let kind = if h2 {
            let local = LocalSettings {
                initial_window_size: 256 * 1024,
                connection_window: 16 * 1024 * 1024,
                ..LocalSettings::client()
            };
            // One stream until the upstream's SETTINGS tell its MAX_CONCURRENT_STREAMS: the
            // wire's default (100, nghttp2's) would be refused by an upstream allowing fewer,
            // and h2c-mux would send a cold burst to it at once.
            let limits = Limits {
                max_streams_before_settings: 1,
                ..Limits::new()
            };
            let mut conn = Box::new(Connection::new(Role::Client, local, limits));
            // A stream's window is returned as its client takes the bytes (see
            // `Worker::return_window`): a slow client stops only its own stream.
            conn.set_manual_stream_windows(true);
            conn.start(out.tail());
            UpKind::H2 {
                conn,
                streams: Vec::new(),
            }
        } else {
            UpKind::H1 {
                parser: ResponseParser::new(),
                link: None,
                req_done: false,
            }
        };
        Up {
            sock,
            inbuf: InBuf::default(),
            out,
            target,
            connected: false,
            used: 0,
            closing: false,
            want_read: true,
            hup: false,
            queued: false,
            idle: false,
            chunked_request: false,
            peer_settings: false,
            cancels: 0,
            retired: false,
            kind,
        }
    }

    /// Client connections this upstream connection serves now.
    pub fn for_each_front(&self, mut f: impl FnMut(usize, u32)) {
        match &self.kind {
            UpKind::H1 { link, .. } => {
                if let Some((i, g)) = *link {
                    f(i, g)
                }
            }
            UpKind::H2 { streams, .. } => {
                for &(_, i, g) in streams {
                    f(i, g)
                }
            }
        }
    }

    /// Streams in flight.
    pub fn in_flight(&self) -> usize {
        match &self.kind {
            UpKind::H1 { link, .. } => usize::from(link.is_some()),
            UpKind::H2 { streams, .. } => streams.len(),
        }
    }

    /// Fails every exchange on this connection (it is going away) with `status`.
    pub fn fail_all(
        &mut self,
        fronts: &mut Slab<Front>,
        status: u16,
        refused: bool,
        stats: &mut Stats,
        touched: &mut Vec<usize>,
    ) {
        let mut fail = |i: usize, g: u32| {
            if let Some(f) = fronts.get(i, g) {
                if !refused && f.retry(Unsent::Lost, stats) {
                    touched.push(i);
                    return;
                }
                if !f.resp.started {
                    if refused {
                        stats.bad_gateway_refused += 1;
                    } else {
                        stats.bad_gateway_reset += 1;
                    }
                }
                f.resp_fail(status, stats);
                touched.push(i);
            }
        };
        match &mut self.kind {
            UpKind::H1 { link, .. } => {
                if let Some((i, g)) = link.take() {
                    fail(i, g);
                }
            }
            UpKind::H2 { streams, .. } => {
                for (_, i, g) in streams.drain(..) {
                    fail(i, g);
                }
            }
        }
    }

    /// Processes buffered input (`eof`: the upstream closed). Returns false when the
    /// connection is finished (to be closed after `out` is written). `keep`: HTTP/1.1 keep-alive.
    #[allow(clippy::too_many_arguments)] // the worker's hot loop: disjoint borrows of its fields
    pub fn process(
        &mut self,
        eof: bool,
        keep: bool,
        fronts: &mut Slab<Front>,
        scratch: &mut Vec<u8>,
        stats: &mut Stats,
        touched: &mut Vec<usize>,
        now: Instant,
        timeout: std::time::Duration,
    ) -> bool {
        match &mut self.kind {
            UpKind::H1 {
                parser,
                link,
                req_done,
            } => {
                let Some((fi, fg)) = *link else {
                    // Idle: the upstream closed it, or sent something unasked.
                    return !eof && self.inbuf.is_empty();
                };
                loop {
                    let res = if self.inbuf.is_empty() && eof {
                        parser.eof().map(|ev| {
                            handle_h1_event(ev, fronts, fi, fg, scratch, now, timeout);
                            ev_kind(&ev)
                        })
                    } else {
                        match parser.parse(self.inbuf.data()) {
                            Ok((n, ev)) => {
                                handle_h1_event(ev, fronts, fi, fg, scratch, now, timeout);
                                let k = ev_kind(&ev);
                                self.inbuf.consume(n);
                                Ok(k)
                            }
                            Err(e) => Err(e),
                        }
                    };
                    let ev = match res {
                        // Truncated: let `eof` decide (close-delimited end or an error).
                        Ok(Ev::NeedMore) if eof && !self.inbuf.is_empty() => match parser.eof() {
                            Ok(ev) => ev_kind(&ev),
                            Err(_) => Ev::Closed,
                        },
                        Ok(ev) => ev,
                        Err(_) => Ev::Closed,
                    };
                    touched.push(fi);
                    match ev {
                        Ev::NeedMore => return !eof,
                        Ev::End(keep_alive) => {
                            if let Some(f) = fronts.get(fi, fg) {
                                f.resp_end(stats);
                            }
                            *link = None;
                            let reuse = keep && keep_alive && *req_done;
                            *req_done = false;
                            return reuse;
                        }
                        Ev::Closed => {
                            // Closed with nothing of the response read: maybe a keep-alive
                            // connection the upstream closed as the request went out.
                            let clean = eof && self.inbuf.is_empty();
                            if let Some(f) = fronts.get(fi, fg) {
                                if clean && f.retry(Unsent::Lost, stats) {
                                    *link = None;
                                    return false;
                                }
                                if !f.resp.started {
                                    stats.bad_gateway_reset += 1;
                                }
                                f.resp_fail(502, stats);
                            }
                            *link = None;
                            return false;
                        }
                        Ev::Other => {}
                    }
                }
            }
            UpKind::H2 { conn, streams } => {
                let mut sink = Sink {
                    fronts,
                    streams,
                    peer_settings: &mut self.peer_settings,
                    lines: scratch,
                    stats,
                    touched,
                    now,
                    timeout,
                };
                match conn.recv(self.inbuf.data(), self.out.tail(), &mut sink) {
                    Ok(n) => self.inbuf.consume(n),
                    Err(_) => {
                        self.inbuf.clear();
                        return false;
                    }
                }
                if eof {
                    return false;
                }
                !conn.is_finished()
            }
        }
    }
}

/// An owned copy of the event kind (the borrowed event cannot outlive the consume).
#[derive(Clone, Copy)]
enum Ev {
    NeedMore,
    End(bool),
    Closed,
    Other,
}

fn ev_kind(ev: &Event<'_>) -> Ev {
    match ev {
        Event::NeedMore => Ev::NeedMore,
        Event::End { keep_alive } => Ev::End(*keep_alive),
        Event::Closed | Event::Upgrade(_) => Ev::Closed,
        _ => Ev::Other,
    }
}

fn handle_h1_event(
    ev: Event<'_>,
    fronts: &mut Slab<Front>,
    fi: usize,
    fg: u32,
    lines: &mut Vec<u8>,
    now: Instant,
    timeout: std::time::Duration,
) {
    let Some(f) = fronts.get(fi, fg) else { return };
    match ev {
        Event::Interim(h) => {
            lines.clear();
            push_response_fields(lines, h.headers.as_bytes());
            f.resp_interim(h.status, lines);
        }
        Event::Head(h) => {
            lines.clear();
            push_response_fields(lines, h.headers.as_bytes());
            let cl = if matches!(h.framing, h2lab_wire::h1::Framing::CloseDelimited) {
                None
            } else {
                h.content_length
            };
            f.resp_head(h.status, lines, cl, false);
            f.deadline = Some(now + timeout);
        }
        Event::Body(b) => {
            f.resp_body(b);
            f.deadline = Some(now + timeout);
        }
        Event::Trailers { headers, .. } => {
            lines.clear();
            push_response_fields(lines, headers.as_bytes());
            f.resp_trailers(lines);
        }
        _ => {}
    }
}

/// Dispatches an h2 upstream connection's events to the client connections.
struct Sink<'a> {
    fronts: &'a mut Slab<Front>,
    streams: &'a mut Vec<(u32, usize, u32)>,
    peer_settings: &'a mut bool,
    lines: &'a mut Vec<u8>,
    stats: &'a mut Stats,
    touched: &'a mut Vec<usize>,
    now: Instant,
    timeout: std::time::Duration,
}

fn lookup<'b>(
    fronts: &'b mut Slab<Front>,
    streams: &[(u32, usize, u32)],
    stream: StreamId,
) -> Option<(usize, &'b mut Front)> {
    let id = stream.get();
    let &(_, i, g) = streams.iter().find(|s| s.0 == id)?;
    fronts.get(i, g).map(|f| (i, f))
}

impl Sink<'_> {
    fn front(&mut self, stream: StreamId) -> Option<(usize, &mut Front)> {
        lookup(self.fronts, self.streams, stream)
    }

    fn remove(&mut self, stream: StreamId) {
        let id = stream.get();
        self.streams.retain(|s| s.0 != id);
    }
}

impl Events for Sink<'_> {
    fn header(&mut self, _stream: StreamId, name: &[u8], value: &[u8]) {
        push_response_field(self.lines, name, value);
    }

    fn headers_done(&mut self, stream: StreamId, d: HeadersDone) {
        let (now, timeout) = (self.now, self.timeout);
        let lines = std::mem::take(self.lines);
        let mut end = false;
        if let Some((i, f)) = self.front(stream) {
            match d.kind {
                HeadersKind::Response => {
                    f.resp_head(
                        d.status.unwrap_or(502),
                        &lines,
                        d.content_length,
                        d.end_stream,
                    );
                    f.deadline = Some(now + timeout);
                    end = d.end_stream;
                }
                HeadersKind::Trailers => {
                    f.resp_trailers(&lines);
                    end = true;
                }
                HeadersKind::Informational => {
                    f.resp_interim(d.status.unwrap_or(0), &lines);
                }
                HeadersKind::Request => {}
            }
            self.touched.push(i);
        }
        *self.lines = lines;
        self.lines.clear();
        if end {
            if let Some((_, f)) = lookup(self.fronts, self.streams, stream) {
                f.resp_end(self.stats);
            }
            self.remove(stream);
        }
    }

    fn data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) {
        let (now, timeout) = (self.now, self.timeout);
        if let Some((i, f)) = self.front(stream) {
            f.resp_body(data);
            f.unreleased += data.len();
            f.deadline = Some(now + timeout);
            self.touched.push(i);
        }
        if end_stream {
            if let Some((_, f)) = lookup(self.fronts, self.streams, stream) {
                f.resp_end(self.stats);
            }
            self.remove(stream);
        }
    }

    fn reset(&mut self, stream: StreamId, code: ErrorCode, by_peer: bool) {
        if let Some((i, f)) = lookup(self.fronts, self.streams, stream) {
            // Above a GOAWAY's last stream id, or refused: not processed (RFC 9113 §8.7).
            let refused = by_peer && code == ErrorCode::REFUSED_STREAM;
            if refused && f.retry(Unsent::Refused, self.stats) {
                self.touched.push(i);
                self.remove(stream);
                return;
            }
            if !f.resp.started {
                self.stats.bad_gateway_reset += 1;
            }
            f.resp_fail(502, self.stats);
            self.touched.push(i);
        }
        self.remove(stream);
    }

    fn settings_changed(&mut self) {
        *self.peer_settings = true;
    }

    fn window_opened(&mut self, _stream: Option<StreamId>) {
        for &(_, i, _) in self.streams.iter() {
            self.touched.push(i);
        }
    }
}
