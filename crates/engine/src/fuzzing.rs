//! Entry points for the end-to-end fuzz targets (`fuzz/`): the protocol sessions the workers
//! drive, built from a [`BenchConfig`] without sockets, so fuzzed bytes can be fed to the
//! exact code a run uses. Not part of the supported API.

use std::sync::Arc;

use crate::config::{BenchConfig, ConfigError};
use crate::h1::H1Session;
use crate::h2::{H2Session, H2Settings};
use crate::request::Prepared;

/// The HTTP/2 session a worker would open for `cfg` with `-m max_streams`.
pub fn h2_session(
    cfg: &BenchConfig,
    max_streams: u32,
    settings: &H2Settings,
) -> Result<H2Session, ConfigError> {
    let prep = Arc::new(Prepared::new(cfg)?);
    Ok(H2Session::new(prep, max_streams, settings, false))
}

/// The HTTP/1.1 session a worker would open for `cfg` with pipelining depth `depth`.
pub fn h1_session(cfg: &BenchConfig, depth: u32) -> Result<H1Session, ConfigError> {
    let prep = Arc::new(Prepared::new(cfg)?);
    Ok(H1Session::new(prep, depth, false))
}
