//! Validation of decoded HTTP/3 field sections (RFC 9114 §4.2, §4.3), shared with HTTP/2.
//!
//! HTTP/3 states the same field rules as HTTP/2 (RFC 9114 §4.2: field names in lowercase,
//! no connection-specific fields, TE only "trailers"; §4.3: the pseudo-header fields, in
//! front, once each, the request and response sets; §4.4: CONNECT), so the checker is
//! HTTP/2's ([`crate::h2`]'s `fields` module); only the error differs. RFC 9114 §4.1.2:
//! "Malformed requests or responses that are detected MUST be treated as a stream error of
//! type H3_MESSAGE_ERROR." The rule strings cite RFC 9113's equivalent sections.

use super::error::{ErrorCode, H3Error};
use crate::h2::fields::{BlockKind, FieldCheck};

/// What a field section is expected to carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    /// A request header section (read by a server).
    Request,
    /// A response header section, informational or final (read by a client).
    Response,
    /// A trailer section.
    Trailers,
}

/// Facts about a valid section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SectionFacts {
    /// The `content-length` value, if present.
    pub content_length: Option<u64>,
    /// The `:status` of a response.
    pub status: Option<u16>,
    /// The request method was HEAD.
    pub is_head: bool,
    /// The request method was CONNECT.
    pub is_connect: bool,
}

/// Incremental validator for one field section: no allocation, fed one field at a time.
#[derive(Clone, Debug)]
pub struct FieldValidator(FieldCheck);

fn malformed(rule: &'static str) -> H3Error {
    H3Error::stream(ErrorCode::H3_MESSAGE_ERROR, rule)
}

impl FieldValidator {
    /// A validator for a section of the given kind.
    pub fn new(kind: SectionKind) -> Self {
        FieldValidator(FieldCheck::new(match kind {
            SectionKind::Request => BlockKind::Request,
            SectionKind::Response => BlockKind::Response,
            SectionKind::Trailers => BlockKind::Trailers,
        }))
    }

    /// Checks one field line.
    pub fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), H3Error> {
        self.0.field(name, value).map_err(malformed)
    }

    /// Checks what needs the whole section (mandatory pseudo-header fields).
    pub fn finish(&self) -> Result<SectionFacts, H3Error> {
        let f = self.0.finish().map_err(malformed)?;
        Ok(SectionFacts {
            content_length: f.content_length,
            status: f.status,
            is_head: f.is_head,
            is_connect: f.is_connect,
        })
    }
}
