//! Every lint `allow` in the workspace's sources says why, and none silences a lint that is
//! not enabled (a dead `allow`: clippy's restriction lints are off unless the workspace's
//! `[workspace.lints.clippy]` turns them on).

use std::fs;
use std::path::{Path, PathBuf};

/// Clippy's restriction lints that an `allow` here could name; each is off unless enabled in
/// the workspace manifest.
const RESTRICTION: &[&str] = &[
    "panic",
    "expect_used",
    "unwrap_used",
    "indexing_slicing",
    "print_stdout",
    "print_stderr",
    "as_conversions",
    "unreachable",
    "exit",
    "float_arithmetic",
    "integer_division",
    "arithmetic_side_effects",
    "missing_docs_in_private_items",
    "shadow_unrelated",
    "std_instead_of_core",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() && name != "target" && !name.to_string_lossy().starts_with('.') {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The clippy lints `[workspace.lints.clippy]` enables.
fn enabled_clippy_lints() -> Vec<String> {
    let manifest = fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[workspace.lints.clippy]")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()))
        .filter(|k| !k.starts_with('#'))
        .collect()
}

#[test]
fn every_allow_has_a_reason_and_a_live_lint() {
    let enabled = enabled_clippy_lints();
    let mut files = Vec::new();
    for d in ["crates", "bench", "fuzz"] {
        rust_files(&workspace().join(d), &mut files);
    }
    assert!(files.len() > 100, "sources not found: {}", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let Some(rest) = t
                .strip_prefix("#[allow(")
                .or_else(|| t.strip_prefix("#![allow("))
            else {
                continue;
            };
            let at = format!("{}:{}", f.display(), i + 1);
            // The reason: a comment on the line, or a comment line (not a doc comment) right
            // above.
            let above = i.checked_sub(1).is_some_and(|j| {
                let a = lines[j].trim_start();
                a.starts_with("//") && !a.starts_with("///") && !a.starts_with("//!")
            });
            if !line.contains("//") && !above {
                bad.push(format!("{at}: no reason: {t}"));
            }
            let names = rest.split(')').next().unwrap_or("");
            for lint in names.split(',').map(str::trim) {
                if let Some(l) = lint.strip_prefix("clippy::") {
                    if RESTRICTION.contains(&l) && !enabled.iter().any(|e| e == l) {
                        bad.push(format!("{at}: clippy::{l} is not enabled: a dead allow"));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
