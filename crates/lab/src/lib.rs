//! h2lab's protocol lab: the experiments that answer "which protocol, for which payloads, at
//! which concurrency, on which network".
//!
//! - [`link`]: `h2lab link`, the network emulator (added RTT, bandwidth, bounded queue,
//!   jitter, loss) that the other lab commands start in-process: the `h2lab-link` crate,
//!   re-exported here.
//! - [`compare`]: `h2lab compare`, the protocol matrix (protocol × payload × request headers ×
//!   concurrency × streams × link), repeated runs, medians and spreads, and a decision table.
//! - [`page`]: `h2lab page`, browser-like page loads (6 HTTP/1.1 connections vs one HTTP/2
//!   connection), the slow-endpoint case and a virtual-user load test.
//! - [`html`]: the self-contained HTML reports with SVG charts drawn here (the `h2lab-report`
//!   crate formats `bench` results: text, JSON, CSV).
//! - [`env`](mod@env): the in-process lab environment (built-in server and links) both commands use.
//! - [`netpath`]: which path shaped conditions cross (`--mode packet|relay`) and its counters.
//! - [`kernel`]: what the experiments share about measuring: rounds, their order, retries,
//!   per-thread CPU clocks and [`RunPolicy`](kernel::RunPolicy), every timing number.
//! - [`host`]: CPU pinning, per-thread CPU clocks and machine load from `/proc`.
//! - [`stats`]: medians, bootstrap confidence intervals and the win/parity/undecided rule.
//!
//! No `unsafe` here: the OS calls go through `rustix`'s safe wrappers ([`os`]), and another
//! thread's CPU clock is read by that thread itself ([`kernel::clocks`]).

#![forbid(unsafe_code)]

pub mod compare;
pub mod env;
pub mod error;
pub mod fmt;
pub mod host;
pub mod html;
pub mod kernel;
pub use h2lab_link as link;
pub mod netpath;
pub mod os;
pub mod page;
pub mod proto;
pub mod stats;
pub mod upstream;
