//! Records the git revision the binary was built from for `h2lab --version`.
//!
//! The revision comes from `H2LAB_GIT_REV` when set (a container build that copies no `.git`
//! can pass it in), else from `git rev-parse --short=12 HEAD`, else it is "unknown": a build
//! without git or without a repository still succeeds.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=H2LAB_GIT_REV");
    let rev = std::env::var("H2LAB_GIT_REV")
        .ok()
        .filter(|r| !r.trim().is_empty())
        .or_else(git_rev)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=H2LAB_GIT_REV={}", rev.trim());
}

/// The short revision of HEAD, and rerun triggers on the files that move when HEAD moves.
fn git_rev() -> Option<String> {
    let rev = git(&["rev-parse", "--short=12", "HEAD"])?;
    // HEAD itself (a branch switch), the branch's ref (a commit) and packed-refs.
    for name in ["HEAD", "packed-refs"] {
        rerun_on(git(&["rev-parse", "--git-path", name]));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        rerun_on(git(&["rev-parse", "--git-path", &branch]));
    }
    Some(rev)
}

fn rerun_on(path: Option<String>) {
    if let Some(path) = path {
        let path = Path::new(&path);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(path)
        };
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var("CARGO_MANIFEST_DIR").ok()?)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}
