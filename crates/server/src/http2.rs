//! The HTTP/2 server side, driving `h2lab_wire::h2::Connection` (placeholder until the
//! sans-IO connection lands: HTTP/2 connections are answered with a GOAWAY and closed).

use std::time::{Duration, Instant};

use crate::conn::{Io, Next};
use crate::http1::Upgrade;
use crate::worker::Ctx;

/// HTTP/2 protocol state of one connection.
pub struct H2 {
    _upgrade: Option<Box<Upgrade>>,
}

impl H2 {
    /// Starts the server side: queues our SETTINGS (and, after an upgrade, the response on
    /// stream 1).
    pub fn new(_ctx: &mut Ctx<'_>, _out: &mut Vec<u8>, upgrade: Option<Box<Upgrade>>) -> Self {
        H2 { _upgrade: upgrade }
    }

    /// Processes buffered input.
    pub fn process(&mut self, _io: &mut Io<'_>, _ctx: &mut Ctx<'_>) -> Next {
        Next::CloseNow
    }

    /// A stream's `/delay` timer fired.
    pub fn on_timer(&mut self, _tag: u32, _io: &mut Io<'_>, _ctx: &mut Ctx<'_>) {}

    /// Whether response data could be queued now.
    pub fn has_pending_work(&self) -> bool {
        false
    }

    /// Idle check.
    pub fn timed_out(&self, now: Instant, last_active: Instant, idle: Duration) -> bool {
        now.duration_since(last_active) >= idle
    }

    /// Queues a GOAWAY (idle timeout or server shutdown).
    pub fn on_idle_timeout(&mut self, _io: &mut Io<'_>) {}
}
