//! The transport table (like wrk's `sock` struct): TCP, TLS over TCP, UNIX
//! sockets and TLS over UNIX sockets, all non-blocking on mio.
//!
//! A `Transport` turns the socket into two plain operations the worker
//! drives — `read_with` (plaintext in, one read syscall per burst) and
//! `write` (plaintext out) — plus the connect/handshake steps. All sockets
//! are registered edge-triggered for both readable and writable, so unwritten
//! bytes are kept for the next writable event.
//!
//! Certificate verification is OFF by default, like h2load: [`AcceptAnyCert`]
//! accepts any certificate chain and any name, but still checks the handshake
//! signatures so the TLS protocol itself is run correctly (the CPU cost of
//! the handshake is the same as with OpenSSL's `SSL_VERIFY_NONE`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring as ring_provider, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CipherSuite, ClientConfig, ClientConnection, DigitallySignedStruct, NamedGroup};

use crate::result::TlsInfo;

/// Where connections go.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// Resolved TCP addresses, tried in order (h2load walks getaddrinfo's list).
    Tcp(Vec<SocketAddr>),
    /// A UNIX domain socket path (`-B unix:/path`).
    Unix(PathBuf),
}

impl Endpoint {
    /// Number of alternative addresses.
    pub(crate) fn len(&self) -> usize {
        match self {
            Endpoint::Tcp(v) => v.len(),
            Endpoint::Unix(_) => 1,
        }
    }

    /// A printable form of address `idx`.
    pub(crate) fn describe(&self, idx: usize) -> String {
        match self {
            Endpoint::Tcp(v) => v.get(idx).map_or_else(|| "?".to_owned(), |a| a.to_string()),
            Endpoint::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

/// A connected (or connecting) stream socket.
#[derive(Debug)]
pub(crate) enum Socket {
    /// TCP.
    Tcp(TcpStream),
    /// UNIX domain stream socket.
    Unix(UnixStream),
}

impl Socket {
    /// Starts a non-blocking connect to address `idx` of `ep`.
    pub(crate) fn connect(ep: &Endpoint, idx: usize) -> io::Result<Socket> {
        match ep {
            Endpoint::Tcp(addrs) => {
                let addr = addrs
                    .get(idx)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
                let s = TcpStream::connect(*addr)?;
                // Requests are small and latency-sensitive; batching is done by us.
                let _ = s.set_nodelay(true);
                Ok(Socket::Tcp(s))
            }
            Endpoint::Unix(path) => Ok(Socket::Unix(connect_unix(path)?)),
        }
    }

    /// After a writable event during connect: `Ok(true)` once connected,
    /// `Ok(false)` while still in progress, `Err` if the connect failed.
    pub(crate) fn check_connected(&self) -> io::Result<bool> {
        // mio docs: on a writable event call take_error(), then peer_addr();
        // NotConnected means the connect is still in progress.
        match self {
            Socket::Tcp(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Socket::Unix(s) => {
                if let Some(e) = s.take_error()? {
                    return Err(e);
                }
                match s.peer_addr() {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Half-closes the write side (like h2load's `shutdown(fd, SHUT_WR)`).
    pub(crate) fn shutdown_write(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Socket::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        };
    }
}

fn connect_unix(path: &Path) -> io::Result<UnixStream> {
    UnixStream::connect(path)
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write_vectored(bufs),
            Socket::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Source for Socket {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.register(r, t, i),
            Socket::Unix(s) => s.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.reregister(r, t, i),
            Socket::Unix(s) => s.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.deregister(r),
            Socket::Unix(s) => s.deregister(r),
        }
    }
}

/// How [`Transport::read_with`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    /// Nothing more to read for now.
    Drained,
    /// The peer closed the connection (TCP EOF or TLS close_notify).
    Eof,
    /// The callback asked to stop.
    Stopped,
}

/// Hands rustls' decrypted bytes to `on_data`. `Some` ends the read.
fn drain_plaintext(
    tls: &mut ClientConnection,
    plain: &mut [u8],
    on_data: &mut impl FnMut(&[u8]) -> bool,
) -> io::Result<Option<ReadEnd>> {
    loop {
        match tls.reader().read(plain) {
            Ok(0) => return Ok(Some(ReadEnd::Eof)), // close_notify
            Ok(n) => {
                if !on_data(plain.get(..n).unwrap_or_default()) {
                    return Ok(Some(ReadEnd::Stopped));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            // Peer closed the TCP connection without close_notify: many servers do.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Some(ReadEnd::Eof)),
            Err(e) => return Err(e),
        }
    }
}

/// Result of driving the TLS handshake.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// Waiting for the socket.
    InProgress,
    /// Done: application data can flow.
    Done,
}

/// A socket with an optional TLS layer on top.
#[derive(Debug)]
pub(crate) struct Transport {
    /// The socket (registered with the worker's poll).
    pub(crate) socket: Socket,
    tls: Option<Box<ClientConnection>>,
}

impl Transport {
    /// A cleartext transport.
    pub(crate) fn plain(socket: Socket) -> Transport {
        Transport { socket, tls: None }
    }

    /// A TLS transport; the handshake starts with [`Transport::handshake`].
    pub(crate) fn tls(
        socket: Socket,
        config: &Arc<ClientConfig>,
        server_name: &ServerName<'static>,
    ) -> Result<Transport, String> {
        let conn = ClientConnection::new(Arc::clone(config), server_name.clone())
            .map_err(|e| e.to_string())?;
        Ok(Transport {
            socket,
            tls: Some(Box::new(conn)),
        })
    }

    /// Whether this transport runs TLS.
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Drives the TLS handshake as far as the socket allows. `Err` carries the
    /// reason (alert, certificate problem, EOF during handshake).
    pub(crate) fn handshake(&mut self) -> Result<Handshake, String> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return Ok(Handshake::Done);
        };
        loop {
            while tls.wants_write() {
                match tls.write_tls(&mut self.socket) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(format!("write during handshake: {e}")),
                }
            }
            if !tls.is_handshaking() {
                return Ok(Handshake::Done);
            }
            if tls.wants_write() {
                // Socket is full; wait for writable.
                return Ok(Handshake::InProgress);
            }
            match tls.read_tls(&mut self.socket) {
                Ok(0) => return Err("connection closed during TLS handshake".to_owned()),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Send the alert we owe the peer, then report.
                        let _ = tls.write_tls(&mut self.socket);
                        return Err(e.to_string());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(Handshake::InProgress)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read during handshake: {e}")),
            }
        }
    }

    /// Reads everything available and hands the plaintext to `on_data`
    /// (which returns `false` to stop early).
    ///
    /// One `read` syscall per burst: cleartext is read straight into `plain`;
    /// TLS records are read into `raw` (up to its size, instead of rustls'
    /// 4 KiB reads) and fed to rustls from memory, and the decrypted bytes go
    /// through `plain`. A short read means the socket is drained (the next
    /// arrival raises a new edge), unless `read_closed` says the peer shut
    /// down, in which case reading continues until EOF is seen.
    pub(crate) fn read_with(
        &mut self,
        plain: &mut [u8],
        raw: &mut [u8],
        read_closed: bool,
        mut on_data: impl FnMut(&[u8]) -> bool,
    ) -> io::Result<ReadEnd> {
        let Some(tls) = self.tls.as_deref_mut() else {
            loop {
                match self.socket.read(plain) {
                    Ok(0) => return Ok(ReadEnd::Eof),
                    Ok(n) => {
                        if !on_data(plain.get(..n).unwrap_or_default()) {
                            return Ok(ReadEnd::Stopped);
                        }
                        if n < plain.len() && !read_closed {
                            return Ok(ReadEnd::Drained);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(ReadEnd::Drained),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        };
        // Plaintext already decrypted (e.g. data that came with the handshake).
        if let Some(end) = drain_plaintext(tls, plain, &mut on_data)? {
            return Ok(end);
        }
        loop {
            let n = match self.socket.read(raw) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(ReadEnd::Drained),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let mut rest = raw.get(..n).unwrap_or_default();
            loop {
                // Reading from a slice advances it; with n == 0 this tells
                // rustls about the TCP EOF.
                let used = tls.read_tls(&mut rest)?;
                if let Err(e) = tls.process_new_packets() {
                    let _ = tls.write_tls(&mut self.socket);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
                if let Some(end) = drain_plaintext(tls, plain, &mut on_data)? {
                    return Ok(end);
                }
                if rest.is_empty() || used == 0 {
                    break;
                }
            }
            if n == 0 {
                // TCP EOF without close_notify (drain_plaintext saw no more data).
                return Ok(ReadEnd::Eof);
            }
            if n < raw.len() && !read_closed {
                return Ok(ReadEnd::Drained);
            }
        }
    }

    /// Writes plaintext. For TLS the bytes are encrypted into rustls (as many
    /// as its buffer takes) and then flushed to the socket; the returned
    /// count is what was accepted. `Err(WouldBlock)` when nothing was accepted.
    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return loop {
                match self.socket.write(data) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
        };
        let n = tls.writer().write(data)?;
        Self::flush_tls(tls, &mut self.socket)?;
        if n == 0 && !data.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Flushes TLS records already produced (after a writable event).
    /// Returns `true` when nothing is left pending inside the TLS layer.
    pub(crate) fn flush(&mut self) -> io::Result<bool> {
        match self.tls.as_deref_mut() {
            None => Ok(true),
            Some(tls) => {
                Self::flush_tls(tls, &mut self.socket)?;
                Ok(!tls.wants_write())
            }
        }
    }

    fn flush_tls(tls: &mut ClientConnection, socket: &mut Socket) -> io::Result<()> {
        while tls.wants_write() {
            match tls.write_tls(socket) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// TLS records are waiting to be written.
    pub(crate) fn wants_write(&self) -> bool {
        self.tls.as_deref().is_some_and(|t| t.wants_write())
    }

    /// The ALPN protocol the server selected.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        self.tls.as_deref().and_then(|t| t.alpn_protocol())
    }

    /// TLS details in h2load's wording (only after the handshake).
    pub(crate) fn tls_info(&self) -> Option<TlsInfo> {
        let tls = self.tls.as_deref()?;
        let protocol = match tls.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_owned(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_owned(),
            v => format!("{v:?}"),
        };
        let cipher = tls
            .negotiated_cipher_suite()
            .map(|s| openssl_cipher_name(s.suite()))
            .unwrap_or_default();
        let server_temp_key = tls
            .negotiated_key_exchange_group()
            .map(|g| openssl_temp_key(g.name()));
        Some(TlsInfo {
            protocol,
            cipher,
            server_temp_key,
            alpn: tls
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        })
    }

    /// Whether the TLS handshake resumed a session.
    pub(crate) fn resumed(&self) -> bool {
        self.tls.as_deref().and_then(|t| t.handshake_kind()) == Some(rustls::HandshakeKind::Resumed)
    }

    /// Sends close_notify (best effort) and half-closes the socket.
    pub(crate) fn close(&mut self) {
        if let Some(tls) = self.tls.as_deref_mut() {
            tls.send_close_notify();
            let _ = Self::flush_tls(tls, &mut self.socket);
        }
        self.socket.shutdown_write();
    }
}

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

/// OpenSSL's name for a cipher suite (what h2load prints after `Cipher:`).
pub fn openssl_cipher_name(suite: CipherSuite) -> String {
    let s = match suite {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
            "ECDHE-ECDSA-CHACHA20-POLY1305"
        }
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => return format!("{other:?}"),
    };
    s.to_owned()
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
) -> Result<ClientConfig, String> {
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
        .map_err(|e| e.to_string())?;
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
    cfg.resumption = if opts.resume {
        rustls::client::Resumption::in_memory_sessions(256)
    } else {
        rustls::client::Resumption::disabled()
    };
    Ok(cfg)
}

fn system_roots() -> Result<rustls::RootCertStore, String> {
    use rustls::pki_types::pem::PemObject;
    let path = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
    let mut roots = rustls::RootCertStore::empty();
    let iter = CertificateDer::pem_file_iter(&path)
        .map_err(|e| format!("cannot read CA bundle {}: {e}", path.display()))?;
    for cert in iter {
        let cert = cert.map_err(|e| format!("bad certificate in {}: {e}", path.display()))?;
        // Skip individual certificates webpki cannot use instead of failing the run.
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(format!("no usable CA certificates in {}", path.display()));
    }
    Ok(roots)
}

/// The TLS server name for SNI. IP addresses are allowed (rustls then sends
/// no SNI, as h2load does for numeric hosts).
pub(crate) fn server_name(name: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(name.to_owned())
        .map_err(|e| format!("invalid TLS server name {name:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
