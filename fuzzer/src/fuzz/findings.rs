//! The findings store: `<out>/findings/<verdict>/<signature>/` with the case, its outcome,
//! a standalone `repro.py` and a short `report.md`. The same signature found again is one
//! finding with a count, and keeps the smallest example seen. Many clients (and resumed
//! campaigns) share the store: a finding's folder is created atomically by whoever finds it
//! first, and updates to it happen under a lock on its `.lock` file.
//!
//! Verdicts a known framework bug or limitation explains are no findings; they are counted
//! per bug or limitation in `<out>/known.json` ([`KnownCounts`]).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use harness_py::{Mode, Verdict};
use oracle::Case;
use oracle::case::WriteOptions;
use oracle::check::CheckedShapes;
use serde_json::{Value, json};

/// What is known about a finding when it is recorded.
pub struct Hit<'a> {
    pub verdict: &'a Verdict,
    pub case: &'a Case,
    /// Bytes of the case's JSON (its size as the corpus holds it).
    pub bytes: usize,
    /// The diverging layer alone, fed TF's arrays, when the finding is about one layer.
    pub isolated: Option<&'a Case>,
    /// The modes the case ran in.
    pub modes: &'a [Mode],
    /// What TensorFlow did, as JSON (exception, crash, timeout).
    pub tensorflow: Value,
    /// TensorFlow's and Keras's versions.
    pub versions: &'a Value,
    /// The backend the case ran on.
    pub backend: harness_py::Backend,
    /// For a `backend-mismatch`, the other backend it was compared with.
    pub compared_with: Option<harness_py::Backend>,
}

/// A new finding, for the caller to announce.
pub struct NewFinding {
    pub dir: PathBuf,
    pub line: String,
    pub reproduce: String,
}

/// Per signature, what this process knows and has not written yet.
#[derive(Default)]
struct Known {
    /// The size of the example on disk (layers, then bytes), once read.
    best: Option<(usize, usize)>,
    unflushed: u64,
}

pub struct FindingsStore {
    root: PathBuf,
    known: HashMap<String, Known>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A signature as a folder name: `mismatch/ReLU/tolerance` → `mismatch/ReLU-tolerance`.
pub fn folder_of(signature: &str) -> PathBuf {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    // Never `.`, `..` or empty: the folder stays inside the store.
    let safe = |s: String| {
        if s.chars().all(|c| c == '.') {
            format!("_{s}")
        } else {
            s
        }
    };
    let clean = |s: &str| safe(clean(s));
    match signature.split_once('/') {
        Some((verdict, rest)) => Path::new(&clean(verdict)).join(clean(&rest.replace('/', "-"))),
        None => PathBuf::from(clean(signature)),
    }
}

/// The first line of a detail, cut to a terminal line's length.
fn short(detail: &str) -> String {
    let line = detail.lines().next().unwrap_or("");
    match line.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// A held `flock` on a finding's lock file, released on drop.
struct Lock(File);

impl Lock {
    fn take(dir: &Path) -> io::Result<Lock> {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))?;
        // SAFETY: flock on a file descriptor this struct owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Lock(f))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Writes a file so that a reader never sees half of it, and it survives a crash.
fn write_durable(path: &Path, text: &str) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    fs::rename(&tmp, path)
}

/// How big an example is: layers, then bytes (so no case is serialised again per hit).
fn size_of(hit: &Hit) -> (usize, usize) {
    (hit.case.model.layers.len(), hit.bytes)
}

/// The command that replays a finding (modes beyond eager must be asked for).
fn reproduce_command(
    case_path: &Path,
    modes: &[Mode],
    backend: harness_py::Backend,
    compared_with: Option<harness_py::Backend>,
) -> String {
    if let Some(other) = compared_with {
        // `run` judges one backend against the reference; the pair's repro compares the two.
        let dir = case_path.parent().unwrap_or(Path::new("."));
        return format!(
            "python3 {} (runs {backend} and {other}, one process each)",
            dir.join("repro.py").display()
        );
    }
    let modes: Vec<&str> = modes.iter().map(|m| m.name()).collect();
    let mut flags = String::new();
    if backend != harness_py::Backend::Tensorflow {
        flags.push_str(&format!("--backend {backend} "));
    }
    if modes != ["eager"] {
        flags.push_str(&format!("--modes {} ", modes.join(",")));
    }
    format!("semfuzz run {flags}{}", case_path.display())
}

impl FindingsStore {
    pub fn new(out: &Path) -> io::Result<Self> {
        let root = out.join("findings");
        fs::create_dir_all(&root)?;
        Ok(FindingsStore {
            root,
            known: HashMap::new(),
        })
    }

    /// Records one hit; returns the finding when it is new.
    pub fn record(&mut self, hit: &Hit) -> io::Result<Option<NewFinding>> {
        let signature = &hit.verdict.signature;
        let dir = self.root.join(folder_of(signature));
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent)?;
        }
        match fs::create_dir(&dir) {
            Ok(()) => {
                let _lock = Lock::take(&dir)?;
                self.write_example(&dir, hit, 1, now())?;
                self.known.insert(
                    signature.clone(),
                    Known {
                        best: Some(size_of(hit)),
                        unflushed: 0,
                    },
                );
                let v = hit.verdict;
                let place = v
                    .layer
                    .as_deref()
                    .map(|l| format!(" at layer '{l}'"))
                    .unwrap_or_default();
                let mode = v.mode.map(|m| format!(" [{m}]")).unwrap_or_default();
                Ok(Some(NewFinding {
                    line: format!(
                        "new finding {signature}{place}{mode} ({}): {}",
                        hit.case.dtype.name(),
                        short(&v.detail)
                    ),
                    reproduce: reproduce_command(
                        &dir.join("case.case.json"),
                        hit.modes,
                        hit.backend,
                        hit.compared_with,
                    ),
                    dir,
                }))
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let known = self.known.entry(signature.clone()).or_default();
                known.unflushed += 1;
                let size = size_of(hit);
                let best = match known.best {
                    Some(b) => b,
                    None => {
                        let _lock = Lock::take(&dir)?;
                        let b = read_outcome(&dir)
                            .and_then(|o| {
                                Some((
                                    o["example"]["layers"].as_u64()? as usize,
                                    o["example"]["bytes"].as_u64()? as usize,
                                ))
                            })
                            .unwrap_or((usize::MAX, usize::MAX));
                        known.best = Some(b);
                        b
                    }
                };
                if size < best {
                    let _lock = Lock::take(&dir)?;
                    let previous = read_outcome(&dir);
                    let count = previous
                        .as_ref()
                        .and_then(|o| o["count"].as_u64())
                        .unwrap_or(0)
                        + std::mem::take(&mut known.unflushed);
                    let first = previous
                        .as_ref()
                        .and_then(|o| o["first_seen"].as_u64())
                        .unwrap_or_else(now);
                    known.best = Some(size);
                    self.write_example(&dir, hit, count, first)?;
                }
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Adds the hits counted since the last flush to each finding's `outcome.json`.
    pub fn flush(&mut self) -> io::Result<()> {
        for (signature, known) in &mut self.known {
            if known.unflushed == 0 {
                continue;
            }
            let dir = self.root.join(folder_of(signature));
            let _lock = Lock::take(&dir)?;
            let Some(mut outcome) = read_outcome(&dir) else {
                continue;
            };
            let count = outcome["count"].as_u64().unwrap_or(0) + known.unflushed;
            outcome["count"] = json!(count);
            outcome["last_seen"] = json!(now());
            write_durable(
                &dir.join("outcome.json"),
                &serde_json::to_string_pretty(&outcome).expect("JSON values serialize"),
            )?;
            known.unflushed = 0;
        }
        Ok(())
    }

    fn write_example(&self, dir: &Path, hit: &Hit, count: u64, first_seen: u64) -> io::Result<()> {
        let v = hit.verdict;
        let case_path = dir.join("case.case.json");
        hit.case
            .write(
                &case_path,
                &CheckedShapes::of(hit.case),
                WriteOptions::DURABLE,
            )
            .map_err(|e| io::Error::other(e.to_string()))?;
        let (layers, bytes) = size_of(hit);
        let reproduce = reproduce_command(&case_path, hit.modes, hit.backend, hit.compared_with);
        let outcome = json!({
            "verdict": v.kind.name(),
            "tier": v.tier.map(|t| t.name()),
            "signature": v.signature,
            "layer": v.layer,
            "class": v.layer.as_deref().and_then(|l| hit.case.model.layer(l)).map(|l| l.class_name.clone()),
            "mode": v.mode.map(|m| m.name()),
            "modes": hit.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "backend": hit.backend,
            "compared_with": hit.compared_with,
            "dtype": hit.case.dtype.name(),
            "detail": v.detail,
            "evidence": v.evidence,
            "tensorflow": hit.tensorflow,
            "versions": hit.versions,
            "count": count,
            "first_seen": first_seen,
            "last_seen": now(),
            "example": {"layers": layers, "bytes": bytes},
            "reproduce": reproduce,
        });
        write_durable(
            &dir.join("outcome.json"),
            &serde_json::to_string_pretty(&outcome).expect("JSON values serialize"),
        )?;
        let script = |case: &Case, path: &Path| {
            harness_py::export::finding_script(
                case,
                &path.display().to_string(),
                hit.backend,
                Some(v.kind),
                &harness_py::export::finding_modes(Some(v.kind), v.mode, hit.modes),
            )
        };
        // The diverging layer alone, beside the model.
        let write_layer_case = |layer_case: &Case| -> io::Result<PathBuf> {
            let layer_path = dir.join("layer.case.json");
            layer_case
                .write(
                    &layer_path,
                    &CheckedShapes::of(layer_case),
                    WriteOptions::DURABLE,
                )
                .map_err(|e| io::Error::other(e.to_string()))?;
            Ok(layer_path)
        };
        if let Some(other) = hit.compared_with {
            // Each backend's script of the layer (or the model), and a driver that runs both
            // and compares their outputs.
            let (case, path) = match hit.isolated {
                Some(layer_case) => (layer_case, write_layer_case(layer_case)?),
                None => (hit.case, case_path.clone()),
            };
            let source = path.display().to_string();
            for b in [hit.backend, other] {
                write_durable(
                    &dir.join(format!("repro-{b}.py")),
                    &harness_py::export::python_script(case, &source, b),
                )?;
            }
            write_durable(
                &dir.join("repro.py"),
                &harness_py::export::backend_pair_script(&source, hit.backend, other),
            )?;
            return write_durable(&dir.join("report.md"), &report(hit, &reproduce, dir));
        }
        match hit.isolated {
            Some(layer_case) => {
                let layer_path = write_layer_case(layer_case)?;
                write_durable(&dir.join("repro.py"), &script(layer_case, &layer_path))?;
                write_durable(&dir.join("model-repro.py"), &script(hit.case, &case_path))?;
            }
            None => {
                let _ = fs::remove_file(dir.join("layer.case.json"));
                let _ = fs::remove_file(dir.join("model-repro.py"));
                write_durable(&dir.join("repro.py"), &script(hit.case, &case_path))?;
            }
        }
        write_durable(&dir.join("report.md"), &report(hit, &reproduce, dir))
    }
}

fn read_outcome(dir: &Path) -> Option<Value> {
    serde_json::from_str(&read_record(&dir.join("outcome.json"))?).ok()
}

/// A short report a framework developer can act on.
fn report(hit: &Hit, reproduce: &str, dir: &Path) -> String {
    let v = hit.verdict;
    let class = v
        .layer
        .as_deref()
        .and_then(|l| hit.case.model.layer(l))
        .map(|l| l.class_name.as_str())
        .unwrap_or("the model");
    let layers: Vec<&str> = hit
        .case
        .model
        .layers
        .iter()
        .filter(|l| !l.is_input())
        .map(|l| l.class_name.as_str())
        .collect();
    let mut s = format!("# {}: {class}\n\n", v.kind.name());
    s += &format!("- signature: `{}`\n", v.signature);
    if let Some(l) = &v.layer {
        s += &format!("- layer: `{l}` ({class})\n");
    }
    if let Some(m) = v.mode {
        s += &format!("- mode: {m}\n");
    }
    s += &format!(
        "- dtype: {}; modes run: {}\n",
        hit.case.dtype.name(),
        hit.modes
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    // The backend's framework.
    let framework = judge::verdict::Framework::of(hit.backend);
    let version = |key: &str| hit.versions[key].as_str().unwrap_or("?").to_owned();
    let framework_version = match hit.backend {
        judge::Backend::Tensorflow => version("tensorflow"),
        judge::Backend::Jax => version("jax"),
        judge::Backend::Torch => version("torch"),
    };
    s += &format!(
        "- versions: {framework} {framework_version}, Keras {}, NumPy {}\n",
        version("keras"),
        version("numpy"),
    );
    s += &format!(
        "- model: {} layers: {}\n\n",
        layers.len(),
        layers.join(", ")
    );
    s += &format!("## What happened\n\n```\n{}\n```\n\n", v.detail.trim_end());
    s += "## Reproduce\n\n";
    s += &format!("- `{reproduce}`\n");
    if hit.isolated.is_some() {
        s += &format!(
            "- the layer alone, fed the arrays {framework} fed it (`layer.case.json`), standalone with only {framework}, Keras and NumPy: `python {}`\n",
            dir.join("repro.py").display()
        );
        s += &format!(
            "- the whole model, standalone: `python {}`\n",
            dir.join("model-repro.py").display()
        );
    } else {
        s += &format!(
            "- standalone, with only {framework}, Keras and NumPy: `python {}`\n",
            dir.join("repro.py").display()
        );
    }
    s += &format!(
        "- minimise: `semfuzz triage --minimize {}`\n",
        dir.display()
    );
    s
}

/// Per known framework bug or limitation (by the name [`Verdict::known`] gives), the
/// executions it explained: `<out>/known.json`, `{name: {"count", "first_seen", "last_seen",
/// "example"}}` (`example`: the signature of a verdict it explained). Clients add what they
/// counted since their last flush, under a lock on `<out>/.lock`.
pub struct KnownCounts {
    path: PathBuf,
    /// Per name: executions since the last flush, an example signature, when first seen.
    unflushed: HashMap<String, (u64, String, u64)>,
}

impl KnownCounts {
    pub fn new(out: &Path) -> Self {
        KnownCounts {
            path: out.join(KNOWN_FILE),
            unflushed: HashMap::new(),
        }
    }

    /// Counts one execution for each known bug or limitation among its verdicts.
    pub fn record(&mut self, verdicts: &[Verdict]) {
        let mut seen: Vec<&str> = Vec::new();
        for v in verdicts {
            if let Some(name) = v.known.as_deref()
                && !seen.contains(&name)
            {
                seen.push(name);
                self.unflushed
                    .entry(name.to_owned())
                    .or_insert_with(|| (0, v.signature.clone(), now()))
                    .0 += 1;
            }
        }
    }

    /// Adds the counts since the last flush to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.unflushed.is_empty() {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let _lock = Lock::take(dir)?;
        let mut all = read_known(&self.path);
        let now = now();
        for (name, (count, example, first)) in self.unflushed.drain() {
            let entry = all
                .entry(name.to_owned())
                .or_insert_with(|| json!({"count": 0, "first_seen": first, "example": example}));
            entry["count"] = json!(entry["count"].as_u64().unwrap_or(0) + count);
            entry["last_seen"] = json!(now);
        }
        write_durable(
            &self.path,
            &serde_json::to_string_pretty(&all).expect("JSON values serialize"),
        )
    }
}

/// One of the small JSON files a campaign writes (`outcome.json`, `known.json`,
/// `fuzzer_stats`, ...), read within [`Kind::Record`]'s limit; `None` where it is absent or
/// cannot be read (a missing record reads as an empty one).
pub fn read_record(path: &Path) -> Option<String> {
    match oracle::bounded::read_text(path, oracle::bounded::Kind::Record) {
        Ok(t) => Some(t),
        Err(oracle::bounded::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(file = %path.display(), "not read: {e}");
            None
        }
    }
}

/// The file [`KnownCounts`] keeps, in a campaign's output folder.
pub const KNOWN_FILE: &str = "known.json";

/// The counts in a `known.json` (empty when there is none or it does not parse).
pub fn read_known(path: &Path) -> serde_json::Map<String, Value> {
    read_record(path)
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_become_two_level_folders() {
        assert_eq!(
            folder_of("mismatch/ReLU/tolerance"),
            Path::new("mismatch/ReLU-tolerance")
        );
        assert_eq!(
            folder_of("crash/model/SIGABRT"),
            Path::new("crash/model-SIGABRT")
        );
        assert_eq!(folder_of("odd name"), Path::new("odd_name"));
        assert_eq!(folder_of("a/../b"), Path::new("a/..-b"));
        assert_eq!(folder_of("../.."), Path::new("_../_.."));
    }
}

#[cfg(test)]
mod backend_pair_tests {
    use super::*;
    use harness_py::{Backend, Kind};
    use judge::Tier;

    fn python() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python")
    }

    /// A `backend-mismatch` is saved with the case's script for each backend and a `repro.py`
    /// that runs both, one process each, and compares their outputs: on a case the two
    /// backends agree on it exits 0; with one backend's outputs changed it exits 1 and says
    /// which output differs. The reproduce command names that script.
    #[test]
    fn a_backend_mismatch_repro_runs_both_backends_and_compares_them() {
        let mut case = Case::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../oracle/tests/fixtures/keras/dense_chain.case.json"),
        )
        .unwrap();
        case.dtype = oracle::DType::Float32;
        let verdict = Verdict {
            kind: Kind::BackendMismatch,
            signature: "backend-mismatch/Dense/jax-torch".into(),
            layer: Some("dense".into()),
            mode: None,
            detail: "'dense' differs between JAX (eager) and PyTorch (eager)".into(),
            evidence: Default::default(),
            tier: Some(Tier::WrongResult),
            known: None,
        };
        let out = tempfile::tempdir().unwrap();
        let mut store = FindingsStore::new(out.path()).unwrap();
        let hit = Hit {
            verdict: &verdict,
            case: &case,
            bytes: 1,
            isolated: None,
            modes: &[Mode::Eager],
            tensorflow: json!({}),
            versions: &json!({}),
            backend: Backend::Jax,
            compared_with: Some(Backend::Torch),
        };
        let found = store.record(&hit).unwrap().expect("a new finding");
        assert_eq!(
            found.dir,
            out.path().join("findings/backend-mismatch/Dense-jax-torch")
        );
        assert!(
            found.reproduce.starts_with("python3 "),
            "{}",
            found.reproduce
        );
        assert!(found.reproduce.contains("repro.py"), "{}", found.reproduce);
        let outcome: Value =
            serde_json::from_str(&fs::read_to_string(found.dir.join("outcome.json")).unwrap())
                .unwrap();
        assert_eq!(outcome["backend"], "jax");
        assert_eq!(outcome["compared_with"], "torch");
        let torch_script = fs::read_to_string(found.dir.join("repro-torch.py")).unwrap();
        assert!(torch_script.contains("os.environ[\"KERAS_BACKEND\"] = \"torch\""));
        assert!(
            fs::read_to_string(found.dir.join("repro-jax.py"))
                .unwrap()
                .contains("\"jax\"")
        );
        let run = || {
            std::process::Command::new(python())
                .arg(found.dir.join("repro.py"))
                .output()
                .unwrap()
        };
        let agree = run();
        let text = String::from_utf8_lossy(&agree.stdout);
        assert_eq!(
            agree.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&agree.stderr)
        );
        assert!(
            text.contains("output 0: jax [") && text.contains("output 0: torch ["),
            "{text}"
        );
        // PyTorch's outputs scaled after the model ran: the backends now differ.
        fs::write(
            found.dir.join("repro-torch.py"),
            torch_script.replace(
                "    actual = actual if isinstance(actual, (list, tuple)) else [actual]\n",
                "    actual = actual if isinstance(actual, (list, tuple)) else [actual]\n    actual = [ops.convert_to_numpy(a) * 1.5 for a in actual]\n",
            ),
        )
        .unwrap();
        let differ = run();
        let text = String::from_utf8_lossy(&differ.stdout);
        assert_eq!(differ.status.code(), Some(1), "{text}");
        assert!(
            text.contains("output 0 DIFFERS between jax and torch"),
            "{text}"
        );
    }
}
