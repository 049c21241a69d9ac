//! Field sections: a zero-copy view over an already validated header block.

use super::scan::find_byte;
use super::syntax::trim_ows;

/// One field line, borrowed from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The field name as received (a token; compare case-insensitively).
    pub name: &'a str,
    /// The field value with leading and trailing whitespace removed.
    pub value: &'a [u8],
}

/// A field section (header or trailer section) borrowed from the input.
///
/// The bytes were validated by `httparse` before the view was built; iterating
/// re-splits the lines lazily, so building the view costs nothing and holding
/// it needs no header array.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers<'a> {
    raw: &'a [u8],
}

impl<'a> Headers<'a> {
    /// Wraps field lines that `httparse` already accepted.
    pub(crate) fn new(raw: &'a [u8]) -> Self {
        Headers { raw }
    }

    /// The raw field lines, each with its line terminator, including the empty
    /// line that ends the section.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterates over the field lines in order.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter {
            rest: self.raw,
            // One check of the whole section (word-at-a-time for ASCII) is
            // cheaper than one per field name.
            text: core::str::from_utf8(self.raw).ok(),
        }
    }

    /// True when the section has no field line.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Number of field lines.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// The value of the first field named `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The values of every field named `name` (ASCII case-insensitive).
    pub fn get_all<'n>(&self, name: &'n str) -> impl Iterator<Item = &'a [u8]> + 'n
    where
        'a: 'n,
    {
        self.iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }
}

impl core::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|h| (h.name, String::from_utf8_lossy(h.value))),
            )
            .finish()
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = Header<'a>;
    type IntoIter = HeaderIter<'a>;
    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// Iterator over the field lines of a [`Headers`] view.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    rest: &'a [u8],
    /// `rest` as text when the section is UTF-8 (ASCII in practice): names
    /// are then sliced from it; otherwise each name is checked on its own.
    text: Option<&'a str>,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = Header<'a>;

    fn next(&mut self) -> Option<Header<'a>> {
        while !self.rest.is_empty() {
            // One word-at-a-time search for the line end, then a short scan of the name
            // for the colon: each byte of the line is looked at once.
            let (line, rest) = match find_byte(self.rest, b'\n') {
                Some(lf) => {
                    let (line, rest) = self.rest.split_at(lf);
                    (line, rest.get(1..).unwrap_or(&[]))
                }
                None => (self.rest, &[][..]),
            };
            let line_text = self.text;
            self.text = self
                .text
                .and_then(|t| t.get(self.rest.len() - rest.len()..));
            self.rest = rest;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|b| *b == b':') else {
                // The empty line ending the section (or, defensively, anything
                // httparse would not have accepted).
                continue;
            };
            let (name, value) = line.split_at(colon);
            let name = match line_text.and_then(|t| t.get(..colon)) {
                Some(name) => name,
                None => {
                    // httparse accepted the name as a token (ASCII), so the
                    // first UTF-8 chunk is the whole name.
                    let name = name.utf8_chunks().next().map_or("", |c| c.valid());
                    if name.len() != colon {
                        continue;
                    }
                    name
                }
            };
            return Some(Header {
                name,
                value: trim_ows(value.get(1..).unwrap_or(&[])),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_iterates_lines() {
        let raw = b"Host: a\r\nX-Empty:\r\nX-Ws: \t v \t\r\nLf-Only: x\n\r\n";
        let h = Headers::new(raw);
        let v: Vec<_> = h.iter().map(|h| (h.name, h.value)).collect();
        assert_eq!(
            v,
            vec![
                ("Host", &b"a"[..]),
                ("X-Empty", &b""[..]),
                ("X-Ws", &b"v"[..]),
                ("Lf-Only", &b"x"[..])
            ]
        );
        assert_eq!(h.get("host"), Some(&b"a"[..]));
        assert_eq!(h.get("missing"), None);
        assert_eq!(h.len(), 4);
        assert!(!h.is_empty());
        assert!(Headers::new(b"\r\n").is_empty());
        assert_eq!(h.get_all("X-WS").count(), 1);
    }

    #[test]
    fn view_edges() {
        // Values with colons, no final line end, a line without a colon, a
        // non-UTF-8 value (obs-text) before and after other fields, and a
        // name that is not UTF-8 (skipped, as before).
        let raw = b"Date: Wed, 10:47:05 GMT\r\nX-Obs: caf\xe9\r\nNoColon\r\nA:b:c\r\n\xff\xfe: v\r\nLast:  z ";
        let v: Vec<_> = Headers::new(raw)
            .iter()
            .map(|h| (h.name, h.value))
            .collect();
        assert_eq!(
            v,
            vec![
                ("Date", &b"Wed, 10:47:05 GMT"[..]),
                ("X-Obs", &b"caf\xe9"[..]),
                ("A", &b"b:c"[..]),
                ("Last", &b"z"[..]),
            ]
        );
        // The same lines, all ASCII, take the sliced-text path.
        let raw = b"Date: Wed, 10:47:05 GMT\nNoColon\r\nA:b:c\r\n:empty\r\nLast:  z ";
        let v: Vec<_> = Headers::new(raw)
            .iter()
            .map(|h| (h.name, h.value))
            .collect();
        assert_eq!(
            v,
            vec![
                ("Date", &b"Wed, 10:47:05 GMT"[..]),
                ("A", &b"b:c"[..]),
                ("", &b"empty"[..]),
                ("Last", &b"z"[..]),
            ]
        );
        assert_eq!(Headers::new(b"").iter().count(), 0);
        assert_eq!(Headers::new(b"\n").iter().count(), 0);
    }

    /// The iterator as it was before the word-at-a-time search: two splits
    /// per line and a UTF-8 check of each name.
    fn reference_fields(mut rest: &[u8]) -> Vec<(&str, &[u8])> {
        let mut out = Vec::new();
        while !rest.is_empty() {
            let mut lines = rest.splitn(2, |b| *b == b'\n');
            let line = lines.next().unwrap_or(&[]);
            rest = lines.next().unwrap_or(&[]);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let mut parts = line.splitn(2, |b| *b == b':');
            let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Ok(name) = core::str::from_utf8(name) else {
                continue;
            };
            out.push((name, trim_ows(value)));
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1024,
            failure_persistence: None,
            ..Default::default()
        })]

        #[test]
        fn iterator_matches_reference(
            bytes in proptest::collection::vec(
                proptest::sample::select(&b"\n\r: \tAz-\xe9\xff\xc3\xa9"[..]),
                0..80,
            )
        ) {
            let ours: Vec<_> = Headers::new(&bytes).iter().map(|h| (h.name, h.value)).collect();
            proptest::prop_assert_eq!(ours, reference_fields(&bytes));
        }
    }
}
