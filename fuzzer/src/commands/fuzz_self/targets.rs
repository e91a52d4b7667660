//! The readers `fuzz-self` feeds: each takes the bytes of one file (or of a file and its
//! sidecar) as semfuzz would meet them, reads them as semfuzz does, and goes on as far as
//! semfuzz would with what it read (the static checks of `semfuzz check`, a suppression
//! list's explanations, a worker answer's arrays). Each returns a behaviour: a number that
//! tells apart the ways the input was handled (the error's kind and place, or what was
//! read), so inputs that reach new ones are kept and mutated further.

use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use oracle::Case;
use serde_json::{Value, json};

/// A reader under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Target {
    /// A case file (`*.case.json`) with its sidecar `.npz`, then the checks of `check`.
    Case,
    /// A Keras model's JSON (`model.to_json()`), then the checks of `check`.
    KerasJson,
    /// A `.keras` archive, then the checks of `check`.
    KerasArchive,
    /// An `.npz` of a model's inputs.
    Npz,
    /// A findings folder's `outcome.json`, as `triage` and the status line read it.
    Findings,
    /// A file of suppression entries, then each entry's explanation of a verdict.
    Suppressions,
    /// What a worker writes on its pipe: frames, and run answers decoded from them.
    Frames,
}

impl Target {
    pub const ALL: [Target; 7] = [
        Target::Case,
        Target::KerasJson,
        Target::KerasArchive,
        Target::Npz,
        Target::Findings,
        Target::Suppressions,
        Target::Frames,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Target::Case => "case",
            Target::KerasJson => "keras-json",
            Target::KerasArchive => "keras-archive",
            Target::Npz => "npz",
            Target::Findings => "findings",
            Target::Suppressions => "suppressions",
            Target::Frames => "frames",
        }
    }

    /// Whether the inputs are zip archives (their members mutated too).
    pub fn is_archive(self) -> bool {
        matches!(self, Target::KerasArchive | Target::Npz)
    }

    /// Whether the inputs are JSON text (mutated as JSON values too).
    pub fn is_json(self) -> bool {
        matches!(
            self,
            Target::Case | Target::KerasJson | Target::Findings | Target::Suppressions
        )
    }
}

/// In a `case` input, what separates the case's JSON from its sidecar's bytes.
pub const SIDECAR_SEPARATOR: &[u8] = b"\n\0sidecar\0\n";

/// Where a target writes the files it reads (one folder per child process).
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    pub fn new(dir: PathBuf) -> std::io::Result<Scratch> {
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch { dir })
    }

    fn put(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        let mut f = std::fs::File::create(&path).expect("the scratch folder is writable");
        f.write_all(bytes).expect("the scratch folder is writable");
        path
    }

    fn remove(&self, name: &str) {
        let _ = std::fs::remove_file(self.dir.join(name));
    }
}

fn behaviour(parts: impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// A place in a document with its indices dropped (`layers[3].config` and
/// `layers[5].config` are the same place for novelty).
fn place_shape(place: &str) -> String {
    place.chars().filter(|c| !c.is_ascii_digit()).collect()
}

fn case_error_behaviour(e: &oracle::CaseError) -> u64 {
    behaviour((
        "case-error",
        std::mem::discriminant(&e.kind),
        place_shape(&e.place),
    ))
}

/// Runs one input through one reader.
pub fn run(target: Target, input: &[u8], scratch: &Scratch) -> u64 {
    match target {
        Target::Case => case(input, scratch),
        Target::KerasJson => keras_model(input, scratch, "m.json"),
        Target::KerasArchive => keras_model(input, scratch, "m.keras"),
        Target::Npz => npz(input, scratch),
        Target::Findings => findings(input, scratch),
        Target::Suppressions => suppressions(input, scratch),
        Target::Frames => frames(input),
    }
}

fn case(input: &[u8], scratch: &Scratch) -> u64 {
    let (json, sidecar) = match input
        .windows(SIDECAR_SEPARATOR.len())
        .position(|w| w == SIDECAR_SEPARATOR)
    {
        Some(at) => (&input[..at], Some(&input[at + SIDECAR_SEPARATOR.len()..])),
        None => (input, None),
    };
    match sidecar {
        Some(bytes) => {
            scratch.put("c.npz", bytes);
        }
        None => scratch.remove("c.npz"),
    }
    let path = scratch.put("c.case.json", json);
    match Case::read(&path) {
        Ok(case) => checked(&case),
        Err(e) => case_error_behaviour(&e),
    }
}

fn keras_model(input: &[u8], scratch: &Scratch, name: &str) -> u64 {
    let path = scratch.put(name, input);
    match oracle::case::read_keras_model(&path) {
        Ok(case) => checked(&case),
        Err(e) => case_error_behaviour(&e),
    }
}

/// What `semfuzz check` does with a model it read, without Python: every violation with
/// its fixes, the size warnings and the numeric hazards.
fn checked(case: &Case) -> u64 {
    let classes: Vec<&str> = case
        .model
        .layers
        .iter()
        .map(|l| l.class_name.as_str())
        .collect();
    match oracle::check::check_all(case) {
        Ok(violations) => {
            let report = crate::commands::check::diagnosis(case, &violations, (-1.0, 1.0), None);
            behaviour((
                "checked",
                classes,
                violations.iter().map(|v| v.code_name()).collect::<Vec<_>>(),
                report["hazards"].as_array().map_or(0, Vec::len),
            ))
        }
        Err(u) => behaviour(("unsupported", classes, u.parameter.clone())),
    }
}

/// A case of a one-input model that takes `(None, 3)` float arrays, with one input of
/// `dtype`, for the `.npz` reader.
fn npz_case(dtype: &str) -> Case {
    let v = json!({
        "format": oracle::case::FORMAT, "dtype": dtype,
        "inputs": [{"shape": [2, 3], "data": [0.5, -1, 2, 1e30, 0, 3]}],
        "model": {"name": "m", "layers": [
            {"class_name": "InputLayer", "name": "x", "config": {"name": "x", "batch_shape": [null, 3], "dtype": "float32"}, "inbound_nodes": []},
            {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 2}, "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
        ], "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]}
    });
    Case::from_json_str(&v.to_string(), "<npz model>").expect("a valid model")
}

/// The model of [`npz_case`].
fn npz_model() -> &'static oracle::case::Model {
    static CASE: std::sync::OnceLock<Case> = std::sync::OnceLock::new();
    &CASE.get_or_init(|| npz_case("float32")).model
}

fn npz(input: &[u8], scratch: &Scratch) -> u64 {
    let path = scratch.put("x.npz", input);
    match oracle::case::read_inputs_npz(&path, npz_model()) {
        Ok(arrays) => behaviour((
            "read",
            arrays
                .iter()
                .map(|a| a.shape().to_vec())
                .collect::<Vec<_>>(),
        )),
        Err(e) => case_error_behaviour(&e),
    }
}

fn findings(input: &[u8], scratch: &Scratch) -> u64 {
    let dir = scratch.dir.join("finding");
    std::fs::create_dir_all(&dir).expect("the scratch folder is writable");
    let path = dir.join("outcome.json");
    std::fs::write(&path, input).expect("the scratch folder is writable");
    let recorded = crate::commands::triage::read_recorded(&dir);
    let tier = crate::fuzz::monitor::recorded_tier(&dir);
    let known = crate::fuzz::findings::read_known(&path);
    match recorded {
        Ok(r) => behaviour(("read", r.modes, r.count > 0, tier, known.len())),
        Err(e) => behaviour(("error", std::mem::discriminant(&e), tier)),
    }
}

fn suppressions(input: &[u8], scratch: &Scratch) -> u64 {
    let path = scratch.put("list.json", input);
    let mut list = judge::Suppressions::none();
    match list.add_path(&path) {
        // What `known list` prints of each entry, and the triggers generation avoids.
        Ok(()) => behaviour((
            "read",
            list.entries()
                .iter()
                .map(|e| crate::commands::known::entry_json(e).to_string().len())
                .collect::<Vec<_>>(),
            format!("{:?}", list.triggers()),
        )),
        Err(e) => behaviour(("error", std::mem::discriminant(&e))),
    }
}

fn frames(input: &[u8]) -> u64 {
    let mut r = input;
    let mut seen = Vec::new();
    for _ in 0..16 {
        match harness_py::protocol::read_frame(&mut r) {
            Ok(Some(frame)) => {
                let answer = serde_json::to_vec(&frame.header).expect("JSON values serialize");
                seen.push(
                    match harness_py::decode_run_answer(&answer, &frame.payload) {
                        Ok(kind) => format!("answer {kind}"),
                        Err(_) => "not an answer".to_owned(),
                    },
                );
            }
            Ok(None) => break,
            Err(e) => {
                seen.push(format!("{:?}", e.kind()));
                break;
            }
        }
    }
    behaviour(seen)
}

/// The inputs each target starts from: the repository's own fixtures where it has them
/// (found from `root`), and files made from generated cases, so a target has seeds on any
/// machine.
pub fn seeds(target: Target, root: &Path, scratch: &Path) -> Vec<Vec<u8>> {
    let _ = std::fs::create_dir_all(scratch);
    let mut out = Vec::new();
    let generated = generated_cases(12);
    let small = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() <= 64 << 10);
    let files = |dir: &str, suffix: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .map(|it| it.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        v.retain(|p| p.to_string_lossy().ends_with(suffix) && small(p));
        v.sort();
        v
    };
    match target {
        Target::Case => {
            for p in files("oracle/tests/fixtures", ".case.json")
                .into_iter()
                .chain(files("seeds", ".case.json"))
            {
                out.extend(std::fs::read(p).ok());
            }
            for (i, c) in generated.iter().enumerate() {
                out.push(case_json(c).into_bytes());
                if i < 4 {
                    out.push(with_sidecar(c, scratch));
                }
            }
        }
        Target::KerasJson | Target::KerasArchive => {
            let mut models: Vec<Value> = files("fuzzer/tests/data/check", ".json")
                .iter()
                .filter_map(|p| serde_json::from_slice(&std::fs::read(p).ok()?).ok())
                .collect();
            models.extend(generated.iter().map(keras_json));
            for m in models {
                out.push(if target == Target::KerasJson {
                    m.to_string().into_bytes()
                } else {
                    keras_archive(&m)
                });
            }
            if target == Target::KerasArchive {
                out.extend(
                    std::fs::read(root.join("fuzzer/tests/data/check/stored_weights.keras")).ok(),
                );
            }
        }
        Target::Npz => {
            let own = ["float32", "float64", "float16"].map(npz_case);
            for c in own.iter().chain(generated.iter().take(3)) {
                let p = scratch.join("seed.npz");
                if oracle::case::write_inputs_npz(&p, c).is_ok() {
                    out.extend(std::fs::read(&p).ok());
                }
            }
        }
        Target::Findings => {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crashes"))
                .map(|it| it.filter_map(Result::ok).map(|e| e.path()).collect())
                .unwrap_or_default();
            dirs.sort();
            for d in dirs.iter().take(40) {
                out.extend(std::fs::read(d.join("outcome.json")).ok());
            }
        }
        Target::Suppressions => {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crashes"))
                .map(|it| it.filter_map(Result::ok).map(|e| e.path()).collect())
                .unwrap_or_default();
            dirs.sort();
            for d in &dirs {
                out.extend(std::fs::read(d.join("kept.json")).ok());
            }
            out.extend(std::fs::read(root.join("crashes/limitations.json")).ok());
        }
        Target::Frames => {
            for answer in sample_answers() {
                let mut bytes = Vec::new();
                let header = serde_json::to_vec(&answer.0).expect("JSON values serialize");
                harness_py::protocol::write_raw_frame(&mut bytes, &header, &answer.1)
                    .expect("writing to memory");
                out.push(bytes);
            }
        }
    }
    if out.is_empty() {
        out.push(b"{}".to_vec());
    }
    out
}

/// Run answers as a worker writes them: outputs in two modes, an error, a refusal.
fn sample_answers() -> Vec<(Value, Vec<u8>)> {
    let payload: Vec<u8> = [1.0f64, -2.5, 3.0, 0.0, 7.0, 8.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    vec![
        (
            json!({"ok": true, "modes": [["eager", {"calls": [["d", 0, 1]]}], ["graph", {"calls": [["d", 0, 1]]}]],
                   "shapes": [[1, 3], [1, 3]], "tf_seconds": 0.01}),
            payload,
        ),
        (
            json!({"ok": true, "modes": [["eager", {"error": {"type": "ValueError", "message": "bad", "layer": "d"}}]], "shapes": []}),
            Vec::new(),
        ),
        (
            json!({"ok": true, "case_error": {"type": "ValueError", "message": "no", "layer": null}}),
            Vec::new(),
        ),
        (
            json!({"ok": false, "error": {"type": "RuntimeError", "message": "worker"}}),
            Vec::new(),
        ),
    ]
}

fn generated_cases(n: u64) -> Vec<Case> {
    let opts = generators::generate::GenOptions::default();
    (0..n)
        .map(|i| generators::generate::generate(&opts, &mut generators::rng(1000 + i)).case)
        .collect()
}

fn case_json(c: &Case) -> String {
    crate::fuzz::input::CaseInput::from_case(c)
        .json()
        .to_owned()
}

/// A case whose inputs live in its sidecar `c.npz`, as a `case` input.
fn with_sidecar(c: &Case, scratch: &Path) -> Vec<u8> {
    let mut c = c.clone();
    for (i, t) in c.inputs.iter_mut().enumerate() {
        t.npz_key = Some(format!("input_{i}"));
    }
    c.npz = Some("c.npz".to_owned());
    let path = scratch.join("seed.case.json");
    let shapes = oracle::case::DeclaredInputShapes;
    if c.write(&path, &shapes, Default::default()).is_err() {
        return case_json(&c).into_bytes();
    }
    let mut bytes = std::fs::read(&path).unwrap_or_default();
    bytes.extend_from_slice(SIDECAR_SEPARATOR);
    bytes.extend(std::fs::read(scratch.join("c.npz")).unwrap_or_default());
    bytes
}

/// A case's model as the JSON of Keras's `model.to_json()`.
fn keras_json(c: &Case) -> Value {
    let v: Value = serde_json::from_str(&case_json(c)).expect("a case is JSON");
    json!({"module": "keras", "class_name": "Functional", "config": v["model"], "registered_name": "Functional"})
}

/// A `.keras` archive of a model's JSON (config and metadata only).
fn keras_archive(model: &Value) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let opts = zip::write::SimpleFileOptions::default();
    let mut add = |name: &str, text: String| {
        zip.start_file(name, opts).expect("writing to memory");
        zip.write_all(text.as_bytes()).expect("writing to memory");
    };
    add(
        "metadata.json",
        json!({"keras_version": "3.15.0"}).to_string(),
    );
    add("config.json", model.to_string());
    zip.finish().expect("writing to memory");
    out.into_inner()
}
