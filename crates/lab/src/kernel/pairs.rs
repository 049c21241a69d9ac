//! The like-for-like comparisons every experiment decides, as data: a row of [`PAIRS`] per
//! pair of protocols (`h2`/`h1-tls`, `h2c`/`h1`, `h3`/`h2`), each in a family that shares a
//! table and a forest plot, and the A/A controls (a protocol listed twice). Adding a pair is
//! one more row; `compare`'s decisions, its terminal and HTML tables and `page --loss` read
//! this table.

use serde::Serialize;

use crate::proto::LabProtocol;

/// A like-for-like comparison: protocol `a` against `b` (the newer over the older, over
/// the same kind of transport security).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pair {
    /// The numerator (the newer protocol).
    pub a: LabProtocol,
    /// The denominator.
    pub b: LabProtocol,
    /// The comparison the pair belongs to (`HTTP/2 vs HTTP/1.1`): pairs of one family
    /// share a table and a forest plot.
    pub family: &'static str,
}

/// The like-for-like pairs: HTTP/2 over TLS against HTTP/1.1 over TLS, h2c against
/// cleartext HTTP/1.1, HTTP/3 against HTTP/2 over TLS (both encrypted; QUIC over UDP
/// against TLS over TCP). A new pair is one more line.
pub const PAIRS: [Pair; 3] = [
    Pair {
        a: LabProtocol::H2,
        b: LabProtocol::H1Tls,
        family: H2_VS_H1,
    },
    Pair {
        a: LabProtocol::H2c,
        b: LabProtocol::H1,
        family: H2_VS_H1,
    },
    Pair {
        a: LabProtocol::H3,
        b: LabProtocol::H2,
        family: H3_VS_H2,
    },
];

/// The family of the HTTP/2-vs-HTTP/1.1 pairs.
pub const H2_VS_H1: &str = "HTTP/2 vs HTTP/1.1";
/// The family of the HTTP/3-vs-HTTP/2 pair.
pub const H3_VS_H2: &str = "HTTP/3 vs HTTP/2";
/// The family of the A/A controls (a protocol listed twice).
pub const CONTROL: &str = "A/A control";

/// The families of comparisons in report order: every family of [`PAIRS`], then the A/A
/// controls.
pub fn families() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for p in PAIRS {
        if !v.contains(&p.family) {
            v.push(p.family);
        }
    }
    v.push(CONTROL);
    v
}
