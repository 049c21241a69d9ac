//! The value syntaxes of the command line shared by every crate above the engine: durations
//! (the `bench`/`serve`/`proxy` flags, the lab's flags, `link`'s flags and `--threshold`) and
//! stage lists (`bench --stages`, `page --stages`).
//!
//! A duration is one syntax for all of them: a non-negative decimal number (`20`, `1.5`, `.5`),
//! optional white space, and a unit, case-insensitive: `ns`, `us` (`µs`), `ms`, `s` (`sec`),
//! `m` (`min`), `h`. Surrounding white space is ignored. What a number *without* a unit means is
//! the one thing callers choose ([`BareNumber`]): seconds for h2load's flags (`-D 10`),
//! milliseconds for thresholds (`p99<50`), and nothing but zero for the lab's flags, where a
//! bare number is ambiguous.
//!
//! Integers are converted exactly (`18446744073709551615s` is a valid [`Duration`]); decimals
//! are rounded to the nearest nanosecond.
//!
//! A stage list is `DURATION:LEVEL` pairs separated by commas (`30s:100,1m:100,10s:0`; empty
//! parts are skipped), the level a finite number >= 0 ([`stage_parts`], [`parse_stage`]).
//! What a level may be beyond that (whole users, a limit) and whether a stage may last 0 is
//! the caller's rule.

use std::fmt;
use std::time::Duration;

use crate::schedule::Stage;

/// What a number without a unit means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareNumber {
    /// Seconds (h2load's `<DURATION>`: `-D 10`).
    Seconds,
    /// Milliseconds (latency thresholds: `p99<50`).
    Millis,
    /// Only `0` (or `0.0`) is accepted without a unit; any other bare number is an error.
    ZeroOnly,
}

/// Why a duration could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationErrorKind {
    /// Not a number followed by a known unit (or a bare number where none is accepted).
    Invalid,
    /// A valid spelling whose value does not fit in a [`Duration`].
    TooLarge,
}

/// A duration given on the command line could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    /// What went wrong.
    pub kind: DurationErrorKind,
    /// The text as given.
    pub input: String,
}

impl DurationError {
    fn new(kind: DurationErrorKind, input: &str) -> Self {
        DurationError {
            kind,
            input: input.to_owned(),
        }
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DurationErrorKind::Invalid => write!(
                f,
                "invalid duration {:?}: expected a number with a unit ns, us, ms, s, m or h \
                 (e.g. 250us, 1.5s, 5m)",
                self.input
            ),
            DurationErrorKind::TooLarge => write!(f, "duration {:?} is too large", self.input),
        }
    }
}

impl std::error::Error for DurationError {}

/// A unit: how many nanoseconds it holds.
fn unit_nanos(unit: &str, bare: BareNumber) -> Option<Option<u64>> {
    // `Some(None)`: a bare number where only zero is accepted.
    Some(Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => match bare {
            BareNumber::Seconds => 1_000_000_000,
            BareNumber::Millis => 1_000_000,
            BareNumber::ZeroOnly => return Some(None),
        },
        _ => return None,
    }))
}

/// Splits `"12.5 ms"` into `("12.5", "ms")`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim_start())
}

/// Parses a duration in nanoseconds as a float, for callers that compare against measured
/// values (thresholds) and keep fractions of a nanosecond.
pub fn parse_nanos_f64(s: &str, bare: BareNumber) -> Result<f64, DurationError> {
    let invalid = || DurationError::new(DurationErrorKind::Invalid, s);
    let t = s.trim().to_lowercase();
    let (num, unit) = split_number(&t);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(invalid());
    }
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(invalid)?;
    match unit_nanos(unit, bare).ok_or_else(invalid)? {
        Some(per) => Ok(value * per as f64),
        None if value == 0.0 => Ok(0.0),
        None => Err(invalid()),
    }
}

/// Parses a duration (see the module documentation for the syntax).
pub fn parse_duration(s: &str, bare: BareNumber) -> Result<Duration, DurationError> {
    let t = s.trim().to_lowercase();
    let (num, unit) = split_number(&t);
    let integer = !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit());
    if !integer {
        let nanos = parse_nanos_f64(s, bare)?.round();
        // 2^64 ns is about 584 years; beyond that only whole numbers are exact anyway.
        if nanos >= 1.8e19 {
            return Err(DurationError::new(DurationErrorKind::TooLarge, s));
        }
        return Ok(Duration::from_nanos(nanos as u64));
    }
    let invalid = || DurationError::new(DurationErrorKind::Invalid, s);
    let n: u64 = num.parse().map_err(|_| invalid())?;
    let per = match unit_nanos(unit, bare).ok_or_else(invalid)? {
        Some(per) => per,
        None if n == 0 => return Ok(Duration::ZERO),
        None => return Err(invalid()),
    };
    // Exact: whole seconds and the remaining nanoseconds.
    let too_large = || DurationError::new(DurationErrorKind::TooLarge, s);
    if per >= 1_000_000_000 {
        let secs = n.checked_mul(per / 1_000_000_000).ok_or_else(too_large)?;
        Ok(Duration::from_secs(secs))
    } else {
        let per_sec = 1_000_000_000 / per;
        let secs = n / per_sec;
        let nanos = (n % per_sec) * per;
        Ok(Duration::new(secs, nanos as u32))
    }
}

/// Why one stage of a list could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageErrorKind {
    /// Not `DURATION:LEVEL`.
    Shape,
    /// The duration is not one.
    Duration(DurationError),
    /// The level is not a finite number >= 0.
    Level,
}

/// A stage (`DURATION:LEVEL`) could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageError {
    /// The stage as given.
    pub part: String,
    /// What is wrong with it.
    pub kind: StageErrorKind,
}

impl fmt::Display for StageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            StageErrorKind::Shape => f.write_str("expected DURATION:LEVEL, e.g. 30s:100"),
            StageErrorKind::Duration(e) => write!(f, "{e}"),
            StageErrorKind::Level => f.write_str("the level must be a number >= 0"),
        }
    }
}

impl std::error::Error for StageError {}

/// The stages of a list: its comma-separated parts, trimmed, empty ones skipped.
pub fn stage_parts(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|p| !p.is_empty())
}

/// Parses one stage, `DURATION:LEVEL` (`30s:100`); `bare` is what a duration without a unit
/// means.
pub fn parse_stage(part: &str, bare: BareNumber) -> Result<Stage, StageError> {
    let err = |kind| StageError {
        part: part.to_owned(),
        kind,
    };
    let (d, level) = part
        .trim()
        .split_once(':')
        .ok_or_else(|| err(StageErrorKind::Shape))?;
    let duration = parse_duration(d.trim(), bare).map_err(|e| err(StageErrorKind::Duration(e)))?;
    let target: f64 = level
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| err(StageErrorKind::Level))?;
    Ok(Stage { duration, target })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &str) -> Result<Duration, DurationErrorKind> {
        parse_duration(s, BareNumber::Seconds).map_err(|e| e.kind)
    }

    fn lab(s: &str) -> Result<Duration, DurationErrorKind> {
        parse_duration(s, BareNumber::ZeroOnly).map_err(|e| e.kind)
    }

    #[test]
    fn units() {
        assert_eq!(secs("7ns"), Ok(Duration::from_nanos(7)));
        assert_eq!(secs("50us"), Ok(Duration::from_micros(50)));
        assert_eq!(secs("50µs"), Ok(Duration::from_micros(50)));
        assert_eq!(secs("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(secs("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(secs("10sec"), Ok(Duration::from_secs(10)));
        assert_eq!(secs("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(secs("5min"), Ok(Duration::from_secs(300)));
        assert_eq!(secs("2h"), Ok(Duration::from_secs(7200)));
        // Case-insensitive, white space around and before the unit.
        assert_eq!(secs("2H"), Ok(Duration::from_secs(7200)));
        assert_eq!(secs("500Ms"), Ok(Duration::from_millis(500)));
        assert_eq!(secs(" 2 ms "), Ok(Duration::from_millis(2)));
    }

    #[test]
    fn decimals() {
        assert_eq!(secs("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(secs("0.5ms"), Ok(Duration::from_micros(500)));
        assert_eq!(secs(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(secs("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(lab("0.0"), Ok(Duration::ZERO));
    }

    #[test]
    fn bare_numbers() {
        assert_eq!(secs("10"), Ok(Duration::from_secs(10)));
        assert_eq!(
            parse_duration("50", BareNumber::Millis),
            Ok(Duration::from_millis(50))
        );
        assert_eq!(lab("0"), Ok(Duration::ZERO));
        assert_eq!(lab("20"), Err(DurationErrorKind::Invalid));
        assert_eq!(lab("0.5"), Err(DurationErrorKind::Invalid));
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "s",
            "ms",
            "-1",
            "-1s",
            "10x",
            "1.2.3ms",
            ".",
            ".s",
            "1e3ms",
            "20 parsecs",
            "inf",
            "+5s",
        ] {
            assert_eq!(secs(bad), Err(DurationErrorKind::Invalid), "{bad:?}");
        }
        assert_eq!(
            secs("99999999999999999999"),
            Err(DurationErrorKind::Invalid)
        );
        assert_eq!(
            secs(&format!("{}h", u64::MAX / 2)),
            Err(DurationErrorKind::TooLarge)
        );
        assert_eq!(secs("1e30s"), Err(DurationErrorKind::Invalid));
        assert_eq!(
            secs("99999999999999999999.5s"),
            Err(DurationErrorKind::TooLarge)
        );
        assert_eq!(
            secs(&u64::MAX.to_string()),
            Ok(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn nanos_keep_fractions() {
        assert_eq!(parse_nanos_f64("1.5ns", BareNumber::Millis), Ok(1.5));
        assert_eq!(parse_nanos_f64("2", BareNumber::Millis), Ok(2e6));
        assert_eq!(parse_nanos_f64("1m", BareNumber::Millis), Ok(60e9));
    }

    #[test]
    fn stages() {
        let parts: Vec<&str> = stage_parts(" 30s:100,1m:100, ,10s:0,").collect();
        assert_eq!(parts, ["30s:100", "1m:100", "10s:0"]);
        let st = parse_stage("1m:100", BareNumber::Seconds).unwrap();
        assert_eq!(st.duration, Duration::from_secs(60));
        assert_eq!(st.target, 100.0);
        assert_eq!(
            parse_stage("500ms: 2.5", BareNumber::Seconds)
                .unwrap()
                .target,
            2.5
        );
        assert_eq!(
            parse_stage("10:1", BareNumber::Seconds).unwrap().duration,
            Duration::from_secs(10)
        );
        let kind = |p: &str, bare| parse_stage(p, bare).map_err(|e| e.kind);
        assert_eq!(kind("30s", BareNumber::Seconds), Err(StageErrorKind::Shape));
        assert!(matches!(
            kind("10:1", BareNumber::ZeroOnly),
            Err(StageErrorKind::Duration(_))
        ));
        assert!(matches!(
            kind("x:1", BareNumber::Seconds),
            Err(StageErrorKind::Duration(_))
        ));
        for bad in ["30s:", "1s:-1", "1s:nan", "1s:inf", "1s:x"] {
            assert_eq!(
                kind(bad, BareNumber::Seconds),
                Err(StageErrorKind::Level),
                "{bad}"
            );
        }
    }
}
