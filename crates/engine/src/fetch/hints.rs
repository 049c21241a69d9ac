//! `103 Early Hints` in the fetch client, as a browser acts on them (RFC 8297; the HTML
//! standard's "process early hint headers"): each `link: <path>; rel=preload` of an interim
//! response starts a request for `path` at once, in the running batch, unless that path is
//! already requested or preloaded; the 103 itself is never taken as the response. A later
//! [`Fetcher::fetch`] of a preloaded path (the HTML referencing it) uses the preload: its
//! record is the preload's, with the preload's times, and nothing is sent again.
//!
//! Limits: only same-origin paths (`</...>`) the fetcher was given are preloaded (its
//! pool serves one origin, so `rel=preconnect` changes nothing and is ignored); a batch
//! returns when its preloads are complete too, so sub-resources a page references beyond
//! the preloaded ones start after them (with Early Hints paying only when the page is
//! late, the preloads are usually done before the HTML arrives).

use std::collections::HashMap;

use super::events::{BatchState, Job};
use super::{FetchRecord, Fetcher};

/// Early Hints counters of a [`Fetcher`], cumulative since its creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HintStats {
    /// `link` field values received in `103 Early Hints` responses.
    pub links: u64,
    /// Requests started from them (preloads).
    pub preloads: u64,
    /// Preloads a later request used instead of being sent.
    pub used: u64,
}

/// Preloads finished in an earlier batch, waiting for the request that uses them.
#[derive(Debug, Default)]
pub(crate) struct Preloads {
    done: HashMap<usize, (FetchRecord, Vec<u8>)>,
    pub(crate) stats: HintStats,
}

impl Preloads {
    /// The hint `link` value arrived at `now`: queues a preload job in `st` for each
    /// `rel=preload` path `index` knows that is not requested or preloaded already.
    pub(super) fn on_hint(
        &mut self,
        link: &[u8],
        index: impl Fn(&[u8]) -> Option<usize>,
        st: &mut BatchState,
        now: std::time::Duration,
    ) {
        self.stats.links += 1;
        for path in preload_paths(link) {
            let Some(i) = index(path) else { continue };
            if self.done.contains_key(&i) || st.jobs.iter().any(|j| j.rec.path == i) {
                continue;
            }
            st.queue.push_back(st.jobs.len());
            st.jobs.push(Job::new(i, now));
            st.remaining += 1;
            self.stats.preloads += 1;
        }
    }
}

impl Fetcher {
    /// Early Hints counters (all zero unless the server sent `103 Early Hints`).
    pub fn hint_stats(&self) -> HintStats {
        self.pushes.preloads.stats
    }

    /// Serves job `k` from a finished preload of its path, if there is one.
    pub(super) fn claim_preload(&mut self, k: usize, st: &mut BatchState) -> bool {
        let Some(j) = st.jobs.get_mut(k) else {
            return false;
        };
        let Some((rec, body)) = self.pushes.preloads.done.remove(&j.rec.path) else {
            return false;
        };
        j.rec = rec;
        j.body = body;
        j.finished = true;
        st.remaining = st.remaining.saturating_sub(1);
        self.pushes.preloads.stats.used += 1;
        true
    }

    /// Keeps the batch's preload jobs (those past its `requested` ones) for later batches.
    pub(super) fn keep_preloads(&mut self, st: &mut BatchState, requested: usize) {
        for j in st.jobs.split_off(requested.min(st.jobs.len())) {
            if j.finished && j.rec.ok() {
                self.pushes
                    .preloads
                    .done
                    .insert(j.rec.path, (j.rec, j.body));
            }
        }
    }
}

/// The paths of the `rel=preload` entries of a `link` field value
/// (`</a.css>; rel=preload; as=style, </b.js>; rel="preload"; as=script`): same-origin
/// references (starting with `/`, not `//`) only.
pub(crate) fn preload_paths(link: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = link;
    std::iter::from_fn(move || loop {
        let open = rest.iter().position(|&b| b == b'<')?;
        let close = open + rest[open..].iter().position(|&b| b == b'>')?;
        let target = &rest[open + 1..close];
        let after = &rest[close + 1..];
        // The entry's parameters run to the next `,` outside the target.
        let end = after.iter().position(|&b| b == b',').unwrap_or(after.len());
        let params = &after[..end];
        rest = &after[end..];
        let preload = params.split(|&b| b == b';').any(|p| {
            let p = p.trim_ascii();
            p.len() > 4
                && p[..4].eq_ignore_ascii_case(b"rel=")
                && p[4..]
                    .trim_ascii()
                    .strip_prefix(b"\"")
                    .and_then(|v| v.strip_suffix(b"\""))
                    .unwrap_or(p[4..].trim_ascii())
                    .split(|&b| b == b' ')
                    .any(|r| r.eq_ignore_ascii_case(b"preload"))
        });
        if preload && target.starts_with(b"/") && !target.starts_with(b"//") {
            return Some(target);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::preload_paths;

    #[test]
    fn preload_entries_of_a_link_value() {
        let v = b"</a.css>; rel=preload; as=style, </b.js>; rel=\"preload\"; as=script, \
                  <https://cdn.example>; rel=preconnect, </c.png>; rel=prefetch, \
                  <//other/x.js>; rel=preload, </d,e.js>;REL=Preload";
        let got: Vec<&[u8]> = preload_paths(v).collect();
        assert_eq!(got, vec![&b"/a.css"[..], b"/b.js", b"/d,e.js"]);
        assert_eq!(preload_paths(b"").count(), 0);
        assert_eq!(preload_paths(b"</x>").count(), 0);
        assert_eq!(preload_paths(b"</x; rel=preload").count(), 0);
    }
}
