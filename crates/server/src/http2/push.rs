//! HTTP/2 server push for `/page` (`--push`, RFC 9113 §8.4): the page's render-blocking
//! stylesheets and scripts are promised on the page's stream before its response head,
//! and each promised request is answered by the same router as a requested one.
//!
//! Pushes happen only when the client allows them (SETTINGS_ENABLE_PUSH, checked by
//! [`Connection::can_push`](h2lab_wire::h2::Connection::can_push)) and within its
//! SETTINGS_MAX_CONCURRENT_STREAMS; a pushed stream the client cancels with RST_STREAM is
//! closed like any reset stream. Images are not pushed: the page names only its CSS and JS
//! as `rel=preload`, as a site configured for push would.

use std::io::Write as _;

use h2lab_wire::frame::StreamId;

use super::{StreamPhase, H2};
use crate::ctx::Ctx;
use crate::endpoints::{split_target, PageParams};
use crate::out::Out;

impl H2 {
    /// Pushes the render-blocking assets of the `/page` requested by `target` on stream
    /// `parent` and returns the `link` header value naming them (`rel=preload`), empty
    /// when the page has none.
    pub(super) fn push_page(
        &mut self,
        parent: StreamId,
        target: &[u8],
        authority: &[u8],
        ctx: &mut Ctx<'_>,
        out: &mut Out,
    ) -> Vec<u8> {
        let (_, query) = split_target(target);
        let Some(page) = PageParams::parse(query) else {
            return Vec::new();
        };
        let scheme: &[u8] = if self.tls { b"https" } else { b"http" };
        let mut link = Vec::new();
        let mut path = Vec::new();
        for (i, size, ext) in page.blocking_assets() {
            path.clear();
            let _ = write!(path, "/asset/{}/{i}-{size}.{ext}", page.seed);
            if !link.is_empty() {
                link.extend_from_slice(b", ");
            }
            let kind = if ext == "css" { "style" } else { "script" };
            link.push(b'<');
            link.extend_from_slice(&path);
            let _ = write!(link, ">; rel=preload; as={kind}");
            if !self.conn.can_push() {
                continue;
            }
            let fields: [(&[u8], &[u8]); 4] = [
                (b":method", b"GET"),
                (b":scheme", scheme),
                (b":path", &path),
                (b":authority", authority),
            ];
            let Ok(promised) = self
                .conn
                .send_push_promise_fields(parent, &fields, out.bytes())
            else {
                continue;
            };
            let slot = self.app.open(promised);
            let Some(s) = self.app.slots.get_mut(slot) else {
                continue;
            };
            for (name, value) in [(&b":method"[..], &b"GET"[..]), (b":path", &path)] {
                pack(&mut s.fields, name, value);
            }
            s.fields_done = true;
            s.phase = StreamPhase::Receiving;
            // The pushed response shares the page's priority.
            if let Some(prio) = self.app.slot(parent).map(|p| p.prio) {
                if let Some(s) = self.app.slots.get_mut(slot) {
                    s.prio = prio;
                }
            }
            self.answer(promised, ctx, out);
        }
        link
    }
}

/// Appends one field in the slot's packed layout (`[name_len u16][value_len u32][name][value]`).
fn pack(fields: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let nl = u16::try_from(name.len()).unwrap_or(u16::MAX);
    let vl = u32::try_from(value.len()).unwrap_or(u32::MAX);
    fields.extend_from_slice(&nl.to_be_bytes());
    fields.extend_from_slice(&vl.to_be_bytes());
    fields.extend_from_slice(name.get(..nl as usize).unwrap_or_default());
    fields.extend_from_slice(value.get(..vl as usize).unwrap_or_default());
}
