//! `h2lab page --repeat-view`: a first visit, then a returning visit, per protocol and round.
//!
//! Each round, each protocol loads the page twice back to back with a fresh TLS session
//! store ([`TlsSessions`]) kept between the two loads, as a browser keeps its sessions in
//! memory: the first view does full handshakes and receives tickets; the repeat view opens
//! new connections (the first view's are closed when it ends) that resume those sessions,
//! over TLS on TCP and over QUIC alike. Without `--0rtt` no early data is sent: the repeat
//! view's floor is the first view's ([`super::floor`]). With `--0rtt` (the built-in server
//! then accepts early data, `serve --0rtt`) the store's configuration enables early data
//! ([`TlsSessions::with_early_data`]) and the repeat view's connections send their first
//! requests as TLS 1.3 early data or QUIC 0-RTT; a rejection sends them again after the
//! handshake. The first view sends none, so it is the same visit with and without `--0rtt`;
//! the repeat view is read against the 0-RTT floor, and the HTML's first byte against the
//! floor's round trips.
//!
//! The cache: the fetcher keeps no HTTP cache, and the built-in server's page, images and
//! CSS/JS all answer `cache-control: no-store` with no validator (`etag`,
//! `last-modified`), which forbids a browser to reuse them — so the repeat view fetches
//! every object again, exactly as Chromium's does for this page. What it can save is the
//! full handshake's cost (certificate, signature), not bytes; a round trip per connection
//! only with `--0rtt`.
//!
//! Verdicts: per protocol, the repeat view against the first view on the per-round ratio
//! of page times (the two loads of a round ran back to back), and across protocols within
//! each view, with the lab's four outcomes ([`ci::faster_of`], [`ci::classify`]).

use std::sync::Arc;

use h2lab_engine::fetch::TlsSessions;
use serde::Serialize;

use super::browser::BrowserArms;
use super::floor::{self, Floor};
use super::load::{self, PageLoad, PoolSpec};
use super::{proto_page, ProtoPage, Ratio};
use crate::compare::verdicts::ratio_text;
use crate::error::PageError;
use crate::fmt;
use crate::link::LinkProfile;
use crate::proto::LabProtocol;
use crate::stats::ci::{self, Estimate, Outcome};

/// What the repeat view can reuse of the built-in page.
pub const BUILTIN_CACHE_NOTE: &str = "the built-in server answers cache-control: no-store with \
    no etag or last-modified for the page and every object, so the repeat view re-fetches \
    all of them (as a browser must); it resumes the TLS sessions only";

/// One protocol's two views.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtoViews {
    /// Protocol.
    pub proto: LabProtocol,
    /// The first views' median page time (ms; the loads are `PageReport::protocols`).
    pub first_median: Option<f64>,
    /// The repeat views.
    pub repeat: ProtoPage,
    /// Handshakes of the first views (all rounds) that offered a stored session: the store
    /// starts empty each round, so the first connection is a full handshake, but HTTP/1.1's
    /// later connections (opened once the HTML is in) resume it, as a browser's do.
    pub first_offered: u64,
    /// Handshakes of the repeat views that offered a stored session (TLS and QUIC).
    pub repeat_offered: u64,
    /// Repeat-view connections whose TLS handshake over TCP resumed (QUIC: not known to
    /// the client, see `repeat_offered`).
    pub repeat_resumed: u64,
    /// Connections the repeat views opened.
    pub repeat_connections: u64,
    /// Floor of the first view (median load's bytes).
    pub first_floor: Option<Floor>,
    /// Floor of the repeat view without early data (the same round trips).
    pub repeat_floor: Option<Floor>,
    /// Floor of the repeat view if its requests rode in 0-RTT (what `--0rtt` is read
    /// against).
    pub zero_rtt_floor: Option<Floor>,
    /// `--0rtt`: repeat-view connections that sent early data / 0-RTT (all rounds).
    pub repeat_early_offered: u64,
    /// `--0rtt`: of those, the ones whose early data the server accepted.
    pub repeat_early_accepted: u64,
    /// Median time to the HTML's first byte in the first views (ms).
    pub first_html_first_byte_ms: Option<f64>,
    /// Median time to the HTML's first byte in the repeat views (ms): with `--0rtt` read
    /// against `zero_rtt_floor.first_byte_ms`, else against `repeat_floor.first_byte_ms`.
    pub repeat_html_first_byte_ms: Option<f64>,
    /// The HTML's first byte, repeat view against first view, paired by round: what
    /// resumption (and with `--0rtt` early data) changed before the first byte, where a
    /// round trip saved shows without the rest of the page's noise.
    pub first_byte_verdict: Option<ViewVerdict>,
    /// Repeat view against first view: per-round ratio first / repeat (above 1: the repeat
    /// view was faster), its CI and outcome; which one was faster.
    pub verdict: Option<ViewVerdict>,
}

/// The repeat view against the first view of one protocol.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewVerdict {
    /// `repeat` or `first`: the faster view.
    pub faster: &'static str,
    /// Per-round ratio slower / faster with its 95% CI and rounds.
    pub ratio: Option<Estimate>,
    /// Win, slight, parity or undecided.
    pub outcome: Outcome,
}

/// One browser arm's two views (`--browser`): both in one Chromium process, its socket
/// pools flushed between them ([`h2lab_browser::load_views`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrowserViews {
    /// Protocol.
    pub proto: LabProtocol,
    /// First views' load-event times by round (ms; `None`: failed or a protocol fallback).
    pub first_ms: Vec<Option<f64>>,
    /// Repeat views' load-event times by round (ms).
    pub repeat_ms: Vec<Option<f64>>,
    /// Repeat views whose responses all came over connections the first view did not use.
    pub new_connections: usize,
    /// Repeat views measured.
    pub repeats: usize,
    /// Repeat view against first view, paired by round.
    pub verdict: Option<ViewVerdict>,
}

/// The repeat-view experiment (`PageReport::repeat_view`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatReport {
    /// Per protocol.
    pub protocols: Vec<ProtoViews>,
    /// The browser arms (`--browser`), per protocol.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub browser: Vec<BrowserViews>,
    /// Across protocols, repeat views (the first views' ratio is `PageReport::ratio`).
    pub ratio: Option<Ratio>,
    /// What the repeat view could reuse.
    pub cache: String,
    /// `--0rtt`: the repeat views sent their first requests as early data / 0-RTT.
    pub zero_rtt: bool,
}

/// Collects the views of every round (`Views::load` in the round loop, then
/// [`Views::finish`]).
#[derive(Debug, Default)]
pub struct Views {
    on: bool,
    zero_rtt: bool,
    /// Protocol `j`'s HTML first-byte times (ms): first views, repeat views.
    first_byte: Vec<(Vec<f64>, Vec<f64>)>,
    /// `repeat[j][i]`: protocol `j`'s repeat view of round `i`.
    repeat: Vec<Vec<Option<PageLoad>>>,
    errors: Vec<Option<String>>,
    counts: Vec<[u64; 6]>,
}

impl Views {
    /// `on`: `--repeat-view`; `zero_rtt`: `--0rtt`; `protocols`: the pools' count.
    pub fn new(on: bool, zero_rtt: bool, protocols: usize) -> Views {
        Views {
            on,
            zero_rtt,
            first_byte: vec![(Vec::new(), Vec::new()); protocols],
            repeat: vec![Vec::new(); protocols],
            errors: vec![None; protocols],
            counts: vec![[0; 6]; protocols],
        }
    }

    /// Protocol `j`'s load of this round: the first view (returned) and, when on, the
    /// repeat view right after it on the same session store (kept here).
    pub fn load(
        &mut self,
        j: usize,
        pool: &PoolSpec,
        paths: &[String],
        log: &mut dyn FnMut(&str),
    ) -> Result<PageLoad, PageError> {
        if !self.on {
            return load::load_page(pool, paths);
        }
        let store = Arc::new(if self.zero_rtt {
            TlsSessions::with_early_data()
        } else {
            TlsSessions::new()
        });
        let cfg = |zero_rtt: bool| {
            let mut c = pool.fetch_config();
            c.sessions = Some(Arc::clone(&store));
            c.zero_rtt = zero_rtt;
            c
        };
        let first = load::load_page_with(pool, cfg(false), paths)?;
        let offered = store.counts().offered;
        let repeat = load::load_page_with(pool, cfg(self.zero_rtt), paths);
        let c = &mut self.counts[j];
        c[0] += offered;
        match repeat {
            Ok(r) => {
                c[1] += store.counts().offered - offered;
                c[2] += r.conns.iter().filter(|x| x.resumed).count() as u64;
                c[3] += r.conns.len() as u64;
                let early = r.conns.iter().filter(|x| x.early_data.is_some()).count();
                let accepted = r
                    .conns
                    .iter()
                    .filter(|x| x.early_data == Some(true))
                    .count();
                c[4] += early as u64;
                c[5] += accepted as u64;
                if let (Some(a), Some(b)) = (html_first_byte(&first), html_first_byte(&r)) {
                    self.first_byte[j].0.push(a);
                    self.first_byte[j].1.push(b);
                }
                let zero = if self.zero_rtt {
                    format!(", 0-RTT {accepted}/{early} accepted")
                } else {
                    String::new()
                };
                log(&format!(
                    "  repeat view {:<16} {:>9}  {} connection(s), {} resumed{zero}",
                    pool.proto.label(),
                    fmt::ms(r.page_ms),
                    r.connections,
                    if pool.proto.is_h3() && !self.zero_rtt {
                        format!("{} offered", store.counts().offered - offered)
                    } else {
                        r.conns.iter().filter(|x| x.resumed).count().to_string()
                    }
                ));
                self.repeat[j].push(Some(r));
            }
            Err(e) => {
                log(&format!("  repeat view {}: {e}", pool.proto.label()));
                self.errors[j].get_or_insert(e.to_string());
                self.repeat[j].push(None);
            }
        }
        Ok(first)
    }

    /// The first view failed: its round has no repeat view either.
    pub fn skip(&mut self, j: usize) {
        if self.on {
            self.repeat[j].push(None);
        }
    }

    /// The report (`None` when off): `first` are the first views, per pool; `browser` the
    /// browser arms, if any.
    pub fn finish(
        self,
        pools: &[PoolSpec],
        first: &[ProtoPage],
        link: LinkProfile,
        equivalence: f64,
        browser: Option<&BrowserArms>,
    ) -> Option<RepeatReport> {
        if !self.on {
            return None;
        }
        let mut out = Vec::new();
        for ((((pool, rounds), error), c), (fb1, fb2)) in pools
            .iter()
            .zip(self.repeat)
            .zip(self.errors)
            .zip(self.counts)
            .zip(self.first_byte)
        {
            let Some(f) = first.iter().find(|p| p.proto == pool.proto) else {
                continue;
            };
            let repeat = proto_page(pool.proto, pool, rounds, error);
            let fl = |p: &ProtoPage, zero: bool| {
                p.median_load
                    .as_ref()
                    .map(|l| floor::page_floor(link, p.proto, zero, 0.0, l.bytes.read))
            };
            out.push(ProtoViews {
                proto: pool.proto,
                first_median: f.page_ms.map(|m| m.median),
                first_floor: fl(f, false),
                repeat_floor: fl(&repeat, false),
                zero_rtt_floor: fl(&repeat, true),
                verdict: view_verdict(f, &repeat, equivalence),
                repeat,
                first_offered: c[0],
                repeat_offered: c[1],
                repeat_resumed: c[2],
                repeat_connections: c[3],
                repeat_early_offered: c[4],
                repeat_early_accepted: c[5],
                first_byte_verdict: first_byte_verdict(pool.proto, &fb1, &fb2, equivalence),
                first_html_first_byte_ms: median(&fb1),
                repeat_html_first_byte_ms: median(&fb2),
            });
        }
        let repeats: Vec<ProtoPage> = out.iter().map(|v| v.repeat.clone()).collect();
        Some(RepeatReport {
            ratio: Ratio::of_pages(&repeats, equivalence, "repeat view"),
            protocols: out,
            browser: browser.map_or_else(Vec::new, |b| browser_views(b, equivalence)),
            cache: BUILTIN_CACHE_NOTE.into(),
            zero_rtt: self.zero_rtt,
        })
    }
}

/// When the HTML's first byte arrived in `load` (ms from its start).
fn html_first_byte(load: &PageLoad) -> Option<f64> {
    load.timeline
        .iter()
        .find(|t| t.path == 0)
        .map(|t| t.first_byte_ms)
}

/// The repeat views' HTML first byte against the first views' (`first[i]`, `repeat[i]`:
/// round `i`'s pair).
fn first_byte_verdict(
    proto: LabProtocol,
    first: &[f64],
    repeat: &[f64],
    equivalence: f64,
) -> Option<ViewVerdict> {
    if first.is_empty() {
        return None;
    }
    let opt = |v: &[f64]| v.iter().copied().map(Some).collect::<Vec<_>>();
    let seed = ci::seed_for(&format!("page repeat view first byte {}", proto.name()));
    let (ratio, swapped, outcome) = ci::faster_of(&opt(repeat), &opt(first), seed, equivalence);
    Some(ViewVerdict {
        faster: if swapped { "first" } else { "repeat" },
        ratio,
        outcome,
    })
}

fn median(v: &[f64]) -> Option<f64> {
    crate::stats::MedianSpread::of(v).map(|m| m.median)
}

/// The browser arms' two views, paired by round (fallback loads left out).
fn browser_views(b: &BrowserArms, equivalence: f64) -> Vec<BrowserViews> {
    let ms = |l: &Option<h2lab_browser::PageLoad>, a: &super::browser::BrowserArm| {
        l.as_ref()
            .filter(|l| l.off_protocol(a.protocol().next_hop()).is_empty())
            .map(|l| l.page_ms())
    };
    b.arms
        .iter()
        .map(|a| {
            let first_ms: Vec<Option<f64>> = a.rounds.iter().map(|l| ms(l, a)).collect();
            let mut repeat_ms: Vec<Option<f64>> = a.repeats.iter().map(|l| ms(l, a)).collect();
            repeat_ms.resize(first_ms.len().max(repeat_ms.len()), None);
            let pairs = a.rounds.iter().zip(&a.repeats);
            let new_connections = pairs
                .clone()
                .filter(|(f, r)| match (f, r) {
                    (Some(f), Some(r)) => {
                        !r.connection_ids.is_empty()
                            && f.connection_ids.is_disjoint(&r.connection_ids)
                    }
                    _ => false,
                })
                .count();
            let seed = ci::seed_for(&format!("page repeat view browser {}", a.proto.name()));
            let (ratio, swapped, outcome) = ci::faster_of(&repeat_ms, &first_ms, seed, equivalence);
            BrowserViews {
                proto: a.proto,
                repeats: a.repeats.iter().filter(|r| r.is_some()).count(),
                new_connections,
                verdict: Some(ViewVerdict {
                    faster: if swapped { "first" } else { "repeat" },
                    ratio,
                    outcome,
                }),
                first_ms,
                repeat_ms,
            }
        })
        .collect()
}

/// Page times of `p` by round (`None`: no complete load).
fn by_round(p: &ProtoPage, rounds: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; rounds];
    for l in p.loads.iter().filter(|l| l.failed == 0) {
        if let Some(slot) = v.get_mut(l.round as usize) {
            *slot = Some(l.page_ms);
        }
    }
    v
}

/// The repeat view against the first view, paired by round.
fn view_verdict(first: &ProtoPage, repeat: &ProtoPage, equivalence: f64) -> Option<ViewVerdict> {
    let rounds = first
        .loads
        .iter()
        .chain(&repeat.loads)
        .map(|l| l.round as usize + 1)
        .max()?;
    let (f, r) = (by_round(first, rounds), by_round(repeat, rounds));
    let seed = ci::seed_for(&format!("page repeat view {}", first.proto.name()));
    // Presumed: the repeat view is the faster one (slower / faster = first / repeat).
    let (ratio, swapped, outcome) = ci::faster_of(&r, &f, seed, equivalence);
    Some(ViewVerdict {
        faster: if swapped { "first" } else { "repeat" },
        ratio,
        outcome,
    })
}

/// The terminal section.
pub fn render_text(r: &RepeatReport, link: &str) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nRepeat view: each round, a first visit (full handshakes) and right after it a \
         returning visit on new connections that resume its TLS sessions ({}); link \
         {link}\nCache: {}\n",
        if r.zero_rtt {
            "--0rtt: their first requests in TLS 1.3 early data / QUIC 0-RTT"
        } else {
            "no 0-RTT"
        },
        r.cache
    );
    let mut head = vec![
        "protocol".to_owned(),
        ">first view".into(),
        ">×floor".into(),
        ">repeat view".into(),
        ">×floor".into(),
        ">resumed".into(),
    ];
    if r.zero_rtt {
        head.push(">0-RTT".into());
    }
    head.extend([
        ">1st byte first/repeat".into(),
        ">floor RTTs (0-RTT)".into(),
    ]);
    let mut rows = vec![head];
    let med = |p: &ProtoPage| p.page_ms.map(|m| m.median);
    for v in &r.protocols {
        let first = v.first_median;
        let repeat_floor = if r.zero_rtt {
            v.zero_rtt_floor
        } else {
            v.repeat_floor
        };
        let mut row = vec![
            v.proto.label().into(),
            first.map_or("-".into(), fmt::ms),
            vs(first, v.first_floor),
            med(&v.repeat).map_or("-".into(), fmt::ms),
            vs(med(&v.repeat), repeat_floor),
            format!(
                "{}/{}",
                if v.proto.is_h3() {
                    v.repeat_offered
                } else {
                    v.repeat_resumed
                },
                v.repeat_connections
            ),
        ];
        if r.zero_rtt {
            row.push(format!(
                "{}/{}",
                v.repeat_early_accepted, v.repeat_early_offered
            ));
        }
        row.extend([
            format!(
                "{} / {}",
                v.first_html_first_byte_ms.map_or("-".into(), fmt::ms),
                v.repeat_html_first_byte_ms.map_or("-".into(), fmt::ms)
            ),
            v.repeat_floor.map_or("-".into(), |f| {
                format!(
                    "{} ({})",
                    f.first_byte_rtts,
                    v.zero_rtt_floor.map_or(0, |z| z.first_byte_rtts)
                )
            }),
        ]);
        rows.push(row);
    }
    s.push_str(&fmt::table(&rows));
    for v in &r.protocols {
        for (what, d) in [
            ("", &v.verdict),
            ("HTML first byte: ", &v.first_byte_verdict),
        ] {
            let Some(d) = d else { continue };
            let ci = d
                .ratio
                .as_ref()
                .map_or(String::new(), |e| format!(" {} n={}", ratio_text(e), e.n));
            let _ = writeln!(
                s,
                "{}: {what}{} view faster{ci}: {}",
                v.proto.label(),
                d.faster,
                d.outcome.name()
            );
        }
    }
    if let Some(ratio) = &r.ratio {
        let _ = writeln!(
            s,
            "{}",
            super::output::ratio_line(ratio, "loads the repeat view")
        );
    }
    browser_text(&mut s, &r.browser);
    let _ = writeln!(
        s,
        "resumed: repeat-view handshakes that resumed / connections (HTTP/3 without --0rtt: \
         that offered a ticket; the QUIC client learns that the server took it only from \
         accepted 0-RTT). 0-RTT: accepted / sent, the repeat-view connections whose early \
         data the server accepted / that sent some. 1st byte: the HTML's, median. Floors: round trips to the HTML's first byte, one more \
         for the objects, bytes over the link rate; with --0rtt the repeat view is read \
         against the 0-RTT floor."
    );
    s
}

fn vs(m: Option<f64>, f: Option<Floor>) -> String {
    match (m, f) {
        (Some(m), Some(f)) => floor::versus(m, f.page_ms),
        _ => "-".into(),
    }
}

/// The browser arms' views as a table (nothing without `--browser`).
fn browser_text(s: &mut String, views: &[BrowserViews]) {
    use std::fmt::Write as _;
    if views.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nChromium: both views in one browser process and profile; between them its socket \
         pools are flushed (chrome://net-internals), its HTTP cache and TLS session cache are \
         kept; page = load event"
    );
    let med = |v: &[Option<f64>]| {
        let x: Vec<f64> = v.iter().flatten().copied().collect();
        crate::stats::MedianSpread::of(&x).map_or("-".into(), |m| fmt::ms(m.median))
    };
    let mut rows = vec![vec![
        "protocol".to_owned(),
        ">first view".into(),
        ">repeat view".into(),
        ">new connections".into(),
        "verdict".into(),
    ]];
    for b in views {
        let verdict = b.verdict.as_ref().map_or("-".into(), |d| {
            let ci = d
                .ratio
                .as_ref()
                .map_or(String::new(), |e| format!(" {} n={}", ratio_text(e), e.n));
            format!("{} view faster{ci}: {}", d.faster, d.outcome.name())
        });
        rows.push(vec![
            format!("chromium {}", b.proto.label()),
            med(&b.first_ms),
            med(&b.repeat_ms),
            format!("{}/{}", b.new_connections, b.repeats),
            verdict,
        ]);
    }
    s.push_str(&fmt::table(&rows));
}
