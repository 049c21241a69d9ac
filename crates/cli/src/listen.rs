//! What `serve` and `proxy` share: the listening and certificate flags (one flattened clap
//! struct), the lines that say where to connect, and stopping on SIGINT/SIGTERM.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use h2lab_server::Shutdown;

use crate::signals::SignalPipe;
use crate::values::parse_addr;

/// The listening and certificate flags of `h2lab serve` and `h2lab proxy`.
#[derive(Debug, Clone, Args)]
pub struct ListenArgs {
    /// Cleartext address (HTTP/1.1 and h2c with prior knowledge) [default: 127.0.0.1:8080].
    #[arg(short = 'l', long = "listen", value_name = "ADDR", value_parser = parse_addr)]
    pub listen: Option<SocketAddr>,

    /// Also serve TLS (HTTP/2 and HTTP/1.1 by ALPN) on ADDR, next to the cleartext port.
    #[arg(long = "tls-listen", value_name = "ADDR", value_parser = parse_addr)]
    pub tls_listen: Option<SocketAddr>,

    /// Certificate chain (PEM) for TLS; without --cert/--key a self-signed certificate for
    /// localhost, 127.0.0.1 and ::1 is generated (or reused) in --cert-dir.
    #[arg(long = "cert", value_name = "PATH", requires = "key")]
    pub cert: Option<PathBuf>,

    /// Private key (PEM: PKCS#8, PKCS#1 or SEC1) for --cert.
    #[arg(long = "key", value_name = "PATH", requires = "cert")]
    pub key: Option<PathBuf>,

    /// Where the self-signed certificate is kept (cert.pem, key.pem) [default: $TMPDIR/h2lab, or h2lab-UID when not root].
    #[arg(long = "cert-dir", value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,
}

/// Prints where to connect: `{prefix} listening on http://ADDR/ (...)` for each address.
pub fn print_listening(prefix: &str, addr: Option<SocketAddr>, tls_addr: Option<SocketAddr>) {
    if let Some(a) = addr {
        println!("{prefix} listening on http://{a}/ (HTTP/1.1, h2c)");
    }
    if let Some(a) = tls_addr {
        println!("{prefix} listening on https://{a}/ (HTTP/2 and HTTP/1.1 over TLS)");
    }
}

/// Starts the thread that waits for `signals` and then triggers `stop`; the thread ends with
/// the process if the server stops by itself.
pub fn stop_on_signal(signals: SignalPipe, stop: Shutdown) -> io::Result<()> {
    std::thread::Builder::new()
        .name("h2lab-signals".into())
        .spawn(move || {
            signals.wait();
            stop.trigger();
        })
        .map(drop)
}
