//! The latency table of every `--output-format` against the format strings of the h2load release
//! it reproduces (`tests/data/h2load-*.fmt`, each naming its source: nghttp2/nghttp2, tag, file).
//!
//! A line matches a format when every literal is where the format puts it and every field has the
//! format's width and alignment: right-aligned fields are blanks then one value, left-aligned
//! fields one value then blanks, the histogram bar `/`s then blanks.

use std::time::Duration;

use h2lab_report::layout::OutputFormat;
use h2lab_report::model::{empty_result, RequestCounts};
use h2lab_report::{text, RunResult};

/// One parsed `.fmt` file.
struct Spec {
    header: String,
    row: Vec<Tok>,
    titles: Vec<String>,
    histogram: Option<Vec<Tok>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Lit(String),
    Left(usize),
    Right(usize),
    /// `{:6.2f}`: a number with two decimals, right-aligned.
    Fixed(usize),
    /// `{:/<{}}{:{}}`: the bar, `max_bar` columns.
    Bar(usize),
}

fn load(name: &str) -> Spec {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let field = |key: &str| -> Option<String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| l.strip_prefix(&format!("{key}\t")).map(str::to_string))
    };
    let max_bar: usize = field("max_bar").map_or(0, |v| v.parse().unwrap());
    Spec {
        header: field("header").unwrap(),
        row: parse(&field("row").unwrap(), max_bar),
        titles: field("titles")
            .unwrap()
            .split('\t')
            .map(str::to_string)
            .collect(),
        histogram: field("histogram").map(|h| parse(&h, max_bar)),
    }
}

/// Parses the std::format subset the files use.
fn parse(fmt: &str, max_bar: usize) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("{:/<{}}{:{}}") {
            out.push(Tok::Lit(std::mem::take(&mut lit)));
            out.push(Tok::Bar(max_bar));
            rest = after;
        } else if c == '{' {
            let end = rest.find('}').unwrap();
            let spec = &rest[2..end];
            out.push(Tok::Lit(std::mem::take(&mut lit)));
            out.push(if let Some(w) = spec.strip_prefix('>') {
                Tok::Right(w.parse().unwrap())
            } else if let Some(w) = spec.strip_suffix(".2f") {
                Tok::Fixed(w.parse().unwrap())
            } else {
                Tok::Left(spec.parse().unwrap())
            });
            rest = &rest[end + 1..];
        } else {
            lit.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.push(Tok::Lit(lit));
    out.retain(|t| *t != Tok::Lit(String::new()));
    out
}

/// Matches `line` against `toks`; returns the values of the fields and the unmatched rest.
fn matches<'a>(line: &'a str, toks: &[Tok]) -> Result<(Vec<String>, &'a str), String> {
    let mut rest = line;
    let mut values = Vec::new();
    let take = |rest: &mut &'a str, n: usize| -> Result<&'a str, String> {
        if rest.len() < n {
            return Err(format!("{line:?}: too short for {toks:?}"));
        }
        let (a, b) = rest.split_at(n);
        *rest = b;
        Ok(a)
    };
    for t in toks {
        match t {
            Tok::Lit(l) => {
                let got = take(&mut rest, l.len())?;
                if got != l {
                    return Err(format!("{line:?}: expected {l:?}, got {got:?}"));
                }
            }
            Tok::Right(w) | Tok::Fixed(w) => {
                let f = take(&mut rest, *w)?;
                let v = f.trim_start_matches(' ');
                if v.is_empty() || v.contains(' ') {
                    return Err(format!("{line:?}: field {f:?} is not right-aligned in {w}"));
                }
                if matches!(t, Tok::Fixed(_)) {
                    let (i, d) = v.split_once('.').ok_or(format!("{v:?} is not fixed"))?;
                    assert!(
                        i.bytes().all(|b| b.is_ascii_digit()) && d.len() == 2,
                        "{v:?}"
                    );
                }
                values.push(v.to_string());
            }
            Tok::Left(w) => {
                let f = take(&mut rest, *w)?;
                let v = f.trim_end_matches(' ');
                if v.is_empty() || v.starts_with(' ') {
                    return Err(format!("{line:?}: field {f:?} is not left-aligned in {w}"));
                }
                values.push(v.to_string());
            }
            Tok::Bar(w) => {
                let f = take(&mut rest, *w)?;
                let blanks = f.trim_start_matches('/');
                if !blanks.bytes().all(|b| b == b' ') {
                    return Err(format!("{line:?}: bad bar {f:?}"));
                }
            }
        }
    }
    Ok((values, rest))
}

/// A run whose four distributions have different values, so that the histograms are drawn.
fn result() -> RunResult {
    let mut r = RunResult {
        elapsed: Duration::from_millis(1500),
        requests: RequestCounts {
            total: 1000,
            started: 1000,
            done: 1000,
            succeeded: 1000,
            completed: 1000,
            ..Default::default()
        },
        client_rps: vec![33510.3125, 34074.97, 33789.82, 120.5],
        ..empty_result()
    };
    for i in 0..1000u64 {
        r.request_time.record(24_000 + i * 800).unwrap();
    }
    for (c, t) in [
        (104_000u64, 639_000u64),
        (455_000, 1_070_000),
        (160_000, 700_000),
    ] {
        r.connect_time.record(c).unwrap();
        r.ttfb.record(t).unwrap();
    }
    r
}

/// The table lines of the summary (from the header on, up to the first non-table line).
fn table(out: &str, header: &str) -> Vec<String> {
    let start = out
        .lines()
        .position(|l| l.starts_with(header))
        .unwrap_or_else(|| panic!("no header {header:?} in\n{out}"));
    out.lines().skip(start).map(str::to_string).collect()
}

fn check(format: OutputFormat, file: &str, histogram: bool) {
    let spec = load(file);
    let out = text::summary_as(&result(), format, histogram);
    let lines = table(&out, &spec.header);
    let mut it = lines.iter();
    let header = it.next().unwrap();
    let mut tail = &header[spec.header.len()..];
    if format == OutputFormat::H2load152 {
        // h2lab's percentile columns after h2load's.
        assert_eq!(
            tail, "         p50         p90         p99       p99.9",
            "{out}"
        );
        tail = "";
    }
    assert_eq!(tail, "", "{out}");
    let hist_toks = spec.histogram.clone().unwrap_or_else(|| {
        load("h2load-1.70.fmt")
            .histogram
            .expect("1.70 draws histograms")
    });
    for title in &spec.titles {
        let line = it
            .next()
            .unwrap_or_else(|| panic!("no {title} row in\n{out}"));
        let (values, rest) = matches(line, &spec.row).unwrap();
        assert_eq!(&values[0], title, "{line:?}");
        if format == OutputFormat::H2load152 {
            // Four percentile columns, each two blanks and 10 columns.
            let (p, rest) = matches(rest, &parse(&"  {:>10}".repeat(4), 0)).unwrap();
            assert_eq!((p.len(), rest), (4, ""), "{line:?}");
        } else {
            assert_eq!(rest, "", "{line:?}");
        }
        if histogram {
            for _ in 0..10 {
                let l = it
                    .next()
                    .unwrap_or_else(|| panic!("short histogram in\n{out}"));
                let (v, rest) = matches(l, &hist_toks).unwrap();
                assert_eq!((v.len(), rest), (4, ""), "{l:?}");
            }
        }
    }
    // Then h2lab's extra lines, if any, never another table line.
    for l in it {
        assert!(matches(l, &spec.row).is_err(), "unexpected row {l:?}");
    }
}

#[test]
fn h2load_152_layout_is_the_default() {
    assert_eq!(OutputFormat::default(), OutputFormat::H2load152);
    assert_eq!(
        text::summary(&result()),
        text::summary_as(&result(), OutputFormat::H2load152, false)
    );
    check(OutputFormat::H2load152, "h2load-1.52.fmt", false);
}

#[test]
fn h2load_169_layout() {
    check(OutputFormat::H2load169, "h2load-1.69.fmt", false);
    // 1.69 prints req/s with the stream's default format (six significant digits).
    let out = text::summary_as(&result(), OutputFormat::H2load169, false);
    let rps = out.lines().find(|l| l.starts_with("req/s")).unwrap();
    assert!(
        rps.contains(" 34075  ") && rps.contains(" 120.5  "),
        "{rps:?}"
    );
}

#[test]
fn h2load_170_layout() {
    check(OutputFormat::H2load170, "h2load-1.70.fmt", false);
    let out = text::summary_as(&result(), OutputFormat::H2load170, false);
    let rps = out.lines().find(|l| l.starts_with("req/s")).unwrap();
    assert!(
        rps.contains(" 34074.97  ") && rps.contains(" 120.50  "),
        "{rps:?}"
    );
}

#[test]
fn histograms_under_each_row() {
    check(OutputFormat::H2load170, "h2load-1.70.fmt", true);
    check(OutputFormat::H2load169, "h2load-1.69.fmt", true);
    check(OutputFormat::H2load152, "h2load-1.52.fmt", true);
}

#[test]
fn the_counter_lines_do_not_change_with_the_layout() {
    let r = result();
    let head = |f| {
        text::summary_as(&r, f, false)
            .lines()
            .take(5)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(head(OutputFormat::H2load152), head(OutputFormat::H2load169));
    assert_eq!(head(OutputFormat::H2load152), head(OutputFormat::H2load170));
}

#[test]
fn format_names() {
    for (i, name) in OutputFormat::NAMES.iter().enumerate() {
        let f = OutputFormat::parse(name).unwrap();
        assert_eq!(OutputFormat::NAMES[i], *name);
        let _ = f;
    }
    let e = OutputFormat::parse("h2load-2").unwrap_err();
    assert!(e.contains("h2load-1.52, h2load-1.69, h2load-1.70") && !e.contains('\n'));
}

#[test]
fn paced_runs_show_the_corrected_request_time() {
    let mut r = result();
    for _ in 0..10 {
        r.request_time_corrected.record(9_000_000).unwrap();
    }
    for f in [OutputFormat::H2load169, OutputFormat::H2load170] {
        let out = text::summary_as(&r, f, false);
        let row = out.lines().find(|l| l.starts_with("request ")).unwrap();
        assert!(row.contains(" 9.00ms"), "{row}");
        assert!(out.contains("latency: \"request\" is measured from each request's intended start"));
        assert!(!out.contains("time for request"), "{out}");
    }
}
