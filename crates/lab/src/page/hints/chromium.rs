//! Chromium arms of the Early Hints experiment (`--browser`): the same page from the same
//! two servers through the same links, loaded by headless Chromium (a fresh profile per
//! load, [`h2lab_browser::load`]) over HTTP/2 and HTTP/3 — the protocols on which Chromium
//! acts on a 103 — alternated with the simulated arms; on a packet path Chromium runs on the
//! client side (it is started while the thread is there). Render is when the document and its
//! CSS/JS had all ended (Resource Timing `responseEnd`), page the load event; a load where
//! a resource came over another protocol is left out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use h2lab_browser::{load, BrowserSpec, LoadOptions, Protocol, Workload};

use super::HintArm;
use crate::error::LabError;
use crate::netpath::PathCounters;
use crate::page::render::path::{self, Reach};
use crate::proto::LabProtocol;
use crate::stats::MedianSpread;

/// One Chromium arm: a protocol, with or without hints, and its loads.
pub(super) struct ChromiumArm {
    proto: LabProtocol,
    hints: bool,
    opts: LoadOptions,
    loads: Vec<(Figures, u32)>,
    error: Option<String>,
    path: Option<PathCounters>,
}

/// One load's figures: (render ms, page ms).
pub(super) type Figures = (f64, f64);

/// Why one Chromium load is left out of its arm.
#[derive(Debug)]
pub(super) enum LeftOut {
    /// The browser could not load the page.
    Browser(h2lab_browser::BrowserError),
    /// This many resources came over another protocol than the arm's.
    Fallback(usize),
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftOut::Browser(e) => write!(f, "{e}"),
            LeftOut::Fallback(n) => write!(f, "protocol fallback: {n} resource(s)"),
        }
    }
}

impl std::error::Error for LeftOut {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LeftOut::Browser(e) => Some(e),
            LeftOut::Fallback(_) => None,
        }
    }
}

impl ChromiumArm {
    /// Arms for the HTTP/2 and HTTP/3 of `protos`, each with and without hints; `servers`:
    /// (hints, certificate, how it is reached) of the two servers.
    pub(super) fn all(
        binary: &Path,
        protos: &[LabProtocol],
        servers: [(bool, &Path, &Reach); 2],
        path: &str,
        timeout: Duration,
    ) -> Result<Vec<ChromiumArm>, LabError> {
        let spec = BrowserSpec {
            binary: PathBuf::from(binary),
            cpus: None,
            extra_args: Vec::new(),
        };
        let mut out = Vec::new();
        for &p in protos {
            let protocol = match p {
                LabProtocol::H2 => Protocol::H2,
                LabProtocol::H3 => Protocol::H3,
                _ => continue,
            };
            for (hints, cert, reach) in servers {
                let addr = if p.is_h3() {
                    reach
                        .udp
                        .ok_or(LabError::NoAddress("the server or its link has no UDP"))?
                } else {
                    reach.tcp
                };
                let pin = h2lab_browser::spki::pin_of_pem_file(cert).map_err(LabError::Browser)?;
                out.push(ChromiumArm {
                    proto: p,
                    hints,
                    opts: LoadOptions {
                        spec: spec.clone(),
                        protocol,
                        host: "localhost".into(),
                        addr,
                        spki_pin: pin,
                        workload: Workload::Page(path.to_owned()),
                        timeout,
                        count_connections: true,
                    },
                    loads: Vec::new(),
                    error: None,
                    path: None,
                });
            }
        }
        Ok(out)
    }

    /// Whether its server sends hints.
    pub(super) fn hints(&self) -> bool {
        self.hints
    }

    /// Adds what the path counted during a load.
    pub(super) fn count(&mut self, before: Option<PathCounters>, after: Option<PathCounters>) {
        path::add(&mut self.path, before, after);
    }

    /// Round `round`'s load, logged and kept (or its error).
    pub(super) fn round(&mut self, round: usize, link: &str, of: u32, log: &mut dyn FnMut(&str)) {
        let what = format!(
            "chromium {} {}",
            self.proto.label(),
            if self.hints { "hints" } else { "no hints" }
        );
        match self.run() {
            Ok(f) => {
                log(&format!(
                    "  {link} load {}/{of} {what:<34} render {:>9}  page {:>9}",
                    round + 1,
                    crate::fmt::ms(f.0),
                    crate::fmt::ms(f.1)
                ));
                self.loads.push((f, round as u32));
            }
            Err(e) => {
                let e = e.to_string();
                log(&format!("  {link} {what}: {e}"));
                self.error.get_or_insert(e);
            }
        }
    }

    /// The arm's result; its floor is the simulated arm's of the same protocol and server.
    pub(super) fn result(self, sims: &[HintArm]) -> HintArm {
        let render: Vec<f64> = self.loads.iter().map(|x| x.0 .0).collect();
        let page: Vec<f64> = self.loads.iter().map(|x| x.0 .1).collect();
        let page_ms = MedianSpread::of(&page);
        HintArm {
            proto: self.proto,
            hints: self.hints,
            browser: true,
            render_ms: MedianSpread::of(&render),
            page_ms,
            loads: self.loads.iter().map(|x| (x.0 .0, x.0 .1)).collect(),
            load_rounds: self.loads.iter().map(|x| x.1).collect(),
            preloaded: None,
            floor: sims
                .iter()
                .find(|a| a.proto == self.proto && a.hints == self.hints)
                .and_then(|a| a.floor),
            error: self.error,
            path: self.path,
        }
    }

    /// One load; `Err` names why it is left out.
    fn run(&self) -> Result<Figures, LeftOut> {
        let l = load(&self.opts).map_err(LeftOut::Browser)?;
        let off = l.off_protocol(self.opts.protocol.next_hop());
        if !off.is_empty() {
            return Err(LeftOut::Fallback(off.len()));
        }
        let blocking = |u: &str| {
            let p = u.split('?').next().unwrap_or(u);
            p.ends_with(".css") || p.ends_with(".js")
        };
        let assets = l.resources.iter().filter(|r| blocking(&r.url));
        let render = assets
            .map(|r| r.response_end_ms)
            .fold(l.response_end_ms, f64::max);
        Ok((render, l.load_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A load left out for a protocol fallback is told by its kind; the arm records the text.
    #[test]
    fn a_fallback_is_a_typed_reason_with_its_count() {
        let e = LeftOut::Fallback(3);
        assert!(matches!(e, LeftOut::Fallback(3)));
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(e.to_string(), "protocol fallback: 3 resource(s)");
    }
}
