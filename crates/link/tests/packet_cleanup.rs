//! Packet mode leaves nothing behind: a child process (this test binary, re-run with
//! `H2LAB_PACKET_CHILD`) starts a path and a command inside its client namespace, prints the
//! namespaces' ids, and is then ended by SIGINT, SIGTERM, SIGKILL or its own panic. Afterwards
//! no process holds either namespace (so they and their TUN devices are gone) and the command
//! inside is dead. Skips with a line where namespaces are unavailable (fails when `CI=true`).
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use h2lab_link::packet::{LossModel, PacketConfig, PacketLink, PacketParams, Side};

fn params() -> PacketParams {
    PacketParams {
        one_way: 5_000_000,
        jitter: 0,
        reorder: false,
        bps: None,
        queue_bytes: usize::MAX,
        loss: LossModel::Iid(0.0),
    }
}

/// The child's body: start a path and `sleep` in its client namespace, report, then wait to be
/// signalled (or panic when asked).
#[test]
fn child_body() {
    let Ok(mode) = std::env::var("H2LAB_PACKET_CHILD") else {
        return;
    };
    let link = match PacketLink::start(PacketConfig {
        up: params(),
        down: params(),
        seed: 1,
        mtu: 1500,
        congestion_control: None,
        spin_ns: h2lab_link::packet::DEFAULT_SPIN_NS,
    }) {
        Ok(l) => l,
        Err(e) => {
            println!("unavailable {e}");
            return;
        }
    };
    let mut cmd = Command::new("sleep");
    cmd.arg("1000");
    link.command(Side::Client, &mut cmd);
    #[allow(clippy::zombie_processes)] // it dies with this process, by its parent-death signal
    let child = cmd.spawn().unwrap();
    let i = link.info();
    println!(
        "ready {} {} {}",
        i.client.netns_inode,
        i.server.netns_inode,
        child.id()
    );
    if mode == "panic" {
        panic!("the child panics with a path running");
    }
    loop {
        std::thread::park();
    }
}

/// Whether any process or thread is in, or holds a descriptor of, the namespace `inode`.
fn held(inode: u64) -> bool {
    let want = format!("net:[{inode}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    for p in procs.flatten() {
        let base = p.path();
        let mut links = vec![base.join("ns/net")];
        if let Ok(tasks) = std::fs::read_dir(base.join("task")) {
            links.extend(tasks.flatten().map(|t| t.path().join("ns/net")));
        }
        if let Ok(fds) = std::fs::read_dir(base.join("fd")) {
            links.extend(fds.flatten().map(|f| f.path()));
        }
        if links
            .iter()
            .any(|l| std::fs::read_link(l).is_ok_and(|t| t.to_string_lossy() == want))
        {
            return true;
        }
    }
    false
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn run(mode: &str, signal: Option<&str>) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_body", "--nocapture", "--test-threads=1"])
        .env("H2LAB_PACKET_CHILD", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut ids = None;
    for line in out.lines() {
        let line = line.unwrap();
        // The harness prints `test child_body ... ` on the same line first.
        if let Some(rest) = line.split_once("ready ").map(|(_, r)| r) {
            let v: Vec<u64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
            ids = Some((v[0], v[1], v[2] as u32));
            break;
        }
        if let Some(e) = line.split_once("unavailable ").map(|(_, r)| r) {
            let _ = child.wait();
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "packet mode unavailable in CI: {e}"
            );
            eprintln!("SKIP: packet mode unavailable: {e}");
            return;
        }
    }
    let (client, server, sleeper) = ids.expect("the child reports its namespaces");
    assert!(held(client) && held(server));
    if let Some(sig) = signal {
        let st = Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }
    let _ = child.wait().unwrap();
    // The command inside dies by its parent-death signal, asynchronously: wait for it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while (alive(sleeper) || held(client) || held(server)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(sleeper), "{mode} {signal:?}: the command survived");
    assert!(
        !held(client),
        "{mode} {signal:?}: client namespace still held"
    );
    assert!(
        !held(server),
        "{mode} {signal:?}: server namespace still held"
    );
}

/// One scenario after the other: a namespace's inode number is free for reuse once it is
/// gone, so scenarios running in parallel could see each other's new namespaces under an old
/// number.
#[test]
fn nothing_is_left_after_sigint_sigterm_sigkill_or_a_panic() {
    run("wait", Some("-INT"));
    run("wait", Some("-TERM"));
    run("wait", Some("-KILL"));
    run("panic", None);
}
