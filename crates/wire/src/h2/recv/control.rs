//! Connection control frames: SETTINGS, PING, WINDOW_UPDATE, RST_STREAM and GOAWAY
//! (RFC 9113 §6.4, §6.5, §6.7, §6.8, §6.9).

use crate::frame::{
    encode_settings_ack, ErrorCode, GoAway, H2Error, Ping, RstStream, Scope, Settings, WindowUpdate,
};

use super::{protocol, Absent};
use crate::h2::conn::{Role, State};
use crate::h2::error::ConnError;
use crate::h2::events::Events;
use crate::h2::store::{flag, Closed};

impl State {
    pub(super) fn on_settings(
        &mut self,
        s: Settings,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if s.ack {
            if self.settings_unacked > 0 {
                self.settings_unacked -= 1;
                if !self.local_applied {
                    self.apply_local();
                }
            }
            return Ok(());
        }
        self.guard.settings(&self.limits)?;
        let opened = self.apply_peer_settings(&s)?;
        // RFC 9113 §6.5.3: "Once all values have been processed, the
        // recipient MUST immediately emit a SETTINGS frame with the ACK flag
        // set."
        encode_settings_ack(out);
        sink.settings_changed();
        if opened {
            sink.window_opened(None);
        }
        Ok(())
    }

    /// Apply the peer's SETTINGS values (from a SETTINGS frame or, after an
    /// h2c upgrade, the HTTP2-Settings header field). Returns whether stream
    /// send windows grew. The ACK is the caller's business.
    pub(crate) fn apply_peer_settings(&mut self, s: &Settings) -> Result<bool, H2Error> {
        if self.role == Role::Client && s.enable_push == Some(true) {
            // RFC 9113 §6.5.2: "A client MUST treat receipt of a SETTINGS
            // frame with SETTINGS_ENABLE_PUSH set to 1 as a connection error
            // (Section 5.4.1) of type PROTOCOL_ERROR."
            return Err(protocol(
                "RFC 9113 §6.5.2: server sent SETTINGS_ENABLE_PUSH = 1",
            ));
        }
        let old = self.peer.initial_window_size;
        let mut opened = false;
        if let Some(new) = s.initial_window_size {
            // RFC 9113 §6.9.2: "When the value of SETTINGS_INITIAL_WINDOW_SIZE
            // changes, a receiver MUST adjust the size of all stream
            // flow-control windows that it maintains by the difference between
            // the new value and the old value." ... "An endpoint MUST treat a
            // change to SETTINGS_INITIAL_WINDOW_SIZE that causes any
            // flow-control window to exceed the maximum size as a connection
            // error (Section 5.4.1) of type FLOW_CONTROL_ERROR."
            let mut err = None;
            self.streams.for_each_mut(|st| {
                if err.is_none() {
                    err = st.send.apply_initial_window_size_delta(old, new).err();
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            opened = new > old;
        }
        if let Some(n) = s.header_table_size {
            // RFC 7541 §4.2: the encoder may use up to the decoder's limit and
            // signals the size it uses with a dynamic table size update.
            let n = n.min(self.local.encoder_table_size) as usize;
            if n != self.enc_size {
                self.enc_size = n;
                self.enc_pending = Some(n);
            }
        }
        self.peer.apply(s);
        Ok(opened)
    }

    /// The peer acknowledged our first SETTINGS: its values now bind it.
    pub(super) fn apply_local(&mut self) {
        self.local_applied = true;
        let old = self.recv_initial;
        let new = self.local.initial_window_size;
        if new != old {
            // RFC 9113 §6.9.2 applies to our receive windows too; RFC 9113
            // §6.9.3: until the ACK "the receiver MUST be prepared to receive
            // data that exceeds this window size".
            self.streams.for_each_mut(|s| {
                let _ = s
                    .recv
                    .window_mut()
                    .apply_initial_window_size_delta(old, new);
                s.recv.set_target(new);
            });
            self.recv_initial = new;
        }
        let table = self.local.header_table_size as usize;
        if table != self.dec.max_table_size() {
            self.dec.set_max_table_size(table);
        }
    }

    pub(super) fn on_ping(
        &mut self,
        p: Ping,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if p.ack {
            // RFC 9113 §6.7: "An endpoint MUST NOT respond to PING frames
            // containing this flag."
            sink.ping_ack(p.payload);
            return Ok(());
        }
        self.guard.ping(&self.limits)?;
        // RFC 9113 §6.7: "Receivers of a PING frame that does not include an
        // ACK flag MUST send a PING frame with the ACK flag set in response,
        // with an identical frame payload."
        Ping::pong(p.payload).encode(out);
        Ok(())
    }

    pub(super) fn on_window_update(
        &mut self,
        w: WindowUpdate,
        out: &mut Vec<u8>,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let id = w.stream_id;
        if id.is_zero() {
            // RFC 9113 §6.9.1: "If a sender receives a WINDOW_UPDATE that
            // causes a flow-control window to exceed this maximum, it MUST
            // terminate either the stream or the connection, as appropriate."
            self.conn_send.increase(w.increment, Scope::Connection)?;
            sink.window_opened(None);
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(id) else {
            return match self.absent(id) {
                Absent::Idle => Err(protocol("RFC 9113 §5.1: WINDOW_UPDATE on an idle stream")),
                // RFC 9113 §6.9: "a receiver could receive a WINDOW_UPDATE
                // frame on a stream in a "half-closed (remote)" or "closed"
                // state. A receiver MUST NOT treat this as an error".
                Absent::Closed => self.guard.idle(&self.limits),
            };
        };
        if let Err(e) = s.send.increase(w.increment, Scope::Stream(id)) {
            return self.stream_error(e, out, sink);
        }
        if !s.has(flag::SEND_CLOSED) {
            sink.window_opened(Some(id));
        }
        Ok(())
    }

    pub(super) fn on_rst(
        &mut self,
        r: RstStream,
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        let id = r.stream_id;
        let Some(s) = self.streams.remove(id) else {
            return match self.absent(id) {
                // RFC 9113 §6.4: "If a RST_STREAM frame identifying an idle
                // stream is received, the recipient MUST treat this as a
                // connection error (Section 5.4.1) of type PROTOCOL_ERROR."
                Absent::Idle => Err(protocol("RFC 9113 §6.4: RST_STREAM on an idle stream")),
                // RFC 9113 §5.4.2: "an endpoint MUST NOT send a RST_STREAM in
                // response to a RST_STREAM frame" — nothing to do.
                Absent::Closed => self.guard.idle(&self.limits),
            };
        };
        self.closed.push(id, Closed::Normally);
        sink.reset(id, r.error_code, true);
        if self.role == Role::Server && !s.has(flag::LOCAL) && !s.has(flag::SEND_CLOSED) {
            self.guard.peer_reset(&self.limits)?;
        }
        Ok(())
    }

    pub(super) fn on_goaway(&mut self, g: GoAway<'_>, sink: &mut (impl Events + ?Sized)) {
        let last = g.last_stream_id;
        self.goaway_recv = Some(self.goaway_recv.map_or(last, |prev| prev.min(last)));
        if g.error_code != ErrorCode::NO_ERROR {
            self.remote_error = Some(ConnError {
                error: H2Error::connection(g.error_code, "GOAWAY received from the peer"),
                initiator: super::super::error::Initiator::Remote,
            });
        }
        sink.goaway(last, g.error_code, g.debug_data);
        // RFC 9113 §6.8: "Activity on streams numbered lower than or equal to
        // the last stream identifier might still complete successfully. The
        // sender of the GOAWAY frame might gracefully shut down a connection by
        // sending a GOAWAY frame, maintaining the connection in an "open"
        // state until all in-progress streams complete." Streams we opened
        // above it were not processed and can be retried (§8.7).
        let mut n = self.streams.len();
        while n > 0 {
            n -= 1;
            let Some(id) = self.streams.id_at(n) else {
                continue;
            };
            if id <= last {
                break;
            }
            if self.streams.get(id).is_some_and(|s| s.has(flag::LOCAL)) {
                self.streams.remove(id);
                self.closed.push(id, Closed::Normally);
                sink.reset(id, ErrorCode::REFUSED_STREAM, true);
            }
        }
    }
}
