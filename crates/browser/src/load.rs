//! One browser load: start a fresh browser forced onto the arm's protocol, attach to its
//! page, load the workload, collect the figures, close it (and on any error or panic the
//! process group is killed and the profile removed by [`Running`]'s `Drop`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cdp::Cdp;
use crate::launch::{BrowserSpec, Running};
use crate::metrics::{self, PageLoad};
use crate::{BrowserError, Protocol};

/// What the page does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// Load the page at this path (and everything it references); the load event ends it.
    Page(String),
    /// Load `path`, then issue `n` parallel `fetch()` calls to `/delay?ms=delay_ms` and time
    /// until all resolved (the seed's slow-endpoint page).
    Fetches {
        /// The page loaded first (any page of the origin).
        path: String,
        /// Parallel fetches.
        n: u32,
        /// The server's delay per fetch (ms).
        delay_ms: u64,
    },
}

/// One load's parameters.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The browser.
    pub spec: BrowserSpec,
    /// The protocol the browser is forced onto.
    pub protocol: Protocol,
    /// The host name in the URL (the certificate's name); the browser resolves it to
    /// `addr`'s IP (`--host-resolver-rules`).
    pub host: String,
    /// Where the server (or the link in front of it) listens: TCP for HTTP/1.1 and HTTP/2,
    /// UDP for HTTP/3.
    pub addr: SocketAddr,
    /// The server certificate's SPKI pin ([`crate::spki`]).
    pub spki_pin: String,
    /// The workload.
    pub workload: Workload,
    /// Longest the whole load may take.
    pub timeout: Duration,
    /// Count the connections the browser opened (DevTools `Network` domain). It is not free:
    /// the browser then serialises half a dozen events per request and keeps every response
    /// for DevTools — about 1.3 s of CPU on a load of 300 images on a 2-vCPU VM, a third of
    /// the browser's own CPU — so measured loads may leave it off and count on a separate
    /// check load.
    pub count_connections: bool,
}

impl LoadOptions {
    /// `https://host:port`.
    pub fn origin(&self) -> String {
        format!("https://{}:{}", self.host, self.addr.port())
    }

    /// The switches that force the protocol and trust the certificate.
    pub fn switches(&self) -> Vec<String> {
        let mut a = vec![
            format!("--ignore-certificate-errors-spki-list={}", self.spki_pin),
            format!(
                "--host-resolver-rules=MAP {} {}",
                self.host,
                match self.addr {
                    SocketAddr::V4(a) => a.ip().to_string(),
                    SocketAddr::V6(a) => format!("[{}]", a.ip()),
                }
            ),
        ];
        match self.protocol {
            // No QUIC at all: an alt-svc header cannot move the load to HTTP/3.
            Protocol::H1 | Protocol::H2 => a.push("--disable-quic".into()),
            Protocol::H3 => {
                a.push("--enable-quic".into());
                a.push(format!(
                    "--origin-to-force-quic-on={}:{}",
                    self.host,
                    self.addr.port()
                ));
            }
        }
        a
    }
}

/// Loads the workload once in a fresh browser and returns what it measured. The caller
/// judges [`PageLoad::off_protocol`] (a fallback is a result, not an error).
pub fn load(o: &LoadOptions) -> Result<PageLoad, BrowserError> {
    let deadline = Instant::now() + o.timeout;
    let (running, mut cdp, session) = open(o, deadline)?;
    let result = view(&running, &mut cdp, &session, o, deadline)?;
    close(cdp, running);
    Ok(result)
}

/// A DevTools connection to a started browser.
pub(crate) type Devtools = Cdp<std::process::ChildStdin>;

/// Starts the browser and attaches to its page with `Page` and `Runtime` enabled (and
/// `Network` when the load counts connections) and the metrics prelude installed.
pub(crate) fn open(
    o: &LoadOptions,
    deadline: Instant,
) -> Result<(Running, Devtools, String), BrowserError> {
    let mut running = Running::start(&o.spec, &o.switches())?;
    let (Some(out), Some(input)) = (running.commands.take(), running.messages.take()) else {
        return Err(BrowserError::Closed);
    };
    let mut cdp = Cdp::new(out, input);
    let session = attach(&mut cdp, deadline)?;
    let s = Some(session.as_str());
    cdp.call(s, "Page.enable", json!({}), deadline)?;
    if o.count_connections {
        cdp.call(s, "Network.enable", json!({}), deadline)?;
    }
    cdp.call(s, "Runtime.enable", json!({}), deadline)?;
    cdp.call(
        s,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": metrics::PRELUDE }),
        deadline,
    )?;
    Ok((running, cdp, session))
}

/// Navigates the attached page to `url` and waits for its load event.
pub(crate) fn navigate(
    cdp: &mut Devtools,
    session: &str,
    url: &str,
    deadline: Instant,
) -> Result<(), BrowserError> {
    let nav = cdp.call(
        Some(session),
        "Page.navigate",
        json!({ "url": url }),
        deadline,
    )?;
    if let Some(e) = nav.get("errorText").and_then(Value::as_str) {
        return Err(BrowserError::Cdp("Page.navigate".into(), e.to_string()));
    }
    cdp.wait_event("Page.loadEventFired", deadline)?;
    Ok(())
}

/// One view of the workload in the open browser: navigate, wait for the load event,
/// collect the figures (the DevTools events since the last view are taken), and the CPU
/// time the browser's processes used meanwhile.
pub(crate) fn view(
    running: &Running,
    cdp: &mut Devtools,
    session: &str,
    o: &LoadOptions,
    deadline: Instant,
) -> Result<PageLoad, BrowserError> {
    let s = Some(session);
    let path = match &o.workload {
        Workload::Page(p) | Workload::Fetches { path: p, .. } => p.clone(),
    };
    let url = format!("{}{}", o.origin(), path);
    let _ = cdp.take_events();
    let cpu0 = running.cpu();
    let t0 = Instant::now();
    navigate(cdp, session, &url, deadline)?;
    let mut result = PageLoad::default();
    let page = evaluate(cdp, s, metrics::COLLECT, deadline)?;
    metrics::apply_page(&mut result, &page);
    if let Workload::Fetches { n, delay_ms, .. } = o.workload {
        let f = evaluate(cdp, s, &metrics::fetches_script(n, delay_ms), deadline)?;
        metrics::apply_fetches(&mut result, &f);
    }
    let events = cdp.take_events();
    let cpu1 = running.cpu();
    result.window_ms = t0.elapsed().as_secs_f64() * 1e3;
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        result.cpu_ms = Some(b.saturating_sub(a).as_secs_f64() * 1e3);
        result.process_cpu_ms = Some(b.as_secs_f64() * 1e3);
    }
    metrics::apply_network_events(&mut result, &events, &o.origin());
    Ok(result)
}

/// Closes the browser: a polite close first (the profile is written out), the group killed
/// regardless.
pub(crate) fn close(mut cdp: Devtools, mut running: Running) {
    let _ = cdp.call(
        None,
        "Browser.close",
        json!({}),
        Instant::now() + Duration::from_secs(2),
    );
    running.wait_exit(Duration::from_secs(2));
}

/// Attaches (flat mode) to the browser's first page and returns the session id.
fn attach<W: std::io::Write>(cdp: &mut Cdp<W>, deadline: Instant) -> Result<String, BrowserError> {
    // The initial about:blank tab may be announced a little after start-up.
    loop {
        let t = cdp.call(None, "Target.getTargets", json!({}), deadline)?;
        let page = t["targetInfos"]
            .as_array()
            .and_then(|a| a.iter().find(|i| i["type"] == "page"))
            .and_then(|i| i["targetId"].as_str())
            .map(str::to_string);
        let target = match page {
            Some(id) => id,
            None if Instant::now() < deadline => {
                let c = cdp.call(
                    None,
                    "Target.createTarget",
                    json!({ "url": "about:blank" }),
                    deadline,
                )?;
                match c["targetId"].as_str() {
                    Some(id) => id.to_string(),
                    None => continue,
                }
            }
            None => return Err(BrowserError::Timeout("page target", Duration::ZERO)),
        };
        let a = cdp.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
            deadline,
        )?;
        return a["sessionId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| BrowserError::Protocol("attachToTarget without sessionId".into()));
    }
}

/// Evaluates `expr` (a promise of a JSON string) in the page and parses its value.
pub(crate) fn evaluate<W: std::io::Write>(
    cdp: &mut Cdp<W>,
    session: Option<&str>,
    expr: &str,
    deadline: Instant,
) -> Result<Value, BrowserError> {
    let r = cdp.call(
        session,
        "Runtime.evaluate",
        json!({ "expression": expr, "awaitPromise": true, "returnByValue": true }),
        deadline,
    )?;
    if let Some(ex) = r.get("exceptionDetails") {
        let text = ex["exception"]["description"]
            .as_str()
            .or_else(|| ex["text"].as_str())
            .unwrap_or("exception");
        return Err(BrowserError::Cdp(
            "Runtime.evaluate".into(),
            text.to_string(),
        ));
    }
    let s = r["result"]["value"]
        .as_str()
        .ok_or_else(|| BrowserError::Protocol("Runtime.evaluate returned no string".into()))?;
    serde_json::from_str(s).map_err(|e| BrowserError::Protocol(format!("page JSON: {e}")))
}
