//! HTTP/2-specific end-to-end tests with the `h2` crate as the client oracle (advertised
//! SETTINGS, request-body limit, flow control on static files) plus curl, h2load and nghttp
//! when installed. The behaviour shared with HTTP/1.1 (every endpoint, counts, large bodies,
//! concurrency, delays, keep-alive, graceful stop) is in `protocols.rs`.

mod common;

use std::net::SocketAddr;

use bytes::Bytes;
use common::{start, start_tls};
use h2::client::SendRequest;
use http::{HeaderMap, Method, Request, StatusCode};

struct H2Resp {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl H2Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn h2c(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (client, conn) = h2::client::Builder::new().handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

async fn request(
    client: &SendRequest<Bytes>,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
) -> H2Resp {
    let mut client = client.clone().ready().await.unwrap();
    let req = Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .header("x-probe", "h2")
        .body(())
        .unwrap();
    let (fut, mut send) = client.send_request(req, body.is_none()).unwrap();
    if let Some(b) = body {
        send.send_data(Bytes::from(b), true).unwrap();
    }
    let resp = fut.await.unwrap();
    let (parts, mut recv) = resp.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        data.extend_from_slice(&chunk);
        let _ = recv.flow_control().release_capacity(chunk.len());
    }
    H2Resp {
        status: parts.status,
        headers: parts.headers,
        body: data,
    }
}

async fn get(client: &SendRequest<Bytes>, path: &str) -> H2Resp {
    request(client, Method::GET, path, None).await
}

#[tokio::test]
async fn advertised_settings_follow_the_config() {
    let s = start(|c| c.max_concurrent_streams = 7);
    let tcp = tokio::net::TcpStream::connect(s.addr().unwrap())
        .await
        .unwrap();
    let (client, mut conn) = h2::client::handshake(tcp).await.unwrap();
    let req = async move { get(&client, "/ping").await };
    tokio::pin!(req);
    tokio::select! {
        r = &mut req => assert_eq!(r.body, b"pong"),
        r = &mut conn => panic!("connection ended: {r:?}"),
    }
    assert_eq!(conn.max_concurrent_send_streams(), 7);
}

#[tokio::test]
async fn oversized_request_body_gets_413() {
    let s = start(|c| c.max_request_body = 10_000);
    let c = h2c(s.addr().unwrap()).await;
    let mut client = c.clone().ready().await.unwrap();
    let req = Request::builder()
        .method(Method::POST)
        .uri("http://localhost/ping")
        .body(())
        .unwrap();
    let (fut, mut send) = client.send_request(req, false).unwrap();
    send.send_data(Bytes::from(vec![0u8; 20_000]), true)
        .unwrap();
    let resp = fut.await.unwrap();
    assert_eq!(resp.status(), 413);
    // The connection is still usable.
    assert_eq!(get(&c, "/ping").await.body, b"pong");
}

/// Runs `cmd` (skipped when not installed, a failure under `CI=true`); stdout + stderr.
fn run(cmd: &str, args: &[&str]) -> Option<String> {
    common::tool(cmd, &[std::path::PathBuf::from(cmd)])?;
    let out = std::process::Command::new(cmd).args(args).output().unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn curl_h2c_prior_knowledge_upgrade_and_tls() {
    let (s, _dir) = start_tls(|_| {});
    let a = s.addr().unwrap();
    let fmt = "%{http_code} %{size_download} %{http_version}";
    let Some(out) = run(
        "/usr/bin/curl",
        &[
            "-s",
            "--http2-prior-knowledge",
            "-o",
            "/dev/null",
            "-w",
            fmt,
            &format!("http://{a}/data?size=1m"),
        ],
    ) else {
        return;
    };
    assert_eq!(out, "200 1048576 2");
    // Upgrade: h2c (curl sends it for http:// with --http2).
    let out = run(
        "/usr/bin/curl",
        &[
            "-s",
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            fmt,
            &format!("http://{a}/data?size=100k"),
        ],
    )
    .unwrap();
    assert_eq!(out, "200 102400 2");
    let out = run(
        "/usr/bin/curl",
        &[
            "-s",
            "--http2",
            "-w",
            "\n%{http_version}",
            &format!("http://{a}/info"),
        ],
    )
    .unwrap();
    assert!(
        out.contains("\"protocol\":\"HTTP/2\"") && out.ends_with("\n2"),
        "{out}"
    );
    let cert = s.cert_path().unwrap().to_str().unwrap().to_string();
    let url = format!(
        "https://localhost:{}/data?size=100k",
        s.tls_addr().unwrap().port()
    );
    let out = run(
        "/usr/bin/curl",
        &[
            "-s",
            "--http2",
            "--cacert",
            &cert,
            "-o",
            "/dev/null",
            "-w",
            fmt,
            &url,
        ],
    )
    .unwrap();
    assert_eq!(out, "200 102400 2");
    let out = run(
        "/usr/bin/curl",
        &["-s", "-k", "--http2", "-o", "/dev/null", "-w", fmt, &url],
    )
    .unwrap();
    assert_eq!(out, "200 102400 2");
}

#[test]
fn h2load_and_nghttp_clients() {
    let (s, _dir) = start_tls(|c| c.threads = 2);
    let a = s.addr().unwrap();
    let t = s.tls_addr().unwrap();
    let Some(out) = run(
        "/usr/bin/h2load",
        &[
            "-n",
            "2000",
            "-c",
            "4",
            "-m",
            "10",
            &format!("http://{a}/data?size=653"),
        ],
    ) else {
        return;
    };
    assert!(out.contains("2000 succeeded"), "{out}");
    let out = run(
        "/usr/bin/h2load",
        &[
            "-n",
            "2000",
            "-c",
            "4",
            "-m",
            "10",
            &format!("https://127.0.0.1:{}/json", t.port()),
        ],
    )
    .unwrap();
    assert!(
        out.contains("2000 succeeded") && out.contains("h2"),
        "{out}"
    );
    let out = run(
        "/usr/bin/h2load",
        &[
            "--h1",
            "-n",
            "2000",
            "-c",
            "4",
            "-m",
            "4",
            &format!("http://{a}/ping"),
        ],
    )
    .unwrap();
    assert!(out.contains("2000 succeeded"), "{out}");
    if let Some(out) = run(
        "/usr/bin/nghttp",
        &["-ans", &format!("http://{a}/page?n=30")],
    ) {
        // -a: fetch the linked assets too; each one prints a line with its status.
        assert!(!out.contains("error"), "{out}");
        assert!(out.matches("/asset/").count() >= 30, "{out}");
    }
}

#[tokio::test]
async fn static_files_over_h2_respect_flow_control_and_root() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("www");
    std::fs::create_dir_all(&root).unwrap();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(base.path().join("secret.txt"), b"TOP SECRET").unwrap();
    let r2 = root.clone();
    let s = start(move |c| c.root = Some(r2));
    let c = h2c(s.addr().unwrap()).await;
    let r = get(&c, "/big.bin").await;
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert!(r.body == big, "file body differs");
    for attack in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/a/../../secret.txt",
    ] {
        let r = get(&c, attack).await;
        assert!(
            matches!(r.status.as_u16(), 400 | 403 | 404),
            "{attack}: {}",
            r.status
        );
        assert!(!String::from_utf8_lossy(&r.body).contains("SECRET"));
    }
}
