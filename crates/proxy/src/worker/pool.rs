//! Handing out upstream connections (pools, round robin, h2c-mux stream slots) and queueing
//! request body bytes on them.

use h2lab_wire::h2::StreamId;
use mio::Registry;

use super::{utoken, Acq, HIGH};
use crate::config::{ProxyConfig, UpstreamProtocol};
use crate::fields::trailer_fields;
use crate::io::UpSock;
use crate::slab::Slab;
use crate::stats::Stats;
use crate::upstream::{Up, UpKind};

/// Whether the first line of `data` ends in an HTTP/1.x version.
pub(super) fn looks_like_http1(data: &[u8]) -> bool {
    let line = match data.iter().position(|&b| b == b'\n') {
        Some(i) => &data[..i],
        None => data,
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.len() >= 9 && line[line.len() - 9..line.len() - 1].eq_ignore_ascii_case(b" HTTP/1.")
}

/// Hands out an upstream connection for one request; `fresh`: not a pooled idle one (a
/// retry; an h2c-mux connection that accepts streams is still shared).
pub(super) fn acquire(
    ups: &mut Slab<Up>,
    idle: &mut [Vec<(usize, u32)>],
    cfg: &ProxyConfig,
    registry: &Registry,
    stats: &mut Stats,
    rr: &mut usize,
    fresh: bool,
) -> Result<(usize, u32), Acq> {
    let n = cfg.upstreams.len();
    let start = *rr % n;
    *rr = rr.wrapping_add(1);
    match cfg.protocol {
        UpstreamProtocol::H1 | UpstreamProtocol::H2c => {
            while let Some((j, g)) = if fresh { None } else { idle[start].pop() } {
                if let Some(u) = ups.get(j, g) {
                    let ok = match &u.kind {
                        UpKind::H2 { conn, .. } => conn.can_open_stream(),
                        UpKind::H1 { .. } => true,
                    };
                    if ok && !u.closing && !u.retired && u.inbuf.is_empty() {
                        return Ok((j, g));
                    }
                    u.closing = true;
                }
            }
            open(ups, cfg, registry, stats, start)
        }
        UpstreamProtocol::H10 => open(ups, cfg, registry, stats, start),
        UpstreamProtocol::H2cMux => {
            // A connection whose SETTINGS have not arrived yet takes one stream; the next
            // requests wait for them (a read of that connection wakes them) rather than open
            // a connection each: the upstream's MAX_CONCURRENT_STREAMS then says how many it
            // takes. That holds across upstreams: while any connection is settling, a request
            // finding every settled connection full waits for the room it will bring instead
            // of opening one more (a cold burst otherwise opened a connection per queued
            // request on the upstream whose SETTINGS came first). Round robin from `start`:
            // an upstream without any connection gets its first one at its turn, so that
            // requests spread over the upstreams and a cold start settles every upstream in
            // one round trip.
            let mut settling = false;
            // The first upstream, round robin from `start`, below `--pool`.
            let mut room = None;
            for k in 0..n {
                let t = (start + k) % n;
                idle[t].retain(|&(j, g)| ups.get(j, g).is_some());
                // Retired connections (drained, then closed) do not count against `--pool`.
                let mut live = 0;
                for &(j, g) in idle[t].iter() {
                    let Some(u) = ups.get(j, g) else { continue };
                    live += usize::from(!u.retired);
                    if let UpKind::H2 { conn, streams } = &u.kind {
                        if !u.closing
                            && !u.retired
                            && conn.can_open_stream()
                            && streams.len() < cfg.streams as usize
                        {
                            return Ok((j, g));
                        }
                        settling |= !u.closing && !u.peer_settings;
                    }
                }
                if live < cfg.pool {
                    if live == 0 {
                        let r = open(ups, cfg, registry, stats, t)?;
                        idle[t].push(r);
                        return Ok(r);
                    }
                    room = room.or(Some(t));
                }
            }
            match room.filter(|_| !settling) {
                Some(t) => {
                    let r = open(ups, cfg, registry, stats, t)?;
                    idle[t].push(r);
                    Ok(r)
                }
                None => Err(Acq::Wait),
            }
        }
    }
}

fn open(
    ups: &mut Slab<Up>,
    cfg: &ProxyConfig,
    registry: &Registry,
    stats: &mut Stats,
    t: usize,
) -> Result<(usize, u32), Acq> {
    let sock = UpSock::connect(&cfg.upstreams[t]).map_err(|_| Acq::Refused)?;
    let (j, g) = ups.insert(Up::new(sock, t, cfg.protocol.is_h2()));
    let ok = ups
        .at(j)
        .map(|u| u.sock.register(registry, utoken(j)).is_ok());
    if ok != Some(true) {
        ups.remove(j);
        return Err(Acq::Refused);
    }
    stats.upstream_connections_opened += 1;
    Ok((j, g))
}

/// Queues request body bytes on the upstream (`trailers`: `name: value\r\n` lines sent
/// after the last byte when `end`); returns (bytes taken, end sent).
pub(super) fn push_body(
    u: &mut Up,
    stream: u32,
    data: &[u8],
    end: bool,
    trailers: &[u8],
) -> (usize, bool) {
    if u.out.len() > HIGH {
        return (0, false);
    }
    match &mut u.kind {
        UpKind::H1 { req_done, .. } => {
            let out = u.out.tail();
            if u.chunked_request {
                if !data.is_empty() {
                    h2lab_wire::h1::encode_chunk(out, data);
                }
                if end {
                    out.extend_from_slice(b"0\r\n");
                    out.extend_from_slice(trailers);
                    out.extend_from_slice(b"\r\n");
                }
            } else {
                out.extend_from_slice(data);
            }
            if end {
                *req_done = true;
            }
            (data.len(), end)
        }
        UpKind::H2 { conn, .. } if end && !trailers.is_empty() => {
            let id = StreamId::new(stream);
            match conn.send_data(id, data, false, u.out.tail()) {
                Ok(n) if n == data.len() => {
                    let fields = trailer_fields(trailers);
                    let pairs: Vec<(&[u8], &[u8])> = fields
                        .iter()
                        .map(|(n, v)| (n.as_slice(), v.as_slice()))
                        .collect();
                    let _ = conn.send_header_fields(id, &pairs, true, u.out.tail());
                    (n, true)
                }
                Ok(n) => (n, false),
                Err(_) => (data.len(), end),
            }
        }
        UpKind::H2 { conn, .. } => {
            match conn.send_data(StreamId::new(stream), data, end, u.out.tail()) {
                Ok(n) => (n, end && n == data.len()),
                // The upstream already ended or reset the stream: the rest is dropped.
                Err(_) => (data.len(), end),
            }
        }
    }
}
