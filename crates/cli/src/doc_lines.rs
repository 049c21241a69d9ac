//! The docs cannot drift from the command line: every `h2lab …` command line in README.md and
//! docs/*.md (shell code blocks and inline code) must parse with the clap definitions.

use std::path::{Path, PathBuf};

use clap::error::ErrorKind;

use crate::command::command;

/// A command line found in a document, with where it was found.
#[derive(Debug)]
struct Found {
    /// "docs/bench.md:42".
    place: String,
    /// The words from `h2lab` on.
    words: Vec<String>,
    /// Found in inline code in prose, where a command or flag may be named without the rest
    /// of a command line (`h2lab link`, `h2lab compare --loss`).
    inline: bool,
}

/// Splits a shell line into words: quotes group, backslash escapes, `#` at a word's start
/// ends the line. Operators (`|`, `&&`, `;`, `&`, redirections) become words of their own.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            '#' if !in_word => break,
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '|' | ';' | '&' | '>' | '<' | '(' | ')' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                words.push(c.to_string());
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The h2lab invocations on one shell line: `h2lab ARGS…` and `cargo run … -- ARGS…`.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let words = shell_words(line);
    let mut out = Vec::new();
    for segment in words.split(|w| ["|", ";", "&", "(", ")"].contains(&w.as_str())) {
        // Redirections end the command's own words.
        let end = segment
            .iter()
            .position(|w| w == ">" || w == "<")
            .unwrap_or(segment.len());
        let segment = &segment[..end];
        let Some(start) = command_word(segment) else {
            continue;
        };
        let rest = &segment[start..];
        // A shell variable's value is not known here: such a line cannot be checked.
        if rest.iter().any(|w| w.contains('$')) {
            continue;
        }
        if rest[0] == "cargo" {
            if rest.get(1).map(String::as_str) != Some("run") {
                continue;
            }
            if let Some(dash) = rest.iter().position(|w| w == "--") {
                let mut words = vec!["h2lab".to_string()];
                words.extend(rest[dash + 1..].iter().cloned());
                out.push(words);
            }
        } else if rest[0] != "command" {
            let mut words = vec!["h2lab".to_string()];
            words.extend(rest[1..].iter().cloned());
            out.push(words);
        }
    }
    out
}

/// Where the command of a shell segment starts, when it is h2lab or `cargo run`: the first
/// word after environment assignments and wrappers such as `nice -n 19` or `time`.
fn command_word(segment: &[String]) -> Option<usize> {
    const WRAPPERS: [&str; 7] = ["time", "nice", "sudo", "exec", "env", "taskset", "timeout"];
    for (i, w) in segment.iter().enumerate() {
        let assignment = w.contains('=') && !w.starts_with('-');
        let wrapper_arg = i > 0 && (w.starts_with('-') || w.chars().all(|c| c.is_ascii_digit()));
        if assignment || WRAPPERS.contains(&w.as_str()) || wrapper_arg {
            continue;
        }
        let is_h2lab = w == "h2lab" || w.ends_with("/h2lab");
        return (is_h2lab || w == "cargo").then_some(i);
    }
    None
}

/// Whether an inline code span is a command line rather than a pattern with placeholders.
fn is_concrete(span: &str) -> bool {
    !["<", "…", "...", "[", "|", "*"]
        .iter()
        .any(|p| span.contains(p))
}

/// Inline code spans of the prose (outside fenced blocks), with the line each starts on; a span
/// may run over a line break (joined with a space); a blank line ends an unclosed one.
pub(crate) fn inline_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    let mut in_fence = false;
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            open = None;
            continue;
        }
        if in_fence || line.trim().is_empty() {
            open = None;
            continue;
        }
        if let Some((_, span)) = open.as_mut() {
            span.push(' ');
        }
        for (k, piece) in line.split('`').enumerate() {
            if k > 0 {
                // A backtick: close the open span, or open one.
                match open.take() {
                    Some(done) => spans.push(done),
                    None => open = Some((i + 1, String::new())),
                }
            }
            if let Some((_, span)) = open.as_mut() {
                span.push_str(piece);
            }
        }
    }
    spans
}

/// Every h2lab command line of one Markdown text.
fn command_lines(name: &str, text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut fence: Option<bool> = None; // Some(checked?) inside a code block
    let mut pending = String::new();
    let mut pending_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = raw.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(
                    info.trim(),
                    "" | "sh" | "bash" | "console" | "shell" | "zsh"
                )),
            };
            continue;
        }
        match fence {
            Some(true) => {
                let line = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
                if pending.is_empty() {
                    pending_line = line_no;
                }
                if let Some(head) = line.strip_suffix('\\') {
                    pending.push_str(head);
                    pending.push(' ');
                    continue;
                }
                pending.push_str(line);
                for words in invocations(&pending) {
                    found.push(Found {
                        place: format!("{name}:{pending_line}"),
                        words,
                        inline: false,
                    });
                }
                pending.clear();
            }
            Some(false) => {}
            None => {}
        }
    }
    for (line_no, span) in inline_spans(text) {
        if (span.starts_with("h2lab ") || span.starts_with("cargo run ")) && is_concrete(&span) {
            for words in invocations(&span) {
                found.push(Found {
                    place: format!("{name}:{line_no}"),
                    words,
                    inline: true,
                });
            }
        }
    }
    found
}

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every docs/*.md of the repository.
pub(crate) fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// Why `words` does not parse, or None when it does (help and version requests parse).
fn parse_error(words: &[String]) -> Option<String> {
    match command().try_get_matches_from(words) {
        Ok(_) => None,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => None,
        Err(e) => Some(e.to_string().lines().next().unwrap_or("").to_string()),
    }
}

/// As [`parse_error`], but a mention in prose may leave out required arguments and the value
/// of a last flag it names: only unknown commands, unknown flags and bad values fail.
fn mention_error(words: &[String]) -> Option<String> {
    match command().try_get_matches_from(words) {
        Ok(_) => None,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::MissingRequiredArgument
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            None
        }
        Err(e)
            if e.kind() == ErrorKind::InvalidValue
                && words.len() > 2
                && words.last().is_some_and(|w| w.starts_with('-')) =>
        {
            mention_error(&words[..words.len() - 1])
        }
        Err(e) => Some(e.to_string().lines().next().unwrap_or("").to_string()),
    }
}

#[test]
fn every_documented_command_line_parses() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for f in command_lines(&name, &text) {
            checked += 1;
            let err = if f.inline {
                mention_error(&f.words)
            } else {
                parse_error(&f.words)
            };
            if let Some(err) = err {
                failures.push(format!("{}: `{}`: {err}", f.place, f.words.join(" ")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} documented command lines do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        checked >= 50,
        "only {checked} command lines found in the docs"
    );
}

#[test]
fn extraction_finds_blocks_continuations_pipes_and_inline_code() {
    let doc = "Run `h2lab bench --nope http://x/` or `h2lab page --users <N>`.\n\
               A `h2lab link\n--nope` over a line break.\n\
               ```\n\
               h2lab serve --listen 127.0.0.1:0 &   # comment --bad\n\
               $ h2lab merge a.jsonl \\\n  --json whole.json | jq .\n\
               cargo run --release -p h2lab -- compare --quick\n\
               podman build -t h2lab . && kubectl wait job/h2lab\n\
               X=1 nice -n 19 h2lab page --slow\n\
               ```\n\
               ```text\nh2lab 0.1.0 (abc)\n```\n";
    let found = command_lines("x.md", doc);
    let lines: Vec<String> = found.iter().map(|f| f.words.join(" ")).collect();
    assert_eq!(
        lines,
        [
            "h2lab serve --listen 127.0.0.1:0",
            "h2lab merge a.jsonl --json whole.json",
            "h2lab compare --quick",
            "h2lab page --slow",
            "h2lab bench --nope http://x/",
            "h2lab link --nope",
        ]
    );
    assert_eq!(found[1].place, "x.md:6");
    assert_eq!(found[5].place, "x.md:2");
    assert!(
        mention_error(&found[4].words).is_some(),
        "an unknown flag must fail"
    );
    assert!(mention_error(&found[5].words).is_some());
    assert!(found[4].inline && !found[0].inline);
    let mention: Vec<String> = ["h2lab", "link"].map(String::from).to_vec();
    assert_eq!(mention_error(&mention), None);
    assert!(parse_error(&mention).is_some());
    for f in &found[..4] {
        assert_eq!(parse_error(&f.words), None, "{}", f.words.join(" "));
    }
}

/// The manual page of each command names every one of its flags.
#[test]
fn every_flag_is_on_its_manual_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let pages = [
        ("bench", "bench.md"),
        ("serve", "serve.md"),
        ("compare", "compare.md"),
        ("page", "page.md"),
        ("link", "link.md"),
        ("upstream", "upstream.md"),
        ("proxy", "proxy.md"),
        ("merge", "sharding.md"),
        ("deploy kubernetes", "sharding.md"),
    ];
    let mut cmd = command();
    cmd.build();
    let mut missing = Vec::new();
    for (name, page) in pages {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let mut sub = &cmd;
        for word in name.split(' ') {
            sub = sub.find_subcommand(word).unwrap();
        }
        for arg in sub.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if arg.is_hide_set() || long == "help" || long == "version" {
                continue;
            }
            if !text.contains(&format!("--{long}")) {
                missing.push(format!("h2lab {name} --{long} (docs/{page})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags missing from their manual page:\n{}",
        missing.join("\n")
    );
}
