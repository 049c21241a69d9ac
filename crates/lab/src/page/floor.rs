//! Round-trip floors of a page load: the least time the link allows, from the round trips
//! the protocol needs before and after the HTML, the server's think time and the bytes over
//! the link's down rate. A measured time is read against its floor (`1.31×` the floor): what is
//! left above it is the protocols' and the implementations' doing, not the link's.
//!
//! Round trips before the first byte of the HTML (TLS 1.3, RFC 8446 §2; QUIC, RFC 9001 §4):
//!
//! | protocol | first view | resumed (no early data) | 0-RTT |
//! | --- | --- | --- | --- |
//! | HTTP/1.1, HTTP/2 over TLS | TCP 1 + TLS 1 + request 1 = 3 | 3 | 2 |
//! | HTTP/3 (QUIC) | handshake 1 + request 1 = 2 | 2 | 1 |
//! | cleartext (h1, h2c) | TCP 1 + request 1 = 2 | 2 | 2 |
//!
//! Resumption without early data saves the certificate and its signature, not a round trip:
//! the client still waits for the server's flight before it may send the request.

use serde::Serialize;

use crate::link::LinkProfile;
use crate::proto::LabProtocol;

/// Handshake round trips before a request can be sent on a new connection.
pub fn handshake_rtts(proto: LabProtocol, zero_rtt: bool) -> u32 {
    match (proto.is_h3(), proto.tls(), zero_rtt) {
        // QUIC: one round trip for the combined transport and TLS handshake; with 0-RTT
        // the request rides in the first flight.
        (true, _, false) => 1,
        (true, _, true) => 0,
        // TCP + TLS 1.3: one for TCP, one for TLS; with early data the request follows the
        // ClientHello, so only TCP's remains.
        (false, true, false) => 2,
        (false, true, true) => 1,
        // Cleartext: TCP only.
        (false, false, _) => 1,
    }
}

/// The floors of one load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Floor {
    /// Round trips to the HTML's first byte (handshake + request).
    pub first_byte_rtts: u32,
    /// Least time to the HTML's first byte (ms): round trips + think time.
    pub first_byte_ms: f64,
    /// Least time to the end of the page (ms): one more round trip for the sub-resources,
    /// the think time, and the bytes read over the link's down rate.
    pub page_ms: f64,
}

/// The link's round-trip time (ms) and down rate (bit/s; `None`: unlimited).
pub fn link_shape(profile: LinkProfile) -> (f64, Option<u64>) {
    let (rtt, down, _) = profile.shape();
    (rtt.as_secs_f64() * 1000.0, down)
}

/// Milliseconds `bytes` take at `down` bit/s (0 when unlimited).
pub fn transfer_ms(bytes: u64, down: Option<u64>) -> f64 {
    down.filter(|&d| d > 0)
        .map_or(0.0, |d| bytes as f64 * 8.0 / d as f64 * 1000.0)
}

/// The floor of a load of `proto` over `profile`: the HTML after its handshake and the
/// server's `think_ms`, then its sub-resources one round trip later, `bytes` read in all.
pub fn page_floor(
    profile: LinkProfile,
    proto: LabProtocol,
    zero_rtt: bool,
    think_ms: f64,
    bytes: u64,
) -> Floor {
    let (rtt, down) = link_shape(profile);
    let first_byte_rtts = handshake_rtts(proto, zero_rtt) + 1;
    let first_byte_ms = f64::from(first_byte_rtts) * rtt + think_ms;
    Floor {
        first_byte_rtts,
        first_byte_ms,
        page_ms: first_byte_ms + rtt + transfer_ms(bytes, down),
    }
}

/// `1.31×` (measured / floor), or `-` when the floor is 0 (loopback).
pub fn versus(measured_ms: f64, floor_ms: f64) -> String {
    if floor_ms > 0.0 && measured_ms.is_finite() {
        format!("{:.2}×", measured_ms / floor_ms)
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_follow_the_handshakes() {
        let f = |p, z| page_floor(LinkProfile::Wan, p, z, 0.0, 0).first_byte_rtts;
        assert_eq!(f(LabProtocol::H1Tls, false), 3);
        assert_eq!(f(LabProtocol::H2, false), 3);
        assert_eq!(f(LabProtocol::H2, true), 2);
        assert_eq!(f(LabProtocol::H3, false), 2);
        assert_eq!(f(LabProtocol::H3, true), 1);
        assert_eq!(f(LabProtocol::H2c, false), 2);
    }

    #[test]
    fn the_floor_adds_think_time_a_round_trip_and_the_bytes() {
        // wan: 40 ms, 50 Mbit/s; 500 kB take 80 ms.
        let f = page_floor(LinkProfile::Wan, LabProtocol::H2, false, 200.0, 500_000);
        assert_eq!(f.first_byte_ms, 3.0 * 40.0 + 200.0);
        assert!((f.page_ms - (320.0 + 40.0 + 80.0)).abs() < 1e-9, "{f:?}");
        let l = page_floor(LinkProfile::Loopback, LabProtocol::H2, false, 0.0, 500_000);
        assert_eq!(l.page_ms, 0.0);
        assert_eq!(versus(10.0, 0.0), "-");
        assert_eq!(versus(88.0, 44.0), "2.00×");
    }
}
