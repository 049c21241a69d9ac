//! Minimal stand-alone runner until `h2lab serve` exists:
//! `cargo run --release -p h2lab-server --example serve -- [ADDR] [--tls ADDR] [--threads N] [--root DIR]`

use std::net::SocketAddr;

fn main() {
    let mut config = h2lab_server::ServerConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("missing value");
        match a.as_str() {
            "--tls" => config.tls_listen = Some(val().parse().expect("address")),
            "--threads" => config.threads = val().parse().expect("number"),
            "--root" => config.root = Some(val().into()),
            "--no-keep-alive" => config.keep_alive = false,
            "--max-concurrent-streams" => {
                config.max_concurrent_streams = val().parse().expect("number")
            }
            addr => config.listen = Some(addr.parse::<SocketAddr>().expect("address")),
        }
    }
    let server = h2lab_server::spawn(config).unwrap_or_else(|e| {
        eprintln!("h2lab serve: {e}");
        std::process::exit(1)
    });
    if let Some(a) = server.addr() {
        eprintln!("h2lab serve: HTTP/1.1 and h2c on http://{a}/");
    }
    if let Some(a) = server.tls_addr() {
        eprintln!("h2lab serve: HTTP/2 and HTTP/1.1 over TLS on https://{a}/");
    }
    if let Err(e) = server.join() {
        eprintln!("h2lab serve: {e}");
        std::process::exit(1);
    }
}
