//! A self-signed certificate for `localhost` / `127.0.0.1`, made with the `openssl` CLI.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::files::{set_mode, TempDir};
use crate::{which, Error};

/// A PEM certificate and its PEM private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPair {
    /// The certificate (PEM): self-signed, CN=localhost, SAN DNS:localhost and IP:127.0.0.1,
    /// `basicConstraints=critical,CA:FALSE` (Apache warns about CA certificates as server certs).
    pub cert_pem: Vec<u8>,
    /// The RSA-2048 private key (PEM, unencrypted).
    pub key_pem: Vec<u8>,
}

/// Paths of a [`CertPair`] written to disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFiles {
    /// The certificate file (`cert.pem`).
    pub cert: PathBuf,
    /// The key file (`key.pem`).
    pub key: PathBuf,
}

/// The process-wide self-signed certificate; generated on first use (one `openssl` run per test
/// binary, an RSA key takes a noticeable fraction of a second).
pub fn self_signed() -> Result<&'static CertPair, Error> {
    static CERT: OnceLock<CertPair> = OnceLock::new();
    if let Some(c) = CERT.get() {
        return Ok(c);
    }
    let made = generate()?;
    Ok(CERT.get_or_init(|| made))
}

fn generate() -> Result<CertPair, Error> {
    let openssl = which("openssl").ok_or(Error::MissingBinary("openssl"))?;
    let dir = TempDir::new("cert")?;
    let key = dir.path().join("key.pem");
    let cert = dir.path().join("cert.pem");
    let mut cmd = Command::new(openssl);
    cmd.args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-days", "3650", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"]);
    let out = cmd.output().map_err(|e| Error::io("run openssl req", e))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: format!("{cmd:?}"),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let read =
        |p: &Path| std::fs::read(p).map_err(|e| Error::io(format!("read {}", p.display()), e));
    Ok(CertPair {
        cert_pem: read(&cert)?,
        key_pem: read(&key)?,
    })
}

impl CertPair {
    /// Writes `cert.pem` and `key.pem` into `dir` (mode 0644: Apache/nginx read them as root
    /// before dropping privileges, but tests may read them as any user).
    pub fn write_to(&self, dir: &Path) -> Result<CertFiles, Error> {
        let files = CertFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        for (path, data) in [(&files.cert, &self.cert_pem), (&files.key, &self.key_pem)] {
            std::fs::write(path, data)
                .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
            set_mode(path, 0o644)?;
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cert_has_san_and_is_not_a_ca() {
        if which("openssl").is_none() {
            return;
        }
        let pair = self_signed().unwrap();
        let dir = TempDir::new("cert-test").unwrap();
        let files = pair.write_to(dir.path()).unwrap();
        let out = Command::new("openssl")
            .args(["x509", "-noout", "-text", "-in"])
            .arg(&files.cert)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("DNS:localhost"), "{text}");
        assert!(text.contains("IP Address:127.0.0.1"), "{text}");
        assert!(text.contains("CA:FALSE"), "{text}");
        // Same pair on the second call (generated once per process).
        assert_eq!(self_signed().unwrap(), pair);
    }
}
