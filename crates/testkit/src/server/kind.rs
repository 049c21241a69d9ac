//! Which anchor server.

/// Which anchor server (and, for nghttpd, which of its two modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnchorKind {
    /// `nghttpd --no-tls`: h2c with prior knowledge only (no HTTP/1.1, no Upgrade).
    NghttpdH2c,
    /// `nghttpd` with a certificate: TLS, ALPN `h2` only.
    NghttpdTls,
    /// nginx 1.22: HTTP/1.1 port, h2c-only port, TLS port (ALPN h2 + http/1.1),
    /// UNIX sockets (HTTP/1.1 and h2c).
    Nginx,
    /// h2o 2.2: one plain port (HTTP/1.1 + h2c prior knowledge + Upgrade), one TLS port.
    H2o,
    /// Apache 2.4 with mod_http2: one plain port (HTTP/1.1 + h2c direct + Upgrade), one TLS port
    /// (ALPN h2 + http/1.1).
    Apache2,
}

impl AnchorKind {
    /// The binary this kind runs.
    pub fn binary(self) -> &'static str {
        match self {
            AnchorKind::NghttpdH2c | AnchorKind::NghttpdTls => "nghttpd",
            AnchorKind::Nginx => "nginx",
            AnchorKind::H2o => "h2o",
            AnchorKind::Apache2 => "apache2",
        }
    }

    /// Whether this kind has a TLS listener (and therefore needs a certificate).
    pub fn has_tls(self) -> bool {
        !matches!(self, AnchorKind::NghttpdH2c)
    }
}
