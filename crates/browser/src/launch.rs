//! Starting the browser: the binary ([`find_browser`]), its command line, the two DevTools
//! pipes on fds 3 and 4, CPU pinning, and the cleanup ([`Running`]'s `Drop`: the whole process
//! group killed, the profile directory removed — also when a panic unwinds through it).
//!
//! The pipes are put in place without `unsafe` code in this process: the child is
//! `/bin/sh -c 'exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null'`, so our stdin pipe becomes the
//! browser's fd 3 (commands) and our stdout pipe its fd 4 (its messages) before `exec`.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::BrowserError;

/// Which browser to start and where.
#[derive(Debug, Clone)]
pub struct BrowserSpec {
    /// The Chromium/Chrome binary.
    pub binary: PathBuf,
    /// CPUs the browser (all its processes) may run on (`taskset -c`); `None`: no pinning.
    pub cpus: Option<Vec<usize>>,
    /// More command-line switches (appended last).
    pub extra_args: Vec<String>,
}

/// The line printed when no browser is found.
pub const INSTALL_HINT: &str = "no Chromium found: install the Debian package `chromium` \
     (`apt-get install chromium`) or pass --browser PATH to a Chromium or Chrome binary";

/// Resolves `--browser` (`chromium`, a name on `PATH`, or a path) to a binary.
pub fn find_browser(name_or_path: &str) -> Result<PathBuf, BrowserError> {
    if name_or_path.contains('/') {
        let p = PathBuf::from(name_or_path);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(BrowserError::NotFound(format!(
                "{name_or_path}: no such file; {INSTALL_HINT}"
            )))
        };
    }
    let names: &[&str] = if name_or_path == "chromium" {
        &[
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ]
    } else {
        &[name_or_path]
    };
    for n in names {
        if let Some(p) = on_path(n) {
            return Ok(p);
        }
    }
    Err(BrowserError::NotFound(INSTALL_HINT.to_string()))
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether this process runs as root (the owner of `/proc/self` is the effective user):
/// Chromium's sandbox refuses root, so `--no-sandbox` is passed then, and only then.
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A started browser: its process group, the pipes, the profile directory.
pub struct Running {
    child: Child,
    /// Commands to the browser (its fd 3); taken by the DevTools transport.
    pub commands: Option<ChildStdin>,
    /// The browser's messages (its fd 4); taken by the DevTools transport.
    pub messages: Option<ChildStdout>,
    profile: PathBuf,
    /// Whether the browser was pinned to the requested CPUs.
    pub pinned: bool,
}

static PROFILES: AtomicU64 = AtomicU64::new(0);

/// A fresh, empty profile directory under the temporary directory.
fn fresh_profile() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    loop {
        let n = PROFILES.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = base.join(format!(
            "h2lab-browser-{}-{n}-{nanos:08x}",
            std::process::id()
        ));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The switches every load uses: headless, DevTools on the pipe, the fresh profile, and
/// nothing in the background that would add connections or CPU work of its own.
fn base_args(profile: &Path) -> Vec<String> {
    let mut a: Vec<String> = [
        "--headless=new",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--metrics-recording-only",
        "--mute-audio",
        "--password-store=basic",
        "--use-mock-keychain",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--user-data-dir={}", profile.display()));
    if running_as_root() {
        a.push("--no-sandbox".into());
    }
    a
}

impl Running {
    /// Starts `spec`'s browser with `args` (the load's switches) on `about:blank`.
    pub fn start(spec: &BrowserSpec, args: &[String]) -> Result<Running, BrowserError> {
        let profile = fresh_profile()?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(r#"exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg("h2lab-browser");
        let mut pinned = false;
        if let Some(cpus) = spec.cpus.as_ref().filter(|c| !c.is_empty()) {
            if let Some(taskset) = on_path("taskset") {
                let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
                cmd.arg(taskset).arg("-c").arg(list.join(","));
                pinned = true;
            }
        }
        cmd.arg(&spec.binary)
            .args(base_args(&profile))
            .args(args)
            .args(&spec.extra_args)
            .arg("about:blank");
        use std::os::unix::process::CommandExt;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(e.into());
            }
        };
        Ok(Running {
            commands: child.stdin.take(),
            messages: child.stdout.take(),
            child,
            profile,
            pinned,
        })
    }

    /// The browser's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time the browser's processes used so far ([`group_cpu`] of its process group).
    pub fn cpu(&self) -> Option<std::time::Duration> {
        group_cpu(self.pid())
    }

    /// Waits up to `grace` for the browser to exit by itself (after `Browser.close`).
    pub fn wait_exit(&mut self, grace: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + grace;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// CPU time (user + system, including reaped children's) of every live process whose
/// process group is `pgid`, from `/proc/PID/stat`; `None` when `/proc` cannot be read.
/// Processes that left the group (Chromium's crash handler starts its own session) are not
/// counted.
pub fn group_cpu(pgid: u32) -> Option<std::time::Duration> {
    let ticks = clock_ticks()?;
    let mut total: u64 = 0;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = e.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue; // it exited meanwhile
        };
        if let Some((group, cpu)) = parse_stat(&stat) {
            if group == pgid {
                total = total.saturating_add(cpu);
            }
        }
    }
    Some(std::time::Duration::from_secs_f64(
        total as f64 / ticks as f64,
    ))
}

/// `/proc/PID/stat`'s process group (field 5) and utime + stime + cutime + cstime
/// (fields 14-17, clock ticks); the command name (field 2) may hold spaces and parentheses,
/// so fields are counted after its last `)`.
fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // rest starts at field 3 (state): field n is f[n - 3].
    let group = f.get(2)?.parse().ok()?;
    let cpu = f
        .get(11..15)?
        .iter()
        .map(|x| x.parse::<i64>().ok().map(|v| v.max(0) as u64))
        .sum::<Option<u64>>()?;
    Some((group, cpu))
}

/// Clock ticks per second of `/proc`'s CPU times (`sysconf(_SC_CLK_TCK)`).
#[allow(unsafe_code)] // sysconf(3) has no safe wrapper in std
pub fn clock_ticks() -> Option<u64> {
    // SAFETY: sysconf takes an integer name and returns an integer; no memory is shared.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0)
}

#[allow(unsafe_code)] // kill(2) of our own child's process group has no safe wrapper in std
fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: plain system call on integers; the group is the one our child leads
    // (`process_group(0)`), so only processes we started are signalled.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        drop(self.commands.take());
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Helpers of the group may still be exiting and writing: retry a little.
        for _ in 0..50 {
            match std::fs::remove_dir_all(&self.profile) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                _ => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_browser_names_the_package_and_how_to_install_it() {
        let e = find_browser("/nonexistent/chromium").unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("`chromium`") && m.contains("apt-get install chromium"),
            "{m}"
        );
        assert!(!m.contains('\n'), "one line: {m}");
        let e = find_browser("h2lab-no-such-browser").unwrap_err();
        assert!(matches!(e, BrowserError::NotFound(_)));
    }

    #[test]
    fn stat_lines_give_the_group_and_the_cpu_ticks_past_a_tricky_name() {
        let line = "4242 (chromium (x) y) S 1 4000 4000 0 -1 4194560 100 0 0 0 \
                    70 30 5 -5 20 0 9 0 500 100000 200 18446744073709551615";
        assert_eq!(parse_stat(line), Some((4000, 105)));
        assert_eq!(parse_stat("garbage"), None);
        // This process's own group is readable and counted.
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        let (group, _) = parse_stat(&me).unwrap();
        assert!(group_cpu(group).is_some());
    }
}
