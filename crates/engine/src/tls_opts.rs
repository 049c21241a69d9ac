//! TLS options of `h2lab bench`: h2load's `--ciphers`, `--tls13-ciphers` and `--groups` with
//! the names rustls knows (rustls' own names, e.g. `TLS13_AES_128_GCM_SHA256`, `secp256r1`, or
//! the OpenSSL names h2load takes, e.g. `TLS_AES_128_GCM_SHA256`, `ECDHE-RSA-AES128-GCM-SHA256`,
//! `P-256`), and session resumption within a run (`--tls-resume`).
//!
//! h2load's `--tls-session-file` (one session read from a file, set on every connection, the
//! newest written back) cannot be built on rustls 0.23: it neither exports nor imports client
//! sessions, and its TLS 1.3 tickets are single-use. `--tls-resume` keeps rustls' in-memory
//! session cache instead, so every connection made after a handshake completed (reconnects,
//! `-r`, stages) resumes a session of the same run.
//!
//! Lists are separated by `:` (OpenSSL's separator) or `,`. A name rustls does not support is
//! an error that lists the supported names.

use rustls::crypto::{ring as ring_provider, CryptoProvider, SupportedKxGroup};
use rustls::{CipherSuite, NamedGroup, SupportedCipherSuite};

/// A key exchange group (rustls' `NamedGroup`).
pub type Group = NamedGroup;

/// TLS choices of a run; the defaults are h2lab's (all of rustls' suites and groups in h2load's
/// preference order, no resumption).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `--ciphers`: the TLS 1.2 suites allowed, in preference order.
    pub ciphers: Option<Vec<CipherSuite>>,
    /// `--tls13-ciphers`: the TLS 1.3 suites allowed, in preference order.
    pub tls13_ciphers: Option<Vec<CipherSuite>>,
    /// `--groups`: the key exchange groups offered, in preference order.
    pub groups: Option<Vec<NamedGroup>>,
    /// `--tls-resume`: connections resume the sessions of earlier connections of the run
    /// (rustls' in-memory cache). Off by default: every handshake is a full one, as in h2load.
    pub resume: bool,
    /// `--0rtt`: resume (as `resume`) and send each resumed connection's first requests as
    /// TLS 1.3 early data or QUIC 0-RTT (RFC 8446 §4.2.10, RFC 9001 §4.6). Off by default.
    pub zero_rtt: bool,
}

impl TlsOptions {
    /// Connections resume sessions of earlier ones (`--tls-resume` or `--0rtt`).
    pub fn resumes(&self) -> bool {
        self.resume || self.zero_rtt
    }
}

fn split(list: &str) -> impl Iterator<Item = &str> {
    list.split([':', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn suite_names(s: &SupportedCipherSuite) -> [String; 2] {
    let suite = s.suite();
    [format!("{suite:?}"), openssl_cipher_name(suite)]
}

/// A `--ciphers`, `--tls13-ciphers` or `--groups` list rustls cannot honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsOptError {
    /// A cipher suite rustls does not support for this option.
    UnsupportedCipher {
        /// The option (`--ciphers`, `--tls13-ciphers`).
        option: &'static str,
        /// The name as given.
        name: String,
        /// The suites the option supports (rustls' names).
        supported: Vec<String>,
    },
    /// A key-exchange group rustls does not support.
    UnsupportedGroup {
        /// The name as given.
        name: String,
        /// The supported groups (each with its other names, `/`-separated).
        supported: Vec<String>,
    },
    /// An empty list for the option.
    Empty(&'static str),
}

impl std::fmt::Display for TlsOptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsOptError::UnsupportedCipher {
                option,
                name,
                supported,
            } => write!(
                f,
                "{option}: unsupported cipher suite {name:?}; supported (rustls names, or their \
                 OpenSSL names): {}",
                supported.join(":")
            ),
            TlsOptError::UnsupportedGroup { name, supported } => write!(
                f,
                "--groups: unsupported group {name:?}; supported: {}",
                supported.join(":")
            ),
            TlsOptError::Empty("--groups") => f.write_str("--groups: empty group list"),
            TlsOptError::Empty(option) => write!(f, "{option}: empty cipher list"),
        }
    }
}

impl std::error::Error for TlsOptError {}

/// Parses a cipher list for TLS 1.3 (`tls13`) or TLS 1.2 and earlier.
pub fn parse_ciphers(list: &str, tls13: bool) -> Result<Vec<CipherSuite>, TlsOptError> {
    let option = if tls13 {
        "--tls13-ciphers"
    } else {
        "--ciphers"
    };
    let known: Vec<&SupportedCipherSuite> = ring_provider::ALL_CIPHER_SUITES
        .iter()
        .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)) == tls13)
        .collect();
    let mut out = Vec::new();
    for name in split(list) {
        let found = known
            .iter()
            .find(|s| suite_names(s).iter().any(|n| n.eq_ignore_ascii_case(name)));
        match found {
            Some(s) if !out.contains(&s.suite()) => out.push(s.suite()),
            Some(_) => {}
            None => {
                return Err(TlsOptError::UnsupportedCipher {
                    option,
                    name: name.to_owned(),
                    supported: known.iter().map(|s| suite_names(s)[0].clone()).collect(),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(TlsOptError::Empty(option));
    }
    Ok(out)
}

fn group_names(g: NamedGroup) -> Vec<String> {
    let mut names = vec![format!("{g:?}")];
    match g {
        NamedGroup::secp256r1 => names.extend(["P-256".into(), "prime256v1".into()]),
        NamedGroup::secp384r1 => names.push("P-384".into()),
        NamedGroup::secp521r1 => names.push("P-521".into()),
        _ => {}
    }
    names
}

/// Parses `--groups`.
pub fn parse_groups(list: &str) -> Result<Vec<NamedGroup>, TlsOptError> {
    let known: Vec<NamedGroup> = ring_provider::ALL_KX_GROUPS
        .iter()
        .map(|g| g.name())
        .collect();
    let mut out = Vec::new();
    for name in split(list) {
        match known.iter().find(|g| {
            group_names(**g)
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name))
        }) {
            Some(g) if !out.contains(g) => out.push(*g),
            Some(_) => {}
            None => {
                return Err(TlsOptError::UnsupportedGroup {
                    name: name.to_owned(),
                    supported: known.iter().map(|g| group_names(*g).join("/")).collect(),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(TlsOptError::Empty("--groups"));
    }
    Ok(out)
}

/// Restricts `provider` to the chosen suites and groups, in the order given.
pub(crate) fn apply(provider: &mut CryptoProvider, o: &TlsOptions) {
    let pick = |chosen: &Option<Vec<CipherSuite>>, tls13: bool, all: &[SupportedCipherSuite]| {
        let of_version = all
            .iter()
            .filter(move |s| matches!(s, SupportedCipherSuite::Tls13(_)) == tls13);
        match chosen {
            None => of_version.copied().collect::<Vec<_>>(),
            Some(list) => list
                .iter()
                .filter_map(|c| of_version.clone().find(|s| s.suite() == *c).copied())
                .collect(),
        }
    };
    let all = provider.cipher_suites.clone();
    let mut suites = pick(&o.tls13_ciphers, true, &all);
    suites.extend(pick(&o.ciphers, false, &all));
    provider.cipher_suites = suites;
    if let Some(groups) = &o.groups {
        let all: Vec<&'static dyn SupportedKxGroup> = provider.kx_groups.clone();
        provider.kx_groups = groups
            .iter()
            .filter_map(|g| all.iter().find(|k| k.name() == *g).copied())
            .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_names_rustls_and_openssl() {
        assert_eq!(
            parse_ciphers("TLS13_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256", true),
            Ok(vec![
                CipherSuite::TLS13_AES_256_GCM_SHA384,
                CipherSuite::TLS13_AES_128_GCM_SHA256
            ])
        );
        assert_eq!(
            parse_ciphers("ECDHE-RSA-AES128-GCM-SHA256", false),
            Ok(vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256])
        );
        // A TLS 1.3 suite is not a --ciphers (TLS 1.2) suite.
        let e = parse_ciphers("TLS13_AES_128_GCM_SHA256", false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--ciphers: unsupported cipher suite"), "{e}");
        assert!(e.contains("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), "{e}");
        let e = parse_ciphers("TLS_AES_128_CCM_SHA256", true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("TLS13_CHACHA20_POLY1305_SHA256") && !e.contains('\n'),
            "{e}"
        );
        assert!(parse_ciphers(":", true).is_err());
    }

    #[test]
    fn group_names() {
        assert_eq!(
            parse_groups("P-256:X25519"),
            Ok(vec![NamedGroup::secp256r1, NamedGroup::X25519])
        );
        assert_eq!(parse_groups("secp384r1"), Ok(vec![NamedGroup::secp384r1]));
        let e = parse_groups("X25519:P-521").unwrap_err().to_string();
        assert!(
            e.starts_with("--groups: unsupported group \"P-521\"; supported:"),
            "{e}"
        );
        assert!(e.contains("X25519") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn apply_restricts_in_order() {
        let mut p = ring_provider::default_provider();
        let o = TlsOptions {
            tls13_ciphers: Some(vec![CipherSuite::TLS13_CHACHA20_POLY1305_SHA256]),
            ciphers: Some(vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]),
            groups: Some(vec![NamedGroup::secp384r1, NamedGroup::X25519]),
            resume: false,
            zero_rtt: false,
        };
        apply(&mut p, &o);
        let suites: Vec<CipherSuite> = p.cipher_suites.iter().map(|s| s.suite()).collect();
        assert_eq!(
            suites,
            vec![
                CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
                CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
            ]
        );
        let groups: Vec<NamedGroup> = p.kx_groups.iter().map(|g| g.name()).collect();
        assert_eq!(groups, vec![NamedGroup::secp384r1, NamedGroup::X25519]);
        // Only TLS 1.3 restricted: every TLS 1.2 suite stays.
        let mut p = ring_provider::default_provider();
        let n12 = p
            .cipher_suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls12(_)))
            .count();
        apply(
            &mut p,
            &TlsOptions {
                tls13_ciphers: Some(vec![CipherSuite::TLS13_AES_128_GCM_SHA256]),
                ..TlsOptions::default()
            },
        );
        assert_eq!(p.cipher_suites.len(), 1 + n12);
    }
}
