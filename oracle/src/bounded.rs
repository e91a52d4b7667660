//! Bounded reading of every file semfuzz opens: cases and their sidecars, users' Keras
//! models, corpus entries another campaign wrote, findings folders and suppression entries.
//! Each kind of file has a size limit that real files fit well within; an archive member is
//! also held to a decompression ratio, and cut off where it inflates past its limit whatever
//! its header declares. Only regular files are opened (a FIFO or a device would block or
//! never end).

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// What a file (or an archive member) is, for its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A case file (`*.case.json`): a corpus entry, a finding, a user's case.
    Case,
    /// A Keras model's JSON (`model.to_json()`), or a `.keras` archive's `config.json`.
    KerasConfig,
    /// A `.keras` archive's `metadata.json`.
    KerasMetadata,
    /// A `.keras` archive on disk (its weights can take gigabytes; each member it holds is
    /// read under its own kind's limit).
    KerasArchive,
    /// An `.npz` file (a case's sidecar, a model's inputs), as a whole on disk and inflated.
    Npz,
    /// One array (`.npy` member) of an `.npz`, inflated.
    NpyArray,
    /// A file of suppression entries (`kept.json`, `limitations.json`, a user's list).
    Suppressions,
    /// A finding's `outcome.json` and the other small JSON files a campaign writes.
    Record,
}

impl Kind {
    /// The most bytes a file of this kind may hold (inflated, for an archive member).
    pub const fn limit(self) -> u64 {
        match self {
            // Large arrays live in the sidecar; inline ones are written by semfuzz for
            // small cases (a parsed JSON number takes about 32 bytes of memory: 64 MiB of
            // `0,` is about a GiB once parsed).
            Kind::Case => 64 * MIB,
            Kind::KerasConfig => 64 * MIB,
            Kind::KerasMetadata => MIB,
            Kind::KerasArchive => 64 * 1024 * MIB,
            // The arrays of a case are bounded by `case::tensor::MAX_ELEMENTS` in all.
            Kind::Npz => 2048 * MIB,
            Kind::NpyArray => 2048 * MIB,
            Kind::Suppressions => 4 * MIB,
            Kind::Record => 16 * MIB,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Case => "a case file",
            Kind::KerasConfig => "a Keras model config",
            Kind::KerasMetadata => "a Keras archive's metadata",
            Kind::KerasArchive => "a .keras archive",
            Kind::Npz => "an .npz file",
            Kind::NpyArray => "one array of an .npz",
            Kind::Suppressions => "a file of suppression entries",
            Kind::Record => "a campaign's record",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.noun())
    }
}

/// The most an archive member may inflate relative to its stored size, once it is past
/// [`RATIO_FLOOR`] bytes. Keras configs deflate about 10:1 and arrays of real data far less;
/// a zip bomb's member inflates close to deflate's 1032:1.
pub const MAX_RATIO: u64 = 500;

/// Members that inflate to at most this many bytes are not held to [`MAX_RATIO`] (a small
/// file of zeros or spaces deflates very well and harms nobody).
pub const RATIO_FLOOR: u64 = 16 * MIB;

/// Why a file was not read. The caller names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read: {0}")]
    Io(#[from] io::Error),
    #[error("is not a regular file")]
    NotAFile,
    #[error("{}is {size} bytes, past the limit of {} bytes for {kind}", member_prefix(.member), .kind.limit())]
    TooLarge {
        /// The archive member, where it is one.
        member: Option<String>,
        size: u64,
        kind: Kind,
    },
    #[error(
        "{member} inflates from {stored} to {size} bytes or more, past the limit of {MAX_RATIO}:1 for a member of more than {RATIO_FLOOR} bytes"
    )]
    Ratio {
        member: String,
        stored: u64,
        size: u64,
    },
    #[error("{}is not UTF-8", member_prefix(.member))]
    NotUtf8 { member: Option<String> },
}

fn member_prefix(member: &Option<String>) -> String {
    member
        .as_ref()
        .map(|m| format!("{m} (in the archive) "))
        .unwrap_or_default()
}

impl ReadError {
    fn too_large(member: Option<&str>, size: u64, kind: Kind) -> ReadError {
        ReadError::TooLarge {
            member: member.map(str::to_owned),
            size,
            kind,
        }
    }
}

/// Opens a regular file whose size on disk is within `kind`'s limit.
pub fn open(path: &Path, kind: Kind) -> Result<(File, u64), ReadError> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > kind.limit() {
        return Err(ReadError::too_large(None, meta.len(), kind));
    }
    let file = File::open(path)?;
    // Checked again on the open file: the path may have been replaced in between.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    Ok((file, meta.len()))
}

/// Reads at most `limit` bytes from `r`; more is an error of `size` (how much was seen).
fn read_at_most(r: impl Read, limit: u64) -> Result<Result<Vec<u8>, u64>, io::Error> {
    let mut bytes = Vec::new();
    r.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// A whole file of `kind`, as bytes.
pub fn read_bytes(path: &Path, kind: Kind) -> Result<Vec<u8>, ReadError> {
    let (file, _) = open(path, kind)?;
    // The file may grow while it is read (another campaign writing it).
    read_at_most(file, kind.limit())?.map_err(|size| ReadError::too_large(None, size, kind))
}

/// A whole file of `kind`, as text.
pub fn read_text(path: &Path, kind: Kind) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, kind)?).map_err(|_| ReadError::NotUtf8 { member: None })
}

/// An archive member of `kind`, as bytes: refused before anything is inflated where it
/// declares more than the limit or a ratio past [`MAX_RATIO`], and cut off where it inflates
/// past either whatever it declares.
pub fn read_member<R: Read>(
    entry: zip::read::ZipFile<'_, R>,
    kind: Kind,
) -> Result<Vec<u8>, ReadError> {
    let name = entry.name().to_owned();
    let stored = entry.compressed_size();
    let limit = kind.limit();
    if entry.size() > limit {
        return Err(ReadError::too_large(Some(&name), entry.size(), kind));
    }
    let ratio_cap = stored.saturating_mul(MAX_RATIO).max(RATIO_FLOOR);
    let ratio_error = |size| ReadError::Ratio {
        member: name.clone(),
        stored,
        size,
    };
    if entry.size() > ratio_cap {
        return Err(ratio_error(entry.size()));
    }
    match read_at_most(entry, limit.min(ratio_cap))? {
        Ok(bytes) => Ok(bytes),
        Err(size) if size > limit => Err(ReadError::too_large(Some(&name), size, kind)),
        Err(size) => Err(ratio_error(size)),
    }
}

/// An archive member of `kind`, as text.
pub fn read_member_text<R: Read>(
    entry: zip::read::ZipFile<'_, R>,
    kind: Kind,
) -> Result<String, ReadError> {
    let name = entry.name().to_owned();
    String::from_utf8(read_member(entry, kind)?)
        .map_err(|_| ReadError::NotUtf8 { member: Some(name) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_with(name: &str, chunks: usize, chunk: &[u8]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let mut zip = zip::ZipWriter::new(f.reopen().unwrap());
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        for _ in 0..chunks {
            zip.write_all(chunk).unwrap();
        }
        zip.finish().unwrap();
        f
    }

    fn first_member(f: &tempfile::NamedTempFile, kind: Kind) -> Result<Vec<u8>, ReadError> {
        let mut zip = zip::ZipArchive::new(f.reopen().unwrap()).unwrap();
        read_member(zip.by_index(0).unwrap(), kind)
    }

    #[test]
    fn a_member_past_its_limit_is_refused_by_its_declared_size() {
        // 2 MiB of spaces in a metadata member (limit 1 MiB).
        let f = zip_with("metadata.json", 2, &vec![b' '; 1 << 20]);
        let e = first_member(&f, Kind::KerasMetadata).unwrap_err();
        assert!(
            matches!(&e, ReadError::TooLarge { member: Some(m), size, kind: Kind::KerasMetadata } if m == "metadata.json" && *size == 2 << 20),
            "{e}"
        );
    }

    #[test]
    fn a_member_that_inflates_far_past_its_stored_size_is_refused() {
        // 32 MiB of zeros deflate to about 32 KiB: 1000:1.
        let f = zip_with("x.npy", 32, &vec![0u8; 1 << 20]);
        let e = first_member(&f, Kind::NpyArray).unwrap_err();
        assert!(matches!(e, ReadError::Ratio { .. }), "{e}");
        // Below the floor, any ratio is read.
        let f = zip_with("x.npy", 1, &vec![0u8; 1 << 20]);
        assert_eq!(first_member(&f, Kind::NpyArray).unwrap().len(), 1 << 20);
    }

    #[test]
    fn only_regular_files_within_their_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_text(dir.path(), Kind::Case),
            Err(ReadError::NotAFile)
        ));
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; (Kind::Suppressions.limit() + 1) as usize]).unwrap();
        assert!(matches!(
            read_text(&big, Kind::Suppressions),
            Err(ReadError::TooLarge { member: None, .. })
        ));
        assert_eq!(
            read_text(&big, Kind::Case).unwrap().len() as u64,
            Kind::Suppressions.limit() + 1
        );
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_text(&bad, Kind::Case),
            Err(ReadError::NotUtf8 { member: None })
        ));
        let fifo = dir.path().join("fifo.case.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(
            read_text(&fifo, Kind::Case),
            Err(ReadError::NotAFile)
        ));
    }
}
