//! The vendored test corpora (`testdata/corpora/*.tar.xz`, see its README): each archive is
//! unpacked once into Cargo's target directory and the tests read the files from there, so a
//! plain clone needs nothing outside the repository.
//!
//! The unpacked copy lives in `CARGO_TARGET_TMPDIR/corpora/<name>-<hash of the archive>/`:
//! a changed archive gets a new directory, and test binaries running at the same time each
//! unpack into a private directory and rename it into place, so none of them ever reads a
//! half-written corpus.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Cursor;
use std::path::{Path, PathBuf};

/// A vendored corpus: its archive under `testdata/corpora/`, the folder the archive holds, a
/// path inside that folder that proves it is complete, and the environment variable that may
/// point at an unpacked checkout instead.
pub struct Corpus {
    /// The archive's file name under `testdata/corpora/`.
    pub archive: &'static str,
    /// The top-level folder inside the archive.
    pub folder: &'static str,
    /// A path relative to the folder that must exist (checked for overrides too).
    pub marker: &'static str,
    /// Environment variable naming an unpacked copy to use instead.
    pub env_override: &'static str,
}

/// HPACK stories: <https://github.com/http2jp/hpack-test-case>.
#[allow(dead_code)] // Reason: each test binary includes this module and uses one of the corpora.
pub const HPACK_TEST_CASE: Corpus = Corpus {
    archive: "hpack-test-case.tar.xz",
    folder: "hpack-test-case",
    marker: "raw-data",
    env_override: "H2LAB_HPACK_TEST_CASE",
};

/// QPACK offline-interop corpus: <https://github.com/qpackers/qifs>.
#[allow(dead_code)] // Reason: each test binary includes this module and uses one of the corpora.
pub const QIFS: Corpus = Corpus {
    archive: "qifs.tar.xz",
    folder: "qifs",
    marker: "encoded/qpack-05",
    env_override: "H2LAB_QIFS",
};

impl Corpus {
    /// The corpus's root folder: the override when its variable is set, else the unpacked
    /// archive (unpacked on first use).
    pub fn dir(&self) -> PathBuf {
        if let Some(p) = std::env::var_os(self.env_override) {
            let dir = PathBuf::from(p);
            assert!(
                dir.join(self.marker).exists(),
                "{}={} has no {} (expected an unpacked {} corpus)",
                self.env_override,
                dir.display(),
                self.marker,
                self.folder
            );
            return dir;
        }
        self.unpacked()
    }

    fn archive_path(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/corpora")
            .join(self.archive)
    }

    fn unpacked(&self) -> PathBuf {
        let archive = self.archive_path();
        let bytes = fs::read(&archive).unwrap_or_else(|e| {
            panic!(
                "vendored corpus {} not readable: {e} (it is part of the repository)",
                archive.display()
            )
        });
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpora");
        let dest = base.join(format!("{}-{:016x}", self.folder, h.finish()));
        let root = dest.join(self.folder);
        if root.join(self.marker).exists() {
            return root;
        }
        fs::create_dir_all(&base).unwrap();
        let scratch = base.join(format!(
            ".{}-{}-{:?}",
            self.folder,
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&scratch);
        fs::create_dir_all(&scratch).unwrap();
        let mut tar = Vec::with_capacity(bytes.len() * 50);
        lzma_rs::xz_decompress(&mut Cursor::new(&bytes), &mut tar)
            .unwrap_or_else(|e| panic!("{}: not a valid xz stream: {e:?}", archive.display()));
        tar::Archive::new(Cursor::new(tar))
            .unpack(&scratch)
            .unwrap_or_else(|e| panic!("{}: unpacking failed: {e}", archive.display()));
        assert!(
            scratch.join(self.folder).join(self.marker).exists(),
            "{} does not hold {}/{}",
            archive.display(),
            self.folder,
            self.marker
        );
        // Another test binary may have won the race; its copy is as good as ours.
        if fs::rename(&scratch, &dest).is_err() {
            let _ = fs::remove_dir_all(&scratch);
        }
        assert!(
            root.join(self.marker).exists(),
            "{} missing",
            root.display()
        );
        root
    }
}
