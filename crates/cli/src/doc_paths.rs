//! The docs name only files that exist: every repository path in backticks and every relative
//! link in README.md, CHANGELOG.md and docs/*.md must resolve.

use std::path::PathBuf;

use crate::doc_lines::{inline_spans, root};

/// README.md, CHANGELOG.md and every docs/*.md.
fn documents() -> Vec<PathBuf> {
    let mut docs = crate::doc_lines::documents();
    docs.insert(1, root().join("CHANGELOG.md"));
    docs
}

/// Top-level directories whose paths the docs name in backticks.
const TOP: [&str; 9] = [
    "crates/",
    "bench/",
    "scripts/",
    "docs/",
    "schemas/",
    "testdata/",
    "fuzz/",
    "deploy/",
    ".ci/",
];

/// A backticked span that names a repository path (no placeholders, no globs).
fn as_path(span: &str) -> Option<&str> {
    let span = span.trim_end_matches([':', ',', '.']);
    let span = span.split_once(' ').map_or(span, |(first, _)| first);
    let span = span.split_once("::").map_or(span, |(path, _)| path);
    let span = span.split_once('#').map_or(span, |(path, _)| path);
    if !TOP.iter().any(|t| span.starts_with(t)) {
        return None;
    }
    if span.contains(['<', '*', '…', '{', '$']) || span.contains("...") {
        return None;
    }
    Some(span)
}

/// Relative link targets: `](target)` that are not URLs or in-page anchors.
fn links(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        let target = target.split_once('#').map_or(target, |(p, _)| p);
        let plain = !target.contains(['{', ' ', '%']);
        if plain && !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:")
        {
            out.push(target);
        }
        rest = &rest[end..];
    }
    out
}

#[test]
fn docs_name_only_files_that_exist() {
    let root = root();
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        let dir = doc.parent().unwrap();
        for (line_no, span) in inline_spans(&text) {
            if let Some(path) = as_path(&span) {
                checked += 1;
                if !root.join(path).exists() {
                    missing.push(format!("{name}:{line_no}: `{path}`"));
                }
            }
        }
        let mut in_fence = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence {
                continue;
            }
            for target in links(line) {
                checked += 1;
                if !dir.join(target).exists() {
                    missing.push(format!("{name}:{}: link {target}", i + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs name files that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(checked >= 30, "only {checked} paths checked");
}

#[test]
fn path_recognition() {
    assert_eq!(
        as_path("crates/wire/src/lib.rs"),
        Some("crates/wire/src/lib.rs")
    );
    assert_eq!(
        as_path("crates/lab/src/link/tcp_model.rs:"),
        Some("crates/lab/src/link/tcp_model.rs")
    );
    assert_eq!(
        as_path("bench/lab-repro.sh ROUNDS=3"),
        Some("bench/lab-repro.sh")
    );
    assert_eq!(as_path("crates/*/src"), None);
    assert_eq!(as_path("h2lab bench"), None);
    assert_eq!(
        links("see [a](docs/x.md#y) and [b](https://e/)"),
        ["docs/x.md"]
    );
}
