//! The RFC 9218 priority parameters: the `priority` request header field and
//! the field value of PRIORITY_UPDATE frames (HTTP/2 and HTTP/3 alike).
//!
//! RFC 9218 §4: "For both the Priority header field and the PRIORITY_UPDATE
//! frame, the set of priority parameters is encoded as a Dictionary (see
//! Section 3.2 of [STRUCTURED-FIELDS])." [`parse`] parses that Dictionary
//! (RFC 8941 §4.2.2, every member type, parameters included) and keeps the
//! two parameters RFC 9218 defines:
//!
//! - `u`, urgency: "Integer ..., between 0 and 7 inclusive, in descending
//!   order of priority. The default is 3." (§4.1)
//! - `i`, incremental: "Boolean ... The default value of the incremental
//!   parameter is false (0)." (§4.2)
//!
//! "Where the Dictionary is successfully parsed, this document places the
//! additional requirement that unknown priority parameters, priority
//! parameters with out-of-range values, or values of unexpected types MUST be
//! ignored." (§4). A value that is not a valid Dictionary yields
//! [`InvalidPriority`]; [`parse_or_default`] maps it to the defaults, as §4
//! asks of a request without the parameters ("a server SHOULD act as if their
//! default values were specified"). RFC 9218 §7 lets a receiver treat an
//! unparsable PRIORITY_UPDATE value as a connection error ("MAY"); h2lab
//! does not, it applies the defaults.

use core::fmt;

/// Default urgency (RFC 9218 §4.1: "The default is 3.").
pub const DEFAULT_URGENCY: u8 = 3;
/// Lowest urgency (highest value), RFC 9218 §4.1.
pub const MAX_URGENCY: u8 = 7;

/// The priority of one response (RFC 9218 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExtPriority {
    /// Urgency 0 (most urgent) ..= 7.
    pub urgency: u8,
    /// The response can be used as its bytes arrive (share bandwidth with
    /// other incremental responses of the same urgency).
    pub incremental: bool,
}

impl ExtPriority {
    /// The defaults: `u=3`, not incremental.
    pub const DEFAULT: ExtPriority = ExtPriority {
        urgency: DEFAULT_URGENCY,
        incremental: false,
    };

    /// A priority with `urgency` clamped to 0..=7.
    pub const fn new(urgency: u8, incremental: bool) -> Self {
        ExtPriority {
            urgency: if urgency > MAX_URGENCY {
                MAX_URGENCY
            } else {
                urgency
            },
            incremental,
        }
    }

    /// Append the field value (`u=N` and `, i` when incremental), as a
    /// client sends it.
    pub fn write(&self, dst: &mut Vec<u8>) {
        dst.extend_from_slice(b"u=");
        dst.push(b'0' + self.urgency.min(MAX_URGENCY));
        if self.incremental {
            dst.extend_from_slice(b", i");
        }
    }
}

impl Default for ExtPriority {
    fn default() -> Self {
        ExtPriority::DEFAULT
    }
}

impl fmt::Display for ExtPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "u={}", self.urgency)?;
        if self.incremental {
            f.write_str(", i")?;
        }
        Ok(())
    }
}

/// The field value is not a Structured Fields Dictionary (RFC 8941 §4.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidPriority {
    /// Offset of the first octet that could not be parsed.
    pub at: usize,
}

impl fmt::Display for InvalidPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "priority field value is not a Structured Fields Dictionary (octet {})",
            self.at
        )
    }
}

impl std::error::Error for InvalidPriority {}

/// Parse a priority field value. Parameters that are absent keep their
/// defaults, for a header and a PRIORITY_UPDATE alike (RFC 9218 §7:
/// "Omitting a priority parameter is a signal to use its default value").
pub fn parse(value: &[u8]) -> Result<ExtPriority, InvalidPriority> {
    let mut p = Parser { s: value, at: 0 };
    let mut out = ExtPriority::DEFAULT;
    p.skip_sp();
    if p.done() {
        return Ok(out);
    }
    loop {
        let key = p.key()?;
        let item = if p.eat(b'=') {
            p.member_value()?
        } else {
            // A bare key is Boolean true (RFC 8941 §4.2.2).
            p.parameters()?;
            Bare::Bool(true)
        };
        // Duplicate keys: the last one wins (RFC 8941 §4.2.2 overwrites).
        match (key, item) {
            (b"u", Bare::Int(n)) => {
                if let Ok(u) = u8::try_from(n) {
                    if u <= MAX_URGENCY {
                        out.urgency = u;
                    }
                }
            }
            (b"i", Bare::Bool(b)) => out.incremental = b,
            // Unknown keys and unexpected types are ignored (RFC 9218 §4).
            _ => {}
        }
        p.skip_ows();
        if p.done() {
            return Ok(out);
        }
        if !p.eat(b',') {
            return Err(p.err());
        }
        p.skip_ows();
        if p.done() {
            // A trailing comma fails parsing (RFC 8941 §4.2.2).
            return Err(p.err());
        }
    }
}

/// [`parse`], or the defaults when the value is not a Dictionary.
pub fn parse_or_default(value: &[u8]) -> ExtPriority {
    parse(value).unwrap_or_default()
}

/// The bare item kinds that matter here; everything else is `Other`.
enum Bare {
    Int(i64),
    Bool(bool),
    Other,
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn done(&self) -> bool {
        self.at >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }
    fn err(&self) -> InvalidPriority {
        InvalidPriority { at: self.at }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn skip_sp(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }
    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }
    /// key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
    fn key(&mut self) -> Result<&'a [u8], InvalidPriority> {
        let start = self.at;
        match self.peek() {
            Some(b'a'..=b'z' | b'*') => self.at += 1,
            _ => return Err(self.err()),
        }
        while let Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*') = self.peek() {
            self.at += 1;
        }
        Ok(self.s.get(start..self.at).unwrap_or_default())
    }
    /// member-value = sf-item / inner-list
    fn member_value(&mut self) -> Result<Bare, InvalidPriority> {
        if self.eat(b'(') {
            loop {
                self.skip_sp();
                if self.eat(b')') {
                    break;
                }
                self.bare_item()?;
                self.parameters()?;
                match self.peek() {
                    Some(b' ' | b')') => {}
                    _ => return Err(self.err()),
                }
            }
            self.parameters()?;
            return Ok(Bare::Other);
        }
        let item = self.bare_item()?;
        self.parameters()?;
        Ok(item)
    }
    /// parameters = *( ";" *SP key [ "=" bare-item ] )
    fn parameters(&mut self) -> Result<(), InvalidPriority> {
        while self.eat(b';') {
            self.skip_sp();
            self.key()?;
            if self.eat(b'=') {
                self.bare_item()?;
            }
        }
        Ok(())
    }
    fn bare_item(&mut self) -> Result<Bare, InvalidPriority> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'"') => {
                self.at += 1;
                loop {
                    match self.peek() {
                        Some(b'\\') => {
                            self.at += 1;
                            if !matches!(self.peek(), Some(b'"' | b'\\')) {
                                return Err(self.err());
                            }
                            self.at += 1;
                        }
                        Some(b'"') => {
                            self.at += 1;
                            return Ok(Bare::Other);
                        }
                        Some(0x20..=0x7e) => self.at += 1,
                        _ => return Err(self.err()),
                    }
                }
            }
            Some(b'?') => {
                self.at += 1;
                let b = match self.peek() {
                    Some(b'0') => false,
                    Some(b'1') => true,
                    _ => return Err(self.err()),
                };
                self.at += 1;
                Ok(Bare::Bool(b))
            }
            Some(b':') => {
                self.at += 1;
                while let Some(c) = self.peek() {
                    if c == b':' {
                        self.at += 1;
                        return Ok(Bare::Other);
                    }
                    if !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')) {
                        return Err(self.err());
                    }
                    self.at += 1;
                }
                Err(self.err())
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'*' => {
                self.at += 1;
                while let Some(c) = self.peek() {
                    let tchar = c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&c);
                    if !tchar {
                        break;
                    }
                    self.at += 1;
                }
                Ok(Bare::Other)
            }
            _ => Err(self.err()),
        }
    }
    /// Integer (at most 15 digits) or Decimal (at most 12 + 3 digits).
    fn number(&mut self) -> Result<Bare, InvalidPriority> {
        let neg = self.eat(b'-');
        let start = self.at;
        let mut n: i64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n * 10 + i64::from(d - b'0');
            self.at += 1;
            if self.at - start > 15 {
                return Err(self.err());
            }
        }
        let int_digits = self.at - start;
        if int_digits == 0 {
            return Err(self.err());
        }
        if self.eat(b'.') {
            let frac = self.at;
            while let Some(b'0'..=b'9') = self.peek() {
                self.at += 1;
            }
            let f = self.at - frac;
            if int_digits > 12 || f == 0 || f > 3 {
                return Err(self.err());
            }
            return Ok(Bare::Other);
        }
        Ok(Bare::Int(if neg { -n } else { n }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> ExtPriority {
        parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn rfc_examples_and_defaults() {
        assert_eq!(p(""), ExtPriority::DEFAULT);
        assert_eq!(p("u=0"), ExtPriority::new(0, false)); // RFC 9218 §4.1
        assert_eq!(p("u=5, i"), ExtPriority::new(5, true)); // RFC 9218 §4.2
        assert_eq!(p("i"), ExtPriority::new(3, true));
        assert_eq!(p("u=1,i=?0"), ExtPriority::new(1, false));
        assert_eq!(p("i=?1,u=7"), ExtPriority::new(7, true));
        assert_eq!(p("  u=2 ,\ti"), ExtPriority::new(2, true));
    }

    #[test]
    fn ignored_members() {
        // Out of range, wrong types, unknown keys, parameters: ignored.
        assert_eq!(p("u=8"), ExtPriority::DEFAULT);
        assert_eq!(p("u=-1"), ExtPriority::DEFAULT);
        assert_eq!(p("u=1.5"), ExtPriority::DEFAULT);
        assert_eq!(p("u=\"1\""), ExtPriority::DEFAULT);
        assert_eq!(p("u=?1"), ExtPriority::DEFAULT);
        assert_eq!(p("i=1"), ExtPriority::DEFAULT);
        assert_eq!(p("i=tok"), ExtPriority::DEFAULT);
        assert_eq!(
            p("x=(1 2);a=b, u=1;q=\"s\", y=:aGk=:, z=*t/x, i"),
            ExtPriority::new(1, true)
        );
        // Last duplicate wins.
        assert_eq!(p("u=1, u=6"), ExtPriority::new(6, false));
        assert_eq!(p("u=1, u=9"), ExtPriority::new(1, false));
    }

    #[test]
    fn invalid_dictionaries() {
        for bad in [
            "U=1", "u=", "u=1,", ",u=1", "u=1 i", "u=(1", "u=\"x", "u=?2", "1",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
            assert_eq!(parse_or_default(bad.as_bytes()), ExtPriority::DEFAULT);
        }
    }

    #[test]
    fn write_roundtrip() {
        for u in 0..=7 {
            for i in [false, true] {
                let e = ExtPriority::new(u, i);
                let mut v = Vec::new();
                e.write(&mut v);
                assert_eq!(parse(&v).unwrap(), e);
                assert_eq!(e.to_string().as_bytes(), &v[..]);
            }
        }
        assert_eq!(ExtPriority::new(9, false).urgency, 7);
    }
}
