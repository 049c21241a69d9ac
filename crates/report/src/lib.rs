//! Output formats of `h2lab bench`.
//!
//! - [`text`]: h2load-compatible text, line for line where h2load has the line, with h2lab's
//!   percentile columns and extra lines added where h2load has none.
//! - [`json`]: the `--json` result document (schema `schemas/bench-result.v1.json`), with the
//!   merged latency histograms serialised as HdrHistogram V2 so that runs can be merged later.
//! - [`h2load_json`]: h2load's `--output-file` document (JSON "v1"), key for key.
//! - [`layout`]: the latency tables of h2load 1.69 and 1.70 (`--output-format`) and h2load's
//!   text histogram (`--histogram`).
//! - [`quic`]: the QUIC figures of HTTP/3 runs (h2load 1.69+'s QUIC rows).
//! - [`csv`]: one row per run with a header row.
//! - [`progress`]: live progress (a single updating line on a TTY, h2load's `progress:` lines
//!   otherwise).
//! - [`timeseries`]: the `--timeseries` file (CSV or JSON lines), one row per interval.
//! - [`shard`]: the `shard` object of a sharded run's result and the exact merge of shards.
//! - [`threshold`]: `--threshold` pass/fail criteria (exit status 99 on failure).
//!
//! The formatters take the data model of [`model`] and the run options of [`options`].

mod atomic;
pub mod csv;
pub mod h2load_json;
pub mod json;
pub mod layout;
pub mod model;
pub mod options;
pub mod progress;
pub mod quic;
pub mod shard;
pub mod stats;
pub mod text;
pub mod threshold;
pub mod timeseries;
pub mod units;

pub use atomic::write_atomic;
pub use model::{AppProtocol, RunOptions, RunResult, TlsInfo};
