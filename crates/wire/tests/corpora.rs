//! The vendored corpora are complete and readable from a plain clone: the archives under
//! `testdata/corpora/` unpack to the files the conformance tests expect (issue: a plain clone
//! passes its tests). The QPACK corpus is checked for its layout here; its decoding tests
//! come with the QPACK decoder.

mod support;

use std::fs;
use std::path::Path;

use support::corpus::{HPACK_TEST_CASE, QIFS};

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn hpack_corpus_has_every_encoder_and_the_raw_stories() {
    let root = HPACK_TEST_CASE.dir();
    let json = |d: &str| {
        files_under(&root.join(d))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .count()
    };
    assert_eq!(json("raw-data"), 32);
    let encoders = [
        "go-hpack",
        "haskell-http2-linear-huffman",
        "nghttp2",
        "nghttp2-16384-4096",
        "nghttp2-change-table-size",
        "node-http2-hpack",
        "python-hpack",
        "swift-nio-hpack-huffman",
    ];
    let stories: usize = encoders.iter().map(|e| json(e)).sum();
    assert_eq!(stories, 254, "stories over the 8 encoders");
    assert!(root.join("LICENSE").is_file());
}

#[test]
fn qpack_corpus_has_every_qif_and_every_encoding() {
    let root = QIFS.dir();
    let qifs: Vec<_> = files_under(&root.join("qifs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "qif"))
        .collect();
    assert_eq!(qifs.len(), 7, "QIF header lists");
    for q in &qifs {
        let text = fs::read_to_string(q).unwrap();
        assert!(text.lines().any(|l| l.contains('\t')), "{}", q.display());
    }
    let per_encoder = |e: &str| files_under(&root.join("encoded/qpack-05").join(e)).len();
    assert_eq!(per_encoder("nghttp3"), 96);
    assert_eq!(per_encoder("ls-qpack"), 96);
    assert_eq!(per_encoder("quinn"), 96);
    assert_eq!(per_encoder("qthingey"), 96);
    assert_eq!(per_encoder("proxygen"), 72);
    assert_eq!(per_encoder("f5"), 72);
    assert_eq!(files_under(&root.join("encoded/errors")).len(), 12);
    assert!(root.join("LICENSE.md").is_file());
}
