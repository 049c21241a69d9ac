//! `h2lab link --packet -- CMD`: the command runs on the client side of a packet path against
//! the in-process server, with the addresses in its environment; on SIGTERM the command is
//! ended and nothing (namespaces, command) is left. Skips with a line where packet mode is
//! unavailable (fails when `CI=true`).
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn unavailable(stderr: &str) -> bool {
    if stderr.contains("packet mode needs") || stderr.contains("cannot create") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "packet mode unavailable in CI: {stderr}"
        );
        eprintln!("SKIP: packet mode unavailable: {stderr}");
        return true;
    }
    false
}

/// The client side reaches the built-in server over the emulated 20 ms path: a TCP round trip
/// from the command (bash's /dev/tcp) to the server's port, then the counters.
#[test]
fn a_command_runs_on_the_client_side_against_the_builtin_server() {
    let bin = assert_cmd::cargo::cargo_bin!("h2lab");
    let script = "echo client=$H2LAB_CLIENT_ADDR server=$H2LAB_SERVER_ADDR url=$H2LAB_URL; \
                  exec 3<>/dev/tcp/$H2LAB_SERVER_ADDR/8080 && \
                  printf 'GET /hello HTTP/1.1\\r\\nhost: x\\r\\nconnection: close\\r\\n\\r\\n' >&3 && \
                  head -n1 <&3; exit 7";
    let out = Command::new(bin)
        .args([
            "link", "--packet", "--rtt", "20ms", "--", "bash", "-c", script,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if unavailable(&stderr) {
        return;
    }
    assert_eq!(out.status.code(), Some(7), "{stdout}\n{stderr}");
    assert!(stdout.contains("h2lab link: path packet"), "{stdout}");
    assert!(
        stdout.contains("client=198.18.0.1 server=198.18.0.2 url=http://198.18.0.2:8080/"),
        "{stdout}"
    );
    assert!(stdout.contains("HTTP/1.1 "), "{stdout}");
    assert!(stdout.contains("TCP congestion control"), "{stdout}");
    assert!(
        stdout.contains("up:   ") && stdout.contains("dropped at the queue"),
        "{stdout}"
    );
}

fn held(inode: &str) -> bool {
    let want = format!("net:[{inode}]");
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        let base = p.path();
        let mut links = vec![base.join("ns/net")];
        if let Ok(t) = std::fs::read_dir(base.join("task")) {
            links.extend(t.flatten().map(|t| t.path().join("ns/net")));
        }
        if let Ok(f) = std::fs::read_dir(base.join("fd")) {
            links.extend(f.flatten().map(|f| f.path()));
        }
        links
            .iter()
            .any(|l| std::fs::read_link(l).is_ok_and(|t| t.to_string_lossy() == want))
    })
}

/// SIGTERM ends the command and the path; afterwards no process holds either namespace.
#[test]
fn sigterm_leaves_nothing_behind() {
    let bin = assert_cmd::cargo::cargo_bin!("h2lab");
    let mut child = Command::new(bin)
        .args(["link", "--packet", "--rtt", "10ms", "--", "sleep", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut inodes = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while inodes.len() < 2 {
        let Some(Ok(line)) = lines.next() else {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            let _ = child.wait();
            assert!(unavailable(&err), "no namespace lines: {err}");
            return;
        };
        if let Some((_, rest)) = line.split_once("net:[") {
            inodes.push(rest.trim_end_matches("])").to_owned());
        }
    }
    assert!(inodes.iter().all(|i| held(i)));
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.starts_with("down: ")), "{rest:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while inodes.iter().any(|i| held(i)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!inodes.iter().any(|i| held(i)), "a namespace is still held");
}

/// Without root: `h2lab link --packet` enters a user namespace that maps the user (as
/// `unshare -r` does) and runs the same path there. Started as `nobody` from a root test
/// (CI runs as root); needs `/dev/net/tun` usable by every user, as most distributions ship
/// it (`.ci/run` sets that mode). The client command is `h2lab bench` itself, over TLS.
#[test]
fn without_root_the_path_runs_in_a_user_namespace() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let skip = |why: &str| {
        assert!(!ci, "the unprivileged packet path cannot run in CI: {why}");
        eprintln!("SKIP: {why}");
    };
    if effective_uid() != 0 {
        return skip("not root: cannot start a process as another user");
    }
    let tun_mode = std::fs::metadata("/dev/net/tun").map_or(0, |m| m.permissions().mode());
    if tun_mode & 0o006 != 0o006 {
        return skip("/dev/net/tun is not usable by other users (chmod 0666 /dev/net/tun)");
    }
    // A copy of the binary that `nobody` can execute (the target directory may be private).
    let dir = std::env::temp_dir().join(format!("h2lab-userns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("h2lab");
    std::fs::copy(assert_cmd::cargo::cargo_bin!("h2lab"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = "exec \"$0\" bench -n 20 -c 2 \"$H2LAB_TLS_URL\"";
    let out = Command::new(&bin)
        .args([
            "link", "--packet", "--rtt", "10ms", "--", "sh", "-c", script,
        ])
        .arg(&bin)
        .current_dir(&dir)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("creating one failed") {
        return skip(&format!("user namespaces are not allowed here: {stderr}"));
    }
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("h2lab link: path packet"), "{stdout}");
    assert!(stdout.contains("requests: 20 total"), "{stdout}\n{stderr}");
    assert!(stdout.contains("20 succeeded"), "{stdout}\n{stderr}");
}

/// The effective user id, from `/proc/self/status` (no libc in this test).
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())
        .unwrap()
}

/// `--server-cmd` runs through `sh -c`; what the shell starts (here a `sleep` in the
/// background) ends with the path too, not only the shell.
#[test]
fn a_server_command_ends_with_everything_it_started() {
    let dir = std::env::temp_dir().join(format!("h2lab-server-cmd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("pid");
    let server = format!("sleep 1000 & echo $! > {}; wait", pid_file.display());
    // The client side waits until the server side has started its child, then exits.
    let client = format!("while [ ! -s {} ]; do sleep 0.02; done", pid_file.display());
    let out = Command::new(assert_cmd::cargo::cargo_bin!("h2lab"))
        .args([
            "link",
            "--packet",
            "--rtt",
            "2ms",
            "--server-cmd",
            &server,
            "--",
        ])
        .args(["sh", "-c", &client])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if unavailable(&stderr) {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // Killed by h2lab before it exited; its new parent reaps it soon after.
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            Instant::now() < deadline,
            "the server command's child still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
