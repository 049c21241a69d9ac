//! A returning visit in a real browser: two views of the workload in the same browser
//! process and profile, with the first view's connections closed in between.
//!
//! Between the views the browser's socket pools are flushed (`chrome://net-internals`'s
//! "Flush socket pools": every idle and active HTTP/1.1, HTTP/2 and QUIC connection is
//! closed) — and nothing else: the HTTP cache (what the server let it keep) and the
//! in-memory TLS session cache stay warm, so the repeat view opens new connections that
//! resume the first view's sessions, as a returning visitor's browser does. A new browser
//! process on the same profile would not do: Chromium keeps TLS sessions in memory only.
//! CDP's `Network.clearBrowserCache` is not used (it would empty the cache the repeat view
//! is about).

use std::time::{Duration, Instant};

use crate::load::{close, evaluate, navigate, open, view, Devtools, LoadOptions};
use crate::metrics::PageLoad;
use crate::BrowserError;

/// The page whose button flushes the socket pools.
const NET_INTERNALS_SOCKETS: &str = "chrome://net-internals/#sockets";

/// Clicks "Flush socket pools", then gives the network service a moment to act on it (the
/// click is a Mojo message with no reply the page can wait for).
const FLUSH: &str = "new Promise(r => { \
    document.getElementById('sockets-view-flush-button').click(); \
    setTimeout(() => r(JSON.stringify(true)), 250); })";

/// Loads the workload twice in one fresh browser: a first view, then (connections closed,
/// cache and TLS sessions kept) a repeat view.
pub fn load_views(o: &LoadOptions) -> Result<(PageLoad, PageLoad), BrowserError> {
    let deadline = Instant::now() + o.timeout * 2 + Duration::from_secs(5);
    let (running, mut cdp, session) = open(o, deadline)?;
    let first = view(&running, &mut cdp, &session, o, deadline)?;
    close_connections(&mut cdp, &session, deadline)?;
    let repeat = view(&running, &mut cdp, &session, o, deadline)?;
    close(cdp, running);
    Ok((first, repeat))
}

/// Closes every connection of the browser (see the module docs).
fn close_connections(
    cdp: &mut Devtools,
    session: &str,
    deadline: Instant,
) -> Result<(), BrowserError> {
    let _ = cdp.take_events();
    navigate(cdp, session, NET_INTERNALS_SOCKETS, deadline)?;
    evaluate(cdp, Some(session), FLUSH, deadline)?;
    Ok(())
}
