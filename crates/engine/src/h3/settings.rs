//! The QPACK settings of a client connection: what we announce for our decoder
//! (SETTINGS_QPACK_MAX_TABLE_CAPACITY and SETTINGS_QPACK_BLOCKED_STREAMS) and the largest
//! dynamic table our request encoder uses within the server's.

use h2lab_wire::qpack::EncoderConfig;

/// h2load's SETTINGS_QPACK_BLOCKED_STREAMS (`h2load_http3_session.cc`).
pub const H2LOAD_BLOCKED_STREAMS: u32 = 100;

/// QPACK settings of an HTTP/3 client connection (see docs/bench.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpackSettings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY we announce: the dynamic table the server may use
    /// in its responses (`--header-table-size`, as h2load; 0: none).
    pub max_table_capacity: u32,
    /// SETTINGS_QPACK_BLOCKED_STREAMS we announce: responses that may wait for inserts
    /// ([`H2LOAD_BLOCKED_STREAMS`]; 0 with no table).
    pub blocked_streams: u32,
    /// Largest dynamic table our request encoder uses, within what the server allows
    /// (`--encoder-header-table-size`; nghttp3's default is also 4096). 0: requests are
    /// encoded with the static table and literals only.
    pub encoder_table_capacity: u32,
}

impl QpackSettings {
    /// No dynamic table either way (announce 0 and 0, encode static-only): the shape of
    /// `--no-qpack-dynamic-table`, of h2lab before it, and of the page fetcher.
    pub const STATIC: QpackSettings = QpackSettings {
        max_table_capacity: 0,
        blocked_streams: 0,
        encoder_table_capacity: 0,
    };

    /// The settings `cfg`'s flags ask for: h2load's (`--header-table-size`, 100 blocked
    /// streams) and `--encoder-header-table-size`, or [`QpackSettings::STATIC`] with
    /// `--no-qpack-dynamic-table`.
    pub fn of(cfg: &crate::BenchConfig) -> QpackSettings {
        if !cfg.qpack_dynamic_table {
            return QpackSettings::STATIC;
        }
        let cap = cfg.header_table_size;
        QpackSettings {
            max_table_capacity: cap,
            blocked_streams: if cap == 0 { 0 } else { H2LOAD_BLOCKED_STREAMS },
            encoder_table_capacity: cfg.encoder_header_table_size,
        }
    }

    /// The request encoder's configuration.
    pub fn encoder_config(&self) -> EncoderConfig {
        EncoderConfig {
            use_dynamic_table: self.encoder_table_capacity > 0,
            max_table_capacity: self.encoder_table_capacity as usize,
        }
    }
}
