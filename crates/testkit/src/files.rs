//! The files an anchor serves, their deterministic content, and the per-server temp dir.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// Name of the common 653-byte file (the response size of the h2load/nghttpd comparisons).
pub const FILE_653: &str = "file653";
/// Size of [`FILE_653`].
pub const SIZE_653: usize = 653;
/// Name of the common 100 KiB file.
pub const FILE_100K: &str = "file100k";
/// Size of [`FILE_100K`] (100 × 1024 bytes).
pub const SIZE_100K: usize = 100 * 1024;
/// Name of the common 10 MiB file (a "large response": many DATA frames, flow control).
pub const FILE_10M: &str = "file10m";
/// Size of [`FILE_10M`] (10 × 1024 × 1024 bytes).
pub const SIZE_10M: usize = 10 * 1024 * 1024;

/// What one file contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// `n` bytes of [`pattern_bytes`] content.
    Size(usize),
    /// Exactly these bytes.
    Bytes(Vec<u8>),
}

impl Content {
    /// The bytes this content stands for.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Content::Size(n) => pattern_bytes(*n),
            Content::Bytes(b) => b.clone(),
        }
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Content::Size(n) => *n,
            Content::Bytes(b) => b.len(),
        }
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The set of files put in a server's document root: relative name → content.
///
/// Names may contain `/` (sub-directories are created) but must stay inside the docroot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    entries: Vec<(String, Content)>,
}

impl Files {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Just the 653-byte [`FILE_653`].
    pub fn small() -> Self {
        Self::new().size(FILE_653, SIZE_653)
    }

    /// [`FILE_653`], [`FILE_100K`] and [`FILE_10M`].
    pub fn common() -> Self {
        Self::small()
            .size(FILE_100K, SIZE_100K)
            .size(FILE_10M, SIZE_10M)
    }

    /// Adds (or replaces) `name` with `len` bytes of deterministic content ([`pattern_bytes`]).
    pub fn size(self, name: impl Into<String>, len: usize) -> Self {
        self.with(name, Content::Size(len))
    }

    /// Adds (or replaces) `name` with exactly `data`.
    pub fn bytes(self, name: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        self.with(name, Content::Bytes(data.into()))
    }

    fn with(mut self, name: impl Into<String>, content: Content) -> Self {
        let name = name.into();
        self.entries.retain(|(n, _)| *n != name);
        self.entries.push((name, content));
        self
    }

    /// The entries, in insertion order.
    pub fn entries(&self) -> &[(String, Content)] {
        &self.entries
    }

    /// The content registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Content> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// Writes every file under `root` (world-readable, as Apache's workers need).
    pub(crate) fn write_to(&self, root: &Path) -> Result<(), Error> {
        for (name, content) in &self.entries {
            let rel = Path::new(name);
            let safe =
                !name.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
            if !safe {
                return Err(Error::Unsupported(format!(
                    "file name {name:?} must be a relative path without `..`"
                )));
            }
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| Error::io(format!("create {}", parent.display()), e))?;
                set_mode(parent, 0o755)?;
            }
            let mut f = fs::File::create(&path)
                .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
            match content {
                Content::Bytes(b) => f.write_all(b),
                Content::Size(n) => write_pattern(&mut f, *n),
            }
            .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
            set_mode(&path, 0o644)?;
        }
        Ok(())
    }
}

/// Deterministic, human-debuggable content of length `len`.
///
/// The content is made of 16-byte records, each the record's own byte offset as 15 lower-case
/// hex digits followed by `\n` (the last record is truncated). A truncated or shifted body
/// therefore shows *where* it went wrong, and any two servers serve byte-identical files.
pub fn pattern_bytes(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut off = 0usize;
    while v.len() < len {
        let rec = format!("{off:015x}\n");
        let take = (len - v.len()).min(rec.len());
        v.extend_from_slice(&rec.as_bytes()[..take]);
        off += 16;
    }
    v
}

fn write_pattern(w: &mut impl Write, len: usize) -> std::io::Result<()> {
    const CHUNK: usize = 64 * 1024; // a multiple of 16, so records line up across chunks
    let mut buf = Vec::with_capacity(CHUNK);
    let mut written = 0usize;
    while written < len {
        buf.clear();
        let n = (len - written).min(CHUNK);
        let mut off = written;
        while buf.len() < n {
            let rec = format!("{off:015x}\n");
            let take = (n - buf.len()).min(rec.len());
            buf.extend_from_slice(&rec.as_bytes()[..take]);
            off += 16;
        }
        w.write_all(&buf)?;
        written += n;
    }
    Ok(())
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io(format!("chmod {}", path.display()), e))
}

/// A directory removed (recursively) on drop. Created mode 0755 so that servers whose workers
/// drop privileges (Apache → www-data, nginx workers → nobody) can still traverse it.
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub(crate) fn new(prefix: &str) -> Result<Self, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!(
                "h2lab-{prefix}-{}-{n}-{nanos:x}",
                std::process::id()
            ));
            match fs::create_dir(&path) {
                Ok(()) => {
                    set_mode(&path, 0o755)?;
                    return Ok(TempDir { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(format!("create {}", path.display()), e)),
            }
        }
        Err(Error::Unsupported(format!(
            "could not create a unique temp dir under {}",
            base.display()
        )))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_offsets() {
        let p = pattern_bytes(40);
        assert_eq!(&p[..16], b"000000000000000\n");
        assert_eq!(&p[16..32], b"000000000000010\n");
        assert_eq!(&p[32..], b"00000000");
        assert_eq!(pattern_bytes(0), b"");
    }

    #[test]
    fn streamed_pattern_matches_in_memory_pattern() {
        for len in [0, 1, 653, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 17, 200_003] {
            let mut out = Vec::new();
            write_pattern(&mut out, len).unwrap();
            assert_eq!(out, pattern_bytes(len), "len {len}");
        }
    }

    #[test]
    fn files_replace_and_reject_escapes() {
        let f = Files::small().size(FILE_653, 10);
        assert_eq!(f.entries().len(), 1);
        assert_eq!(f.get(FILE_653), Some(&Content::Size(10)));
        let dir = TempDir::new("files-test").unwrap();
        let err = Files::new().bytes("../x", "no").write_to(dir.path());
        assert!(matches!(err, Err(Error::Unsupported(_))));
        Files::new()
            .bytes("a/b.txt", "yes")
            .write_to(dir.path())
            .unwrap();
        assert_eq!(fs::read(dir.path().join("a/b.txt")).unwrap(), b"yes");
        let p = dir.path().to_path_buf();
        drop(dir);
        assert!(!p.exists());
    }
}
