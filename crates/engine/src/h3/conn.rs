//! [`H3Conn`]: an [`H3Session`] with its QUIC connection, behind the engine's [`Session`]
//! trait, so the worker drives HTTP/3 exactly as HTTP/1.1 and HTTP/2. The QUIC transport
//! ([`crate::conn::quic`]) feeds the connection its datagrams before each read turn and
//! sends what it has after each write; `out` (the byte-stream output) stays empty.

use std::sync::Arc;

use h2lab_quic::quinn_proto::Connection;

use super::H3Session;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};

/// An HTTP/3 session and the QUIC connection it runs on.
pub struct H3Conn {
    /// The QUIC connection (its datagrams are the transport's business).
    pub quic: Connection,
    /// The HTTP/3 state.
    pub session: H3Session,
}

impl std::fmt::Debug for H3Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Conn")
            .field("in_flight", &self.session.in_flight())
            .finish()
    }
}

impl Session for H3Conn {
    fn on_connect(&mut self, _out: &mut Vec<u8>) {
        // Our control and QPACK streams open now: the handshake is done, or 0-RTT keys are
        // there (`--0rtt`), and then they must open before anything is read. A read can
        // complete the handshake and settle the early data; after a rejection quinn forgets
        // the streams opened so far, so streams opened then would take the identifiers the
        // next session needs, and the server would see two control streams.
        self.session.start(&mut self.quic);
    }

    fn can_submit(&self) -> bool {
        self.session.can_submit()
    }

    fn submit(&mut self, slot: u32, uri_idx: usize, _out: &mut Vec<u8>) -> Result<(), SubmitError> {
        self.session.submit(&mut self.quic, slot, uri_idx)
    }

    fn on_read(
        &mut self,
        _input: &[u8],
        _out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        self.session.on_quic(&mut self.quic, ev);
        match self.session.error() {
            Some(code) => Err(SessionError::H3 { code: code.0 }),
            None => Ok(()),
        }
    }

    fn on_eof(&mut self, _ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        // Requests still in flight are outstanding: the worker accounts for them.
        Ok(())
    }

    fn on_write(&mut self, _out: &mut Vec<u8>) {
        self.session.flush(&mut self.quic);
        if self.session.wants_close() {
            self.session.terminate(&mut self.quic);
        }
    }

    fn wants_write(&self) -> bool {
        // QUIC always may have something to send (ACKs, retransmissions).
        true
    }

    fn max_concurrency(&self) -> u32 {
        self.session.max_concurrency()
    }

    fn in_flight(&self) -> u32 {
        self.session.in_flight()
    }

    fn goaway_received(&self) -> bool {
        self.session.goaway_received()
    }

    fn wants_close(&self) -> bool {
        self.session.wants_close() || self.session.is_closed()
    }

    fn terminate(&mut self, _out: &mut Vec<u8>) {
        self.session.terminate(&mut self.quic);
    }
}

/// The QUIC client configuration for `h3`: rustls as on TCP (h2load's suite order;
/// certificate verification off when `insecure`, as h2load), ALPN `h3`.
pub fn quic_client_config(
    insecure: bool,
    opts: &crate::tls_opts::TlsOptions,
) -> Result<h2lab_quic::quinn_proto::ClientConfig, crate::error::TransportError> {
    let tls = crate::transport::client_config(&["h3".to_owned()], insecure, opts)?;
    let crypto = h2lab_quic::quinn_proto::crypto::rustls::QuicClientConfig::try_from(Arc::new(tls))
        .map_err(|_| {
            crate::error::TransportError::Setup(rustls::Error::General(
                "QUIC needs TLS 1.3 with TLS_AES_128_GCM_SHA256".into(),
            ))
        })?;
    Ok(h2lab_quic::quinn_proto::ClientConfig::new(Arc::new(crypto)))
}
