//! HTTP/2 client session (placeholder until the wire HTTP/2 modules land).

use std::sync::Arc;

use crate::request::Prepared;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};

/// HTTP/2 settings chosen by the user (`-w`, `-W`, header table sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Settings {
    /// Stream receive window bits (`-w`): SETTINGS_INITIAL_WINDOW_SIZE = 2^w - 1.
    pub window_bits: u8,
    /// Connection receive window bits (`-W`).
    pub connection_window_bits: u8,
    /// SETTINGS_HEADER_TABLE_SIZE we advertise (decoder side).
    pub header_table_size: u32,
    /// Largest dynamic table our encoder uses.
    pub encoder_header_table_size: u32,
}

/// HTTP/2 client session.
#[derive(Debug)]
pub struct H2Session {
    _prep: Arc<Prepared>,
}

impl H2Session {
    /// A new session.
    pub(crate) fn new(
        prep: Arc<Prepared>,
        _max_streams: u32,
        _settings: &H2Settings,
        _verbose: bool,
    ) -> H2Session {
        H2Session { _prep: prep }
    }
}

impl Session for H2Session {
    fn on_connect(&mut self, _out: &mut Vec<u8>) {}
    fn can_submit(&self) -> bool {
        false
    }
    fn submit(
        &mut self,
        _slot: u32,
        _uri_idx: usize,
        _out: &mut Vec<u8>,
    ) -> Result<(), SubmitError> {
        Err(SubmitError::WouldBlock)
    }
    fn on_read(
        &mut self,
        _input: &[u8],
        _out: &mut Vec<u8>,
        _ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        Err(SessionError::Protocol(
            "HTTP/2 is not implemented yet".into(),
        ))
    }
    fn on_eof(&mut self, _ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        Ok(())
    }
    fn on_write(&mut self, _out: &mut Vec<u8>) {}
    fn max_concurrency(&self) -> u32 {
        0
    }
    fn in_flight(&self) -> u32 {
        0
    }
    fn goaway_received(&self) -> bool {
        false
    }
    fn wants_close(&self) -> bool {
        true
    }
    fn terminate(&mut self, _out: &mut Vec<u8>) {}
}
