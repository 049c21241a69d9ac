//! [`AnySession`]: the protocol sessions behind one type, dispatched
//! statically (a `match` per call, no `Box<dyn>` per connection).

use crate::h1::H1Session;
use crate::h2::H2Session;
use crate::h3::H3Conn;
use crate::session::{Session, SessionError, SessionEvents, SubmitError};

/// Static dispatch over the protocols (no `Box<dyn>` per connection).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per connection; HTTP/1.1 state stays inline
pub(crate) enum AnySession {
    /// HTTP/1.1.
    H1(H1Session),
    /// HTTP/2 (TLS or cleartext).
    H2(Box<H2Session>),
    /// HTTP/3 (with its QUIC connection).
    H3(Box<H3Conn>),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnySession::H1($s) => $e,
            AnySession::H2($s) => $e,
            AnySession::H3($s) => $e,
        }
    };
}

impl Session for AnySession {
    #[inline]
    fn on_connect(&mut self, out: &mut Vec<u8>) {
        dispatch!(self, s => s.on_connect(out))
    }
    #[inline]
    fn can_submit(&self) -> bool {
        dispatch!(self, s => s.can_submit())
    }
    #[inline]
    fn submit(&mut self, slot: u32, uri_idx: usize, out: &mut Vec<u8>) -> Result<(), SubmitError> {
        dispatch!(self, s => s.submit(slot, uri_idx, out))
    }
    #[inline]
    fn on_read(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        ev: &mut dyn SessionEvents,
    ) -> Result<(), SessionError> {
        dispatch!(self, s => s.on_read(input, out, ev))
    }
    #[inline]
    fn on_eof(&mut self, ev: &mut dyn SessionEvents) -> Result<(), SessionError> {
        dispatch!(self, s => s.on_eof(ev))
    }
    #[inline]
    fn on_write(&mut self, out: &mut Vec<u8>) {
        dispatch!(self, s => s.on_write(out))
    }
    #[inline]
    fn wants_write(&self) -> bool {
        dispatch!(self, s => s.wants_write())
    }
    #[inline]
    fn max_concurrency(&self) -> u32 {
        dispatch!(self, s => s.max_concurrency())
    }
    #[inline]
    fn in_flight(&self) -> u32 {
        dispatch!(self, s => s.in_flight())
    }
    #[inline]
    fn goaway_received(&self) -> bool {
        dispatch!(self, s => s.goaway_received())
    }
    #[inline]
    fn wants_close(&self) -> bool {
        dispatch!(self, s => s.wants_close())
    }
    #[inline]
    fn terminate(&mut self, out: &mut Vec<u8>) {
        dispatch!(self, s => s.terminate(out))
    }
}
