//! One browser-like page load on a fresh connection pool (cache off, new connections): the
//! HTML first, then every sub-resource, on [`h2lab_engine::fetch::Fetcher`].

use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Duration;

use h2lab_engine::fetch::{
    ConnRecord, FetchBatch, FetchConfig, FetchProtocol, FetchRecord, FetchTraffic, Fetcher,
    PushStats,
};
use h2lab_engine::EngineError;
use serde::Serialize;

use super::html;
use crate::env::{host_port, Origin};
use crate::error::PageError;
use crate::proto::LabProtocol;

/// How one protocol's connection pool is set up.
#[derive(Debug, Clone)]
pub struct PoolSpec {
    /// Protocol.
    pub proto: LabProtocol,
    /// Where requests go.
    pub origin: Origin,
    /// Most connections (browsers: 6 for HTTP/1.1, 1 for HTTP/2).
    pub connections: u32,
    /// Requests in flight per connection (HTTP/2 streams; 1 for HTTP/1.x).
    pub streams: u32,
    /// Shared gauge of open connections (load tests).
    pub gauge: Option<Arc<AtomicI64>>,
    /// Longest one batch may take.
    pub timeout: Duration,
    /// HTTP/2: accept server push (`--push accept`) and use pushed responses instead of
    /// requesting them; else refuse it (SETTINGS_ENABLE_PUSH = 0, as browsers do).
    pub push: bool,
}

impl PoolSpec {
    /// The fetcher configuration.
    pub fn fetch_config(&self) -> FetchConfig {
        let fp = if self.proto.is_h3() {
            FetchProtocol::H3
        } else if self.proto.is_h2() {
            FetchProtocol::H2
        } else {
            FetchProtocol::Http11
        };
        let mut c = FetchConfig::browser(self.origin.target.clone(), fp);
        c.connect_to = self.origin.connect_to.clone();
        c.unix_socket = self.origin.unix_socket.clone();
        c.max_connections = self.connections.max(1);
        c.max_streams = if self.proto.multiplexes() {
            self.streams.max(1)
        } else {
            1
        };
        if self.proto == LabProtocol::H1Close {
            c.headers.push(("connection".into(), "close".into()));
        }
        c.open_gauge = self.gauge.clone();
        c.timeout = self.timeout;
        c.h2.enable_push = self.push && self.proto.is_h2();
        c
    }

    /// Wraps an engine error of this pool.
    fn fail(&self) -> impl Fn(EngineError) -> PageError + Copy {
        let proto = self.proto;
        move |source| PageError::Fetch { proto, source }
    }

    /// `https://host:port` of the origin.
    pub fn origin_prefix(&self) -> String {
        format!(
            "{}://{}",
            self.origin.target.scheme,
            host_port(&self.origin.target)
        )
    }
}

/// One request's timeline (ms from the start of the page load).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestTiming {
    /// Index into the page's path list (0 = the HTML).
    pub path: usize,
    /// Connection that carried it.
    pub conn: u32,
    /// Handed to the connection.
    pub sent_ms: f64,
    /// First response byte.
    pub first_byte_ms: f64,
    /// Response complete.
    pub done_ms: f64,
    /// Status (0: no response).
    pub status: u16,
    /// Body bytes.
    pub body_bytes: u64,
    /// Request bytes written (HTTP/1.1 head / HTTP/2 HEADERS frame).
    pub request_bytes: u64,
}

/// One connection's timeline (ms from the start of the page load).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnTiming {
    /// Connection number.
    pub id: u32,
    /// Connect started.
    pub opened_ms: f64,
    /// TCP (and TLS) ready.
    pub ready_ms: Option<f64>,
    /// Closed (None: open at the end of the load).
    pub closed_ms: Option<f64>,
    /// Responses it carried.
    pub completed: u64,
    /// Its TLS handshake (over TCP) resumed a session of an earlier visit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// `--0rtt`: it sent early data / 0-RTT, and whether the server accepted it (absent:
    /// it sent none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_data: Option<bool>,
}

/// Bytes on the wire (application bytes, inside TLS), split into headers and bodies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WireBytes {
    /// Request headers as sent (HTTP/1.1 text, HTTP/2 HPACK-compressed HEADERS frames).
    pub request_headers: u64,
    /// Response headers as received (HTTP/1.1 names + values, HTTP/2 HPACK blocks).
    pub response_headers: u64,
    /// Response headers decompressed.
    pub response_headers_decoded: u64,
    /// Response bodies.
    pub response_bodies: u64,
    /// Everything written.
    pub written: u64,
    /// Everything read.
    pub read: u64,
}

impl From<FetchTraffic> for WireBytes {
    fn from(t: FetchTraffic) -> Self {
        WireBytes {
            request_headers: t.request_header_bytes,
            response_headers: t.response_header_bytes,
            response_headers_decoded: t.response_header_decoded,
            response_bodies: t.response_body_bytes,
            written: t.bytes_written,
            read: t.bytes_read,
        }
    }
}

/// Server push during one page load (all zero when push is refused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PushBytes {
    /// Pushed streams.
    pub streams: u64,
    /// Pushed body bytes received.
    pub bytes: u64,
    /// Pushed body bytes a request of the page used (it was not requested).
    pub bytes_used: u64,
    /// Pushed body bytes never used (not part of the page, pushed twice, cancelled).
    pub bytes_wasted: u64,
}

impl From<PushStats> for PushBytes {
    fn from(p: PushStats) -> Self {
        PushBytes {
            streams: p.streams,
            bytes: p.bytes,
            bytes_used: p.bytes_used,
            bytes_wasted: p.bytes_wasted,
        }
    }
}

/// What one page load measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageLoad {
    /// From the start (before connecting) to the last response.
    pub page_ms: f64,
    /// From the start to the end of the HTML.
    pub html_ms: f64,
    /// Connections opened.
    pub connections: u32,
    /// Requests made (HTML included).
    pub requests: u32,
    /// Requests without a 2xx/3xx response.
    pub failed: u32,
    /// Bytes on the wire.
    pub bytes: WireBytes,
    /// Per-request timelines.
    pub timeline: Vec<RequestTiming>,
    /// Per-connection timelines.
    pub conns: Vec<ConnTiming>,
    /// Server push.
    pub push: PushBytes,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn timing(r: &FetchRecord) -> RequestTiming {
    RequestTiming {
        path: r.path,
        conn: r.conn,
        sent_ms: ms(r.sent),
        first_byte_ms: ms(r.first_byte),
        done_ms: ms(r.done),
        status: r.status,
        body_bytes: r.body_bytes,
        request_bytes: r.request_bytes,
    }
}

fn conn_timing(c: &ConnRecord) -> ConnTiming {
    ConnTiming {
        id: c.id,
        opened_ms: ms(c.opened),
        ready_ms: c.ready.map(ms),
        closed_ms: c.closed.map(ms),
        completed: c.completed,
        resumed: c.resumed,
        early_data: c.early_data,
    }
}

fn summarize(f: &Fetcher, batches: &[FetchBatch]) -> PageLoad {
    let records: Vec<&FetchRecord> = batches.iter().flat_map(|b| &b.records).collect();
    PageLoad {
        page_ms: batches.last().map_or(0.0, |b| ms(b.finished)),
        html_ms: batches.first().map_or(0.0, |b| ms(b.finished)),
        connections: u32::try_from(f.connections().len()).unwrap_or(u32::MAX),
        requests: u32::try_from(records.len()).unwrap_or(u32::MAX),
        failed: u32::try_from(records.iter().filter(|r| !r.ok()).count()).unwrap_or(u32::MAX),
        bytes: f.traffic().into(),
        timeline: records.iter().map(|r| timing(r)).collect(),
        conns: f.connections().iter().map(conn_timing).collect(),
        push: f.push_stats().into(),
    }
}

/// Fetches the page HTML once (not timed) and finds its same-origin sub-resources.
pub fn discover(pool: &PoolSpec, html_path: &str) -> Result<html::Resources, PageError> {
    let fail = pool.fail();
    let mut f = Fetcher::new(pool.fetch_config(), &[html_path.to_owned()]).map_err(fail)?;
    let b = f.fetch(&[0], true).map_err(fail)?;
    let status = b.records.first().map_or(0, |r| r.status);
    if !(200..300).contains(&status) {
        return Err(PageError::Status {
            path: html_path.to_owned(),
            status,
        });
    }
    let body = b.bodies.first().cloned().unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    Ok(html::resources(&text, &pool.origin_prefix(), html_path))
}

/// One cold page load: `paths[0]` is the HTML, the rest its sub-resources (fetched once the
/// HTML is complete, all queued at once in document order).
pub fn load_page(pool: &PoolSpec, paths: &[String]) -> Result<PageLoad, PageError> {
    load_page_with(pool, pool.fetch_config(), paths)
}

/// [`load_page`] with the fetcher configured by `cfg` (made from `pool`'s, e.g. with a TLS
/// session store kept between two visits).
pub fn load_page_with(
    pool: &PoolSpec,
    cfg: FetchConfig,
    paths: &[String],
) -> Result<PageLoad, PageError> {
    let fail = pool.fail();
    let mut f = Fetcher::new(cfg, paths).map_err(fail)?;
    let html = f.fetch(&[0], false).map_err(fail)?;
    let rest: Vec<usize> = (1..paths.len()).collect();
    let mut batches = vec![html];
    if !rest.is_empty() {
        batches.push(f.fetch(&rest, false).map_err(fail)?);
    }
    let load = summarize(&f, &batches);
    f.close();
    Ok(load)
}

/// Fetches every path at once on a fresh pool (the slow-endpoint case: 100 parallel
/// requests).
pub fn fetch_all(pool: &PoolSpec, paths: &[String]) -> Result<PageLoad, PageError> {
    let fail = pool.fail();
    let mut f = Fetcher::new(pool.fetch_config(), paths).map_err(fail)?;
    let all: Vec<usize> = (0..paths.len()).collect();
    let b = f.fetch(&all, false).map_err(fail)?;
    let mut load = summarize(&f, std::slice::from_ref(&b));
    load.html_ms = 0.0;
    f.close();
    Ok(load)
}
