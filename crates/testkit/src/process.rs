//! Process groups: every anchor runs as the leader of its own group so that stopping it also
//! stops the workers it forked (Apache children, nginx workers), without touching anything else.

use std::fs;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// PIDs of the live (non-zombie) processes whose process group is `pgid`, from `/proc`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Format: "pid (comm) state ppid pgrp ..."; comm may contain spaces and ')'.
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 1..)) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let _ppid = fields.next();
        let pgrp = fields.next().and_then(|s| s.parse::<u32>().ok());
        if pgrp == Some(pgid) && state != Some("Z") && state != Some("X") {
            out.push(pid);
        }
    }
    out
}

/// Sends `signal` (e.g. `"TERM"`, `"KILL"`) to every process of group `pgid` via `kill(1)`.
pub(crate) fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{pgid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Polls (short, growing intervals) until `done()` or the deadline; returns whether it was done.
pub(crate) fn poll_until(deadline: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    let mut pause = Duration::from_millis(2);
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Stops the group led by `child`: TERM to the whole group, wait up to `grace`, then KILL.
/// Reaps the leader. Returns the PIDs still alive afterwards (normally none).
pub(crate) fn stop_group(child: &mut Child, grace: Duration) -> Vec<u32> {
    let pgid = child.id();
    let mut leader_done = matches!(child.try_wait(), Ok(Some(_)));
    if !leader_done || !group_members(pgid).is_empty() {
        signal_group(pgid, "TERM");
        poll_until(grace, || {
            if !leader_done {
                leader_done = matches!(child.try_wait(), Ok(Some(_)));
            }
            leader_done && group_members(pgid).is_empty()
        });
    }
    if !leader_done || !group_members(pgid).is_empty() {
        signal_group(pgid, "KILL");
        let _ = child.kill();
        let _ = child.wait();
        poll_until(Duration::from_secs(2), || group_members(pgid).is_empty());
    }
    group_members(pgid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn stop_group_kills_children_too() {
        // A shell leader with a background child that would outlive a plain kill of the leader.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("sleep 30 & sleep 30; wait")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        assert!(poll_until(Duration::from_secs(5), || group_members(pgid)
            .len()
            >= 3));
        let left = stop_group(&mut child, Duration::from_secs(5));
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(group_members(pgid).is_empty());
    }
}
