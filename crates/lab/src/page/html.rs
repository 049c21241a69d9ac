//! Finding a page's sub-resources the way a browser's preload scanner does: `img`, `script`,
//! `link` (stylesheet, icon, preload), `source`, `input type=image` and `video poster`
//! attributes, resolved against the page URL. Only same-origin resources are kept (the page
//! loader has one connection pool per origin); others are counted.

/// The sub-resources of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// Same-origin request targets (`/img/a.png?x`), in document order, without duplicates.
    pub paths: Vec<String>,
    /// References to other origins (not loaded).
    pub other_origins: usize,
}

/// Extracts the sub-resources of `html`, served at `page_path` by `origin`
/// (`https://host:port`, no trailing slash).
pub fn resources(html: &str, origin: &str, page_path: &str) -> Resources {
    let mut out = Resources::default();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        rest = &rest[lt + 1..];
        if rest.starts_with("!--") {
            match rest.find("-->") {
                Some(e) => rest = &rest[e + 3..],
                None => break,
            }
            continue;
        }
        let end = tag_end(rest);
        let tag = &rest[..end];
        rest = &rest[end..];
        let (name, attrs) = split_tag(tag);
        let name = name.to_ascii_lowercase();
        let attr = |a: &str| attribute(attrs, a);
        let url = match name.as_str() {
            "img" | "script" | "source" | "audio" | "track" | "embed" => attr("src"),
            "input" => attr("type")
                .filter(|t| t.eq_ignore_ascii_case("image"))
                .and_then(|_| attr("src")),
            "video" => attr("poster"),
            "link" => attr("rel")
                .filter(|r| {
                    r.split_ascii_whitespace().any(|w| {
                        matches!(
                            w.to_ascii_lowercase().as_str(),
                            "stylesheet" | "icon" | "preload" | "modulepreload"
                        )
                    })
                })
                .and_then(|_| attr("href")),
            _ => None,
        };
        let Some(url) = url else { continue };
        match resolve(&url, origin, page_path) {
            Some(p) => {
                if !out.paths.contains(&p) {
                    out.paths.push(p);
                }
            }
            None => {
                if !url.starts_with("data:") && !url.is_empty() {
                    out.other_origins += 1;
                }
            }
        }
    }
    out
}

/// Index of the `>` closing the tag (outside quotes), or the end.
fn tag_end(s: &str) -> usize {
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '>') => return i,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    s.len()
}

fn split_tag(tag: &str) -> (&str, &str) {
    let t = tag.trim_start();
    let n = t
        .find(|c: char| c.is_ascii_whitespace() || c == '/')
        .unwrap_or(t.len());
    (&t[..n], &t[n..])
}

/// The value of attribute `name` (case-insensitive), entity-decoded.
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let b = attrs.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'/' {
            i += 1;
        }
        let key = &attrs[start..i];
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = None;
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vs = i + 1;
                i = vs;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                value = Some(&attrs[vs..i.min(b.len())]);
                i += 1;
            } else {
                let vs = i;
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = Some(&attrs[vs..i]);
            }
        }
        if key.eq_ignore_ascii_case(name) {
            return value.map(decode_entities);
        }
        if start == i {
            i += 1;
        }
    }
    None
}

fn decode_entities(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

/// Resolves `url` against the page; `None` for other origins and non-HTTP URLs.
pub fn resolve(url: &str, origin: &str, page_path: &str) -> Option<String> {
    let url = url.trim();
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    if url.is_empty() {
        return None;
    }
    let lower = url.to_ascii_lowercase();
    let path = if lower.starts_with("http://") || lower.starts_with("https://") {
        let rest = url.get(origin.len()..)?;
        if !lower.starts_with(&origin.to_ascii_lowercase()) {
            return None;
        }
        if rest.is_empty() {
            "/".to_owned()
        } else if rest.starts_with('/') || rest.starts_with('?') {
            rest.to_owned()
        } else {
            return None; // a longer host name with the same prefix
        }
    } else if let Some(r) = url.strip_prefix("//") {
        let host_part = origin.split_once("//").map_or(origin, |(_, h)| h);
        let r_lower = r.to_ascii_lowercase();
        if !r_lower.starts_with(&host_part.to_ascii_lowercase()) {
            return None;
        }
        let rest = &r[host_part.len()..];
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        if rest.is_empty() {
            "/".into()
        } else {
            rest.to_owned()
        }
    } else if has_scheme(url) {
        return None; // data:, mailto:, javascript:, ...
    } else if url.starts_with('/') {
        url.to_owned()
    } else if url.starts_with('?') {
        let page = page_path.split_once('?').map_or(page_path, |(p, _)| p);
        format!("{page}{url}")
    } else {
        let page = page_path.split_once('?').map_or(page_path, |(p, _)| p);
        let dir = page.rsplit_once('/').map_or("", |(d, _)| d);
        format!("{dir}/{url}")
    };
    Some(normalize(&path))
}

/// Whether `url` starts with a scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`,
/// RFC 3986 §3.1).
fn has_scheme(url: &str) -> bool {
    match url.split_once(':') {
        Some((s, _)) => {
            s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Removes `.` and `..` segments (RFC 3986 §5.2.4) from the path part.
fn normalize(p: &str) -> String {
    let (path, query) = match p.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (p, None),
    };
    let mut segs: Vec<&str> = Vec::new();
    for s in path.split('/').skip(1) {
        match s {
            "." => {}
            ".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut out = format!("/{}", segs.join("/"));
    if path.ends_with("/.") || path.ends_with("/..") {
        out.push('/');
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: &str = "https://example.com:8443";

    #[test]
    fn finds_images_scripts_styles() {
        let html = r#"<!DOCTYPE html><html><head>
            <link rel="stylesheet" href="/css/a.css"><link rel=icon href=fav.ico>
            <link rel="canonical" href="/x"><script src='js/app.js?v=1&amp;b=2'></script>
            <!-- <img src="/commented.png"> -->
            </head><body><table><tr><td><img src="/asset/1/0-1024.png" alt="a > b"></td>
            <td><IMG SRC="/asset/1/0-1024.png"></td><td><img src="https://cdn.other/x.png">
            <img src="data:image/png;base64,xx"><img src="../up.png"><img src="//example.com:8443/p.png">
            <img src="https://example.com:8443/abs.png#frag"></table></body></html>"#;
        let r = resources(html, O, "/dir/index.html?q");
        assert_eq!(
            r.paths,
            vec![
                "/css/a.css",
                "/dir/fav.ico",
                "/dir/js/app.js?v=1&b=2",
                "/asset/1/0-1024.png",
                "/up.png",
                "/p.png",
                "/abs.png"
            ]
        );
        assert_eq!(r.other_origins, 1);
    }

    #[test]
    fn resolution() {
        assert_eq!(
            resolve("a/./b/../c.png", O, "/x/y"),
            Some("/x/a/c.png".into())
        );
        assert_eq!(resolve("https://example.com:84430/a", O, "/"), None);
        assert_eq!(resolve("mailto:x@y", O, "/"), None);
        assert_eq!(
            resolve("?page=2", O, "/list?x"),
            Some("/list?page=2".into())
        );
    }
}
