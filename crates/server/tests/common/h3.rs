//! Shared pieces of the HTTP/3 server tests (`h3.rs`, `h3_qpack.rs`): a TLS + HTTP/3 server,
//! a `quinn` client endpoint trusting its certificate, a current-thread runtime, the `/data`
//! filler and a static-table GET request frame.

use std::sync::Arc;

use h2lab_server::{RunningServer, ServerConfig};

/// A TLS + HTTP/3 server on 127.0.0.1 (port 0), no cleartext listener, `f` applied last.
pub fn start_h3(f: impl FnOnce(&mut ServerConfig)) -> (RunningServer, tempfile::TempDir) {
    super::start_tls(|c| {
        c.listen = None;
        c.h3 = true;
        f(c)
    })
}

/// A `quinn` client endpoint on 127.0.0.1:0 that trusts `server`'s certificate (ALPN `h3`,
/// 16 peer-initiated unidirectional streams allowed).
pub fn quinn_endpoint(server: &RunningServer) -> quinn::Endpoint {
    let tls = super::tls_client_config(server.cert_path().unwrap(), &[b"h3"]);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from((*tls).clone()).unwrap();
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut tc = quinn::TransportConfig::default();
    tc.max_concurrent_uni_streams(16u32.into());
    cfg.transport_config(Arc::new(tc));
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(cfg);
    ep
}

/// A current-thread tokio runtime with I/O and timers.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The `/data` filler pattern.
pub fn filler(n: usize) -> Vec<u8> {
    const LINE: &[u8] = b"h2lab 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRS\n";
    LINE.iter().copied().cycle().take(n).collect()
}

/// A GET for `path` as a HEADERS frame (static table and literals only).
pub fn get_frame(path: &str) -> Vec<u8> {
    let mut e = h2lab_wire::qpack::Encoder::new(h2lab_wire::qpack::EncoderConfig {
        use_dynamic_table: false,
        max_table_capacity: 0,
    });
    let (mut section, mut ins) = (Vec::new(), Vec::new());
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", path.as_bytes()),
    ];
    e.encode(0, fields, &mut section, &mut ins);
    assert!(ins.is_empty());
    let mut f = Vec::new();
    h2lab_wire::h3::request::write_headers(&section, &mut f);
    f
}
