//! TLS setup: load a certificate/key pair, or generate (and persist) a self-signed one for
//! localhost, and build the rustls server configuration with ALPN.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::ServerConfig;
use crate::ServerError;

/// Names the generated certificate is valid for.
pub const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Where a certificate and key live on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPaths {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// Whether this call generated them (false: given by the user or reused).
    pub generated: bool,
}

/// The default directory for a generated certificate: `$TMPDIR/h2lab` for root,
/// `$TMPDIR/h2lab-UID` for any other user (a directory another user created in a shared
/// `/tmp` is not writable, and their private key is not ours to use). The user is the one
/// outside any user namespace this process entered (`h2lab link --packet` without root runs
/// as the namespace's root, which must not mean the host's root's directory).
pub fn default_cert_dir() -> PathBuf {
    match host_uid() {
        0 => std::env::temp_dir().join("h2lab"),
        uid => std::env::temp_dir().join(format!("h2lab-{uid}")),
    }
}

/// The real user id as the initial user namespace sees it: `/proc/self/uid_map` maps the
/// namespace's ids to the parent's (`0 0 4294967295` outside any user namespace).
fn host_uid() -> u32 {
    let uid = rustix::process::getuid().as_raw();
    let map = fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    for line in map.lines() {
        let f: Vec<u32> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        if let [inside, outside, count] = f[..] {
            if uid >= inside && uid - inside < count {
                return outside + (uid - inside);
            }
        }
    }
    uid
}

/// Returns the configured certificate, or a self-signed one in `cert_dir`
/// (`cert.pem`/`key.pem`), generated if the pair is not there yet (and reused otherwise, so
/// a client that trusted it once keeps working). Prints the location unless `quiet`.
pub fn ensure_certificate(config: &ServerConfig) -> Result<CertPaths, ServerError> {
    // Servers started concurrently in one process (tests) must not race on the files.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let (Some(cert), Some(key)) = (&config.cert, &config.key) {
        return Ok(CertPaths {
            cert: cert.clone(),
            key: key.clone(),
            generated: false,
        });
    }
    let dir = config.cert_dir.clone().unwrap_or_else(default_cert_dir);
    let paths = CertPaths {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
        generated: false,
    };
    if load_pair(&paths.cert, &paths.key).is_ok() {
        if !config.quiet {
            eprintln!(
                "h2lab: using the self-signed certificate {} (key {}); trust it with e.g. `curl --cacert {}`",
                paths.cert.display(),
                paths.key.display(),
                paths.cert.display()
            );
        }
        return Ok(paths);
    }
    let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|s| s.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names)
        .map_err(|e| ServerError::Tls(format!("generating a certificate: {e}")))?;
    let io = |what: &str, p: &Path, e: std::io::Error| {
        ServerError::Tls(format!("{what} {}: {e}", p.display()))
    };
    fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
    // Write both to temporary names, then rename: a concurrent reader sees either the old
    // pair or the new one, never a half-written file.
    let tag = format!("{}.{}", std::process::id(), unique());
    let tmp_cert = dir.join(format!(".cert.pem.{tag}"));
    let tmp_key = dir.join(format!(".key.pem.{tag}"));
    write_file(&tmp_cert, ck.cert.pem().as_bytes(), false)
        .map_err(|e| io("writing", &tmp_cert, e))?;
    write_file(&tmp_key, ck.signing_key.serialize_pem().as_bytes(), true)
        .map_err(|e| io("writing", &tmp_key, e))?;
    fs::rename(&tmp_key, &paths.key).map_err(|e| io("renaming", &paths.key, e))?;
    fs::rename(&tmp_cert, &paths.cert).map_err(|e| io("renaming", &paths.cert, e))?;
    if !config.quiet {
        eprintln!(
            "h2lab: generated a self-signed certificate for localhost, 127.0.0.1, ::1: {} (key {}); trust it with e.g. `curl --cacert {}`",
            paths.cert.display(),
            paths.key.display(),
            paths.cert.display()
        );
    }
    Ok(CertPaths {
        generated: true,
        ..paths
    })
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn write_file(path: &Path, data: &[u8], private: bool) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

type Pair = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn load_pair(cert: &Path, key: &Path) -> Result<Pair, ServerError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| ServerError::Tls(format!("reading {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(ServerError::Tls(format!(
            "{} has no certificate",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| ServerError::Tls(format!("reading {}: {e}", key.display())))?;
    Ok((certs, key))
}

/// Builds the rustls configuration (ring provider, TLS 1.2 and 1.3, the configured ALPN).
pub fn server_config(
    paths: &CertPaths,
    config: &ServerConfig,
) -> Result<Arc<rustls::ServerConfig>, ServerError> {
    let (certs, key) = load_pair(&paths.cert, &paths.key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(format!("certificate/key: {e}")))?;
    tls.alpn_protocols = config.alpn.clone();
    // Resumption is on as in most servers: rustls' defaults (stateful, session IDs for TLS
    // 1.2, two TLS 1.3 tickets per handshake). With `--0rtt`, early data is accepted on
    // resumed TLS 1.3 handshakes whose tickets are single-use (rustls allows early data only
    // with stateful tickets), and answers may go out before the client's Finished (half-RTT
    // data), which is what makes 0-RTT save a round trip.
    if config.zero_rtt {
        tls.session_storage = Arc::new(crate::early::SingleUseTickets::new(
            4096,
            Arc::clone(&config.early_stats),
        ));
        tls.max_early_data_size = crate::early::MAX_EARLY_DATA;
        tls.send_half_rtt_data = true;
    }
    Ok(Arc::new(tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_once_then_reuses_and_builds_a_config() {
        let dir = tempfile::tempdir().unwrap();
        let config = ServerConfig {
            cert_dir: Some(dir.path().join("certs")),
            quiet: true,
            ..ServerConfig::default()
        };
        let first = ensure_certificate(&config).unwrap();
        assert!(first.generated);
        let pem = fs::read_to_string(&first.cert).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let second = ensure_certificate(&config).unwrap();
        assert!(!second.generated);
        assert_eq!(first.cert, second.cert);
        assert_eq!(pem, fs::read_to_string(&second.cert).unwrap());
        let tls = server_config(&second, &config).unwrap();
        assert_eq!(
            tls.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&first.key).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the key is private");
    }

    #[test]
    fn garbage_files_are_replaced_and_bad_explicit_paths_fail() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cert.pem"), "nonsense").unwrap();
        fs::write(dir.path().join("key.pem"), "nonsense").unwrap();
        let config = ServerConfig {
            cert_dir: Some(dir.path().to_path_buf()),
            quiet: true,
            ..ServerConfig::default()
        };
        assert!(ensure_certificate(&config).unwrap().generated);
        let explicit = ServerConfig {
            cert: Some(dir.path().join("missing.pem")),
            key: Some(dir.path().join("key.pem")),
            ..ServerConfig::default()
        };
        let paths = ensure_certificate(&explicit).unwrap();
        assert!(matches!(
            server_config(&paths, &explicit),
            Err(ServerError::Tls(_))
        ));
    }
}
