//! Flow-control windows (RFC 9113 §5.2, §6.9).
//!
//! The codec does not know which windows exist; the session keeps one
//! [`Window`] per direction for the connection and for each stream, and
//! passes the [`Scope`] to use when a rule is violated (stream windows →
//! `Scope::Stream(id)`, connection windows → `Scope::Connection`).

use super::error::{ErrorCode, H2Error, Scope};
use super::MAX_WINDOW_SIZE;

/// One flow-control window. The size is a signed 32-bit value: it can go
/// negative after a SETTINGS_INITIAL_WINDOW_SIZE decrease (RFC 9113
/// §6.9.2). All arithmetic is done in `i64` and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window(i32);

impl Window {
    /// A window of `initial` octets (clamped to 2^31-1).
    #[inline]
    pub const fn new(initial: u32) -> Window {
        if initial > MAX_WINDOW_SIZE {
            Window(MAX_WINDOW_SIZE as i32)
        } else {
            Window(initial as i32)
        }
    }

    /// The current size; negative after a large initial-window decrease.
    #[inline]
    pub const fn size(&self) -> i32 {
        self.0
    }

    /// How many octets may be sent now (0 if the window is negative).
    #[inline]
    pub const fn available(&self) -> u32 {
        if self.0 < 0 {
            0
        } else {
            self.0 as u32
        }
    }

    /// Take `n` octets of flow-controlled payload out of the window: on the
    /// receive side when a DATA frame arrives (use
    /// [`Data::flow_controlled_len`](super::Data::flow_controlled_len)), on
    /// the send side when sending one.
    ///
    /// Error: the result would be negative → FLOW_CONTROL_ERROR with
    /// `scope` (RFC 9113 §6.9.1: "The sender MUST NOT send a flow-controlled
    /// frame with a length that exceeds the space available in either of
    /// the flow-control windows advertised by the receiver."). The window
    /// is left unchanged on error.
    #[inline]
    pub fn consume(&mut self, n: u32, scope: Scope) -> Result<(), H2Error> {
        let new = i64::from(self.0) - i64::from(n);
        if new < 0 {
            return Err(H2Error {
                scope,
                code: ErrorCode::FLOW_CONTROL_ERROR,
                rule: "RFC 9113 §6.9.1: flow-controlled data exceeds the window",
            });
        }
        self.set(
            new,
            scope,
            "RFC 9113 §6.9.1: flow-controlled data exceeds the window",
        )
    }

    /// Add `n` octets (a received WINDOW_UPDATE on the send side, or a
    /// WINDOW_UPDATE we send on the receive side).
    ///
    /// Error: the result would exceed 2^31-1 → FLOW_CONTROL_ERROR with
    /// `scope` (RFC 9113 §6.9.1: "If a sender receives a WINDOW_UPDATE that
    /// causes a flow-control window to exceed this maximum, it MUST
    /// terminate either the stream or the connection, as appropriate.").
    /// The window is left unchanged on error.
    #[inline]
    pub fn increase(&mut self, n: u32, scope: Scope) -> Result<(), H2Error> {
        self.set(
            i64::from(self.0) + i64::from(n),
            scope,
            "RFC 9113 §6.9.1: WINDOW_UPDATE makes the window exceed 2^31-1",
        )
    }

    /// Apply a SETTINGS_INITIAL_WINDOW_SIZE change from `old` to `new` to a
    /// stream window (RFC 9113 §6.9.2: "When the value of
    /// SETTINGS_INITIAL_WINDOW_SIZE changes, a receiver MUST adjust the size
    /// of all stream flow-control windows that it maintains by the
    /// difference between the new value and the old value."). The window may
    /// become negative. Never apply this to the connection window.
    ///
    /// Error: the result would exceed 2^31-1 → connection FLOW_CONTROL_ERROR
    /// (§6.9.2: "An endpoint MUST treat a change to
    /// SETTINGS_INITIAL_WINDOW_SIZE that causes any flow-control window to
    /// exceed the maximum size as a connection error (Section 5.4.1) of
    /// type FLOW_CONTROL_ERROR."). The window is left unchanged on error.
    #[inline]
    pub fn apply_initial_window_size_delta(&mut self, old: u32, new: u32) -> Result<(), H2Error> {
        self.set(
            i64::from(self.0) + i64::from(new) - i64::from(old),
            Scope::Connection,
            "RFC 9113 §6.9.2: SETTINGS_INITIAL_WINDOW_SIZE change makes a window exceed 2^31-1",
        )
    }

    #[inline]
    fn set(&mut self, v: i64, scope: Scope, rule: &'static str) -> Result<(), H2Error> {
        // The lower bound is only reachable through nonsensical `old`
        // values; reject it rather than wrap.
        if v > i64::from(MAX_WINDOW_SIZE) || v < -i64::from(MAX_WINDOW_SIZE) {
            return Err(H2Error {
                scope,
                code: ErrorCode::FLOW_CONTROL_ERROR,
                rule,
            });
        }
        self.0 = i32::try_from(v).map_err(|_| H2Error {
            scope,
            code: ErrorCode::FLOW_CONTROL_ERROR,
            rule,
        })?;
        Ok(())
    }
}

/// Receive-side window bookkeeping that batches WINDOW_UPDATE frames.
///
/// It tracks the window the peer sees, the `target` size we want to keep
/// advertised, and the octets received but not yet released by the
/// application. The amount owed to the peer is
/// `target - window - in_use`; [`take_update`](RecvWindow::take_update)
/// returns it once it reaches the threshold (by default half the target),
/// so one WINDOW_UPDATE covers many DATA frames.
///
/// A consumer that discards or copies data immediately (a load generator
/// reading response bodies) calls [`recv`](RecvWindow::recv) and
/// [`release`](RecvWindow::release) back to back.
///
/// ```
/// use h2lab_wire::frame::{RecvWindow, Scope};
/// // Connection window: starts at the RFC 65535, we want 1 MiB.
/// let mut w = RecvWindow::new(65_535, 1 << 20);
/// assert_eq!(w.take_update(), Some((1 << 20) - 65_535)); // send at startup
/// w.recv(16_384, Scope::Connection).unwrap();
/// w.release(16_384);
/// assert_eq!(w.take_update(), None); // below half the target: batch
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecvWindow {
    window: Window,
    target: u32,
    in_use: u32,
    threshold: u32,
}

impl RecvWindow {
    /// `initial`: the window the peer currently assumes (65535 for the
    /// connection, our SETTINGS_INITIAL_WINDOW_SIZE for a stream);
    /// `target`: the window we want to maintain (clamped to 2^31-1). The
    /// threshold is `target / 2` (at least 1).
    pub fn new(initial: u32, target: u32) -> Self {
        let target = target.min(MAX_WINDOW_SIZE);
        RecvWindow {
            window: Window::new(initial),
            target,
            in_use: 0,
            threshold: (target / 2).max(1),
        }
    }

    /// The window as the peer sees it.
    #[inline]
    pub fn window(&self) -> Window {
        self.window
    }

    /// Mutable access, e.g. for
    /// [`Window::apply_initial_window_size_delta`] once our own
    /// SETTINGS_INITIAL_WINDOW_SIZE change is acknowledged.
    #[inline]
    pub fn window_mut(&mut self) -> &mut Window {
        &mut self.window
    }

    /// The target window size.
    #[inline]
    pub fn target(&self) -> u32 {
        self.target
    }

    /// Change the target (and reset the threshold to half of it). Raising
    /// it makes the difference owed at the next [`take_update`](Self::take_update).
    pub fn set_target(&mut self, target: u32) {
        self.target = target.min(MAX_WINDOW_SIZE);
        self.threshold = (self.target / 2).max(1);
    }

    /// Set the minimum owed amount that triggers a WINDOW_UPDATE (at least 1).
    pub fn set_threshold(&mut self, threshold: u32) {
        self.threshold = threshold.max(1);
    }

    /// Octets received and not yet released.
    #[inline]
    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Account for a received DATA frame of `n` flow-controlled octets.
    /// Error: more than the window → FLOW_CONTROL_ERROR with `scope`.
    pub fn recv(&mut self, n: u32, scope: Scope) -> Result<(), H2Error> {
        self.window.consume(n, scope)?;
        // window >= 0 and in_use + window <= target <= 2^31-1 in normal
        // operation; saturate anyway.
        self.in_use = self.in_use.saturating_add(n);
        Ok(())
    }

    /// The application is done with `n` received octets; their credit can
    /// be returned to the peer. Releasing more than is in use is clamped.
    pub fn release(&mut self, n: u32) {
        self.in_use = self.in_use.saturating_sub(n);
    }

    /// The credit currently owed to the peer (may be 0 or below the
    /// threshold).
    pub fn owed(&self) -> u32 {
        let owed = i64::from(self.target) - i64::from(self.window.size()) - i64::from(self.in_use);
        u32::try_from(owed.clamp(0, i64::from(MAX_WINDOW_SIZE))).unwrap_or(0)
    }

    /// If the owed credit reached the threshold, add it to the window and
    /// return it: the caller sends a WINDOW_UPDATE with this increment.
    pub fn take_update(&mut self) -> Option<u32> {
        let owed = self.owed();
        if owed == 0 || owed < self.threshold {
            return None;
        }
        // window + owed = target - in_use <= 2^31-1: cannot fail.
        self.window.increase(owed, Scope::Connection).ok()?;
        Some(owed)
    }
}
