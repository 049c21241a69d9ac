//! h2load 1.70's TLS and frame-size options: `--tls13-ciphers`, `--ciphers` and `--groups`
//! decide what is negotiated with nghttpd; `--tls-resume` makes later connections resume a
//! session (counted from rustls' handshake kind, not from timings); `-f` is the
//! SETTINGS_MAX_FRAME_SIZE the client announces.
//!
//! nghttpd missing: the tests skip locally and fail in CI (`CI=true`).

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use h2lab_engine::tls_opts::{parse_ciphers, parse_groups, TlsOptions};
use h2lab_engine::{BenchConfig, NoopObserver, RunResult, StopFlag};
use h2lab_testkit::{require_anchor, AnchorKind, AnchorServer, Files, FILE_653};

fn run(cfg: &BenchConfig) -> RunResult {
    h2lab_engine::run(cfg, &NoopObserver, &StopFlag::new()).unwrap()
}

fn nghttpd_tls() -> (AnchorServer, BenchConfig) {
    let s = AnchorServer::builder(AnchorKind::NghttpdTls)
        .files(Files::small())
        .start()
        .unwrap_or_else(|e| panic!("nghttpd did not start: {e}"));
    let url = s.url_tls(FILE_653).unwrap();
    let cfg = BenchConfig::from_uris(&[url], None).unwrap();
    (s, cfg)
}

#[test]
fn ciphers_and_groups_decide_what_is_negotiated() {
    require_anchor!("nghttpd");
    let (_s, mut cfg) = nghttpd_tls();
    cfg.requests = 4;
    cfg.clients = 2;
    for (suites, group, want_cipher, want_key) in [
        (
            "TLS13_AES_256_GCM_SHA384",
            // The nghttpd 1.52 build here accepts P-256 only (X25519 fails the handshake).
            "secp256r1",
            "TLS_AES_256_GCM_SHA384",
            "ECDH prime256v1 256 bits",
        ),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            "P-256",
            "TLS_CHACHA20_POLY1305_SHA256",
            "ECDH prime256v1 256 bits",
        ),
    ] {
        cfg.tls = TlsOptions {
            tls13_ciphers: Some(parse_ciphers(suites, true).unwrap()),
            groups: Some(parse_groups(group).unwrap()),
            ..TlsOptions::default()
        };
        let r = run(&cfg);
        assert_eq!(r.requests.succeeded, 4, "{:?}", r.errors);
        let tls = r.tls.expect("TLS info");
        assert_eq!(tls.cipher, want_cipher);
        assert_eq!(tls.server_temp_key.as_deref(), Some(want_key));
    }
    // --ciphers restricts TLS 1.2 only: TLS 1.3 is still negotiated with its default suite.
    cfg.tls = TlsOptions {
        ciphers: Some(parse_ciphers("ECDHE-RSA-AES256-GCM-SHA384", false).unwrap()),
        ..TlsOptions::default()
    };
    let r = run(&cfg);
    assert_eq!(r.requests.succeeded, 4, "{:?}", r.errors);
    assert_eq!(r.tls.unwrap().protocol, "TLSv1.3");
}

#[test]
fn tls_resume_resumes_later_connections() {
    require_anchor!("nghttpd");
    let (_s, mut cfg) = nghttpd_tls();
    // Three connections, one per second (-r 1): the later two start long after the first
    // handshake (a few ms on loopback) delivered its session tickets.
    cfg.clients = 3;
    cfg.requests = 30;
    cfg.load.connection_rate = Some((1, Duration::from_secs(1)));

    let full = run(&cfg);
    assert_eq!(full.requests.succeeded, 30, "{:?}", full.errors);
    assert_eq!(full.connect_time.len(), 3);
    assert_eq!(full.tls_resumed, 0, "resumption is off by default");

    cfg.tls.resume = true;
    let resumed = run(&cfg);
    assert_eq!(resumed.requests.succeeded, 30, "{:?}", resumed.errors);
    assert_eq!(resumed.connect_time.len(), 3);
    // The first connection has nothing to resume; the later ones do.
    assert!(
        (1..=2).contains(&resumed.tls_resumed),
        "{} of 3 handshakes resumed",
        resumed.tls_resumed
    );
}

/// The SETTINGS frame the client sends first, as (id, value) pairs.
fn client_settings(cfg_for: impl FnOnce(String) -> BenchConfig) -> Vec<(u16, u32)> {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = cfg_for(format!("http://{}/", l.local_addr().unwrap()));
    cfg.connection_inactivity_timeout = Some(Duration::from_secs(10));
    let client = std::thread::spawn(move || {
        let _ = h2lab_engine::run(&cfg, &NoopObserver, &StopFlag::new());
    });
    let (mut s, _) = l.accept().unwrap();
    let mut head = [0u8; 24 + 9];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head[..24], b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let len = usize::from(head[24]) << 16 | usize::from(head[25]) << 8 | usize::from(head[26]);
    assert_eq!(head[27], 0x4, "first frame is SETTINGS");
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).unwrap();
    drop(s);
    drop(l);
    client.join().unwrap();
    payload
        .chunks(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect()
}

#[test]
fn max_frame_size_is_announced() {
    const MAX_FRAME_SIZE: u16 = 0x5;
    let s = client_settings(|url| {
        let mut cfg = BenchConfig::from_uris(&[url], None).unwrap();
        cfg.max_frame_size = 1 << 20;
        cfg
    });
    assert!(s.contains(&(MAX_FRAME_SIZE, 1 << 20)), "{s:?}");
    // The default (16384) is the protocol's own: announced or not, never another value.
    let s = client_settings(|url| BenchConfig::from_uris(&[url], None).unwrap());
    assert!(
        s.iter()
            .all(|(id, v)| *id != MAX_FRAME_SIZE || *v == 16_384),
        "{s:?}"
    );
}
