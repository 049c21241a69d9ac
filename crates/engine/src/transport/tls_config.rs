//! TLS client configuration: rustls with h2load's cipher order, the ALPN list,
//! certificate verification off (like h2load) or against the system CA bundle,
//! and OpenSSL's names for what was negotiated.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring as ring_provider, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CipherSuite, ClientConfig, DigitallySignedStruct, NamedGroup};

use crate::error::TransportError;

/// Position of a suite in h2load's default preference order.
fn cipher_rank(suite: CipherSuite) -> u8 {
    match suite {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => 0,
        CipherSuite::TLS13_AES_256_GCM_SHA384 => 1,
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => 2,
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => 3,
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 4,
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => 5,
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 6,
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => 7,
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => 8,
        _ => 9,
    }
}

/// h2load's `Server Temp Key:` text for a key exchange group (OpenSSL 3 naming).
pub fn openssl_temp_key(group: NamedGroup) -> String {
    let s = match group {
        NamedGroup::X25519 => "X25519 253 bits",
        NamedGroup::X448 => "X448 448 bits",
        NamedGroup::secp256r1 => "ECDH prime256v1 256 bits",
        NamedGroup::secp384r1 => "ECDH secp384r1 384 bits",
        NamedGroup::secp521r1 => "ECDH secp521r1 521 bits",
        NamedGroup::FFDHE2048 => "DH 2048 bits",
        NamedGroup::FFDHE3072 => "DH 3072 bits",
        NamedGroup::FFDHE4096 => "DH 4096 bits",
        other => return format!("{other:?}"),
    };
    s.to_owned()
}

/// Accepts every server certificate (h2load does not verify certificates),
/// while still verifying handshake signatures with the provider's algorithms.
#[derive(Debug)]
pub struct AcceptAnyCert {
    provider: Arc<CryptoProvider>,
}

impl AcceptAnyCert {
    /// A verifier using `provider`'s signature algorithms.
    pub fn new(provider: Arc<CryptoProvider>) -> AcceptAnyCert {
        AcceptAnyCert { provider }
    }
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Builds the rustls client configuration: ring provider, TLS 1.2 + 1.3,
/// the ALPN list, the suites and groups of `opts`, no session resumption
/// unless `opts.resume` (like h2load, each connection does a full
/// handshake), and either no certificate verification (`insecure`)
/// or verification against the system CA bundle (`SSL_CERT_FILE` or
/// `/etc/ssl/certs/ca-certificates.crt`).
pub(crate) fn client_config(
    alpn: &[String],
    insecure: bool,
    opts: &crate::tls_opts::TlsOptions,
) -> Result<ClientConfig, TransportError> {
    let mut provider = ring_provider::default_provider();
    // h2load's preference order (nghttp2's DEFAULT_CIPHER_LIST and TLS 1.3 list):
    // AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305; ECDSA before RSA.
    provider
        .cipher_suites
        .sort_by_key(|s| cipher_rank(s.suite()));
    crate::tls_opts::apply(&mut provider, opts);
    let provider = Arc::new(provider);
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(TransportError::Setup)?;
    let mut cfg = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert::new(provider)))
            .with_no_client_auth()
    } else {
        let roots = system_roots()?;
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    if opts.resumes() {
        crate::resume::SessionStore::new().apply(&mut cfg, opts.zero_rtt);
    } else {
        cfg.resumption = rustls::client::Resumption::disabled();
    }
    Ok(cfg)
}

fn system_roots() -> Result<rustls::RootCertStore, TransportError> {
    use rustls::pki_types::pem::PemObject;
    let path = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
    let mut roots = rustls::RootCertStore::empty();
    let iter = match CertificateDer::pem_file_iter(&path) {
        Ok(i) => i,
        Err(source) => return Err(TransportError::CaBundle { path, source }),
    };
    for cert in iter {
        let cert = match cert {
            Ok(c) => c,
            Err(source) => return Err(TransportError::BadCertificate { path, source }),
        };
        // Skip individual certificates webpki cannot use instead of failing the run.
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(TransportError::NoCaCertificates { path });
    }
    Ok(roots)
}

/// The TLS server name for SNI. IP addresses are allowed (rustls then sends
/// no SNI, as h2load does for numeric hosts).
pub(crate) fn server_name(name: &str) -> Result<ServerName<'static>, TransportError> {
    ServerName::try_from(name.to_owned()).map_err(|source| TransportError::InvalidServerName {
        name: name.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls_opts::openssl_cipher_name;

    #[test]
    fn openssl_names() {
        assert_eq!(
            openssl_cipher_name(CipherSuite::TLS13_AES_128_GCM_SHA256),
            "TLS_AES_128_GCM_SHA256"
        );
        assert_eq!(
            openssl_cipher_name(CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
            "ECDHE-RSA-AES256-GCM-SHA384"
        );
        assert_eq!(openssl_temp_key(NamedGroup::X25519), "X25519 253 bits");
        assert_eq!(
            openssl_temp_key(NamedGroup::secp256r1),
            "ECDH prime256v1 256 bits"
        );
    }

    #[test]
    fn builds_insecure_config() {
        let cfg =
            client_config(&["h2".into(), "http/1.1".into()], true, &Default::default()).unwrap();
        assert_eq!(
            cfg.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("example.com").is_ok());
        assert!(server_name("bad name").is_err());
    }
}
