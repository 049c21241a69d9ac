//! One exchange: a parsed client request sent upstream (pool checkout, request head), and its
//! request body forwarded as it arrives.

use h2lab_wire::h1::{BodyEvent, Framing, Parsed, Version};
use h2lab_wire::h2::HeaderEncoder;

use super::pool::{acquire, looks_like_http1, push_body};
use super::{Acq, Worker};
use crate::config::UpstreamProtocol;
use crate::fields::{push_response_fields, scan_request_fields, Forward};
use crate::front::{write_error, FState, Link};
use crate::upstream::UpKind;

/// RFC 9110 §9.2.2: methods whose intended effect of several identical requests is the
/// same as of one.
fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

impl Worker {
    /// Parses a request head and sends it upstream. False: nothing more to do now.
    pub(super) fn start_exchange(&mut self, i: usize) -> bool {
        let cfg = &self.shared.config;
        let now = self.now;
        let fgen = self.fronts.gen(i);
        let Some(f) = self.fronts.at(i) else {
            return false;
        };
        let head = match f.parser.parse(f.inbuf.data()) {
            Ok(Parsed::NeedMore) => {
                if f.read_eof {
                    f.state = FState::Closing;
                }
                return false;
            }
            Err(e) => {
                if !looks_like_http1(f.inbuf.data()) {
                    // Not HTTP/1.x at all (a broken HTTP/2 preface, TLS on the cleartext
                    // port): an HTTP/1.1 error page would be garbage to such a peer; close
                    // (RFC 9113 §3.4: an invalid preface is a connection error).
                    f.state = FState::Closing;
                    f.inbuf.clear();
                    return false;
                }
                write_error(f.out.tail(), e.status_code(), false, false);
                f.inbuf.clear();
                f.persist = false;
                f.state = FState::Closing;
                self.stats.responses += 1;
                return false;
            }
            Ok(Parsed::Complete(h)) => h,
        };
        let (has_body, body_len) = match head.framing {
            Framing::ContentLength(n) => (n > 0, Some(n)),
            Framing::Chunked => (true, None),
            Framing::None | Framing::CloseDelimited => (false, Some(0)),
        };
        let is_head = head.method == "HEAD";
        // RFC 9110 §10.1.4: `TE: trailers` says the client accepts a trailer section; an
        // HTTP/2 stream (a virtual connection) always can.
        let scan = scan_request_fields(&head.headers);
        let client_te = scan.te_trailers;
        let te_trailers = f.parent.is_some() || client_te;
        let fw = Forward {
            method: head.method.as_bytes(),
            target: head.target.as_bytes(),
            host: head.host.unwrap_or_default(),
            headers: head.headers,
            https: f.io.is_tls(),
            body_len,
            has_body,
            te_trailers: client_te,
            prior_xff: scan.prior_xff,
            connection_options: scan.connection_options,
        };
        let ipt = f.ip;
        let ip = ipt.as_bytes();

        let retried = f.retried;
        let acq = if f.wait_deadline.is_some_and(|d| now >= d) {
            Err(Acq::WaitedTooLong)
        } else {
            acquire(
                &mut self.ups,
                &mut self.idle,
                cfg,
                &self.registry,
                &mut self.stats,
                &mut self.rr,
                retried,
            )
        };
        let (uj, ug) = match acq {
            Ok(x) => {
                f.wait_deadline = None;
                x
            }
            Err(Acq::Wait) => {
                f.waiting = true;
                // The upstream timeout runs from the first wait, not from each wake-up.
                f.wait_deadline.get_or_insert(now + cfg.upstream_timeout);
                self.waiting.push_back((i, fgen));
                return false;
            }
            Err(why @ (Acq::Refused | Acq::WaitedTooLong)) => {
                if !retried {
                    self.stats.requests += 1;
                }
                f.wait_deadline = None;
                let status = if matches!(why, Acq::Refused) {
                    self.stats.bad_gateway_refused += 1;
                    502
                } else {
                    self.stats.gateway_timeout += 1;
                    504
                };
                f.http10 = head.version == Version::Http10;
                f.is_head = is_head;
                f.persist = head.keep_alive && !has_body && cfg.front.keep_alive;
                let n = head.head_len;
                f.inbuf.consume(n);
                f.state = FState::Exchange;
                f.req_done = true;
                f.resp_fail(status, &mut self.stats);
                return true;
            }
        };
        let Some(u) = self.ups.get(uj, ug) else {
            return false;
        };
        let mut stream = 0;
        let sent = match &mut u.kind {
            UpKind::H1 {
                parser,
                link,
                req_done,
            } => {
                let ok = fw.write_h1(cfg.protocol == UpstreamProtocol::H10, ip, u.out.tail());
                if ok {
                    parser.start(!is_head);
                    *link = Some((i, fgen));
                    *req_done = !has_body;
                    u.chunked_request = has_body && body_len.is_none();
                }
                ok
            }
            UpKind::H2 { conn, streams } => {
                let scratch = &mut self.scratch;
                let r = conn.send_request(
                    |enc, buf| {
                        fw.with_h2_fields(ip, scratch, |fields| {
                            enc.encoder().encode(fields.iter().copied(), buf)
                        })
                    },
                    !has_body,
                    u.out.tail(),
                );
                match r {
                    Ok(id) => {
                        stream = id.get();
                        streams.push((stream, i, fgen));
                        true
                    }
                    Err(_) => false,
                }
            }
        };
        if !retried {
            self.stats.requests += 1;
        }
        f.http10 = head.version == Version::Http10;
        f.is_head = is_head;
        f.persist = head.keep_alive && cfg.front.keep_alive;
        f.body = has_body.then(|| f.parser.body_decoder(&head));
        f.idempotent = idempotent(head.method);
        f.te_trailers = te_trailers;
        f.reused = u.used > 0;
        let expect_continue = head.expect_continue;
        let n = head.head_len;
        if !has_body && !retried {
            // Kept until the exchange ends, to be sent again if the upstream refuses it.
            f.held = n;
        } else {
            f.inbuf.consume(n);
        }
        f.head_started = None;
        f.state = FState::Exchange;
        f.req_done = !has_body;
        f.body_ended = false;
        if !sent {
            // Chunked body to an HTTP/1.0 upstream, or no stream could be opened.
            let status = if cfg.protocol == UpstreamProtocol::H10 {
                411
            } else {
                502
            };
            f.resp_fail(status, &mut self.stats);
            self.release(uj);
            return true;
        }
        if has_body && expect_continue && f.inbuf.is_empty() {
            f.out.tail().extend_from_slice(h2lab_wire::h1::CONTINUE_100);
        }
        f.link = Some(Link {
            up: uj,
            gen: ug,
            stream,
        });
        f.deadline = Some(now + cfg.upstream_timeout);
        self.stats.upstream_requests += 1;
        if u.used > 0 {
            self.stats.upstream_connections_reused += 1;
        }
        u.used += 1;
        u.idle = false;
        self.stats.max_streams_per_connection = self
            .stats
            .max_streams_per_connection
            .max(u.in_flight() as u64);
        self.queue_up(uj);
        true
    }

    /// Moves request body bytes from the client to the upstream. True when something moved.
    pub(super) fn forward_body(&mut self, i: usize) -> bool {
        let Some(f) = self.fronts.at(i) else {
            return false;
        };
        if f.req_done {
            return false;
        }
        let Some(link) = f.link else { return false };
        let Some(u) = self.ups.get(link.up, link.gen) else {
            return false;
        };
        let mut progress = false;
        loop {
            if !f.pending.is_empty() || f.body_ended {
                let (n, fin) = push_body(
                    u,
                    link.stream,
                    f.pending.data(),
                    f.body_ended,
                    &f.req_trailers,
                );
                f.pending.consume(n);
                progress |= n > 0 || fin;
                if fin {
                    f.req_done = true;
                    break;
                }
                if !f.pending.is_empty() || f.body_ended {
                    break;
                }
            }
            let Some(dec) = f.body.as_mut() else { break };
            if f.inbuf.is_empty() && !dec.is_done() {
                break;
            }
            match dec.decode(f.inbuf.data()) {
                Ok((n, BodyEvent::Data(b))) => {
                    f.pending.tail().extend_from_slice(b);
                    f.inbuf.consume(n);
                }
                Ok((n, BodyEvent::NeedMore)) => {
                    f.inbuf.consume(n);
                    if n == 0 {
                        break;
                    }
                }
                Ok((n, BodyEvent::Trailers { headers, .. })) => {
                    f.req_trailers.clear();
                    push_response_fields(&mut f.req_trailers, headers.as_bytes());
                    f.inbuf.consume(n);
                }
                Ok((n, BodyEvent::End)) => {
                    f.inbuf.consume(n);
                    f.body = None;
                    f.body_ended = true;
                }
                Err(e) => {
                    f.link = None;
                    f.body = None;
                    f.req_done = true;
                    f.inbuf.clear();
                    f.resp_fail(e.status_code(), &mut self.stats);
                    f.persist = false;
                    self.cancel(link);
                    return true;
                }
            }
            progress = true;
        }
        if progress {
            self.queue_up(link.up);
        }
        progress
    }
}
