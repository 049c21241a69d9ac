//! PRIORITY_UPDATE (RFC 9218 §7.1) on the receive path.

use crate::frame::{FrameHeader, H2Error, PriorityUpdate, StreamId};

use super::{protocol, Absent};
use crate::h2::conn::{Role, State};
use crate::h2::events::Events;

impl State {
    pub(super) fn on_priority_update(
        &mut self,
        header: FrameHeader,
        payload: &[u8],
        sink: &mut (impl Events + ?Sized),
    ) -> Result<(), H2Error> {
        if self.role == Role::Client {
            // RFC 9218 §7.1: "Servers MUST NOT send PRIORITY_UPDATE frames.
            // If a client receives a PRIORITY_UPDATE frame, it MUST respond
            // with a connection error of type PROTOCOL_ERROR."
            return Err(protocol("RFC 9218 §7.1: PRIORITY_UPDATE from a server"));
        }
        // A control frame with no effect on any stream: counted like the
        // other frames a flood could be made of.
        self.guard.idle(&self.limits)?;
        let u = PriorityUpdate::decode(header, payload)?;
        let id = u.prioritized_stream_id;
        if self.streams.get(id).is_some() {
            sink.priority_update(id, u.field_value);
            return Ok(());
        }
        match self.absent(id) {
            // RFC 9218 §7.1: "Servers can discard frames where the
            // Prioritized Stream ID refers to a stream in the "closed"
            // state."
            Absent::Closed => Ok(()),
            Absent::Idle if id.is_server_initiated() => {
                // RFC 9218 §7.1: "Clients MUST NOT provide a Prioritized
                // Stream ID that refers to a push stream in the "idle" state.
                // Servers that receive a PRIORITY_UPDATE for a push stream in
                // the "idle" state MUST respond with a connection error of
                // type PROTOCOL_ERROR."
                Err(protocol(
                    "RFC 9218 §7.1: PRIORITY_UPDATE for an idle push stream",
                ))
            }
            Absent::Idle => {
                let last = self.last_peer_id;
                self.prio_idle.retain(|&s| s > last);
                if !self.prio_idle.contains(&id.get()) {
                    self.prio_idle.push(id.get());
                }
                // RFC 9218 §7.1: "The number of streams that have been
                // prioritized but remain in the "idle" state plus the number
                // of active streams (those in the "open" state or in either
                // of the "half-closed" states; see Section 5.1.2 of [HTTP/2])
                // MUST NOT exceed the value of the
                // SETTINGS_MAX_CONCURRENT_STREAMS parameter. Servers that
                // receive such a PRIORITY_UPDATE MUST respond with a
                // connection error of type PROTOCOL_ERROR."
                let max = self.local.max_concurrent_streams.unwrap_or(u32::MAX) as usize;
                if self.prio_idle.len() + self.streams.len() > max {
                    return Err(protocol(
                        "RFC 9218 §7.1: PRIORITY_UPDATE for more idle streams than \
                         SETTINGS_MAX_CONCURRENT_STREAMS allows",
                    ));
                }
                sink.priority_update(StreamId::new(id.get()), u.field_value);
                Ok(())
            }
        }
    }
}
