//! Server push in the fetch client: pushed responses kept per connection (a browser's
//! push cache), claimed by a later request for the same path instead of requesting it,
//! and counted (pushed streams, bytes used, bytes wasted).

use std::collections::HashMap;
use std::time::Duration;

/// Server push counters of a [`Fetcher`](super::Fetcher), cumulative since its creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushStats {
    /// Pushed streams (PUSH_PROMISEs accepted).
    pub streams: u64,
    /// Pushed response body bytes received.
    pub bytes: u64,
    /// Pushed body bytes of responses a request used instead of asking for them.
    pub bytes_used: u64,
    /// Pushed body bytes never used: not requested (yet), pushed twice, or cancelled.
    pub bytes_wasted: u64,
}

/// One pushed response.
#[derive(Debug, Clone)]
pub(crate) struct Pushed {
    pub conn: u32,
    pub stream: u32,
    /// Index of the pushed path in the fetcher's list (`None`: a path it does not know).
    pub path: Option<usize>,
    pub status: u16,
    pub bytes: u64,
    /// When the push ended.
    pub ended: Option<Duration>,
    pub complete: bool,
    /// A request used it.
    pub used: bool,
    /// The job of the running batch waiting for it to end.
    pub claimed: Option<usize>,
}

/// The pushed responses of every connection of a fetcher.
#[derive(Debug, Default)]
pub(crate) struct PushCache {
    paths: HashMap<Vec<u8>, usize>,
    pub entries: Vec<Pushed>,
    /// Responses started by `103 Early Hints` (the other way a server gets a page's
    /// assets going early), kept beside the pushed ones.
    pub preloads: super::hints::Preloads,
}

impl PushCache {
    pub fn new(paths: &[String]) -> Self {
        let mut map = HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            map.entry(p.as_bytes().to_vec()).or_insert(i);
        }
        PushCache {
            paths: map,
            entries: Vec::new(),
            preloads: Default::default(),
        }
    }

    /// The path lookup and the preloads, borrowed apart (for an Early Hint).
    pub fn split_for_hints(
        &mut self,
    ) -> (
        impl Fn(&[u8]) -> Option<usize> + '_,
        &mut super::hints::Preloads,
    ) {
        let paths = &self.paths;
        (move |p: &[u8]| paths.get(p).copied(), &mut self.preloads)
    }

    pub fn promise(&mut self, conn: u32, stream: u32, path: &[u8]) {
        self.entries.push(Pushed {
            conn,
            stream,
            path: self.paths.get(path).copied(),
            status: 0,
            bytes: 0,
            ended: None,
            complete: false,
            used: false,
            claimed: None,
        });
    }

    pub fn get(&mut self, conn: u32, stream: u32) -> Option<&mut Pushed> {
        self.entries
            .iter_mut()
            .rev()
            .find(|p| p.conn == conn && p.stream == stream)
    }

    /// An unused push of path `path` that can still serve a request (its connection
    /// is open, per `open`, and it was not cancelled).
    pub fn find(&mut self, path: usize, open: impl Fn(u32) -> bool) -> Option<&mut Pushed> {
        self.entries.iter_mut().find(|p| {
            p.path == Some(path) && !p.used && (p.complete || (p.ended.is_none() && open(p.conn)))
        })
    }

    pub fn stats(&self) -> PushStats {
        let mut s = PushStats::default();
        for p in &self.entries {
            s.streams += 1;
            s.bytes += p.bytes;
            if p.used {
                s.bytes_used += p.bytes;
            }
        }
        s.bytes_wasted = s.bytes - s.bytes_used;
        s
    }
}
