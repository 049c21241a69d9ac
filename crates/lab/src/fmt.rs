//! Number formatting shared by the terminal tables and the HTML report.

use std::time::Duration;

use h2lab_engine::syntax::{self, BareNumber};

/// `12345.6` → `12,346`; below 100 one decimal (`42.5`), below 10 two (`3.25`).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v.abs() < 10.0 {
        return format!("{v:.2}");
    }
    if v.abs() < 100.0 {
        return format!("{v:.1}");
    }
    let s = format!("{:.0}", v.abs());
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// Milliseconds with a sensible precision: `0.183 ms`, `12.4 ms`, `2.41 s`.
pub fn ms(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else if v >= 1.0 {
        format!("{v:.2} ms")
    } else {
        format!("{v:.3} ms")
    }
}

/// A duration as [`ms`].
pub fn dur(d: Duration) -> String {
    ms(d.as_secs_f64() * 1000.0)
}

/// A compact duration for flags and stage lists: `500ms`, `20s`, `1.5s`, `5m`.
pub fn short_dur(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 60_000 == 0 && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else if ms >= 1000 {
        format!("{}s", d.as_secs_f64())
    } else {
        format!("{ms}ms")
    }
}

/// Bytes with binary units: `512 B`, `4.0 KiB`, `1.36 MiB`.
pub fn bytes(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    const K: f64 = 1024.0;
    if v < K {
        format!("{v:.0} B")
    } else if v < K * K {
        format!("{:.1} KiB", v / K)
    } else if v < K * K * K {
        format!("{:.2} MiB", v / (K * K))
    } else {
        format!("{:.2} GiB", v / (K * K * K))
    }
}

/// A signed percentage: `+12%`, `-3.5%`.
pub fn pct(frac: f64) -> String {
    if !frac.is_finite() {
        return "-".into();
    }
    let p = frac * 100.0;
    if p.abs() < 10.0 {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.0}%")
    }
}

/// A ratio as `4.6×`.
pub fn ratio(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v >= 10.0 {
        format!("{v:.1}×")
    } else {
        format!("{v:.2}×")
    }
}

/// Pads `s` to `w` display columns (counting chars), left-aligned.
pub fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    let mut out = s.to_owned();
    out.push_str(&" ".repeat(w.saturating_sub(n)));
    out
}

/// Pads `s` to `w` display columns, right-aligned.
pub fn rpad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    let mut out = " ".repeat(w.saturating_sub(n));
    out.push_str(s);
    out
}

/// Renders rows as an aligned text table (first row is the header, underlined). Columns
/// whose header starts with `>` are right-aligned (the `>` is dropped).
pub fn table(rows: &[Vec<String>]) -> String {
    let Some(head) = rows.first() else {
        return String::new();
    };
    let ncol = head.len();
    let right: Vec<bool> = head.iter().map(|h| h.starts_with('>')).collect();
    let cell = |r: usize, c: &str| -> String {
        if r == 0 {
            c.trim_start_matches('>').to_owned()
        } else {
            c.to_owned()
        }
    };
    let mut widths = vec![0usize; ncol];
    for (r, row) in rows.iter().enumerate() {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell(r, c).chars().count());
        }
    }
    let mut out = String::new();
    for (r, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate().take(ncol) {
            let c = cell(r, c);
            if i > 0 {
                line.push_str("  ");
            }
            if right[i] {
                line.push_str(&rpad(&c, widths[i]));
            } else {
                line.push_str(&pad(&c, widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if r == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * ncol.saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// The widest line the lab prints to a terminal.
pub const WIDTH: usize = 120;

/// Wraps prose at `width` columns (counting chars): words move to the next line, which
/// starts with `indent`; existing line breaks are kept; a word longer than a line stays
/// whole on its own line.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    for (n, para) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let lead: String = para.chars().take_while(|c| *c == ' ').collect();
        let mut line = lead.clone();
        let mut len = lead.chars().count();
        let mut fresh = true;
        for word in para.split(' ').filter(|w| !w.is_empty()) {
            let wl = word.chars().count();
            if !fresh && len + 1 + wl > width {
                out.push_str(&line);
                out.push('\n');
                line = indent.to_owned();
                len = indent.chars().count();
                fresh = true;
            }
            if !fresh {
                line.push(' ');
                len += 1;
            }
            line.push_str(word);
            len += wl;
            fresh = false;
        }
        out.push_str(&line);
    }
    out
}

/// Wraps every line of `text` that is wider than [`WIDTH`] (continuation lines indented by
/// two spaces); lines that fit are left alone (tables stay aligned).
pub fn wrap_long_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() > WIDTH {
            let lead: String = body.chars().take_while(|c| *c == ' ').collect();
            let indent = format!("{lead}  ");
            out.push_str(&wrap(body, WIDTH, &indent));
        } else {
            out.push_str(body);
        }
        out.push_str(nl);
    }
    out
}

/// [`table`] when it fits in `width` columns; otherwise one block per row, each cell on its
/// own line as `header: value` (wrapped), so that nothing is wider than `width`.
pub fn fit_table(rows: &[Vec<String>], width: usize) -> String {
    let t = table(rows);
    if t.lines().all(|l| l.chars().count() <= width) {
        return t;
    }
    let Some(head) = rows.first() else {
        return String::new();
    };
    let names: Vec<&str> = head.iter().map(|h| h.trim_start_matches('>')).collect();
    let mut out = String::new();
    for row in &rows[1..] {
        for (i, c) in row.iter().enumerate() {
            if c.is_empty() {
                continue;
            }
            let line = if i == 0 {
                c.clone()
            } else {
                format!("  {}: {c}", names.get(i).copied().unwrap_or(""))
            };
            out.push_str(&wrap(&line, width, "      "));
            out.push('\n');
        }
    }
    out
}

/// Parses a duration for the lab's flags: a number with a unit `ms`, `s`, `m` or `h`
/// (`250ms`, `1.5s`, `5m`), or `0` (the workspace's one syntax, [`h2lab_engine::syntax`],
/// without bare numbers), at most 24 hours.
pub fn parse_dur(s: &str) -> Result<Duration, crate::error::ParseError> {
    use crate::error::ParseError;
    let d = syntax::parse_duration(s, BareNumber::ZeroOnly).map_err(ParseError::Duration)?;
    if d > Duration::from_secs(86_400) {
        return Err(ParseError::TooLong(s.to_owned()));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(num(1234567.4), "1,234,567");
        assert_eq!(num(-1234.0), "-1,234");
        assert_eq!(num(42.25), "42.2");
        assert_eq!(ms(0.1834), "0.183 ms");
        assert_eq!(ms(2410.0), "2.41 s");
        assert_eq!(bytes(4096.0), "4.0 KiB");
        assert_eq!(pct(0.123), "+12%");
        assert_eq!(pct(-0.035), "-3.5%");
        assert_eq!(ratio(15.06), "15.1×");
        let t = table(&[
            vec!["a".into(), ">n".into(), "c".into()],
            vec!["xx".into(), "1".into(), "z".into()],
        ]);
        assert_eq!(parse_dur("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(short_dur(Duration::from_secs(300)), "5m");
        assert_eq!(short_dur(Duration::from_secs(20)), "20s");
        assert_eq!(short_dur(Duration::from_millis(1500)), "1.5s");
        assert_eq!(short_dur(Duration::from_millis(250)), "250ms");
        assert_eq!(parse_dur("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_dur("5").is_err());
        assert!(parse_dur("-1s").is_err());
        assert_eq!(t, "a   n  c\n--------\nxx  1  z\n");
    }

    #[test]
    fn prose_and_tables_fit_the_width() {
        let text = "one two three four five six seven eight nine ten";
        let w = wrap(text, 14, "  ");
        assert_eq!(
            w,
            "one two three\n  four five\n  six seven\n  eight nine\n  ten"
        );
        assert!(w.lines().all(|l| l.chars().count() <= 14), "{w}");
        assert_eq!(wrap("a\nb c", 80, ""), "a\nb c");
        let long = format!("- {}", "word ".repeat(60));
        let wrapped = wrap_long_lines(&format!("short\n{long}\n"));
        assert!(wrapped.starts_with("short\n- word"));
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= WIDTH),
            "{wrapped}"
        );
        assert!(wrapped.ends_with('\n'));
        let rows = vec![
            vec!["condition".to_owned(), "a".into(), "b".into()],
            vec!["/ping".into(), "x".repeat(50), "y".repeat(50)],
        ];
        assert!(fit_table(&rows, 120).contains("-----"), "fits: a table");
        let narrow = fit_table(&rows, 40);
        assert!(narrow.starts_with("/ping\n  a:"), "{narrow}");
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
    }
}
