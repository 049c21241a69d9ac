//! TLS 1.3 early data on the client side of a [`Transport`]: offering it, writing the
//! session's first bytes into it, and learning whether the server accepted it.
//!
//! RFC 8446 §4.2.10: rejected early data is skipped by the server, and "the client will need
//! to retransmit the data" after the handshake. While the handshake is in progress only the
//! early data writer is used (nothing is queued behind it in rustls), so on a rejection the
//! session can start afresh on the established connection and send its requests again.

use std::io::{self, Write};

use rustls::ClientConnection;

use super::{Socket, Transport};

impl Transport {
    /// Offers early data when the TLS session allows it (a resumed TLS 1.3 session whose
    /// ticket permits early data): the session's bytes may then be written before the
    /// handshake completes. `false` (nothing changes) when it cannot be sent.
    pub(crate) fn offer_early(&mut self) -> bool {
        let Some(tls) = self.tls.as_deref_mut() else {
            return false;
        };
        if tls.early_data().is_none() {
            return false;
        }
        self.early = true;
        true
    }

    /// Whether early data was offered and the handshake is still in progress.
    pub(crate) fn in_early_phase(&self) -> bool {
        self.early && self.tls.as_deref().is_some_and(|t| t.is_handshaking())
    }

    /// Once the handshake that offered early data completes: `Some(accepted)`, once.
    pub(crate) fn early_outcome(&mut self) -> Option<bool> {
        if !self.early {
            return None;
        }
        let tls = self.tls.as_deref()?;
        if tls.is_handshaking() {
            return None;
        }
        self.early = false;
        Some(tls.is_early_data_accepted())
    }
}

/// Writes `data` as early data (as much as the server's limit leaves) and sends it with the
/// ClientHello. When the limit is reached the rest waits for the handshake (`WouldBlock`).
pub(super) fn write_early(
    tls: &mut ClientConnection,
    socket: &mut Socket,
    data: &[u8],
) -> io::Result<usize> {
    let n = match tls.early_data() {
        Some(mut early) => early.write(data)?,
        None => 0,
    };
    Transport::flush_tls(tls, socket)?;
    if n == 0 && !data.is_empty() {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    Ok(n)
}
