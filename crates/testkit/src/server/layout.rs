//! The listeners of one start attempt: TCP ports chosen at run time, UNIX sockets in the
//! server's directory.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::kind::AnchorKind;
use crate::net::Listener;
use crate::Error;

/// The listeners of one start attempt.
#[derive(Debug, Clone, Default)]
pub(super) struct Layout {
    pub(super) h1: Option<SocketAddr>,
    pub(super) h2c: Option<SocketAddr>,
    pub(super) tls: Option<SocketAddr>,
    pub(super) unix_h1: Option<PathBuf>,
    pub(super) unix_h2c: Option<PathBuf>,
}

impl Layout {
    pub(super) fn new(
        kind: AnchorKind,
        prefix: &Path,
        ports: impl FnOnce(usize) -> Result<Vec<u16>, Error>,
    ) -> Result<Self, Error> {
        let addr = |p: u16| Some(SocketAddr::from(([127, 0, 0, 1], p)));
        Ok(match kind {
            AnchorKind::NghttpdH2c => {
                let p = ports(1)?;
                Layout {
                    h2c: addr(p[0]),
                    ..Layout::default()
                }
            }
            AnchorKind::NghttpdTls => {
                let p = ports(1)?;
                Layout {
                    tls: addr(p[0]),
                    ..Layout::default()
                }
            }
            AnchorKind::Nginx => {
                let p = ports(3)?;
                Layout {
                    h1: addr(p[0]),
                    h2c: addr(p[1]),
                    tls: addr(p[2]),
                    unix_h1: Some(prefix.join("nginx.sock")),
                    unix_h2c: Some(prefix.join("nginx.sock.h2c")),
                }
            }
            AnchorKind::H2o | AnchorKind::Apache2 => {
                // One plain port serves HTTP/1.1 and h2c.
                let p = ports(2)?;
                Layout {
                    h1: addr(p[0]),
                    h2c: addr(p[0]),
                    tls: addr(p[1]),
                    ..Layout::default()
                }
            }
        })
    }

    pub(super) fn listeners(&self) -> Vec<Listener> {
        let mut v: Vec<Listener> = Vec::new();
        for a in [self.h1, self.h2c, self.tls].into_iter().flatten() {
            let l = Listener::Tcp(a);
            if !v.contains(&l) {
                v.push(l);
            }
        }
        for p in [&self.unix_h1, &self.unix_h2c].into_iter().flatten() {
            v.push(Listener::Unix(p.clone()));
        }
        v
    }
}

pub(super) fn port_of(a: Option<SocketAddr>) -> u16 {
    a.map(|a| a.port()).unwrap_or(0)
}
