//! `/page` (a generated HTML page and its deterministic assets) and `/compute`.

use std::io::Write;

use super::query::{parse_size, parse_u64, query_param};

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
    /// Think time before the page's response (`think=200ms`, `think=1s`, or milliseconds;
    /// default 0): the server "computes" the page for this long, as `/delay` waits, which
    /// is when Early Hints pay.
    pub think_ms: u64,
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
            think_ms: match query_param(query, b"think") {
                None => 0,
                Some(v) => parse_millis(v)?,
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

    /// Appends the `link` field value of the page's Early Hints (RFC 8297): one
    /// `rel=preload` entry per render-blocking stylesheet and script, in document order
    /// (`</asset/1/300-12000.css>; rel=preload; as=style, ...`). The assets are on the
    /// page's own origin, so no `rel=preconnect` applies. Nothing is appended for a page
    /// without render-blocking assets.
    pub fn write_preload_links(&self, out: &mut Vec<u8>) {
        for (i, size, ext) in self.blocking_assets() {
            if !out.is_empty() {
                out.extend_from_slice(b", ");
            }
            let kind = if ext == "css" { "style" } else { "script" };
            let _ = write!(
                out,
                "</asset/{}/{i}-{size}.{ext}>; rel=preload; as={kind}",
                self.seed
            );
        }
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

/// A think time: `200ms`, `2s` or a number of milliseconds.
fn parse_millis(v: &[u8]) -> Option<u64> {
    if let Some(ms) = v.strip_suffix(b"ms") {
        parse_u64(ms)
    } else if let Some(s) = v.strip_suffix(b"s") {
        parse_u64(s)?.checked_mul(1000)
    } else {
        parse_u64(v)
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
pub(super) fn asset_size(rest: &[u8]) -> Option<u64> {
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
