//! The `--json PATH` result document.
//!
//! The document carries every counter and statistic of a run, the negotiated protocol and TLS
//! details, the options used, and the merged latency histograms serialised as HdrHistogram V2
//! (deflate-compressed, base64) so that results of several runs can be [`merge`]d later without
//! losing the distribution. Its shape is versioned by `schema_version` and described by the JSON
//! Schema `schemas/bench-result.v1.json` at the repository root.
//!
//! Reading accepts both the compressed and the plain V2 encoding (the V2 cookie tells them apart).
//!
//! The module is split by job: `schema` holds the document types, `histogram` their histogram
//! encoding, `convert` the conversion from and to a run, `merge` the merging of runs; this file
//! the version, the errors, and reading and writing the text.

use std::fmt;
use std::io;
use std::path::Path;

mod convert;
mod histogram;
mod merge;
mod schema;

pub use convert::{from_json, to_json};
pub use histogram::{decode_histogram, encode_histogram};
pub use merge::{merge, merge_results, MergeMode};
pub use schema::*;

/// The `schema_version` this crate writes (and the only one it reads).
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema of [`SCHEMA_VERSION`] (`schemas/bench-result.v1.json`).
pub const SCHEMA: &str = include_str!("../../../schemas/bench-result.v1.json");

/// The `histograms.encoding` value written by this crate.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// The `histograms.encoding` value of uncompressed V2 histograms (accepted on input).
pub const HISTOGRAM_ENCODING_PLAIN: &str = "hdrhistogram-v2-base64";

/// Errors reading, writing or merging result documents.
#[derive(Debug)]
pub enum JsonError {
    /// Not valid JSON, or not the expected shape.
    Parse(serde_json::Error),
    /// A `schema_version` this build does not understand.
    UnsupportedSchema(u32),
    /// A histogram could not be decoded, encoded or added, or a value is out of range.
    Histogram(String),
    /// Writing the file failed.
    Io(io::Error),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Parse(e) => write!(f, "invalid result JSON: {e}"),
            JsonError::UnsupportedSchema(v) => write!(
                f,
                "unsupported schema_version {v} (this build reads version {SCHEMA_VERSION})"
            ),
            JsonError::Histogram(e) => write!(f, "histogram: {e}"),
            JsonError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonError::Parse(e) => Some(e),
            JsonError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<serde_json::Error> for JsonError {
    fn from(e: serde_json::Error) -> Self {
        JsonError::Parse(e)
    }
}

impl From<io::Error> for JsonError {
    fn from(e: io::Error) -> Self {
        JsonError::Io(e)
    }
}

/// Parses a result document and checks its `schema_version`.
pub fn parse(s: &str) -> Result<BenchJson, JsonError> {
    let v: serde_json::Value = serde_json::from_str(s)?;
    if let Some(ver) = v.get("schema_version").and_then(|v| v.as_u64()) {
        if ver != u64::from(SCHEMA_VERSION) {
            return Err(JsonError::UnsupportedSchema(
                u32::try_from(ver).unwrap_or(u32::MAX),
            ));
        }
    }
    Ok(serde_json::from_value(v)?)
}

/// Pretty-printed JSON text of a document, with a trailing newline.
pub fn to_string(doc: &BenchJson) -> Result<String, JsonError> {
    let mut s = serde_json::to_string_pretty(doc)?;
    s.push('\n');
    Ok(s)
}

/// Writes a document to `path` atomically (temporary file in the same directory, then rename).
pub fn write(path: &Path, doc: &BenchJson) -> Result<(), JsonError> {
    let text = to_string(doc)?;
    crate::atomic::write_atomic(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests;
