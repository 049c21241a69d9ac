//! A client shell whose server's UDP port is closed: the kernel's ICMP port unreachable
//! comes back on the connected socket as ECONNREFUSED, and the shell ends the connection at
//! once (RFC 9000 §14.2.1) instead of letting QUIC wait out its idle timeout.

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2lab_quic::quinn_proto::crypto::rustls::QuicClientConfig;

use h2lab_quic::quinn_proto::{ClientConfig, Connection};
use h2lab_quic::{ConnApp, Shell, UdpIo};
use mio::{Events, Interest, Poll, Token};

/// Accepts any certificate: the handshake never gets that far here.
#[derive(Debug)]
struct AnyCert;

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
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        vec![
            rustls::SignatureScheme::ECDSA_NISTP256_SHA256,
            rustls::SignatureScheme::ED25519,
            rustls::SignatureScheme::RSA_PSS_SHA256,
        ]
    }
}

fn client_config() -> ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls).unwrap()))
}

/// An application that does nothing but drain its connection's events.
struct Idle;

impl ConnApp for Idle {
    type Ctx = ();
    fn drive(&mut self, conn: &mut Connection, _: &mut (), _: Instant) {
        while conn.poll().is_some() {}
    }
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn on_shutdown(&mut self, _: &mut Connection, _: Instant) {}
}

#[test]
fn a_closed_server_port_ends_the_client_connection_at_once() {
    // A port nobody listens on: bound, then released.
    let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server = gone.local_addr().unwrap();
    drop(gone);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(server).unwrap();
    let mut shell: Shell<Idle> = Shell::new(UdpIo::new(sock, false).unwrap(), None, 1);
    let mut poll = Poll::new().unwrap();
    poll.registry()
        .register(shell.io().socket(), Token(0), Interest::READABLE)
        .unwrap();
    let ch = shell
        .connect(client_config(), server, "localhost", Instant::now(), Idle)
        .unwrap();
    // The Initial goes out; the ICMP answer raises an error event on the socket.
    shell.drive(Instant::now(), &mut ());
    let mut events = Events::with_capacity(8);
    // Waits for socket events (or QUIC's timers, which resend the Initial) until the
    // connection is closed; without the ICMP it would close only at the idle timeout, and
    // `icmp_refused` below would say so.
    while !shell.get_mut(ch).is_none_or(|(c, _)| c.is_closed()) {
        let now = Instant::now();
        let wait = shell
            .next_deadline()
            .map(|t| t.saturating_duration_since(now));
        poll.poll(&mut events, wait.or(Some(Duration::from_secs(1))))
            .unwrap();
        let now = Instant::now();
        shell.read(now, &mut (), |_| Idle).unwrap();
        shell.drive(now, &mut ());
    }
    assert_eq!(shell.stats.icmp_refused, 1, "closed by the ICMP error");
}
