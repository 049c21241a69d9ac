//! The RFC 9218 priorities a browser gives the resources of a page, by kind (file
//! extension of the request path): what [`Fetcher`](crate::fetch::Fetcher) sends in the
//! `priority` header when [`FetchConfig::priorities`](crate::fetch::FetchConfig::priorities)
//! is on.
//!
//! Modelled on Chromium's mapping of its resource priorities to RFC 9218 urgencies (the
//! document and render-blocking stylesheets highest, scripts in the head next, images low
//! and incremental, since a partly received image can already be drawn): the values are a
//! model, not a copy of any one browser version.

use h2lab_wire::priority::ExtPriority;

/// Urgency and incremental flag for a request of `path`.
///
/// | kind | extensions | priority |
/// |---|---|---|
/// | stylesheet | `.css` | `u=0` |
/// | script | `.js`, `.mjs` | `u=1` |
/// | font | `.woff2`, `.woff`, `.ttf`, `.otf` | `u=0` |
/// | document | `.html`, `.htm`, no extension | `u=0, i` |
/// | image | `.png`, `.jpg`, `.jpeg`, `.gif`, `.webp`, `.avif`, `.svg`, `.ico` | `u=5, i` |
/// | anything else | | `u=4, i` |
pub fn browser_priority(path: &str) -> ExtPriority {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let file = path.rsplit('/').next().unwrap_or(path);
    let ext = match file.rsplit_once('.') {
        Some((_, e)) => e.to_ascii_lowercase(),
        None => String::new(),
    };
    match ext.as_str() {
        "css" | "woff2" | "woff" | "ttf" | "otf" => ExtPriority::new(0, false),
        "js" | "mjs" => ExtPriority::new(1, false),
        "" | "html" | "htm" => ExtPriority::new(0, true),
        "png" | "jpg" | "jpeg" | "gif" | "webp" | "avif" | "svg" | "ico" => {
            ExtPriority::new(5, true)
        }
        _ => ExtPriority::new(4, true),
    }
}

/// Whether a request for `path` blocks rendering (stylesheets and head scripts: what the
/// render experiment waits for before "first render").
pub fn render_blocking(path: &str) -> bool {
    browser_priority(path).urgency <= 1 && !browser_priority(path).incremental
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(browser_priority("/a/b.css?x=1"), ExtPriority::new(0, false));
        assert_eq!(browser_priority("/app.JS"), ExtPriority::new(1, false));
        assert_eq!(
            browser_priority("/asset/1/3-100.png"),
            ExtPriority::new(5, true)
        );
        assert_eq!(browser_priority("/page"), ExtPriority::new(0, true));
        assert_eq!(browser_priority("/data.bin"), ExtPriority::new(4, true));
        assert!(render_blocking("/x.css") && render_blocking("/x.js"));
        assert!(!render_blocking("/x.png") && !render_blocking("/page"));
    }
}
