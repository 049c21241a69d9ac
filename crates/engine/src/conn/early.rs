//! 0-RTT on a client connection (`--0rtt`): a resumed TLS 1.3 connection (TCP) or QUIC
//! connection starts its session before the handshake completes, its first requests going
//! out as early data / 0-RTT; when the handshake completes the outcome is reported once
//! ([`Connection::take_early_outcome`]), and after a rejection the session starts afresh on
//! the established connection ([`Dialer::restart_session`]) so that its requests are sent
//! again (RFC 8446 §4.2.10, RFC 9001 §4.6.2: rejected 0-RTT data is lost).

use super::{AnySession, Connection, Dialer, Socket};
use crate::config::AppProtocol;

/// Where a connection stands with early data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Early {
    /// Not wanted (`--0rtt` off).
    Off,
    /// Wanted: offered if the session allows it when the transport is ready for it.
    Wanted,
    /// Offered: the session started in early data; the handshake's outcome is pending.
    Offered,
    /// Decided (or not possible): nothing more to do.
    Done,
}

impl Early {
    /// The state of a new connection.
    pub(super) fn wanted(zero_rtt: bool) -> Early {
        if zero_rtt {
            Early::Wanted
        } else {
            Early::Off
        }
    }
}

impl Connection {
    /// Whether the connection's session can start now in early data: a TLS connection whose
    /// TCP connect completed, or a QUIC connection, with a resumed session allowing it.
    pub(super) fn start_early(&mut self) -> bool {
        if self.early != Early::Wanted {
            return false;
        }
        let ok = match &mut self.transport.socket {
            Socket::Quic(link) => link.conn.as_ref().is_some_and(|c| c.has_0rtt()),
            _ if self.state == super::ConnState::Handshaking => self.transport.offer_early(),
            _ => return false,
        };
        self.early = if ok { Early::Offered } else { Early::Done };
        ok
    }

    /// A QUIC connection that can start in 0-RTT right away (its Initial is already sent):
    /// starting now puts the requests in the first flight instead of waiting for the
    /// server's answer to wake the client.
    pub(crate) fn quic_early_ready(&self) -> bool {
        self.early == Early::Wanted
            && matches!(&self.transport.socket, Socket::Quic(l) if l.conn.as_ref().is_some_and(|c| c.has_0rtt()))
    }

    /// Whether this connection's session started in early data (the outcome may be known).
    pub(crate) fn offered_early(&self) -> bool {
        self.early == Early::Offered
    }

    /// Once the handshake of a connection that offered early data completes: `Some(true)`
    /// when the server accepted it, `Some(false)` when it rejected it; reported once.
    pub(crate) fn take_early_outcome(&mut self) -> Option<bool> {
        if self.early != Early::Offered {
            return None;
        }
        let outcome = match (&self.transport.socket, &self.session) {
            (Socket::Quic(_), Some(AnySession::H3(h3))) => {
                (!h3.quic.is_handshaking()).then(|| h3.quic.accepted_0rtt())
            }
            (Socket::Quic(_), _) => None,
            _ => self.transport.early_outcome(),
        };
        if outcome.is_some() {
            self.early = Early::Done;
        }
        outcome
    }

    /// Whether the handshake resumed a session (TLS over TCP; QUIC: 0-RTT accepted implies
    /// it, otherwise unknown and `false`).
    pub(crate) fn resumed_session(&self) -> bool {
        match (&self.transport.socket, &self.session) {
            (Socket::Quic(_), Some(AnySession::H3(h3))) => h3.quic.accepted_0rtt(),
            _ => self.transport.resumed(),
        }
    }
}

impl Dialer {
    /// After rejected early data: drops the session (its requests are lost; the caller puts
    /// them back) and starts a new one on the established connection, its preface queued
    /// into the cleared `out`. `false` when the protocol now negotiated cannot be used.
    pub(crate) fn restart_session(&self, conn: &mut Connection, out: &mut Vec<u8>) -> bool {
        out.clear();
        let proto = match conn.session.take() {
            Some(AnySession::H3(h3)) => {
                if let Socket::Quic(link) = &mut conn.transport.socket {
                    link.conn = Some(h3.quic);
                }
                AppProtocol::H3
            }
            _ => match self.negotiate(conn) {
                Ok((p, _)) => p,
                Err(_) => return false,
            },
        };
        self.start_session(conn, proto, out);
        conn.session.is_some()
    }
}
