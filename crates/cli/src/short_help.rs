//! One line per option in `-h`: an option whose help is longer than a line gets the first
//! clauses of it as its `-h` text, and keeps the whole text for `--help` and the man pages.
//!
//! The option texts stay where they are written (doc comments beside each field); this pass
//! runs over the finished `clap::Command`, so an option added later is fitted too, and the
//! `-h` test (`short_help_fits_one_line`) says when a first clause alone is still too long.

/// The widest `-h` line: clap's own default terminal width without `wrap_help`.
pub const WIDTH: usize = 100;

/// Where clap puts an option's help when it is printed under the option (next-line layout).
const HELP_INDENT: usize = 10;

/// Help longer than this moves the command to the next-line layout, whose width is known.
const INLINE_MAX: usize = 40;

/// Fits every option's `-h` help of `cmd` and its subcommands into one line of [`WIDTH`].
pub fn fit(cmd: clap::Command) -> clap::Command {
    let mut long = false;
    let mut cmd = cmd.mut_args(|arg| {
        let Some(help) = arg.get_help().map(ToString::to_string) else {
            return arg;
        };
        let budget = WIDTH - HELP_INDENT - suffix_len(&arg);
        if help.chars().count() + suffix_len(&arg) > INLINE_MAX {
            long = true;
        }
        if help.chars().count() <= budget {
            return arg;
        }
        let short = shorten(&help, budget);
        let arg = if arg.get_long_help().is_none() {
            arg.long_help(help)
        } else {
            arg
        };
        arg.help(short)
    });
    if long {
        cmd = cmd.next_line_help(true);
    }
    // Notes after the options (value syntaxes, profiles, examples) are long prose: `--help`
    // and the man pages carry them, `-h` points there.
    if let Some(after) = cmd.get_after_help().cloned() {
        if cmd.get_after_long_help().is_none() {
            cmd = cmd.after_long_help(after);
        }
        cmd = cmd.after_help(None::<&str>);
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, fit);
    }
    cmd
}

/// The width of what clap appends to an option's help: `[default: …]`, `[possible values: …]`.
fn suffix_len(arg: &clap::Arg) -> usize {
    let mut n = 0;
    if !arg.is_hide_default_value_set() {
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            n += " [default: ]".len() + defaults.join(", ").chars().count();
        }
    }
    if !arg.is_hide_possible_values_set() && arg.get_action().takes_values() {
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        if !values.is_empty() {
            n += " [possible values: ]".len() + values.join(", ").chars().count();
        }
    }
    let aliases: Vec<String> = arg
        .get_visible_aliases()
        .unwrap_or_default()
        .iter()
        .map(|a| format!("--{a}"))
        .collect();
    if !aliases.is_empty() {
        n += " [aliases: ]".len() + aliases.join(", ").chars().count();
    }
    n.min(WIDTH / 2)
}

/// The longest prefix of `text` that ends at a clause boundary and fits `budget` characters,
/// with its parentheses closed; a word boundary and "…" when no clause fits.
pub fn shorten(text: &str, budget: usize) -> String {
    if text.chars().count() <= budget {
        return text.to_string();
    }
    // Strong clause ends first; a comma only when no strong one leaves a useful line.
    for breaks in [&["; ", ". ", " (", " — ", ": "][..], &[", "][..]] {
        if let Some(end) = last_break(text, budget, breaks) {
            return text[..end]
                .trim_end_matches([',', ';', ':', '.'])
                .to_string();
        }
    }
    // No clause boundary fits: cut at the last space that leaves room for "…".
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if text[..i].chars().count() + 1 > budget {
            break;
        }
        if c == ' ' {
            end = i;
        }
    }
    format!("{}…", text[..end].trim_end_matches([',', ';', ':']))
}

/// The last byte offset in `text` where one of `breaks` starts, the prefix fits `budget`
/// characters, is at least a third of it long and has its parentheses closed.
fn last_break(text: &str, budget: usize, breaks: &[&str]) -> Option<usize> {
    let mut cut = None;
    for (i, _) in text.char_indices() {
        let width = text[..i].chars().count();
        if width > budget {
            break;
        }
        if width >= budget / 3
            && breaks.iter().any(|b| text[i..].starts_with(b))
            && balanced(&text[..i])
        {
            cut = Some(i);
        }
    }
    cut
}

/// Whether every "(" and "[" in `s` is closed.
fn balanced(s: &str) -> bool {
    s.matches('(').count() <= s.matches(')').count()
        && s.matches('[').count() <= s.matches(']').count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::command;

    /// Lists every shortened `-h` text (run with --nocapture to review them).
    #[test]
    fn list_shortened() {
        let mut root = command();
        root.build();
        let mut stack = vec![root];
        while let Some(cmd) = stack.pop() {
            for arg in cmd.get_arguments() {
                if let (Some(h), Some(_)) = (arg.get_help(), arg.get_long_help()) {
                    println!("{} --{}: {h}", cmd.get_name(), arg.get_id());
                }
            }
            stack.extend(cmd.get_subcommands().cloned());
        }
    }

    #[test]
    fn shorten_keeps_whole_clauses() {
        assert_eq!(
            shorten(
                "Add or override a request header (\"name: value\"; \":authority\" and \"host\")",
                40
            ),
            "Add or override a request header"
        );
        assert_eq!(shorten("one two three four", 10), "one two…");
        assert_eq!(shorten("short", 10), "short");
    }

    /// Every line of every command's `-h` fits [`WIDTH`] columns; `--help` keeps the long text.
    #[test]
    fn short_help_fits_one_line() {
        let mut root = command();
        root.build();
        let mut over = Vec::new();
        let mut stack = vec![(String::from("h2lab"), root)];
        while let Some((path, mut cmd)) = stack.pop() {
            let help = cmd.render_help().to_string();
            for line in help.lines() {
                if line.chars().count() > WIDTH {
                    over.push(format!("{path} -h: {line}"));
                }
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        assert!(
            over.is_empty(),
            "-h lines over {WIDTH} columns:\n{}",
            over.join("\n")
        );
        let long = command()
            .find_subcommand_mut("bench")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(long.contains("\":authority\" and \"host\" override the authority"));
    }
}
