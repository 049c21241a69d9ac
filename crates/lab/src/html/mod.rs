//! The HTML reports of `h2lab compare` and `h2lab page`: one self-contained `index.html`
//! each (inline CSS and SVG, no scripts, no CDN — it works offline), with charts drawn by
//! [`svg`]: throughput and p99 per payload for each protocol, latency percentile curves,
//! time series (req/s, page time, connections, users), page-load bars and waterfalls.
//! `h2lab_testkit::render_check` renders a report in headless Chromium to verify it shows
//! its charts.

pub mod browser;
pub mod compare;
pub mod forest;
pub mod page;
pub mod page_loss;
mod pairs;
pub mod shell;
pub mod svg;
