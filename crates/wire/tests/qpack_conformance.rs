//! QPACK offline interop (<https://github.com/qpackers/qifs>, vendored as
//! `testdata/corpora/qifs.tar.xz`, or `$H2LAB_QIFS`):
//!
//! - every encoding by every encoder (`encoded/qpack-05/ENCODER/NAME.out.TABLESIZE.BLOCKED.ACKMODE`:
//!   a sequence of (stream id u64 BE, length u32 BE, data), stream 0 being the encoder
//!   stream) decodes back to its QIF with the table size and blocked-streams limit from the
//!   file name. Blocks are compared in stream order (sections released from blocking come
//!   out of file order; the corpus's `sort-qif.pl` sorts by stream, and with `--http` it
//!   moves pseudo-header fields and content-length to the top of each block; the comparison
//!   here canonicalises the same way);
//! - every input in `encoded/errors` is handled as the RFC says: ten are rejected with a
//!   typed error, two (err9, err10) are valid under RFC 9204 (see
//!   `error_corpus_is_rejected_with_typed_errors`);
//! - our encoder's output for every QIF round-trips through our decoder at table sizes 0,
//!   256, 512 and 4096, blocked streams 0 and 100, with the dynamic table on and off.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use h2lab_wire::qpack::{Decoded, Decoder, QpackError, QpackErrorCode, Source};

type Block = Vec<(Vec<u8>, Vec<u8>)>;

/// Field sections in the six encoders' 528 files.
const EXPECTED_SECTIONS: usize = 137_984;
/// Of those, sections that arrive before the inserts they reference.
const EXPECTED_BLOCKED: usize = 7_342;

fn root() -> PathBuf {
    support::corpus::QIFS.dir()
}

/// The header lists of a QIF file, in order (blank-line separated, `#` comments).
fn read_qif(path: &Path) -> Vec<Block> {
    let text = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut blocks = Vec::new();
    let mut cur = Block::new();
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if !cur.is_empty() {
                blocks.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if line.first() == Some(&b'#') {
            continue;
        }
        let tab = line.iter().position(|&b| b == b'\t').unwrap_or(line.len());
        let value = line.get(tab + 1..).unwrap_or_default();
        cur.push((line[..tab].to_vec(), value.to_vec()));
    }
    if !cur.is_empty() {
        blocks.push(cur);
    }
    blocks
}

/// `sort-qif.pl --http`: pseudo-header fields (sorted), then content-length, then the rest
/// in order.
fn canonical(block: &Block) -> Block {
    let mut pseudo: Block = block
        .iter()
        .filter(|f| f.0.starts_with(b":"))
        .cloned()
        .collect();
    pseudo.sort();
    let mut cl: Block = block
        .iter()
        .filter(|f| f.0 == b"content-length")
        .cloned()
        .collect();
    cl.sort();
    pseudo.extend(cl);
    pseudo.extend(
        block
            .iter()
            .filter(|f| !f.0.starts_with(b":") && f.0 != b"content-length")
            .cloned(),
    );
    pseudo
}

/// Splits an offline-interop file into (stream id, data) records.
fn records(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut p = 0;
    while p < bytes.len() {
        let id = u64::from_be_bytes(bytes[p..p + 8].try_into().unwrap());
        let len = u32::from_be_bytes(bytes[p + 8..p + 12].try_into().unwrap()) as usize;
        out.push((id, &bytes[p + 12..p + 12 + len]));
        p += 12 + len;
    }
    out
}

/// Decodes an offline-interop stream with a fresh decoder; returns the blocks by stream id
/// and the decoder-stream bytes produced.
fn decode_file(
    bytes: &[u8],
    table: usize,
    blocked: usize,
) -> Result<(BTreeMap<u64, Block>, Vec<u8>), QpackError> {
    decode_counting(bytes, table, blocked).map(|(m, f, _)| (m, f))
}

/// Blocks by stream id, decoder-stream bytes, sections blocked on arrival.
type Counted = (BTreeMap<u64, Block>, Vec<u8>, usize);

/// [`decode_file`], also counting the sections that were blocked on arrival.
fn decode_counting(bytes: &[u8], table: usize, blocked: usize) -> Result<Counted, QpackError> {
    let mut blocked_sections = 0;
    let mut dec = Decoder::new(table, blocked);
    // qpack-05 encoders (f5, proxygen...) assume the table starts at its maximum capacity,
    // as the drafts of the time said; RFC 9204 starts it at 0 and needs Set Capacity.
    dec.assume_capacity(table);
    let mut out = BTreeMap::new();
    let mut feedback = Vec::new();
    for (id, data) in records(bytes) {
        if id == 0 {
            dec.feed_encoder_stream(data)?;
            while let Some(s) = dec.next_unblocked() {
                let mut block = Block::new();
                let r =
                    dec.decode_unblocked(s, |f| block.push((f.name.to_vec(), f.value.to_vec())))?;
                assert_eq!(r, Decoded::Done);
                assert!(out.insert(s, block).is_none(), "stream {s} twice");
            }
        } else {
            let mut block = Block::new();
            let r = dec.decode_section(id, data, |f| {
                block.push((f.name.to_vec(), f.value.to_vec()))
            })?;
            if r == Decoded::Done {
                assert!(out.insert(id, block).is_none(), "stream {id} twice");
            } else {
                assert!(block.is_empty());
                blocked_sections += 1;
            }
        }
        dec.take_decoder_stream(&mut feedback);
    }
    assert_eq!(
        dec.blocked_streams(),
        0,
        "sections still blocked at the end"
    );
    Ok((out, feedback, blocked_sections))
}

fn encodings() -> Vec<(String, PathBuf)> {
    let base = root().join("encoded/qpack-05");
    let mut out = Vec::new();
    for enc in fs::read_dir(&base).unwrap() {
        let enc = enc.unwrap().path();
        // `examples/` and `draft-examples.out` are checked by `rfc_and_draft_examples`.
        if !enc.is_dir() || enc.ends_with("examples") {
            continue;
        }
        for f in fs::read_dir(&enc).unwrap() {
            let f = f.unwrap().path();
            out.push((enc.file_name().unwrap().to_string_lossy().into_owned(), f));
        }
    }
    out.sort();
    out
}

#[test]
fn every_encoding_decodes_to_its_qif() {
    let qifs = root().join("qifs");
    let mut per_encoder: BTreeMap<String, usize> = BTreeMap::new();
    let mut sections = 0usize;
    let mut blocked_sections = 0usize;
    for (encoder, path) in encodings() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (qif, params) = name.split_once(".out.").unwrap();
        let p: Vec<usize> = params.split('.').map(|x| x.parse().unwrap()).collect();
        let (table, blocked) = (p[0], p[1]);
        let expected = read_qif(&qifs.join(format!("{qif}.qif")));
        let bytes = fs::read(&path).unwrap();
        let (got, _, b) = decode_counting(&bytes, table, blocked)
            .unwrap_or_else(|e| panic!("{encoder}/{name}: {e}"));
        if blocked == 0 {
            assert_eq!(
                b, 0,
                "{encoder}/{name}: blocked with SETTINGS_QPACK_BLOCKED_STREAMS 0"
            );
        }
        blocked_sections += b;
        assert_eq!(got.len(), expected.len(), "{encoder}/{name}: block count");
        for (i, (id, block)) in got.iter().enumerate() {
            assert_eq!(
                canonical(block),
                canonical(&expected[i]),
                "{encoder}/{name}: stream {id} (block {i})"
            );
        }
        sections += got.len();
        *per_encoder.entry(encoder).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = [
        ("f5", 72),
        ("ls-qpack", 96),
        ("nghttp3", 96),
        ("proxygen", 72),
        ("qthingey", 96),
        ("quinn", 96),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(per_encoder, expected);
    // Every header list of every file (the six QIFs have 1,000+ lists between them, each
    // encoded at 16 or 12 settings), and the sections that had to wait for the encoder
    // stream (blocked on arrival, released later).
    eprintln!("{sections} sections decoded, {blocked_sections} blocked on arrival");
    assert_eq!(sections, EXPECTED_SECTIONS);
    assert_eq!(blocked_sections, EXPECTED_BLOCKED);
}

#[test]
fn error_corpus_is_rejected_with_typed_errors() {
    let dir = root().join("encoded/errors");
    let mut results = BTreeMap::new();
    for e in fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        results.insert(
            name,
            decode_file(&fs::read(&p).unwrap(), 4096, 100).map(|r| r.0),
        );
    }
    assert_eq!(results.len(), 12);
    let prim = |source, error| QpackError::Primitive { source, error };
    use h2lab_wire::hpack::HpackError::{IntegerOverflow, Truncated};
    let fs = Source::FieldSection;
    let expect: [(&str, QpackError); 10] = [
        // Required Insert Count integer cut short.
        ("err1", prim(fs, Truncated)),
        // Prefix without its Delta Base octet.
        ("err2", prim(fs, Truncated)),
        // Delta Base integer cut short.
        ("err3", prim(fs, Truncated)),
        // Required Insert Count 0, sign 1, Delta Base 1: Base = 0 - 1 - 1.
        ("err4", QpackError::NegativeBase),
        // Literal with a dynamic name reference in a section that references nothing.
        (
            "err5",
            QpackError::InvalidDynamicReference {
                source: fs,
                index: u64::MAX,
            },
        ),
        // Literal name whose length integer is cut short.
        ("err6", prim(fs, Truncated)),
        // Huffman value whose length integer is cut short.
        ("err7", prim(fs, Truncated)),
        // Indexed dynamic field line whose index is cut short.
        ("err8", prim(fs, Truncated)),
        // Encoder stream: Duplicate of relative index 1 in an empty table.
        (
            "err11",
            QpackError::InvalidDynamicReference {
                source: Source::EncoderStream,
                index: 1,
            },
        ),
        // Encoder stream: an index integer with more continuation octets than any valid one.
        ("err12", prim(Source::EncoderStream, IntegerOverflow)),
    ];
    for (name, err) in expect {
        assert_eq!(results[name].as_ref().err(), Some(&err), "{name}");
    }
    assert_eq!(
        results["err11"].as_ref().unwrap_err().code(),
        QpackErrorCode::EncoderStreamError
    );
    assert_eq!(
        results["err4"].as_ref().unwrap_err().code(),
        QpackErrorCode::DecompressionFailed
    );
    // err9 (0xc0) and err10 (0xfe) were written for the drafts' 1-based, 61-entry static
    // table: index 0 and index 62 were invalid there. RFC 9204's static table is 0-based
    // with 99 entries, so both are valid indexed field lines today.
    let one = |name: &str, v: &[u8], n: &[u8]| {
        let got = results[name]
            .as_ref()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got[&1], vec![(n.to_vec(), v.to_vec())], "{name}");
    };
    one("err9", b"", b":authority");
    one("err10", b"1; mode=block", b"x-xss-protection");
}

#[test]
fn rfc_and_draft_examples() {
    let base = root().join("encoded/qpack-05");
    let b = |v: &[(&str, &str)]| -> Block {
        v.iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    // RFC 9204 Appendix B (capacity 220): B.1 static only, B.2 dynamic with post-base
    // references (blocked until the inserts arrive), B.3/B.4 speculative insert, Duplicate.
    let bytes = fs::read(base.join("examples/examples.out.220.100.1")).unwrap();
    let (got, feedback) = decode_file(&bytes, 220, 100).unwrap();
    assert_eq!(got[&4], b(&[(":path", "/index.html")]));
    assert_eq!(
        got[&8],
        b(&[(":authority", "www.example.com"), (":path", "/sample/path")])
    );
    assert_eq!(
        got[&12],
        b(&[
            (":authority", "www.example.com"),
            (":path", "/"),
            ("custom-key", "custom-value")
        ])
    );
    // Section Acknowledgments for streams 8 and 12 (B.2: "0x88"), Insert Count Increments.
    assert!(
        feedback.contains(&0x88) && feedback.contains(&0x8c),
        "{feedback:02x?}"
    );
    // The draft example against `qifs/draft-examples.qif`.
    let bytes = fs::read(base.join("draft-examples.out")).unwrap();
    let (got, _) = decode_file(&bytes, 4096, 100).unwrap();
    let expected = read_qif(&root().join("qifs/draft-examples.qif"));
    assert_eq!(got.into_values().collect::<Vec<_>>(), expected);
}

/// Encodes every block of `blocks` with our encoder and decodes it with our decoder, the
/// encoder stream and the decoder stream each arriving `lag` sections late (so sections
/// block and acknowledgments trail). Returns (section octets, encoder-stream octets,
/// sections that blocked).
fn round_trip(
    blocks: &[Block],
    table: usize,
    blocked: usize,
    dynamic: bool,
    lag: usize,
) -> (usize, usize, usize) {
    use h2lab_wire::qpack::{Encoder, EncoderConfig};
    let mut enc = Encoder::new(EncoderConfig {
        use_dynamic_table: dynamic,
        max_table_capacity: 4096,
    });
    enc.set_peer_settings(table, blocked);
    let mut dec = Decoder::new(table, blocked);
    let mut enc_q: std::collections::VecDeque<Vec<u8>> = Default::default();
    let mut dec_q: std::collections::VecDeque<Vec<u8>> = Default::default();
    let mut got: BTreeMap<u64, Block> = BTreeMap::new();
    let (mut section_octets, mut stream_octets, mut blocked_sections) = (0, 0, 0);
    let ctx = |i: usize| format!("table {table} blocked {blocked} dynamic {dynamic} block {i}");
    let release = |dec: &mut Decoder, got: &mut BTreeMap<u64, Block>| {
        while let Some(s) = dec.next_unblocked() {
            let mut b = Block::new();
            dec.decode_unblocked(s, |f| b.push((f.name.to_vec(), f.value.to_vec())))
                .unwrap();
            got.insert(s, b);
        }
    };
    for (i, block) in blocks.iter().enumerate() {
        let id = 4 * i as u64;
        let (mut section, mut stream) = (Vec::new(), Vec::new());
        enc.encode(
            id,
            block.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
            &mut section,
            &mut stream,
        );
        section_octets += section.len();
        stream_octets += stream.len();
        enc_q.push_back(stream);
        let mut b = Block::new();
        match dec.decode_section(id, &section, |f| {
            b.push((f.name.to_vec(), f.value.to_vec()))
        }) {
            Ok(Decoded::Done) => {
                got.insert(id, b);
            }
            Ok(Decoded::Blocked) => blocked_sections += 1,
            Err(e) => panic!("{}: {e}", ctx(i)),
        }
        if enc_q.len() > lag {
            let s = enc_q.pop_front().unwrap();
            dec.feed_encoder_stream(&s)
                .unwrap_or_else(|e| panic!("{}: {e}", ctx(i)));
            release(&mut dec, &mut got);
        }
        let mut fb = Vec::new();
        dec.take_decoder_stream(&mut fb);
        dec_q.push_back(fb);
        if dec_q.len() > lag {
            enc.feed_decoder_stream(&dec_q.pop_front().unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", ctx(i)));
        }
        assert!(enc.blocking_streams() <= blocked, "{}", ctx(i));
    }
    for s in enc_q.drain(..) {
        dec.feed_encoder_stream(&s).unwrap();
        release(&mut dec, &mut got);
    }
    let mut fb = Vec::new();
    dec.take_decoder_stream(&mut fb);
    for d in dec_q.drain(..).chain(std::iter::once(fb)) {
        enc.feed_decoder_stream(&d).unwrap();
    }
    assert_eq!(dec.blocked_streams(), 0);
    assert_eq!(
        got.len(),
        blocks.len(),
        "table {table} blocked {blocked} dynamic {dynamic}"
    );
    for (i, b) in got.values().enumerate() {
        assert_eq!(b, &blocks[i], "{}", ctx(i));
    }
    // Every section was acknowledged: nothing pins the table any more.
    assert_eq!(enc.blocking_streams(), 0);
    (section_octets, stream_octets, blocked_sections)
}

#[test]
fn encoder_round_trips_every_qif() {
    let mut qifs: Vec<PathBuf> = fs::read_dir(root().join("qifs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    qifs.sort();
    assert_eq!(qifs.len(), 7);
    let mut runs = 0;
    for q in &qifs {
        let blocks = read_qif(q);
        for table in [0, 256, 512, 4096] {
            let (static_only, none, _) = round_trip(&blocks, table, 100, false, 3);
            assert_eq!(none, 0, "static-only writes no encoder stream");
            for blocked in [0, 100] {
                let (with_dyn, stream, blocked_sections) =
                    round_trip(&blocks, table, blocked, true, 3);
                runs += 1;
                if blocked == 0 {
                    assert_eq!(blocked_sections, 0, "{}: blocked with limit 0", q.display());
                }
                if table == 4096 && blocks.len() > 10 {
                    assert!(stream > 0);
                    assert!(
                        with_dyn < static_only,
                        "{}: {with_dyn} >= {static_only}",
                        q.display()
                    );
                    if blocked == 100 {
                        assert!(
                            blocked_sections > 0,
                            "{}: the lag should block",
                            q.display()
                        );
                    }
                }
            }
        }
    }
    // 7 QIFs x 4 table sizes x 2 blocked-stream limits, plus the 28 static-only runs.
    assert_eq!(runs, 56);
}
