//! `--root`: static files below a root directory.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::query::hex_val;
use super::{Response, HTML, JSON, OCTETS, TEXT};
use crate::body::Body;

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
