//! The command line's root: the `h2lab` parser and its subcommands, each with its own
//! options struct in its own module (this module depends on them, never the reverse).

use clap::{CommandFactory, Parser, Subcommand};

use crate::args::BenchArgs;

/// The version `--version` prints: the crate's version and the git revision it was built from
/// ("unknown" when the build had no git repository; see build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("H2LAB_GIT_REV"), ")");

/// HTTP/1.1, HTTP/2 and HTTP/3 load generator (a drop-in for h2load), test server and protocol lab.
#[derive(Debug, Parser)]
#[command(name = "h2lab", version = VERSION, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands: one variant each, with its own `Args` struct in its own module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark an HTTP/1.1, HTTP/2 or HTTP/3 server (accepts h2load's options).
    Bench(BenchArgs),
    /// Run the test server: HTTP/1.1, h2c, HTTP/2 and HTTP/1.1 over TLS, HTTP/3 (--h3).
    Serve(crate::serve::ServeArgs),
    /// Compare protocols across payloads, headers, concurrency, streams and networks.
    Compare(Box<crate::compare::CompareArgs>),
    /// Load a page like a browser: 6 HTTP/1.1 connections vs one HTTP/2 or HTTP/3 connection.
    Page(crate::page::PageArgs),
    /// Emulate a network path (RTT, bandwidth, loss) as a TCP and UDP relay.
    Link(crate::link::LinkArgs),
    /// Merge the results of a sharded run (bench --shard) into the exact whole result.
    Merge(crate::merge::MergeArgs),
    /// Render deployment manifests that run a benchmark as shards (kubernetes).
    Deploy(crate::deploy::DeployArgs),
    /// Run a reverse proxy: HTTP/1.1 and HTTP/2 clients, HTTP/1.x or h2c upstreams.
    ///
    /// Upstreams are spoken to over HTTP/1.1 keep-alive, HTTP/1.0, h2c with one stream per
    /// connection, or h2c multiplexed.
    Proxy(crate::proxy::ProxyArgs),
    /// Measure the proxy-to-backend hop: client → proxy → 5 ms link → 4 backends.
    ///
    /// One arm per upstream protocol (HTTP/1.1 keep-alive, HTTP/1.0, h2c, h2c multiplexed),
    /// with h2lab's proxy or nginx.
    Upstream(crate::upstream::UpstreamArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions(crate::docgen::CompletionsArgs),
    /// Print a roff man page, or write one per command into a directory (--dir).
    Man(crate::docgen::ManArgs),
}

/// The full command-line definition, as `main` parses it: the derived parser with every
/// option's `-h` help shortened to fit one line (the full text stays in `--help`).
pub fn command() -> clap::Command {
    crate::short_help::fit(Cli::command())
}
