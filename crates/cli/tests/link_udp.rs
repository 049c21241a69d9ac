//! `h2lab link` relays UDP: the flags reach the link, the UDP address is printed,
//! datagrams cross with the added RTT, and the exit statistics count the flow.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn link_relays_udp_with_the_added_rtt_until_signalled() {
    let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
    let up = upstream.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        while let Ok((n, from)) = upstream.recv_from(&mut b) {
            let _ = upstream.send_to(&b[..n], from);
        }
    });
    let bin = assert_cmd::cargo::cargo_bin!("h2lab");
    let mut child = Command::new(bin)
        .args(["link", "--upstream", &up.to_string(), "--rtt", "30ms"])
        .args(["--udp-idle", "10s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("h2lab link: 127.0.0.1:"), "{first}");
    // "h2lab link: udp 127.0.0.1:PORT -> 127.0.0.1:UP"
    let second = lines.next().unwrap().unwrap();
    assert!(second.starts_with("h2lab link: udp 127.0.0.1:"), "{second}");
    let addr = second.split_whitespace().nth(3).unwrap().to_owned();
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for i in 0..3 {
        let msg = format!("ping {i}");
        let t = Instant::now();
        s.send_to(msg.as_bytes(), &addr).unwrap();
        let mut b = [0u8; 64];
        let (n, _) = s.recv_from(&mut b).unwrap();
        assert_eq!(&b[..n], msg.as_bytes());
        let rtt = t.elapsed();
        // The link delays by its rtt at least; how much longer a loaded machine takes is
        // not this test's business (the link's accuracy has its own tests, with bounds).
        assert!(rtt >= Duration::from_millis(29), "{rtt:?}");
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("h2lab link did not exit after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter().any(|l| l.starts_with("udp flows: 1 seen")),
        "{rest:?}"
    );
    assert!(
        rest.iter().any(|l| l.starts_with("udp up:   3 datagrams")),
        "{rest:?}"
    );
}

#[test]
fn no_udp_prints_no_udp_address() {
    let out = Command::new(assert_cmd::cargo::cargo_bin!("h2lab"))
        .args(["link", "--upstream", "127.0.0.1:9", "--udp-idle", "0s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("udp_idle") || err.contains("udp-idle"),
        "{err}"
    );
}
