//! h2spec, the HTTP/2 conformance tester (`go install github.com/summerwind/h2spec/cmd/h2spec`):
//! find it and run it against a server, for the server's and the proxy's conformance tests.

use std::path::{Path, PathBuf};

/// h2spec's binary: `/usr/local/bin`, `/usr/bin`, `$HOME/go/bin`, `$GOPATH/bin` or `PATH`.
///
/// Missing, it is a failure under `CI=true` (CI installs it) and a recorded skip elsewhere
/// ([`crate::note_skip`]), like every other anchor ([`crate::anchors_available`]).
pub fn find() -> Option<PathBuf> {
    let mut candidates = vec![
        PathBuf::from("/usr/local/bin/h2spec"),
        PathBuf::from("/usr/bin/h2spec"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join("go/bin/h2spec"));
    }
    if let Some(gopath) = std::env::var_os("GOPATH") {
        candidates.push(Path::new(&gopath).join("bin/h2spec"));
    }
    if let Some(p) = candidates.into_iter().find(|p| p.exists()) {
        return Some(p);
    }
    if crate::anchors_available(&["h2spec"]) {
        crate::which("h2spec")
    } else {
        None
    }
}

/// What one h2spec run printed.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The last summary line (`145 tests, 145 passed, 0 skipped, 0 failed`), empty if none.
    pub summary: String,
    /// The lines of the failed tests (marked `×`).
    pub failures: Vec<String>,
    /// h2spec exited with status 0.
    pub success: bool,
}

/// Runs h2spec with `args` and collects its summary and failures.
pub fn run(bin: &Path, args: &[&str]) -> Outcome {
    let out = std::process::Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    Outcome {
        summary: text
            .lines()
            .rev()
            .find(|l| l.contains(" tests, "))
            .unwrap_or("")
            .to_string(),
        failures: text
            .lines()
            .filter(|l| l.contains('×'))
            .map(str::to_string)
            .collect(),
        success: out.status.success(),
    }
}
