//! The command line's root: the `h2lab` parser and its subcommands, each with its own
//! options struct in its own module (this module depends on them, never the reverse).

use clap::{Parser, Subcommand};

use crate::args::BenchArgs;

/// h2lab: HTTP/2 and HTTP/1.1 load generator (a drop-in for h2load) and protocol lab.
#[derive(Debug, Parser)]
#[command(name = "h2lab", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands. `serve` (the test server) and later `compare`, `page` and `link` plug in here:
/// one variant each, with its own `Args` struct in its own module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark an HTTP/1.1, HTTP/2 or HTTP/3 server (accepts h2load's options).
    Bench(BenchArgs),
    /// Run the test target server: HTTP/1.1 and h2c, HTTP/2 and HTTP/1.1 over TLS, HTTP/3 (--h3).
    Serve(crate::serve::ServeArgs),
    /// Compare protocols across payloads, headers, concurrency, streams and networks.
    Compare(crate::compare::CompareArgs),
    /// Load a page like a browser: 6 HTTP/1.1 connections vs one HTTP/2 vs one HTTP/3 connection.
    Page(crate::page::PageArgs),
    /// Emulate a network path (RTT, bandwidth, loss) as a TCP and UDP relay.
    Link(crate::link::LinkArgs),
    /// Merge the results of a sharded run (bench --shard) into the exact whole result.
    Merge(crate::merge::MergeArgs),
    /// Render deployment manifests that run a benchmark as shards (kubernetes).
    Deploy(crate::deploy::DeployArgs),
    /// Run a reverse proxy: HTTP/1.1 and HTTP/2 clients, HTTP/1.x or h2c (pooled or multiplexed)
    /// upstreams.
    Proxy(crate::proxy::ProxyArgs),
    /// The upstream-hop experiment (seed 004): client → proxy → 5 ms link → 4 backends, over
    /// HTTP/1.1 keep-alive, HTTP/1.0, h2c and h2c multiplexed upstreams.
    Upstream(crate::upstream::UpstreamArgs),
}
