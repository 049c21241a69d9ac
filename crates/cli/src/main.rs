//! `h2lab`: the command-line front end. Thin: it parses flags, builds the engine's configuration,
//! runs it and prints the result with `h2lab-report`.

// Reason: the doc comments of the flag structs are the terminal help text (clap), where
// `HOST[:PORT]` and `PATH.<thread>.<client>.sqlog` are literal syntax, not rustdoc links or HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod args;
mod bench;
mod command;
mod compare;
mod compat;
mod deploy;
#[cfg(test)]
mod doc_lines;
#[cfg(test)]
mod doc_paths;
mod docgen;
mod heap;
mod lab_values;
mod link;
mod link_packet;
mod listen;
mod load;
mod merge;
mod page;
mod proxy;
mod serve;
mod shard;
mod short_help;
mod signals;
mod upstream;
mod values;
mod yaml;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::FromArgMatches;

use command::{Cli, Command};

/// Exit status for usage errors and failed runs.
const EXIT_FAILURE: u8 = 1;

fn main() -> ExitCode {
    let cli = match command::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e),
    };
    match cli.command {
        Command::Bench(args) => bench::main(args),
        Command::Compare(args) => {
            heap::bound_for_lab();
            compare::main(*args)
        }
        Command::Page(args) => {
            heap::bound_for_lab();
            page::main(args)
        }
        Command::Link(args) => link::main(args),
        Command::Serve(args) => serve::main(args),
        Command::Merge(args) => merge::main(args),
        Command::Deploy(args) => deploy::main(args),
        Command::Proxy(args) => proxy::main(args),
        Command::Upstream(args) => {
            heap::bound_for_lab();
            upstream::main(args)
        }
        Command::Completions(args) => docgen::completions(&args),
        Command::Man(args) => docgen::man(&args),
    }
}

/// Prints a clap error as one line (help and version go to stdout with status 0).
fn clap_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                return ExitCode::from(EXIT_FAILURE);
            }
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("h2lab: {}", one_line(&e.to_string()));
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Reduces clap's multi-line error text to its `error:` line plus any `tip:`, on one line.
fn one_line(text: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut in_error = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with("error:") || (line.starts_with("tip:") && line.contains("similar")) {
            parts.push(line.to_string());
            in_error = line.starts_with("error:");
        } else if in_error && raw.starts_with(' ') && !line.is_empty() {
            // Indented lines right after `error:` name what it is about, e.g. the
            // required arguments that were not provided.
            if let Some(last) = parts.last_mut() {
                last.push(' ');
                last.push_str(line);
            }
        } else {
            in_error = false;
        }
    }
    if parts.is_empty() {
        return text.lines().next().unwrap_or("error").to_string();
    }
    parts.join(" (") + &")".repeat(parts.len() - 1)
}
