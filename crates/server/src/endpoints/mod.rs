//! The built-in endpoints, independent of the protocol: a parsed request head in, a response
//! head plus a [`Body`] source out. HTTP/1.1 and HTTP/2 both call [`Router::route`].

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::body::Body;
use crate::config::ServerConfig;

mod files;
mod info;
mod page;
mod query;
#[cfg(test)]
mod tests;

pub use files::{content_type_for, serve_file};
use info::write_info;
use page::asset_size;
pub use page::{asset_size_for, compute, splitmix64, PageParams, MAX_PAGE_ITEMS, PAGE_COLUMNS};
use query::decode_cache_value;
pub use query::{parse_size, parse_u64, query_param, split_target};

/// Request method, as far as routing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD: the same head as GET, no body.
    Head,
    /// POST (accepted by the built-in endpoints; the body is read and discarded).
    Post,
    /// PUT (accepted like POST).
    Put,
    /// Anything else.
    Other,
}

impl Method {
    /// Parses a method token.
    pub fn parse(m: &[u8]) -> Method {
        match m {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            _ => Method::Other,
        }
    }
}

/// The protocol a request arrived on (shown by `/info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.0
    Http10,
    /// HTTP/1.1
    Http11,
    /// HTTP/2
    H2,
    /// HTTP/3
    H3,
}

/// Visits request header fields in arrival order (for `/info`).
pub trait HeaderSource {
    /// Calls `f(name, value)` for each field.
    fn for_each(&self, f: &mut dyn FnMut(&[u8], &[u8]));
}

/// A request head, borrowed from the protocol's buffers.
pub struct Request<'a> {
    /// Parsed method.
    pub method: Method,
    /// The method as sent.
    pub method_raw: &'a [u8],
    /// The request target as sent (path and query; origin form).
    pub target: &'a [u8],
    /// Protocol version.
    pub proto: HttpVersion,
    /// Whether the connection is TLS.
    pub tls: bool,
    /// Declared or known request body length (for `/info`); `None` if unknown (chunked).
    pub body_len: Option<u64>,
    /// The header fields.
    pub headers: &'a dyn HeaderSource,
    /// The request arrived in TLS 1.3 early data or QUIC 0-RTT (the server's handshake was
    /// not complete): it may be a replay. Handlers see it as `Early-Data: 1` (RFC 8470 §5.1).
    pub early: bool,
}

/// A small inline string (no allocation) for a `cache-control` value taken from the query.
#[derive(Clone, Copy)]
pub struct InlineValue {
    buf: [u8; 96],
    len: u8,
}

impl std::fmt::Debug for InlineValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl InlineValue {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

/// The `cache-control` value of a response.
#[derive(Debug, Clone, Copy)]
pub enum CacheControl {
    /// `no-store` (the default).
    NoStore,
    /// A value the client asked for with `?cache=...`.
    Custom(InlineValue),
}

impl CacheControl {
    /// The header value bytes.
    pub fn value(&self) -> &[u8] {
        match self {
            CacheControl::NoStore => b"no-store",
            CacheControl::Custom(v) => v.as_bytes(),
        }
    }
}

/// A response: head fields plus body source.
#[derive(Debug)]
pub struct Response {
    /// Status code (200..=599).
    pub status: u16,
    /// `content-type` value.
    pub content_type: &'static str,
    /// `cache-control` value.
    pub cache: CacheControl,
    /// Send `allow: GET, HEAD, POST` (405 responses).
    pub allow: bool,
    /// Answer only after this delay (`/delay`): the protocol arms a timer, never sleeps.
    pub delay: Option<Duration>,
    /// Omit the body (HEAD); `content-length` is still the full length.
    pub head_only: bool,
    /// The body.
    pub body: Body,
    /// Send `103 Early Hints` naming this page's render-blocking assets before the final
    /// response (`--early-hints`, `/page` only): the protocols write it at once, before any
    /// think time ([`Response::delay`]).
    pub early_hints: Option<PageParams>,
}

impl Response {
    fn new(status: u16, content_type: &'static str, body: Body) -> Self {
        Response {
            status,
            content_type,
            cache: CacheControl::NoStore,
            allow: false,
            delay: None,
            head_only: false,
            body,
            early_hints: None,
        }
    }

    /// Whether the status forbids a body and `content-length` (RFC 9110 §8.6: "A server MUST
    /// NOT send a Content-Length header field in any response with a status code of 1xx
    /// (Informational) or 204 (No Content).").
    pub fn no_content_length(&self) -> bool {
        self.status == 204 || self.status == 304
    }

    /// An error response with a short text body (used by the protocols for 400/413/431...).
    pub fn error(status: u16) -> Self {
        Response::new(status, TEXT, Body::Static(status_text_body(status)))
    }
}

/// Reason phrase for a status code (the wire crate's table; "Status" for codes it does not
/// name, so a status line or a `/status/N` body never has an empty phrase).
pub fn reason(status: u16) -> &'static str {
    match h2lab_wire::h1::reason_phrase(status) {
        "" => "Status",
        phrase => phrase,
    }
}

fn status_text_body(status: u16) -> &'static [u8] {
    match status {
        400 => b"400 Bad Request\n",
        403 => b"403 Forbidden\n",
        404 => b"404 Not Found\n",
        405 => b"405 Method Not Allowed\n",
        408 => b"408 Request Timeout\n",
        411 => b"411 Length Required\n",
        413 => b"413 Content Too Large\n",
        414 => b"414 URI Too Long\n",
        417 => b"417 Expectation Failed\n",
        425 => b"425 Too Early\n",
        431 => b"431 Request Header Fields Too Large\n",
        500 => b"500 Internal Server Error\n",
        501 => b"501 Not Implemented\n",
        505 => b"505 HTTP Version Not Supported\n",
        _ => b"error\n",
    }
}

const TEXT: &str = "text/plain; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";
const OCTETS: &str = "application/octet-stream";

/// `/`: a small page listing the endpoints.
pub const INDEX_HTML: &[u8] = b"<!DOCTYPE html>
<html><head><meta charset=\"utf-8\"><title>h2lab serve</title></head>
<body><h1>h2lab serve</h1>
<ul>
<li><a href=\"/ping\">/ping</a> - 4 bytes</li>
<li><a href=\"/json\">/json</a> - about 200 bytes of JSON</li>
<li><a href=\"/data?size=100k\">/data?size=N</a> - N bytes (k, m, g suffixes: powers of 1024)</li>
<li><a href=\"/compute?work=100000\">/compute?work=N</a> - CPU-bound work, then a short answer</li>
<li><a href=\"/info\">/info</a> - the request headers as JSON</li>
<li><a href=\"/delay?ms=100\">/delay?ms=N</a> - answers after N milliseconds</li>
<li><a href=\"/status/418\">/status/N</a> - answers with status N</li>
<li><a href=\"/page?n=300&amp;min=1k&amp;max=8k&amp;seed=1\">/page?n=&amp;min=&amp;max=&amp;seed=</a> - a page of n images</li>
</ul>
<p>Add <code>?cache=max-age=60</code> to any URL to replace <code>cache-control: no-store</code>.</p>
</body></html>
";

/// `/ping`.
pub const PONG: &[u8] = b"pong";

/// `/json`: about 200 bytes.
pub const JSON_BODY: &[u8] = br#"{"server":"h2lab","status":"ok","items":[{"id":1,"name":"alpha","value":3.14},{"id":2,"name":"beta","value":2.72},{"id":3,"name":"gamma","value":1.62}],"tags":["http2","h1","bench"],"ok":true}"#;

/// Default `/data` size (the classic 653-byte h2load payload).
pub const DEFAULT_DATA_SIZE: u64 = 653;

/// Routing context shared by all workers.
#[derive(Debug)]
pub struct Router {
    root: Option<PathBuf>,
    max_delay: Duration,
    max_work: u64,
    early_hints: bool,
    zero_rtt: bool,
    early_stats: std::sync::Arc<crate::early::EarlyStats>,
}

impl Router {
    /// Builds the router; canonicalises `--root` (an error if it does not exist).
    pub fn new(config: &ServerConfig) -> std::io::Result<Self> {
        let root = match &config.root {
            Some(r) => {
                let c = r.canonicalize()?;
                if !c.is_dir() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("--root {} is not a directory", r.display()),
                    ));
                }
                Some(c)
            }
            None => None,
        };
        Ok(Router {
            root,
            max_delay: config.max_delay,
            max_work: config.max_compute_work,
            early_hints: config.early_hints,
            zero_rtt: config.zero_rtt,
            early_stats: std::sync::Arc::clone(&config.early_stats),
        })
    }

    /// Routes a request. Dynamic bodies are written into `dynamic` (cleared first), which
    /// the caller owns and reuses.
    pub fn route(&self, req: &Request<'_>, dynamic: &mut Vec<u8>) -> Response {
        dynamic.clear();
        let (path, query) = split_target(req.target);
        if self.zero_rtt && (req.early || crate::early::has_early_data_field(req)) {
            // RFC 8470 §5.2: "A server MUST NOT ... process a request that might be
            // replayed" unsafely; 425 (Too Early) asks the client to retry after the
            // handshake, when the request can no longer be a replay.
            let refused = !crate::early::replay_safe(req);
            crate::early::count(&self.early_stats, refused);
            if refused {
                return Response::error(425);
            }
        }
        let mut resp = self.route_inner(req, path, query, dynamic);
        if req.method == Method::Head {
            resp.head_only = true;
        }
        if let Some(v) = query_param(query, b"cache").and_then(decode_cache_value) {
            resp.cache = CacheControl::Custom(v);
        }
        resp
    }

    fn route_inner(
        &self,
        req: &Request<'_>,
        path: &[u8],
        query: &[u8],
        dynamic: &mut Vec<u8>,
    ) -> Response {
        let builtin = matches!(
            path,
            b"/ping" | b"/json" | b"/data" | b"/compute" | b"/info" | b"/delay" | b"/page"
        ) || path.starts_with(b"/status/")
            || path.starts_with(b"/asset/")
            || (path == b"/" && !self.root_has_index());
        if builtin {
            if req.method == Method::Other {
                let mut r = Response::error(405);
                r.allow = true;
                return r;
            }
            return self.builtin(req, path, query, dynamic);
        }
        match &self.root {
            Some(root) => {
                if !matches!(req.method, Method::Get | Method::Head) {
                    let mut r = Response::error(405);
                    r.allow = true;
                    return r;
                }
                serve_file(root, path)
            }
            None => Response::error(404),
        }
    }

    fn root_has_index(&self) -> bool {
        self.root
            .as_ref()
            .is_some_and(|r| r.join("index.html").is_file())
    }

    fn builtin(
        &self,
        req: &Request<'_>,
        path: &[u8],
        query: &[u8],
        dynamic: &mut Vec<u8>,
    ) -> Response {
        match path {
            b"/" => Response::new(200, HTML, Body::Static(INDEX_HTML)),
            b"/ping" => Response::new(200, TEXT, Body::Static(PONG)),
            b"/json" => Response::new(200, JSON, Body::Static(JSON_BODY)),
            b"/data" => match query_param(query, b"size").map(parse_size) {
                None => Response::new(200, OCTETS, Body::Filler(DEFAULT_DATA_SIZE)),
                Some(Some(n)) => Response::new(200, OCTETS, Body::Filler(n)),
                Some(None) => Response::error(400),
            },
            b"/compute" => {
                let work = match query_param(query, b"work").map(parse_size) {
                    None => 1000,
                    Some(Some(n)) => n.min(self.max_work),
                    Some(None) => return Response::error(400),
                };
                let result = compute(work);
                let _ = writeln!(
                    dynamic,
                    "{{\"work\":{work},\"result\":\"{result:016x}\",\"algorithm\":\"splitmix64 rounds\",\"note\":\"deterministic CPU-bound work\"}}"
                );
                Response::new(200, JSON, Body::Dynamic(dynamic.len()))
            }
            b"/info" => {
                write_info(req, dynamic);
                Response::new(200, JSON, Body::Dynamic(dynamic.len()))
            }
            b"/delay" => {
                let ms = match query_param(query, b"ms").map(parse_u64) {
                    None => 0,
                    Some(Some(n)) => n,
                    Some(None) => return Response::error(400),
                };
                let d = Duration::from_millis(ms).min(self.max_delay);
                let _ = writeln!(dynamic, "delayed {} ms", d.as_millis());
                let mut r = Response::new(200, TEXT, Body::Dynamic(dynamic.len()));
                r.delay = Some(d);
                r
            }
            b"/page" => match PageParams::parse(query) {
                Some(p) => {
                    p.write_html(dynamic);
                    let mut r = Response::new(200, HTML, Body::Dynamic(dynamic.len()));
                    if p.think_ms > 0 {
                        r.delay = Some(Duration::from_millis(p.think_ms).min(self.max_delay));
                    }
                    // RFC 8297 §2: a 103 is only useful ahead of a final response that
                    // takes the hinted resources; a page without any gets none.
                    if self.early_hints
                        && matches!(req.method, Method::Get | Method::Head)
                        && p.css + p.js > 0
                    {
                        r.early_hints = Some(p);
                    }
                    r
                }
                None => Response::error(400),
            },
            _ => {
                if let Some(code) = path.strip_prefix(b"/status/") {
                    match parse_u64(code) {
                        Some(n @ 200..=599) => {
                            let n = n as u16;
                            let mut r = Response::error(n);
                            r.status = n;
                            if n == 204 || n == 304 {
                                r.body = Body::Empty;
                            } else {
                                let _ = writeln!(dynamic, "{} {}", n, reason(n));
                                r.body = Body::Dynamic(dynamic.len());
                            }
                            r
                        }
                        _ => Response::error(400),
                    }
                } else if let Some(rest) = path.strip_prefix(b"/asset/") {
                    match asset_size(rest) {
                        Some(n) => {
                            if path.ends_with(b".css") {
                                Response::new(200, "text/css", Body::Filler(n))
                            } else if path.ends_with(b".js") {
                                Response::new(200, "text/javascript", Body::Filler(n))
                            } else {
                                Response::new(200, "image/png", Body::Png(n))
                            }
                        }
                        None => Response::error(404),
                    }
                } else {
                    Response::error(404)
                }
            }
        }
    }
}
