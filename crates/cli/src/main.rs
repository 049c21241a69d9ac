//! `h2lab`: the command-line front end. Thin: it parses flags, builds the engine's configuration,
//! runs it and prints the result with `h2lab-report`.

mod args;
mod bench;
mod compare;
mod link;
mod page;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use args::{Cli, Command};

/// Exit status for usage errors and failed runs.
const EXIT_FAILURE: u8 = 1;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e),
    };
    match cli.command {
        Command::Bench(args) => bench::main(args),
        Command::Compare(args) => compare::main(args),
        Command::Page(args) => page::main(args),
        Command::Link(args) => link::main(args),
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
    let mut parts: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("error:") || (line.starts_with("tip:") && line.contains("similar")) {
            parts.push(line);
        }
    }
    if parts.is_empty() {
        return text.lines().next().unwrap_or("error").to_string();
    }
    parts.join(" (") + &")".repeat(parts.len() - 1)
}
