//! Decodes every story of the hpack-test-case corpus
//! (<https://github.com/http2jp/hpack-test-case>): each folder other than `raw-data` holds
//! one encoder's output. Every case of every story file of every folder is decoded with
//! one decoder per story (cases in order, honouring `header_table_size`), and the result
//! is compared with the story's own `headers` and with `raw-data` (same story name, same
//! case order).
//!
//! The corpus is vendored as `testdata/corpora/hpack-test-case.tar.xz` and unpacked once into
//! the target directory (`support::corpus`); `$H2LAB_HPACK_TEST_CASE` may point at a checkout
//! instead.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use h2lab_wire::hpack::Decoder;
use serde_json::Value;

/// Corpus size as of this writing: 8 encoder folders (6 with 32 stories, 2 with 31).
const EXPECTED_FOLDERS: usize = 8;
const EXPECTED_STORIES: usize = 254;
const EXPECTED_CASES: usize = 26_838;

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

fn corpus_dir() -> PathBuf {
    support::corpus::HPACK_TEST_CASE.dir()
}

fn story_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases(story: &Value, path: &Path) -> Vec<Value> {
    story["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no cases array", path.display()))
        .clone()
}

fn headers(case: &Value) -> Headers {
    case["headers"]
        .as_array()
        .expect("headers array")
        .iter()
        .map(|h| {
            let obj = h.as_object().expect("header object");
            assert_eq!(obj.len(), 1, "one name per header object");
            let (n, v) = obj.iter().next().unwrap();
            (
                n.as_bytes().to_vec(),
                v.as_str().expect("string value").as_bytes().to_vec(),
            )
        })
        .collect()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn show(h: &Headers) -> Vec<(String, String)> {
    h.iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into(),
                String::from_utf8_lossy(v).into(),
            )
        })
        .collect()
}

#[test]
fn decode_every_story_of_every_encoder() {
    let root = corpus_dir();
    let raw_dir = root.join("raw-data");
    let mut folders: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "raw-data"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    folders.sort();

    let (mut n_stories, mut n_cases, mut n_fields) = (0usize, 0usize, 0usize);
    let mut on_disk = 0usize;
    let mut report = Vec::new();
    for folder in &folders {
        let files = story_files(folder);
        on_disk += files.len();
        let (mut folder_stories, mut folder_cases) = (0, 0);
        for file in &files {
            let name = file.file_name().unwrap();
            let raw_path = raw_dir.join(name);
            let raw = load(&raw_path);
            let raw_cases = cases(&raw, &raw_path);
            let story = load(file);
            let story_cases = cases(&story, file);
            assert_eq!(
                story_cases.len(),
                raw_cases.len(),
                "{}: case count differs from raw-data",
                file.display()
            );
            // One decoder (one connection) per story.
            let mut decoder = Decoder::new(4096);
            for (i, (case, raw_case)) in story_cases.iter().zip(&raw_cases).enumerate() {
                if let Some(size) = case.get("header_table_size").and_then(Value::as_u64) {
                    // The encoder's table size, as if our SETTINGS carrying it had just
                    // been acknowledged.
                    decoder.set_max_table_size(size as usize);
                }
                let wire = unhex(case["wire"].as_str().expect("wire"));
                let mut got: Headers = Vec::new();
                decoder
                    .decode(&wire, |f| got.push((f.name.to_vec(), f.value.to_vec())))
                    .unwrap_or_else(|e| panic!("{} case {i}: {e}", file.display()));
                let want = headers(case);
                assert_eq!(
                    show(&got),
                    show(&want),
                    "{} case {i}: story headers",
                    file.display()
                );
                assert_eq!(
                    show(&got),
                    show(&headers(raw_case)),
                    "{} case {i}: raw-data headers",
                    file.display()
                );
                n_fields += got.len();
                folder_cases += 1;
            }
            folder_stories += 1;
        }
        assert_eq!(folder_stories, files.len());
        report.push(format!(
            "{}: {folder_stories} stories, {folder_cases} cases",
            folder.file_name().unwrap().to_string_lossy()
        ));
        n_stories += folder_stories;
        n_cases += folder_cases;
    }
    eprintln!("{}", report.join("\n"));
    eprintln!("decoded {n_stories} stories, {n_cases} cases, {n_fields} fields");
    assert_eq!(
        folders.len(),
        EXPECTED_FOLDERS,
        "encoder folders: {report:?}"
    );
    assert_eq!(n_stories, on_disk, "every story file on disk was decoded");
    assert_eq!(n_stories, EXPECTED_STORIES, "story count: {report:?}");
    assert_eq!(n_cases, EXPECTED_CASES, "case count: {report:?}");
}
