//! The built-in endpoints, independent of the protocol: a parsed request head in, a response
//! head plus a [`Body`] source out. HTTP/1.1 and HTTP/2 both call [`Router::route`].

use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::body::Body;
use crate::config::ServerConfig;

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
pub enum Proto {
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
    pub proto: Proto,
    /// Whether the connection is TLS.
    pub tls: bool,
    /// Declared or known request body length (for `/info`); `None` if unknown (chunked).
    pub body_len: Option<u64>,
    /// The header fields.
    pub headers: &'a dyn HeaderSource,
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
        })
    }

    /// Routes a request. Dynamic bodies are written into `dynamic` (cleared first), which
    /// the caller owns and reuses.
    pub fn route(&self, req: &Request<'_>, dynamic: &mut Vec<u8>) -> Response {
        dynamic.clear();
        let (path, query) = split_target(req.target);
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
                    Response::new(200, HTML, Body::Dynamic(dynamic.len()))
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
                            let ct = if path.ends_with(b".css") {
                                "text/css"
                            } else if path.ends_with(b".js") {
                                "text/javascript"
                            } else {
                                "image/png"
                            };
                            Response::new(200, ct, Body::Filler(n))
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

/// Splits a request target into path and query (without the `?`). An absolute-form target
/// (`http://host/path`) is reduced to its path.
pub fn split_target(target: &[u8]) -> (&[u8], &[u8]) {
    let mut t = target;
    for scheme in [&b"http://"[..], b"https://"] {
        if t.len() > scheme.len() && t[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &t[scheme.len()..];
            t = match rest.iter().position(|&b| b == b'/' || b == b'?') {
                Some(i) => &rest[i..],
                None => b"/",
            };
            break;
        }
    }
    match t.iter().position(|&b| b == b'?') {
        Some(i) => (&t[..i], &t[i + 1..]),
        None => (t, &[]),
    }
}

/// The raw value of query parameter `key` (first occurrence).
pub fn query_param<'q>(query: &'q [u8], key: &[u8]) -> Option<&'q [u8]> {
    query.split(|&b| b == b'&').find_map(|kv| {
        let (k, v) = match kv.iter().position(|&b| b == b'=') {
            Some(i) => (&kv[..i], &kv[i + 1..]),
            None => (kv, &b""[..]),
        };
        (k == key).then_some(v)
    })
}

/// Parses a decimal `u64` (digits only).
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Parses a size with an optional `k`, `m` or `g` suffix (powers of 1024, as h2load and
/// nghttp do): `653`, `10k`, `100K`, `10m`, `1g`.
pub fn parse_size(s: &[u8]) -> Option<u64> {
    let (digits, mult) = match s.last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    parse_u64(digits)?.checked_mul(mult)
}

/// Percent-decodes a `?cache=` value into an inline value; `None` if it is too long or
/// contains bytes not allowed in a header value.
fn decode_cache_value(v: &[u8]) -> Option<InlineValue> {
    let mut out = InlineValue {
        buf: [0; 96],
        len: 0,
    };
    let mut i = 0;
    let mut n = 0usize;
    while i < v.len() {
        let b = match v[i] {
            b'%' => {
                let hex = v.get(i + 1..i + 3)?;
                let h = (hex_val(hex[0])? << 4) | hex_val(hex[1])?;
                i += 3;
                h
            }
            b'+' => {
                i += 1;
                b' '
            }
            b => {
                i += 1;
                b
            }
        };
        // RFC 9110 §5.5: field values are visible characters and spaces; no CR/LF/NUL.
        if !(0x20..=0x7e).contains(&b) {
            return None;
        }
        *out.buf.get_mut(n)? = b;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    out.len = n as u8;
    Some(out)
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// One splitmix64 step.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `/compute`: `work` dependent splitmix64 rounds (about a nanosecond each).
pub fn compute(work: u64) -> u64 {
    let mut x = 0x68_32_6c_61_62u64; // "h2lab"
    for _ in 0..work {
        x = splitmix64(x);
    }
    std::hint::black_box(x)
}

/// Writes `/info`'s JSON: method, target, protocol, TLS, body length and every header.
fn write_info(req: &Request<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"method\":");
    json_str(out, req.method_raw);
    out.extend_from_slice(b",\"target\":");
    json_str(out, req.target);
    out.extend_from_slice(match req.proto {
        Proto::Http10 => b",\"protocol\":\"HTTP/1.0\"" as &[u8],
        Proto::Http11 => b",\"protocol\":\"HTTP/1.1\"",
        Proto::H2 => b",\"protocol\":\"HTTP/2\"",
        Proto::H3 => b",\"protocol\":\"HTTP/3\"",
    });
    out.extend_from_slice(if req.tls {
        b",\"tls\":true" as &[u8]
    } else {
        b",\"tls\":false"
    });
    if let Some(n) = req.body_len {
        let _ = write!(out, ",\"body_length\":{n}");
    }
    out.extend_from_slice(b",\"headers\":[");
    let mut first = true;
    let mut total = 0usize;
    req.headers.for_each(&mut |name, value| {
        if !first {
            out.push(b',');
        }
        first = false;
        total += name.len() + value.len() + 32;
        out.push(b'[');
        json_str(out, name);
        out.push(b',');
        json_str(out, value);
        out.push(b']');
    });
    // `header_list_size`: RFC 9113 §6.5.2 accounting (name + value + 32 per field).
    let _ = writeln!(out, "],\"header_list_size\":{total}}}");
}

/// Appends `s` as a JSON string (bytes outside ASCII are escaped as \u00XX of each byte).
fn json_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
        }
    }
    out.push(b'"');
}

/// `/page` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageParams {
    /// Number of sub-resources.
    pub n: u64,
    /// Smallest asset size.
    pub min: u64,
    /// Largest asset size.
    pub max: u64,
    /// Seed of the size sequence.
    pub seed: u64,
    /// Render-blocking stylesheets in the head (`css=`, default 0).
    pub css: u64,
    /// Nominal stylesheet size (`css_size=`, default 16k); each file is 1/2..3/2 of it.
    pub css_size: u64,
    /// Render-blocking scripts in the head (`js=`, default 0).
    pub js: u64,
    /// Nominal script size (`js_size=`, default 48k); each file is 1/2..3/2 of it.
    pub js_size: u64,
    /// Scripts at the end of the body, after the images (`js_at=end`), instead of in the
    /// head (`js_at=head`, the default).
    pub js_at_end: bool,
}

/// Most sub-resources a `/page` may reference.
pub const MAX_PAGE_ITEMS: u64 = 100_000;
/// Images per table row on `/page` (the seeds' 15x20 table).
pub const PAGE_COLUMNS: u64 = 15;

impl PageParams {
    /// Parses `n`, `min`, `max`, `seed` (defaults 300, 1k, 8k, 1) and `css`, `css_size`,
    /// `js`, `js_size` (defaults 0, 16k, 0, 48k).
    pub fn parse(query: &[u8]) -> Option<Self> {
        let get = |k: &[u8], d: u64, size: bool| match query_param(query, k) {
            None => Some(d),
            Some(v) if size => parse_size(v),
            Some(v) => parse_u64(v),
        };
        let p = PageParams {
            n: get(b"n", 300, false)?,
            min: get(b"min", 1024, true)?,
            max: get(b"max", 8192, true)?,
            seed: get(b"seed", 1, false)?,
            css: get(b"css", 0, false)?,
            css_size: get(b"css_size", 16 * 1024, true)?,
            js: get(b"js", 0, false)?,
            js_size: get(b"js_size", 48 * 1024, true)?,
            js_at_end: match query_param(query, b"js_at") {
                None | Some(b"head") => false,
                Some(b"end") => true,
                Some(_) => return None,
            },
        };
        let blocking = p.css.saturating_add(p.js);
        (p.n.saturating_add(blocking) <= MAX_PAGE_ITEMS
            && p.min <= p.max
            && p.css_size <= 1 << 30
            && p.js_size <= 1 << 30)
            .then_some(p)
    }

    /// The render-blocking assets (`/asset/<seed>/<i>-<size>.css|js`, stylesheets first),
    /// numbered after the images so every asset of a page has its own index.
    pub fn blocking_assets(&self) -> impl Iterator<Item = (u64, u64, &'static str)> + '_ {
        let styles = (0..self.css).map(move |k| (self.n + k, self.css_size, "css"));
        let scripts = (0..self.js).map(move |k| (self.n + self.css + k, self.js_size, "js"));
        styles.chain(scripts).map(move |(i, nominal, ext)| {
            let size = asset_size_for(self.seed, i, nominal / 2, nominal + nominal / 2);
            (i, size, ext)
        })
    }

    /// Appends the page's HTML (what `/page` answers with these parameters).
    pub fn write_html(&self, out: &mut Vec<u8>) {
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>h2lab page n={} seed={}</title>",
            self.n, self.seed
        );
        // Render-blocking CSS and JS in the head, as a real page has them.
        for (i, size, ext) in self.blocking_assets() {
            if ext == "js" && self.js_at_end {
                continue;
            }
            let _ = match ext {
                "css" => write!(
                    out,
                    "\n<link rel=\"stylesheet\" href=\"/asset/{}/{i}-{size}.css\">",
                    self.seed
                ),
                _ => write!(
                    out,
                    "\n<script src=\"/asset/{}/{i}-{size}.js\"></script>",
                    self.seed
                ),
            };
        }
        out.extend_from_slice(b"</head>\n<body><table>\n");
        for i in 0..self.n {
            if i % PAGE_COLUMNS == 0 {
                out.extend_from_slice(b"<tr>");
            }
            let size = asset_size_for(self.seed, i, self.min, self.max);
            let _ = write!(
                out,
                "<td><img src=\"/asset/{}/{}-{}.png\" width=\"32\" height=\"32\" alt=\"\"></td>",
                self.seed, i, size
            );
            if i % PAGE_COLUMNS == PAGE_COLUMNS - 1 || i + 1 == self.n {
                out.extend_from_slice(b"</tr>\n");
            }
        }
        out.extend_from_slice(b"</table>");
        if self.js_at_end {
            for (i, size, ext) in self.blocking_assets() {
                if ext == "js" {
                    let _ = write!(
                        out,
                        "\n<script src=\"/asset/{}/{i}-{size}.js\"></script>",
                        self.seed
                    );
                }
            }
        }
        out.extend_from_slice(b"</body></html>\n");
    }
}

/// The deterministic size of asset `i` of a page with `seed`, in `[min, max]`.
pub fn asset_size_for(seed: u64, i: u64, min: u64, max: u64) -> u64 {
    let span = max.saturating_sub(min).saturating_add(1);
    let r = splitmix64(seed ^ splitmix64(i));
    if span == 0 {
        // max - min + 1 overflowed: the full u64 range.
        return r;
    }
    min + r % span
}

/// Size of `/asset/<seed>/<i>-<size>.<ext>` (explicit) or `/asset/<seed>/<i>.<ext>` (from the
/// default range 1k..=8k).
fn asset_size(rest: &[u8]) -> Option<u64> {
    let slash = rest.iter().position(|&b| b == b'/')?;
    let seed = parse_u64(&rest[..slash])?;
    let file = &rest[slash + 1..];
    let stem = match file.iter().rposition(|&b| b == b'.') {
        Some(i) => &file[..i],
        None => file,
    };
    match stem.iter().position(|&b| b == b'-') {
        Some(i) => {
            parse_u64(&stem[..i])?;
            parse_u64(&stem[i + 1..])
        }
        None => Some(asset_size_for(seed, parse_u64(stem)?, 1024, 8192)),
    }
}

/// Content type from a file extension.
pub fn content_type_for(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_bytes() {
        b"html" | b"htm" => HTML,
        b"css" => "text/css; charset=utf-8",
        b"js" | b"mjs" => "text/javascript; charset=utf-8",
        b"json" => JSON,
        b"txt" | b"md" => TEXT,
        b"xml" => "application/xml",
        b"png" => "image/png",
        b"jpg" | b"jpeg" => "image/jpeg",
        b"gif" => "image/gif",
        b"svg" => "image/svg+xml",
        b"webp" => "image/webp",
        b"avif" => "image/avif",
        b"ico" => "image/x-icon",
        b"wasm" => "application/wasm",
        b"pdf" => "application/pdf",
        b"woff" => "font/woff",
        b"woff2" => "font/woff2",
        b"mp4" => "video/mp4",
        _ => OCTETS,
    }
}

/// Percent-decodes a path; `None` for malformed escapes or a NUL byte.
fn percent_decode_path(p: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        let b = if p[i] == b'%' {
            let hex = p.get(i + 1..i + 3)?;
            i += 3;
            (hex_val(hex[0])? << 4) | hex_val(hex[1])?
        } else {
            i += 1;
            p[i - 1]
        };
        if b == 0 {
            return None;
        }
        out.push(b);
    }
    Some(out)
}

/// Serves `path` below the canonical `root`: rejects `..` segments (403), resolves symlinks
/// with `canonicalize` and checks the result is still inside `root` (403), serves
/// `index.html` for directories, 404 for anything missing.
pub fn serve_file(root: &Path, path: &[u8]) -> Response {
    let Some(decoded) = percent_decode_path(path) else {
        return Response::error(400);
    };
    let mut rel = PathBuf::new();
    for seg in decoded.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => return Response::error(403),
            s => rel.push(std::ffi::OsStr::from_bytes(s)),
        }
    }
    let Ok(mut full) = root.join(&rel).canonicalize() else {
        return Response::error(404);
    };
    if !full.starts_with(root) {
        return Response::error(403);
    }
    if full.is_dir() {
        match full.join("index.html").canonicalize() {
            Ok(f) if f.starts_with(root) => full = f,
            Ok(_) => return Response::error(403),
            Err(_) => return Response::error(404),
        }
    }
    let Ok(file) = File::open(&full) else {
        return Response::error(404);
    };
    match file.metadata() {
        Ok(m) if m.is_file() => {
            Response::new(200, content_type_for(&full), Body::File(file, m.len()))
        }
        _ => Response::error(404),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoHeaders;
    impl HeaderSource for NoHeaders {
        fn for_each(&self, _f: &mut dyn FnMut(&[u8], &[u8])) {}
    }

    fn get(router: &Router, target: &str) -> (Response, Vec<u8>) {
        let mut dynamic = Vec::new();
        let req = Request {
            method: Method::Get,
            method_raw: b"GET",
            target: target.as_bytes(),
            proto: Proto::Http11,
            tls: false,
            body_len: Some(0),
            headers: &NoHeaders,
        };
        let r = router.route(&req, &mut dynamic);
        (r, dynamic)
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size(b"653"), Some(653));
        assert_eq!(parse_size(b"10k"), Some(10240));
        assert_eq!(parse_size(b"10m"), Some(10 << 20));
        assert_eq!(parse_size(b"1G"), Some(1 << 30));
        assert_eq!(parse_size(b""), None);
        assert_eq!(parse_size(b"k"), None);
        assert_eq!(parse_size(b"-1"), None);
        assert_eq!(parse_size(b"99999999999999999999k"), None);
    }

    #[test]
    fn targets_and_queries() {
        assert_eq!(split_target(b"/a?b=1"), (&b"/a"[..], &b"b=1"[..]));
        assert_eq!(split_target(b"http://h:1/x?y"), (&b"/x"[..], &b"y"[..]));
        assert_eq!(split_target(b"http://h"), (&b"/"[..], &b""[..]));
        assert_eq!(query_param(b"a=1&size=10k", b"size"), Some(&b"10k"[..]));
        assert_eq!(query_param(b"a=1&size", b"size"), Some(&b""[..]));
        assert_eq!(query_param(b"a=1", b"size"), None);
    }

    #[test]
    fn endpoints() {
        let router = Router::new(&ServerConfig::local()).unwrap();
        let (r, _) = get(&router, "/ping");
        assert_eq!((r.status, r.body.len()), (200, 4));
        let (r, _) = get(&router, "/data?size=10k");
        assert_eq!(r.body.len(), 10240);
        let (r, _) = get(&router, "/data?size=x");
        assert_eq!(r.status, 400);
        let (r, d) = get(&router, "/compute?work=10");
        assert_eq!(r.status, 200);
        assert!((100..=200).contains(&d.len()), "{}", d.len());
        let (r, _) = get(&router, "/status/204");
        assert!(r.body.is_empty() && r.no_content_length());
        let (r, _) = get(&router, "/status/99");
        assert_eq!(r.status, 400);
        let (r, _) = get(&router, "/nope");
        assert_eq!(r.status, 404);
        let (r, _) = get(&router, "/json?cache=max-age%3D60");
        assert_eq!(r.cache.value(), b"max-age=60");
        let (r, _) = get(&router, "/json?cache=max-age=60");
        assert_eq!(r.cache.value(), b"max-age=60");
        let (r, _) = get(&router, "/json?cache=a%0Db");
        assert_eq!(r.cache.value(), b"no-store");
        let (r, _) = get(&router, "/delay?ms=5");
        assert_eq!(r.delay, Some(Duration::from_millis(5)));
        assert!(
            (150..=260).contains(&JSON_BODY.len()),
            "{}",
            JSON_BODY.len()
        );
    }

    #[test]
    fn page_references_assets_of_the_advertised_size() {
        let router = Router::new(&ServerConfig::local()).unwrap();
        let (r, d) = get(&router, "/page?n=31&min=1k&max=8k&seed=7");
        assert_eq!(r.status, 200);
        let html = String::from_utf8(d).unwrap();
        let srcs: Vec<&str> = html
            .split("src=\"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
            .collect();
        assert_eq!(srcs.len(), 31);
        assert_eq!(html.matches("<tr>").count(), 3);
        for (i, src) in srcs.iter().enumerate() {
            let size: u64 = src
                .rsplit('-')
                .next()
                .unwrap()
                .trim_end_matches(".png")
                .parse()
                .unwrap();
            assert!((1024..=8192).contains(&size));
            assert_eq!(size, asset_size_for(7, i as u64, 1024, 8192));
            let (a, _) = get(&router, src);
            assert_eq!((a.status, a.body.len()), (200, size));
        }
        let (a, _) = get(&router, "/asset/7/3.png");
        assert_eq!(a.body.len(), asset_size_for(7, 3, 1024, 8192));
        assert_eq!(get(&router, "/page?min=9k&max=1k").0.status, 400);
    }

    #[test]
    fn page_with_render_blocking_css_and_js() {
        let router = Router::new(&ServerConfig::local()).unwrap();
        let (_, plain) = get(&router, "/page?n=3&seed=7");
        let plain = String::from_utf8(plain).unwrap();
        assert!(!plain.contains(".css") && !plain.contains(".js"));
        let (r, d) = get(
            &router,
            "/page?n=3&seed=7&css=2&js=3&css_size=10k&js_size=20k",
        );
        assert_eq!(r.status, 200);
        let html = String::from_utf8(d).unwrap();
        let head = &html[..html.find("</head>").unwrap()];
        assert_eq!(head.matches("rel=\"stylesheet\"").count(), 2);
        assert_eq!(head.matches("<script src=").count(), 3);
        assert!(!html[html.find("</head>").unwrap()..].contains(".css"));
        // js_at=end moves the scripts after the images.
        let (_, late) = get(&router, "/page?n=3&seed=7&js=1&js_at=end");
        let late = String::from_utf8(late).unwrap();
        assert!(late.find("<script").unwrap() > late.find("<img").unwrap());
        assert_eq!(get(&router, "/page?js_at=middle").0.status, 400);
        // Same seed, same page; sizes within 1/2..3/2 of nominal; served as declared.
        let (_, again) = get(
            &router,
            "/page?n=3&seed=7&css=2&js=3&css_size=10k&js_size=20k",
        );
        assert_eq!(html.as_bytes(), &again[..]);
        let p = PageParams::parse(b"n=3&seed=7&css=2&js=3&css_size=10k&js_size=20k").unwrap();
        let assets: Vec<_> = p.blocking_assets().collect();
        assert_eq!(assets.len(), 5);
        for (i, size, ext) in assets {
            let nominal = if ext == "css" { 10240 } else { 20480 };
            assert!((nominal / 2..=nominal * 3 / 2).contains(&size));
            let path = format!("/asset/7/{i}-{size}.{ext}");
            assert!(head.contains(&path), "{path}");
            let (a, _) = get(&router, &path);
            assert_eq!((a.status, a.body.len()), (200, size));
            let ct = if ext == "css" {
                "text/css"
            } else {
                "text/javascript"
            };
            assert_eq!(a.content_type, ct);
        }
    }
}
