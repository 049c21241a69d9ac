//! HTTP/3 response heads: the QPACK field section of a response (the fields HTTP/2 sends
//! too, `crate::head_key::HeadFields`), encoded with the
//! connection's encoder, and reused for the next response with the same head (as HTTP/2's
//! head cache), also when it references the dynamic table: the encoder decides whether the
//! same octets may be sent again and registers them on the new stream
//! ([`Encoder::replay`]: referenced entries not evicted, no capacity change, the peer's
//! blocked-streams limit, the acknowledgment tracking).

use h2lab_wire::qpack::{Encoder, Replay, SectionRefs};

use crate::endpoints::Response;
use crate::head_key::{HeadFields, HeadKey};

/// Heads cached per connection: the common heads of a page or a benchmark (a few
/// content types and lengths) each keep their section, replaced round-robin.
const SLOTS: usize = 4;

/// One cached head.
#[derive(Debug, Default)]
struct Slot {
    key: Option<HeadKey>,
    section: Vec<u8>,
    /// What `section` references in the encoder's dynamic table (and the encoder's epoch:
    /// a section encoded before the client's SETTINGS, or before a capacity change, is
    /// not reused after).
    refs: SectionRefs,
}

/// The last sections encoded on a connection and, when reusable, what they encode.
#[derive(Debug, Default)]
pub struct HeadEncoder {
    slots: [Slot; SLOTS],
    /// The slot the next new head replaces.
    next: usize,
    /// A head encoded while its cached section could not be replayed for now (the client's
    /// blocked-streams limit reached): the cached one stays.
    spare: Vec<u8>,
}

impl HeadEncoder {
    /// The field section of `resp` on `stream_id`; encoder-stream instructions (inserts)
    /// are appended to `encoder_stream`, which must be sent before the section.
    pub fn encode(
        &mut self,
        qenc: &mut Encoder,
        stream_id: u64,
        resp: &Response,
        date: &[u8],
        encoder_stream: &mut Vec<u8>,
    ) -> &[u8] {
        let key = HeadKey::of(resp, date);
        // Where the encoded section goes: a slot (and whether it is cached), or `spare`.
        let mut target = None;
        if key.is_some() {
            if let Some(i) = self.slots.iter().position(|s| s.key == key) {
                match qenc.replay(stream_id, &self.slots[i].refs) {
                    Replay::Replayed => return &self.slots[i].section,
                    // Encoded anew without what could block; the cached section (usually
                    // the shorter one) serves again once the client has acknowledged its
                    // inserts.
                    Replay::Deferred => {}
                    Replay::Stale => target = Some(i),
                }
            } else {
                target = Some(self.next);
                self.next = (self.next + 1) % SLOTS;
            }
        }
        let head = HeadFields::new(resp, date);
        let out = match target {
            Some(i) => &mut self.slots[i].section,
            None => &mut self.spare,
        };
        out.clear();
        qenc.encode(stream_id, head.iter(), out, encoder_stream);
        match target {
            Some(i) => {
                // The inserts it made are on the encoder stream ahead of this section: a
                // replay references them as they are.
                let slot = &mut self.slots[i];
                slot.refs = qenc.last_section();
                slot.key = key;
                &slot.section
            }
            None => &self.spare,
        }
    }
}
