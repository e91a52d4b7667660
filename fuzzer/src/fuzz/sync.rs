//! Importing the cases other campaigns wrote (`--sync-from`). The folders are someone
//! else's: anything may be dropped there. Each case file is read within the case limits
//! (`oracle::bounded`); a file that is no readable case is logged and recorded in
//! `internal-errors/`, and the campaign goes on. Folders are walked to a bounded depth
//! without following links to folders (a link to a parent would never end), and a folder
//! that cannot be listed is logged and passed over. Dot files and folders are not cases.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libafl::Error;
use libafl::HasNamedMetadata;
use libafl::fuzzer::Evaluator;
use libafl::stages::{Restartable, Stage};
use libafl_bolts::Named;
use serde::{Deserialize, Serialize};

use super::features::fnv1a64;
use super::input::CaseInput;

/// How deep below a `--sync-from` folder case files are looked for (a campaign's output
/// keeps them at depth 1 or 2: `corpus/`, `findings/<id>/`).
const MAX_DEPTH: usize = 4;

/// The most case text one batch of imports holds in memory.
const BATCH_BYTES: usize = 256 << 20;

/// What is carried over a restart of the client: when the folders were last scanned.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SyncedMetadata {
    /// Milliseconds since the epoch at the start of the last scan; files modified since are
    /// imported at the next one.
    last_scan_ms: u64,
}

libafl_bolts::impl_serdeany!(SyncedMetadata);

/// A stage that imports new case files from other campaigns' folders every `every`.
pub struct SyncStage {
    name: Cow<'static, str>,
    dirs: Vec<PathBuf>,
    every: Duration,
    internal_errors: PathBuf,
    /// Folders already reported as unlistable (each is logged once).
    warned: HashSet<PathBuf>,
}

impl SyncStage {
    pub fn new(dirs: Vec<PathBuf>, every: Duration, internal_errors: PathBuf) -> Self {
        SyncStage {
            name: Cow::Borrowed("sync"),
            dirs,
            every,
            internal_errors,
            warned: HashSet::new(),
        }
    }

    /// The case files under the folders modified at or after `since_ms`, sorted.
    fn new_files(&mut self, since_ms: u64) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for d in self.dirs.clone() {
            self.walk(&d, 0, since_ms, &mut out);
        }
        out.sort();
        out
    }

    fn walk(&mut self, dir: &Path, depth: usize, since_ms: u64, out: &mut Vec<PathBuf>) {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                if self.warned.insert(dir.to_owned()) {
                    tracing::warn!(folder = %dir.display(), "--sync-from: cannot list: {e}");
                }
                return;
            }
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            // Dot files and folders (locks, journals, metadata) hold no cases to import.
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            // Not following links: a link to a folder is passed over.
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if depth < MAX_DEPTH {
                    self.walk(&path, depth + 1, since_ms, out);
                }
                continue;
            }
            if !path.to_string_lossy().ends_with(".case.json") {
                continue;
            }
            // A link to a file is read through (the bounded reader opens regular files only).
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .map_or(0, millis_since_epoch);
            if modified >= since_ms {
                out.push(path);
            }
        }
    }

    /// Reads one file as a case; one that is not is logged and recorded, never fatal.
    fn load(&self, path: &Path) -> Option<CaseInput> {
        read_or_record(path, &self.internal_errors, "--sync-from")
            .map(|case| CaseInput::from_case(&case))
    }
}

/// Reads a case file another run or campaign wrote; one that does not read is logged (saying
/// `whence` it came) and recorded in `internal_errors`, and `None` is returned.
pub(crate) fn read_or_record(
    path: &Path,
    internal_errors: &Path,
    whence: &str,
) -> Option<oracle::Case> {
    match oracle::Case::read(path) {
        Ok(case) => Some(case),
        Err(e) => {
            let record = record_bad_file(internal_errors, path, &e.to_string());
            tracing::warn!(
                file = %path.display(),
                "{whence}: not a readable case, skipped: {e}{}",
                record.map_or(String::new(), |r| format!(" (recorded in {})", r.display()))
            );
            None
        }
    }
}

fn millis_since_epoch(t: SystemTime) -> u64 {
    // A time before the epoch (a file dated 1960) counts as the epoch.
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes `synced-<hash>.txt` in `dir`: the file and why it was not imported. The file itself
/// is not copied (it may be huge or hostile).
fn record_bad_file(dir: &Path, path: &Path, error: &str) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let key = format!("{}\n{error}", path.display());
    let record = dir.join(format!("synced-{:016x}.txt", fnv1a64(key.as_bytes())));
    let size = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
    std::fs::write(
        &record,
        format!(
            "file: {}\nsize: {size} bytes\nnot imported: {error}\n",
            path.display()
        ),
    )
    .ok()?;
    Some(record)
}

impl Named for SyncStage {
    fn name(&self) -> &Cow<'static, str> {
        &self.name
    }
}

impl<E, EM, S, Z> Stage<E, EM, S, Z> for SyncStage
where
    S: HasNamedMetadata,
    Z: Evaluator<E, EM, CaseInput, S>,
{
    fn perform(
        &mut self,
        fuzzer: &mut Z,
        executor: &mut E,
        state: &mut S,
        manager: &mut EM,
    ) -> Result<(), Error> {
        if self.dirs.is_empty() {
            return Ok(());
        }
        let now = millis_since_epoch(SystemTime::now());
        let meta = state.named_metadata_or_insert_with(&self.name, SyncedMetadata::default);
        let last = meta.last_scan_ms;
        if last != 0 && now.saturating_sub(last) < self.every.as_millis() as u64 {
            return Ok(());
        }
        meta.last_scan_ms = now;
        let files = self.new_files(last);
        tracing::debug!(files = files.len(), "--sync-from: importing");
        // Files are read (and bad ones recorded) a batch at a time before any of the batch
        // runs: a campaign that stops in the middle of the imports has still looked at
        // them, and a batch holds at most BATCH_BYTES of case text.
        let mut files = files.into_iter().peekable();
        while files.peek().is_some() {
            let mut batch = Vec::new();
            let mut bytes = 0;
            while bytes < BATCH_BYTES {
                let Some(path) = files.next() else { break };
                if let Some(input) = self.load(&path) {
                    bytes += input.json().len();
                    batch.push(input);
                }
            }
            for input in batch {
                fuzzer.evaluate_input(state, executor, manager, &input)?;
            }
        }
        Ok(())
    }
}

impl<S> Restartable<S> for SyncStage {
    // An import that crashed the client is not retried: the next scan starts after it.
    fn should_restart(&mut self, _state: &mut S) -> Result<bool, Error> {
        Ok(true)
    }

    fn clear_progress(&mut self, _state: &mut S) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Links to folders, unlistable folders, files dated before the epoch and files that are
    /// not cases: the walk ends, finds the case files, and each bad one is recorded.
    #[test]
    fn a_hostile_folder_is_walked_safely_and_bad_files_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let sync = dir.path().join("other");
        let deep = sync.join("a/b/c/d/e/f");
        std::fs::create_dir_all(&deep).unwrap();
        std::os::unix::fs::symlink(&sync, sync.join("a/loop")).unwrap();
        let case = generators::generate::generate(
            &generators::generate::GenOptions::default(),
            &mut generators::rng(3),
        )
        .case;
        let good = sync.join("a/good.case.json");
        std::fs::write(&good, CaseInput::from_case(&case).json()).unwrap();
        std::fs::write(deep.join("too-deep.case.json"), "{}").unwrap();
        let bad = sync.join("bad.case.json");
        std::fs::write(&bad, "{\"format\": ").unwrap();
        let old = sync.join("old.case.json");
        std::fs::copy(&good, &old).unwrap();
        let status = std::process::Command::new("touch")
            .args(["-d", "1960-01-01"])
            .arg(&old)
            .status()
            .unwrap();
        assert!(status.success());
        let errors = dir.path().join("internal-errors");
        let mut stage = SyncStage::new(vec![sync.clone()], Duration::ZERO, errors.clone());
        let files = stage.new_files(0);
        assert_eq!(files, vec![good.clone(), bad.clone(), old.clone()]);
        assert!(stage.load(&good).is_some());
        assert!(stage.load(&old).is_some());
        assert!(stage.load(&bad).is_none());
        let records: Vec<_> = std::fs::read_dir(&errors).unwrap().collect();
        assert_eq!(records.len(), 1);
        let text = std::fs::read_to_string(records[0].as_ref().unwrap().path()).unwrap();
        assert!(
            text.contains("bad.case.json") && text.contains("not imported: "),
            "{text}"
        );
        // Only what changed since the last scan is imported again.
        assert!(stage.new_files(u64::MAX).is_empty());
    }
}
