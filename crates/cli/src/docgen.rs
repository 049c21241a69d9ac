//! `h2lab completions` and `h2lab man`: shell completion scripts and roff man pages made from
//! the same clap definitions that parse the command line, so they cannot drift from it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use clap_complete::Shell;

use crate::command::command;

/// `h2lab completions` options.
#[derive(Debug, Clone, Args)]
#[command(after_long_help = "Examples:\n  \
    h2lab completions bash > ~/.local/share/bash-completion/completions/h2lab\n  \
    h2lab completions zsh > ~/.zfunc/_h2lab\n  \
    h2lab completions fish > ~/.config/fish/completions/h2lab.fish")]
pub struct CompletionsArgs {
    /// The shell to write the completion script for.
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

/// `h2lab man` options.
#[derive(Debug, Clone, Args)]
#[command(after_long_help = "Examples:\n  \
    h2lab man | man -l -            # read h2lab(1)\n  \
    h2lab man bench | man -l -      # read h2lab-bench(1)\n  \
    h2lab man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write every page (h2lab.1, h2lab-bench.1, …, h2lab-deploy-kubernetes.1) into DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,

    /// The command whose page to print (e.g. `bench`, `deploy kubernetes`); h2lab's without.
    #[arg(value_name = "COMMAND", num_args = 0..)]
    pub command: Vec<String>,
}

/// Writes the completion script for `args.shell` to stdout.
pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut cmd = command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "h2lab", &mut out);
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("writing the completion script: {e}")),
    }
}

/// Prints one man page, or writes all of them into `--dir`.
pub fn man(args: &ManArgs) -> ExitCode {
    let mut root = command().disable_help_subcommand(true);
    root.build();
    if let Some(dir) = &args.dir {
        return match write_all(&root, dir) {
            Ok(n) => {
                println!("wrote {n} man pages to {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => fail(&format!("writing man pages to {}: {e}", dir.display())),
        };
    }
    let mut cmd = &root;
    for name in &args.command {
        match cmd.find_subcommand(name) {
            Some(sub) => cmd = sub,
            None => return fail(&format!("no command `{}`", args.command.join(" "))),
        }
    }
    let mut out = std::io::stdout().lock();
    match page(cmd).render(&mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // `h2lab man | head`: the reader has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("writing the man page: {e}")),
    }
}

/// Writes `cmd`'s page and those of its visible subcommands; returns how many were written.
pub fn write_all(cmd: &clap::Command, dir: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let mut written = 0;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        written += write_all(sub, dir)?;
    }
    page(cmd).generate_to(dir)?;
    Ok(written + 1)
}

/// The man page of one (built) command, titled by its display name (`h2lab-bench`).
fn page(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone())
        .section("1")
        .manual("h2lab manual")
        .source(format!("h2lab {}", crate::command::VERSION))
}

fn fail(message: &str) -> ExitCode {
    eprintln!("h2lab: {message}");
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One page per command, named as man(1) expects, each a roff document.
    #[test]
    fn man_dir_has_one_page_per_command() {
        let dir = std::env::temp_dir().join(format!("h2lab-man-{}", std::process::id()));
        let mut root = command().disable_help_subcommand(true);
        root.build();
        let n = write_all(&root, &dir).unwrap();
        for name in [
            "h2lab.1",
            "h2lab-bench.1",
            "h2lab-serve.1",
            "h2lab-compare.1",
            "h2lab-page.1",
            "h2lab-link.1",
            "h2lab-upstream.1",
            "h2lab-proxy.1",
            "h2lab-merge.1",
            "h2lab-deploy-kubernetes.1",
        ] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            assert!(
                text.starts_with(".ie") || text.contains(".TH"),
                "{name} is not roff"
            );
        }
        assert!(n >= 12, "only {n} pages");
        // bench's page carries the long help, not the one-line -h text.
        let bench = std::fs::read_to_string(dir.join("h2lab-bench.1")).unwrap();
        assert!(bench.contains("requests"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each shell's script names every command.
    #[test]
    fn completions_name_every_command() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command(), "h2lab", &mut out);
            let text = String::from_utf8(out).unwrap();
            for sub in [
                "bench", "serve", "compare", "page", "link", "upstream", "proxy",
            ] {
                assert!(text.contains(sub), "{shell} completions lack {sub}");
            }
        }
    }
}
