//! A small HTTP/3 load client for `bench/h3-vs-caddy.sh` (h2load 1.52 on this machine has no
//! `--h3` and oha was built without HTTP/3): `-c` QUIC connections with `-m` request streams
//! each, GET the URL for `-d` seconds with the `h3` + `quinn` stack (the same independent
//! client for every server measured), then print `requests=N bytes=B errors=E seconds=S`.
//! Certificates are not verified (benchmark on loopback only).
//!
//! `cargo run --release -p h2lab-server --example h3load -- -c 10 -m 10 -d 5 https://127.0.0.1:8443/data`

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};

#[derive(Debug)]
struct AnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &rustls::pki_types::CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &rustls::pki_types::CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

struct Args {
    conns: usize,
    streams: usize,
    secs: u64,
    url: String,
}

fn parse() -> Args {
    let mut a = Args {
        conns: 10,
        streams: 10,
        secs: 5,
        url: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut num = || it.next().and_then(|v| v.parse().ok()).expect("a number");
        match x.as_str() {
            "-c" => a.conns = num(),
            "-m" => a.streams = num(),
            "-d" => a.secs = num() as u64,
            _ => a.url = x,
        }
    }
    assert!(
        a.url.starts_with("https://"),
        "usage: h3load [-c N] [-m N] [-d SECS] https://IP:PORT/path"
    );
    a
}

fn main() {
    let args = parse();
    let rest = &args.url["https://".len()..];
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr: SocketAddr = authority.parse().expect("https://IP:PORT/...");
    let path = if path.is_empty() {
        "/".to_string()
    } else {
        path.to_string()
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reqs = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let elapsed = rt.block_on(async {
        let mut ep = quinn::Endpoint::client("0.0.0.0:0".parse().unwrap()).unwrap();
        ep.set_default_client_config(cfg);
        let mut sends = Vec::new();
        for _ in 0..args.conns {
            let conn = ep
                .connect(addr, "localhost")
                .unwrap()
                .await
                .expect("QUIC handshake");
            let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
                .await
                .unwrap();
            tokio::spawn(async move {
                let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
            });
            sends.push(send);
        }
        let start = Instant::now();
        let end = start + Duration::from_secs(args.secs);
        let mut tasks = Vec::new();
        for send in &sends {
            for _ in 0..args.streams {
                let mut send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes> = send.clone();
                let (reqs, bytes, errors) = (reqs.clone(), bytes.clone(), errors.clone());
                let uri = format!("https://{authority}{path}");
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < end {
                        let req = http::Request::get(uri.as_str()).body(()).unwrap();
                        let ok = async {
                            let mut s = send.send_request(req).await.ok()?;
                            s.finish().await.ok()?;
                            let resp = s.recv_response().await.ok()?;
                            let mut n = 0u64;
                            while let Some(mut c) = s.recv_data().await.ok()? {
                                n += c.remaining() as u64;
                                c.advance(c.remaining());
                            }
                            (resp.status() == 200).then_some(n)
                        }
                        .await;
                        match ok {
                            Some(n) => {
                                reqs.fetch_add(1, Ordering::Relaxed);
                                bytes.fetch_add(n, Ordering::Relaxed);
                            }
                            None => {
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }));
            }
        }
        for t in tasks {
            let _ = t.await;
        }
        start.elapsed()
    });
    println!(
        "requests={} bytes={} errors={} seconds={:.3}",
        reqs.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
        elapsed.as_secs_f64()
    );
}
