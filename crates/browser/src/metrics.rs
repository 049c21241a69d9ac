//! What a browser load measures, from the browser itself: the scripts evaluated in the page
//! (Navigation Timing, Paint Timing's First Contentful Paint, Resource Timing with every
//! resource's `nextHopProtocol`) and the connections counted from DevTools `Network` events.
//! All times are milliseconds from the navigation's start (`performance.timeOrigin`).

use std::collections::BTreeSet;

use serde_json::Value;

/// Run before the page's own scripts: room for every resource's timing entry (the default
/// buffer holds 250; a page of 304 images would silently lose some).
pub const PRELUDE: &str = "performance.setResourceTimingBufferSize(100000);";

/// Resolves (awaited by `Runtime.evaluate`) once the load event has ended and First
/// Contentful Paint was seen or 1 s passed without it, with the page's timings as JSON.
pub const COLLECT: &str = r#"new Promise(resolve => {
  const t0 = performance.now();
  const done = () => {
    const n = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    if (!n || n.loadEventEnd === 0 || (!fcp && performance.now() - t0 < 1000)) {
      setTimeout(done, 10);
      return;
    }
    resolve(JSON.stringify({
      responseEnd: n.responseEnd,
      domContentLoaded: n.domContentLoadedEventEnd,
      load: n.loadEventStart,
      fcp: fcp ? fcp.startTime : null,
      navProtocol: n.nextHopProtocol,
      resources: performance.getEntriesByType('resource').map(e =>
        [e.name, e.nextHopProtocol, e.startTime, e.responseEnd, e.requestStart, e.responseStart]),
    }));
  };
  done();
})"#;

/// Issues `n` parallel `fetch()` calls to the server's `/delay?ms=MS` (each URL unique, so
/// the browser's cache lock cannot serialise them) and resolves with the time until all
/// resolved, as in the seed's page: `Promise.all` of the fetches, timed by `performance.now`.
pub fn fetches_script(n: u32, delay_ms: u64) -> String {
    format!(
        r#"(async () => {{
  const t0 = performance.now();
  await Promise.all([...Array({n})].map((_, i) =>
    fetch('/delay?ms={delay_ms}&i=' + i + '&r=' + Math.random(), {{cache: 'no-store'}})
      .then(r => r.arrayBuffer())));
  const all = performance.now() - t0;
  return JSON.stringify({{
    all,
    start: t0,
    resources: performance.getEntriesByType('resource').map(e =>
      [e.name, e.nextHopProtocol, e.startTime, e.responseEnd, e.requestStart, e.responseStart]),
  }});
}})()"#
    )
}

/// One resource's Resource Timing entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceEntry {
    /// Its URL.
    pub url: String,
    /// `nextHopProtocol`: `http/1.1`, `h2`, `h3` (empty when the browser withholds it).
    pub protocol: String,
    /// When its fetch started (ms).
    pub start_ms: f64,
    /// When its response ended (ms).
    pub response_end_ms: f64,
    /// When the browser sent its request (ms; `requestStart`): after `start_ms` by the time
    /// it queued in the browser (scheduler, connection or stream limits) and, on a new
    /// connection, its handshake. 0 when the browser withheld it.
    pub request_start_ms: f64,
    /// When its response's first octet arrived (ms; `responseStart`). 0 when withheld.
    pub response_start_ms: f64,
}

/// One browser page load's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageLoad {
    /// Navigation start → the document's responseEnd (ms).
    pub response_end_ms: f64,
    /// Navigation start → DOMContentLoaded handlers finished (ms).
    pub dom_content_loaded_ms: f64,
    /// Navigation start → the load event (every image and script loaded) (ms).
    pub load_ms: f64,
    /// First Contentful Paint (ms), when the browser reported one.
    pub fcp_ms: Option<f64>,
    /// The fetch workload: time until all `fetch()` calls resolved (ms).
    pub fetch_all_ms: Option<f64>,
    /// The fetch workload: when the fetches started (ms from the navigation's start).
    pub fetch_start_ms: Option<f64>,
    /// The document's own `nextHopProtocol`.
    pub document_protocol: String,
    /// Every resource's timing entry.
    pub resources: Vec<ResourceEntry>,
    /// Distinct connections the browser's responses came over (DevTools `connectionId`);
    /// 0 when the load did not count them ([`crate::LoadOptions::count_connections`]).
    pub connections: usize,
    /// DevTools `Network` events received during the load (0 when the domain was off).
    pub network_events: usize,
    /// Their DevTools `connectionId`s (unique within one browser process).
    pub connection_ids: BTreeSet<u64>,
    /// Protocols DevTools reported for the responses.
    pub devtools_protocols: BTreeSet<String>,
    /// CPU time (user + system) every browser process used from the navigation until the
    /// figures were collected (ms): the browser's own cost of this load. `None` when
    /// `/proc` could not be read.
    pub cpu_ms: Option<f64>,
    /// CPU time the browser's processes used from their start until the figures were
    /// collected (ms): [`PageLoad::cpu_ms`] plus the start-up (and, for a repeat view, the
    /// first view).
    pub process_cpu_ms: Option<f64>,
    /// Wall time from the navigation until the figures were collected (ms), over which
    /// [`PageLoad::cpu_ms`] was spent: their ratio is how many cores the browser kept busy.
    pub window_ms: f64,
}

impl PageLoad {
    /// Resources (and the document) that used another protocol than `expected`: non-empty
    /// means the load is a protocol fallback and must not be measured as `expected`.
    pub fn off_protocol(&self, expected: &str) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .resources
            .iter()
            .filter(|r| r.protocol != expected)
            .map(|r| r.url.as_str())
            .collect();
        if !self.document_protocol.is_empty() && self.document_protocol != expected {
            v.insert(0, "(document)");
        }
        v
    }

    /// When the last response ended (ms): the latest `responseEnd` of the document and its
    /// resources — the network's share of the page time, without the browser's decoding,
    /// layout and paint after it (the simulated fetcher's page time ends there too). For the
    /// fetch workload: the latest fetch's `responseEnd` from the fetches' start.
    pub fn last_response_ms(&self) -> f64 {
        if let Some(start) = self.fetch_start_ms {
            return self
                .resources
                .iter()
                .map(|r| r.response_end_ms - start)
                .fold(0.0, f64::max);
        }
        self.resources
            .iter()
            .map(|r| r.response_end_ms)
            .fold(self.response_end_ms, f64::max)
    }

    /// When the browser sent its last request (ms): the latest `requestStart` of the
    /// resources (for the fetch workload from the fetches' start). Requests found early but
    /// sent late waited inside the browser (its scheduler, or a busy CPU), not for the
    /// network.
    pub fn last_request_ms(&self) -> f64 {
        let from = self.fetch_start_ms.unwrap_or(0.0);
        self.resources
            .iter()
            .map(|r| r.request_start_ms - from)
            .fold(0.0, f64::max)
    }

    /// The page time compared with the simulated fetcher's: the fetch workload's time when
    /// it ran, else the load event.
    pub fn page_ms(&self) -> f64 {
        self.fetch_all_ms.unwrap_or(self.load_ms)
    }
}

fn entries(v: &Value) -> Vec<ResourceEntry> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|e| ResourceEntry {
                    url: e[0].as_str().unwrap_or_default().to_string(),
                    protocol: e[1].as_str().unwrap_or_default().to_string(),
                    start_ms: e[2].as_f64().unwrap_or(0.0),
                    response_end_ms: e[3].as_f64().unwrap_or(0.0),
                    request_start_ms: e[4].as_f64().unwrap_or(0.0),
                    response_start_ms: e[5].as_f64().unwrap_or(0.0),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Fills `load` from [`COLLECT`]'s JSON.
pub fn apply_page(load: &mut PageLoad, json: &Value) {
    load.response_end_ms = json["responseEnd"].as_f64().unwrap_or(0.0);
    load.dom_content_loaded_ms = json["domContentLoaded"].as_f64().unwrap_or(0.0);
    load.load_ms = json["load"].as_f64().unwrap_or(0.0);
    load.fcp_ms = json["fcp"].as_f64();
    load.document_protocol = json["navProtocol"].as_str().unwrap_or_default().to_string();
    load.resources = entries(&json["resources"]);
}

/// Fills `load` from [`fetches_script`]'s JSON: only the fetches' entries are kept.
pub fn apply_fetches(load: &mut PageLoad, json: &Value) {
    load.fetch_all_ms = json["all"].as_f64();
    let start = json["start"].as_f64().unwrap_or(0.0);
    load.fetch_start_ms = Some(start);
    load.resources = entries(&json["resources"])
        .into_iter()
        .filter(|r| r.start_ms >= start && r.url.contains("/delay?"))
        .collect();
}

/// Counts the connections of the responses in DevTools events (`Network.responseReceived`'s
/// `response.connectionId`, for `origin`'s URLs) and notes their protocols.
pub fn apply_network_events(load: &mut PageLoad, events: &[Value], origin: &str) {
    let mut ids = BTreeSet::new();
    load.network_events = events
        .iter()
        .filter(|e| {
            e["method"]
                .as_str()
                .is_some_and(|m| m.starts_with("Network."))
        })
        .count();
    for e in events
        .iter()
        .filter(|e| e["method"] == "Network.responseReceived")
    {
        let r = &e["params"]["response"];
        if !r["url"].as_str().is_some_and(|u| u.starts_with(origin)) {
            continue;
        }
        if r["fromDiskCache"] == true || r["fromServiceWorker"] == true {
            continue;
        }
        if let Some(id) = r["connectionId"].as_f64() {
            ids.insert(id as u64);
        }
        if let Some(p) = r["protocol"].as_str() {
            load.devtools_protocols.insert(p.to_string());
        }
    }
    load.connections = ids.len();
    load.connection_ids = ids;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resource_on_another_protocol_flags_the_load() {
        let mut l = PageLoad::default();
        apply_page(
            &mut l,
            &json!({"responseEnd": 5.0, "domContentLoaded": 6.0, "load": 9.5, "fcp": 7.0,
                    "navProtocol": "h2",
                    "resources": [["https://a/1.png", "h2", 6.0, 8.0],
                                  ["https://a/2.png", "http/1.1", 6.0, 9.0]]}),
        );
        assert_eq!(l.load_ms, 9.5);
        assert_eq!(l.fcp_ms, Some(7.0));
        assert_eq!(l.off_protocol("h2"), vec!["https://a/2.png"]);
        // The document on h2, one image on HTTP/1.1: an HTTP/1.1 arm flags both others.
        assert_eq!(
            l.off_protocol("http/1.1"),
            vec!["(document)", "https://a/1.png"]
        );
    }

    #[test]
    fn the_last_response_is_the_latest_response_end_from_the_right_origin() {
        let mut l = PageLoad::default();
        apply_page(
            &mut l,
            &json!({"responseEnd": 5.0, "load": 20.0, "navProtocol": "h2",
                    "resources": [["https://a/1", "h2", 6.0, 12.0], ["https://a/2", "h2", 6.0, 9.0]]}),
        );
        assert_eq!(l.last_response_ms(), 12.0);
        // Fetches: from their start, not from the navigation's.
        apply_fetches(
            &mut l,
            &json!({"all": 2100.0, "start": 300.0,
                    "resources": [["https://a/x", "h2", 10.0, 20.0],
                                  ["https://a/delay?ms=2000&i=0", "h2", 301.0, 2350.0]]}),
        );
        assert_eq!(l.resources.len(), 1);
        assert_eq!(l.page_ms(), 2100.0);
        assert_eq!(l.last_response_ms(), 2050.0);
    }

    #[test]
    fn connections_are_distinct_ids_of_the_origin() {
        let ev = |url: &str, id: u64, p: &str| {
            json!({"method": "Network.responseReceived",
                   "params": {"response": {"url": url, "connectionId": id, "protocol": p}}})
        };
        let events = vec![
            ev("https://localhost:1/", 10, "http/1.1"),
            ev("https://localhost:1/a", 11, "http/1.1"),
            ev("https://localhost:1/b", 10, "http/1.1"),
            ev("data:image/png;base64,xx", 99, "data"),
        ];
        let mut l = PageLoad::default();
        apply_network_events(&mut l, &events, "https://localhost:1");
        assert_eq!(l.connections, 2);
        assert_eq!(l.devtools_protocols.len(), 1);
    }
}
