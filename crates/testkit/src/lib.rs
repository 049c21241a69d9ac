//! Test support for h2lab: real "anchor" servers and clients on loopback.
//!
//! Used as a dev-dependency by the engine, server and lab tests, and by the benchmarks:
//!
//! - [`AnchorServer`]: starts nghttpd (h2c or TLS), nginx, h2o or Apache (mod_http2) on ports
//!   chosen at run time, serving deterministic files, and stops the whole process group (and
//!   removes its temp dir) on drop. Configs come from `testdata/anchors/configs/*.template`.
//! - [`Caddy`]: Caddy (HTTP/3 by quic-go, and HTTP/2 over TLS on the same port number), the
//!   independent HTTP/3 server of the `--h3` tests.
//! - Both retry the whole start on fresh ports when the server exits during start-up (a port
//!   taken between choosing it and the server binding it).
//! - [`h2load()`] and [`wrk()`]: run the reference clients and parse their reports.
//! - [`render_check`]: renders an HTML report in headless Chromium and checks that its charts
//!   show.
//! - [`which`], [`require_anchor!`]: find binaries; skip a test locally when an anchor is not
//!   installed, but fail it in CI (`CI=true`).
//!
//! ```no_run
//! use h2lab_testkit::{require_anchor, AnchorServer, Files, FILE_653};
//!
//! # fn t() {
//! require_anchor!("nginx", "h2load");
//! let nginx = AnchorServer::builder(h2lab_testkit::AnchorKind::Nginx)
//!     .files(Files::small())
//!     .max_concurrent_streams(5)
//!     .start()
//!     .unwrap();
//! let url = nginx.url_tls(FILE_653).unwrap();
//! let out = h2lab_testkit::h2load(["-n", "100", "-c", "2", "-m", "10", &url]).unwrap();
//! assert_eq!(out.summary.unwrap().requests.succeeded, 100);
//! # }
//! ```

mod alloc;
mod caddy;
#[cfg(test)]
mod captures;
mod cert;
mod error;
mod files;
mod h2load;
pub mod h2spec;
mod net;
mod process;
pub mod render_check;
mod server;
mod wrk;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

pub use alloc::{allocations, live_bytes, thread_allocations, CountingAlloc};
pub use caddy::{Caddy, CaddyBuilder};
pub use cert::{self_signed, CertFiles, CertPair};
pub use error::Error;
pub use files::{
    pattern_bytes, Content, Files, FILE_100K, FILE_10M, FILE_653, SIZE_100K, SIZE_10M, SIZE_653,
};
pub use h2load::{
    h2load, parse_duration, H2loadOutput, H2loadSummary, RequestCounts, StatRow, StatusCounts,
    Traffic,
};
pub use net::{free_port_tcp_udp, free_ports, held_sockets, Bound, Listener};
pub use process::group_members;
pub use server::{AnchorBuilder, AnchorKind, AnchorServer};
pub use wrk::{wrk, WrkOutput};

/// Directories searched after `PATH`: the anchors' daemons live in `/usr/sbin`, which is not on
/// every user's `PATH`.
const EXTRA_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Full path of the executable `name`, searching `PATH` then the sbin directories.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &std::path::Path) -> bool {
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// True when running in CI (`CI` is `true` or `1`, as set by GitHub Actions and `.ci/run`).
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| v.eq_ignore_ascii_case("true") || v == "1")
        .unwrap_or(false)
}

/// Checks that every binary in `names` is installed.
///
/// Missing anchors: in CI ([`in_ci`]) this panics with a clear message (CI installs them, so a
/// missing one is a failure); elsewhere it prints `skipped: <binary> not installed` and returns
/// false so the test can return early. See [`require_anchor!`].
pub fn anchors_available(names: &[&str]) -> bool {
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| which(n).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    if in_ci() {
        panic!(
            "anchor binary not installed: {} (CI=true, so this is a failure; \
             run .ci/install-anchors.sh)",
            missing.join(", ")
        );
    }
    for m in missing {
        note_skip(m);
    }
    false
}

/// Name of the file, in the profile's target directory (`target/debug/`), where skipped tests
/// are recorded; `scripts/test.sh` prints a summary of it after the run.
pub const SKIP_LOG: &str = "h2lab-skipped-anchors.log";

/// Records that the running test is skipped because `tool` is not installed: prints
/// `skipped: <tool> not installed` (visible with `--nocapture`) and appends one line
/// (`<tool>\t<test name>`) to [`SKIP_LOG`] beside the test binary, so that the end of a test
/// run can name what was not tested and how to install it. Call it only outside CI (in CI a
/// missing anchor is a failure, see [`anchors_available`]).
pub fn note_skip(tool: &str) {
    println!("skipped: {tool} not installed");
    if cfg!(test) {
        return; // testkit's own tests skip on purpose (a made-up binary name)
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string();
    let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
    else {
        return;
    };
    let line = format!("{tool}\t{test}\n");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(SKIP_LOG))
    {
        use std::io::Write as _;
        let _ = f.write_all(line.as_bytes());
    }
}

/// Returns from the calling test unless all the named anchor binaries are installed.
///
/// Locally a missing binary prints `skipped: <binary> not installed`; with `CI=true` it fails
/// the test. For tests returning a value, give it after a `;`:
/// `require_anchor!("nginx"; Ok(()))`.
#[macro_export]
macro_rules! require_anchor {
    ($($bin:expr),+ ; $ret:expr) => {
        if !$crate::anchors_available(&[$($bin),+]) {
            return $ret;
        }
    };
    ($($bin:expr),+ $(,)?) => {
        if !$crate::anchors_available(&[$($bin),+]) {
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_finds_sh_and_not_nonsense() {
        assert!(which("sh").is_some());
        assert!(which("/bin/sh").is_some());
        assert!(which("h2lab-no-such-binary-xyz").is_none());
    }

    #[test]
    fn require_anchor_returns_early_when_missing() {
        if in_ci() {
            return; // would (correctly) panic
        }
        fn unit() -> u32 {
            require_anchor!("h2lab-no-such-binary-xyz"; 7);
            0
        }
        assert_eq!(unit(), 7);
        fn plain(hit: &mut bool) {
            require_anchor!("sh", "h2lab-no-such-binary-xyz");
            *hit = true;
        }
        let mut hit = false;
        plain(&mut hit);
        assert!(!hit);
    }
}
