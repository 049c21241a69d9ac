//! A mock HTTP/3 peer for tests (the counterpart of [`crate::h2::testing`]): it writes the
//! bytes a peer would put on its streams (control stream with SETTINGS, QPACK encoder
//! stream, request or response streams) with its own QPACK encoder, and decodes what our
//! side wrote. No QUIC: streams are byte vectors.

use super::frame::{Frame, Settings};
use super::request::{write_data_header, write_headers};
use super::stream::UniStreamType;
use crate::qpack::{Decoded, Decoder, Encoder, EncoderConfig};

/// Owned header fields.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The mock peer: one QPACK encoder for what it sends, one decoder for what it reads.
#[derive(Debug)]
pub struct Peer {
    /// Its QPACK encoder.
    pub encoder: Encoder,
    /// Its QPACK decoder.
    pub decoder: Decoder,
    /// Bytes it has written on its QPACK encoder stream (after the stream type).
    pub encoder_stream: Vec<u8>,
}

impl Peer {
    /// A peer that uses the dynamic table if `dynamic`, talking to an endpoint that
    /// advertised `table`/`blocked` (QPACK settings), and advertising the same itself.
    pub fn new(dynamic: bool, table: usize, blocked: usize) -> Self {
        let mut encoder = Encoder::new(EncoderConfig {
            use_dynamic_table: dynamic,
            max_table_capacity: table,
        });
        encoder.set_peer_settings(table, blocked);
        Peer {
            encoder,
            decoder: Decoder::new(table, blocked),
            encoder_stream: Vec::new(),
        }
    }

    /// The bytes of a control stream: the stream type and a SETTINGS frame.
    pub fn control_stream(settings: Settings) -> Vec<u8> {
        let mut out = Vec::new();
        UniStreamType::Control.write(&mut out);
        Frame::Settings(settings).encode(&mut out);
        out
    }

    /// A message on `stream_id`: HEADERS with `fields`, one DATA frame per body piece, then
    /// a trailer HEADERS if `trailers` is not empty.
    pub fn message(
        &mut self,
        stream_id: u64,
        fields: &Fields,
        body: &[&[u8]],
        trailers: &Fields,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        self.section(stream_id, fields, &mut out);
        for piece in body {
            write_data_header(piece.len() as u64, &mut out);
            out.extend_from_slice(piece);
        }
        if !trailers.is_empty() {
            self.section(stream_id, trailers, &mut out);
        }
        out
    }

    fn section(&mut self, stream_id: u64, fields: &Fields, out: &mut Vec<u8>) {
        let mut s = Vec::new();
        self.encoder.encode(
            stream_id,
            fields.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
            &mut s,
            &mut self.encoder_stream,
        );
        write_headers(&s, out);
    }

    /// Decodes a field section our side sent (the caller feeds our encoder stream to
    /// `self.decoder` first); `None` if it is blocked.
    pub fn decode_section(&mut self, stream_id: u64, section: &[u8]) -> Option<Fields> {
        let mut out = Fields::new();
        match self.decoder.decode_section(stream_id, section, |f| {
            out.push((f.name.to_vec(), f.value.to_vec()))
        }) {
            Ok(Decoded::Done) => Some(out),
            Ok(Decoded::Blocked) => None,
            Err(e) => panic!("peer could not decode our section: {e}"),
        }
    }
}

/// Owned fields from string pairs.
pub fn fields(pairs: &[(&str, &str)]) -> Fields {
    pairs
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// An event sink that records everything (for [`super::request::RequestStream`] tests).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recorder {
    /// Fields of the sections so far, section by section.
    pub sections: Vec<Fields>,
    /// Content received.
    pub body: Vec<u8>,
    /// Push IDs promised.
    pub pushes: Vec<u64>,
    /// Informational sections seen.
    pub informational: usize,
    /// The message ended.
    pub ended: bool,
    current: Fields,
}

impl super::request::RequestEvents for Recorder {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        self.current.push((name.to_vec(), value.to_vec()));
    }
    fn section_done(
        &mut self,
        _kind: super::fields::SectionKind,
        _facts: super::fields::SectionFacts,
        informational: bool,
    ) {
        self.informational += usize::from(informational);
        self.sections.push(std::mem::take(&mut self.current));
    }
    fn data(&mut self, chunk: &[u8]) {
        self.body.extend_from_slice(chunk);
    }
    fn push_promise(&mut self, push_id: u64) {
        self.pushes.push(push_id);
    }
    fn end(&mut self) {
        self.ended = true;
    }
}
