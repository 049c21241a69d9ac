//! Request template encoder for the load generator (the QPACK counterpart of
//! [`crate::hpack::RequestTemplate`]).
//!
//! Every field section a template sends is computed once and copied per request: the
//! steady state of [`RequestTemplate::encode_next`] is one `memcpy` of a precomputed
//! section and, with the dynamic table, one entry pushed on the encoder's (reused)
//! acknowledgment queue; nothing is allocated per request.
//!
//! * Static mode (the dynamic table off, or a peer capacity of 0): every section is
//!   `00 00` (Required Insert Count 0, Base 0) followed by indexed static lines for full
//!   static matches and literals otherwise (a static name reference when there is one;
//!   "never indexed" for sensitive fields, as HPACK's encoder decides).
//! * Dynamic mode: at the first request the template inserts, on the encoder stream, the
//!   fixed fields that are neither full static matches nor sensitive, then the paths, as
//!   long as they fit the capacity (nothing is ever evicted). Until the decoder has
//!   acknowledged all of them (Insert Count Increment or Section Acknowledgment) the
//!   static sections are sent, so no request ever blocks; then the sections referencing
//!   the entries (1-2 octets per field) are computed once and used from there on.
//!
//! HTTP/3 SETTINGS are sent once per connection (RFC 9114 §7.2.4.1), so the peer's limits
//! are set once, before the first request.

use super::encoder::Encoder;
use super::prim::write_string;
use super::table::{static_lookup, StaticMatch};
use super::EncoderConfig;
use crate::hpack::{integer, TemplateError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Nothing planned yet.
    Start,
    /// Entries inserted; waiting for the decoder to acknowledge this many inserts.
    Pending(u64),
    /// Dynamic sections in use.
    Ready,
    /// Static sections only, for good.
    Static,
}

#[derive(Debug, Clone)]
struct Slot {
    name: Vec<u8>,
    value: Vec<u8>,
    sensitive: bool,
    stat: StaticMatch,
    abs: Option<u64>,
}

/// Precomputed sections, one per path, in one buffer.
#[derive(Debug, Clone, Default)]
struct Sections {
    bytes: Vec<u8>,
    /// (end offset, Required Insert Count, smallest absolute index referenced) per path.
    ends: Vec<(usize, u64, u64)>,
}

impl Sections {
    fn get(&self, i: usize) -> (&[u8], u64, u64) {
        let start = if i == 0 {
            0
        } else {
            self.ends.get(i - 1).map_or(0, |e| e.0)
        };
        let (end, req, min) = self.ends.get(i).copied().unwrap_or((start, 0, 0));
        (self.bytes.get(start..end).unwrap_or_default(), req, min)
    }
}

/// Per-connection QPACK request encoder for the load generator (see the module docs).
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    encoder: Encoder,
    /// Fixed fields in order, then one slot per path.
    slots: Vec<Slot>,
    n_fixed: usize,
    /// Number of fixed fields sent before `:path`.
    path_pos: usize,
    mode: Mode,
    static_sections: Sections,
    dynamic_sections: Sections,
    /// The peer's SETTINGS were applied ([`RequestTemplate::set_peer_settings`]); until
    /// then the static sections are sent and nothing is planned.
    peer_known: bool,
}

impl RequestTemplate {
    /// Builds the template: `fields` are the fixed request fields in sending order without
    /// `:path` (which is sent right after the leading pseudo-header fields), `paths` the
    /// `:path` values [`RequestTemplate::encode_next`] rotates through.
    pub fn new<'a, F, P>(fields: F, paths: P, config: EncoderConfig) -> Result<Self, TemplateError>
    where
        F: IntoIterator<Item = (&'a [u8], &'a [u8])>,
        P: IntoIterator<Item = &'a [u8]>,
    {
        let mut slots = Vec::new();
        let mut path_pos = 0;
        let mut leading = true;
        let slot = |name: &[u8], value: &[u8]| Slot {
            name: name.to_vec(),
            value: value.to_vec(),
            sensitive: crate::hpack::is_sensitive(name, value),
            stat: static_lookup(name, value),
            abs: None,
        };
        for (name, value) in fields {
            if name == b":path" {
                return Err(TemplateError::PathInFields);
            }
            if leading && name.first() == Some(&b':') {
                path_pos += 1;
            } else {
                leading = false;
            }
            slots.push(slot(name, value));
        }
        let n_fixed = slots.len();
        slots.extend(paths.into_iter().map(|p| slot(b":path", p)));
        if slots.len() == n_fixed {
            return Err(TemplateError::NoPaths);
        }
        let mut t = RequestTemplate {
            encoder: Encoder::new(config),
            slots,
            n_fixed,
            path_pos,
            mode: Mode::Start,
            static_sections: Sections::default(),
            dynamic_sections: Sections::default(),
            peer_known: false,
        };
        t.static_sections = t.build(false);
        Ok(t)
    }

    /// Applies the peer's SETTINGS_QPACK_MAX_TABLE_CAPACITY and
    /// SETTINGS_QPACK_BLOCKED_STREAMS (once, when they arrive). Requests encoded before
    /// that use the static sections (RFC 9204 §5: both settings default to 0), and the
    /// dynamic table is planned at the first request after it.
    pub fn set_peer_settings(&mut self, max_table_capacity: usize, blocked_streams: usize) {
        if self.peer_known {
            return;
        }
        self.peer_known = true;
        self.encoder
            .set_peer_settings(max_table_capacity, blocked_streams);
    }

    /// Whether the peer's SETTINGS were applied.
    pub fn peer_settings_known(&self) -> bool {
        self.peer_known
    }

    /// Number of `:path` values.
    pub fn path_count(&self) -> usize {
        self.slots.len() - self.n_fixed
    }

    /// The connection's encoder (acknowledgment state, table).
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// Feeds the peer's decoder stream (acknowledgments, cancellations, increments).
    pub fn feed_decoder_stream(&mut self, bytes: &[u8]) -> Result<(), super::QpackError> {
        self.encoder.feed_decoder_stream(bytes)
    }

    /// `true` once the sections referencing the dynamic table are in use.
    pub fn uses_dynamic_table(&self) -> bool {
        self.mode == Mode::Ready
    }

    /// Appends the field section of the next request on `stream_id`, with
    /// `paths[path_index % path_count]`, to `section`, and any encoder-stream
    /// instructions to `encoder_stream` (only at the first request, in dynamic mode).
    /// Returns the section's length.
    pub fn encode_next(
        &mut self,
        stream_id: u64,
        path_index: usize,
        section: &mut Vec<u8>,
        encoder_stream: &mut Vec<u8>,
    ) -> usize {
        if self.mode == Mode::Start && self.peer_known {
            self.plan(encoder_stream);
        }
        if let Mode::Pending(n) = self.mode {
            if self.encoder.known_received_count() >= n {
                self.dynamic_sections = self.build(true);
                self.mode = Mode::Ready;
            }
        }
        let i = path_index % self.path_count();
        let (bytes, required, min_ref) = if self.mode == Mode::Ready && self.encoder.can_track() {
            self.dynamic_sections.get(i)
        } else {
            self.static_sections.get(i)
        };
        section.extend_from_slice(bytes);
        if required > 0 {
            self.encoder.track(stream_id, required, min_ref);
        }
        bytes.len()
    }

    fn plan(&mut self, encoder_stream: &mut Vec<u8>) {
        self.mode = Mode::Static;
        if !self.encoder.config().use_dynamic_table || self.encoder.planned_capacity() == 0 {
            return;
        }
        for s in &mut self.slots {
            if s.sensitive || matches!(s.stat, StaticMatch::Full(_)) {
                continue;
            }
            let static_name = match s.stat {
                StaticMatch::Name(i) => Some(i),
                _ => None,
            };
            s.abs =
                self.encoder
                    .insert_for_template(&s.name, &s.value, static_name, encoder_stream);
        }
        let n = self.encoder.table().insert_count();
        if n > 0 {
            self.mode = Mode::Pending(n);
        }
    }

    /// Precomputes one section per path (with or without the dynamic entries).
    fn build(&self, dynamic: bool) -> Sections {
        let mut out = Sections::default();
        let base = self.encoder.table().insert_count();
        let mut lines = Vec::new();
        for p in self.n_fixed..self.slots.len() {
            lines.clear();
            let (mut required, mut min_ref) = (0u64, u64::MAX);
            let order = (0..self.path_pos)
                .chain(std::iter::once(p))
                .chain(self.path_pos..self.n_fixed);
            for i in order {
                let Some(s) = self.slots.get(i) else { continue };
                match (s.stat, s.abs) {
                    (StaticMatch::Full(x), _) => integer::encode(x, 6, 0xc0, &mut lines),
                    (_, Some(abs)) if dynamic => {
                        // §4.5.2 Indexed Field Line, relative to Base.
                        integer::encode((base - 1 - abs) as usize, 6, 0x80, &mut lines);
                        required = required.max(abs + 1);
                        min_ref = min_ref.min(abs);
                    }
                    (StaticMatch::Name(x), _) => {
                        let n = u8::from(s.sensitive) << 5;
                        integer::encode(x, 4, 0x50 | n, &mut lines);
                        write_string(&s.value, 7, 0, &mut lines);
                    }
                    _ => {
                        let n = u8::from(s.sensitive) << 4;
                        write_string(&s.name, 3, 0x20 | n, &mut lines);
                        write_string(&s.value, 7, 0, &mut lines);
                    }
                }
            }
            self.encoder.write_prefix(required, base, &mut out.bytes);
            out.bytes.extend_from_slice(&lines);
            out.ends.push((out.bytes.len(), required, min_ref));
        }
        out
    }
}
