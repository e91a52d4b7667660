//! `semfuzz triage`: replays saved findings (or plain cases), labels each (reproduces, no
//! longer reproduces, flaky, known), groups them by signature, optionally minimises each
//! reproducing group's smallest example while its signature persists, and writes the
//! minimal case, a standalone repro, a ready-to-file issue and a graph of the model beside
//! the original, plus a Markdown report of everything.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use generators::minimize::{MinimizeOptions, inner_layers, max_input_elements, minimize};
use harness_py::{
    Harness, Mode, PythonEnv, RunOptions, TfOutcome, Verdict, Versions, WorkerCommand, WorkerError,
    judge,
};
use oracle::Case;
use oracle::case::{CaseError, WriteOptions};
use oracle::check::{CheckError, CheckedShapes, check_in};
use serde_json::{Value, json};

use crate::cli::TriageArgs;
use crate::exit::{Failure, Outcome};
use crate::isolated::isolated_case;

/// Why one finding or case could not be triaged (it is reported and skipped).
#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    #[error("{}: no such directory", .0.display())]
    NoSuchDir(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Case(#[from] CaseError),
    #[error("{}: not a finding's outcome: {reason}", path.display())]
    Outcome { path: PathBuf, reason: String },
    #[error("the TensorFlow worker failed: {0}")]
    Worker(#[from] WorkerError),
    #[error("the reference oracle failed on this case: {0}")]
    Oracle(String),
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TriageError + '_ {
    move |source| TriageError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Where something to triage lives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A findings folder: `case.case.json` and `outcome.json`.
    Finding(PathBuf),
    /// A plain `*.case.json` file.
    Case(PathBuf),
}

impl Source {
    pub fn case_path(&self) -> PathBuf {
        match self {
            Source::Finding(d) => d.join("case.case.json"),
            Source::Case(p) => p.clone(),
        }
    }

    /// Where the minimised result goes: beside the original, never over it.
    pub fn minimized_dir(&self) -> PathBuf {
        match self {
            Source::Finding(d) => d.join("minimized"),
            Source::Case(p) => {
                let name = p.file_name().map_or_else(String::new, |n| {
                    n.to_string_lossy()
                        .trim_end_matches(".case.json")
                        .to_owned()
                });
                p.with_file_name(format!("{name}.minimized"))
            }
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Source::Finding(p) | Source::Case(p) => p,
        }
    }
}

fn is_output_dir(name: &str) -> bool {
    name == "minimized" || name.ends_with(".minimized") || name.starts_with('.')
}

/// Every finding folder and plain case under `dir`, at any depth, in path order.
pub fn discover(dir: &Path) -> Result<Vec<Source>, TriageError> {
    if !dir.is_dir() {
        return Err(TriageError::NoSuchDir(dir.to_owned()));
    }
    let mut found = Vec::new();
    walk(dir, &mut found)?;
    found.sort();
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<Source>) -> Result<(), TriageError> {
    if dir.join("case.case.json").is_file() && dir.join("outcome.json").is_file() {
        found.push(Source::Finding(dir.to_owned()));
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io_error(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if p.is_dir() {
            if !is_output_dir(&name) {
                walk(&p, found)?;
            }
        } else if name.ends_with(".case.json") {
            found.push(Source::Case(p));
        }
    }
    Ok(())
}

/// What a findings store recorded about a finding.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub signature: String,
    pub modes: Vec<Mode>,
    pub count: u64,
    pub first_seen: Option<u64>,
    pub last_seen: Option<u64>,
}

fn read_recorded(dir: &Path) -> Result<Recorded, TriageError> {
    let path = dir.join("outcome.json");
    let text = fs::read_to_string(&path).map_err(io_error(&path))?;
    let bad = |reason: String| TriageError::Outcome {
        path: path.clone(),
        reason,
    };
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let signature = v["signature"]
        .as_str()
        .ok_or_else(|| bad("no \"signature\"".into()))?
        .to_owned();
    let modes = match v["modes"].as_array() {
        Some(a) => a
            .iter()
            .map(|m| {
                m.as_str()
                    .and_then(|s| s.parse::<Mode>().ok())
                    .ok_or_else(|| bad(format!("unknown mode {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![Mode::Eager],
    };
    Ok(Recorded {
        signature,
        modes: if modes.is_empty() {
            vec![Mode::Eager]
        } else {
            modes
        },
        count: v["count"].as_u64().unwrap_or(1),
        first_seen: v["first_seen"].as_u64(),
        last_seen: v["last_seen"].as_u64(),
    })
}

/// One finding or case, loaded.
pub struct Entry {
    pub source: Source,
    pub case: Case,
    pub recorded: Option<Recorded>,
}

pub fn load(source: &Source) -> Result<Entry, TriageError> {
    let case = Case::read(source.case_path())?;
    let recorded = match source {
        Source::Finding(d) => Some(read_recorded(d)?),
        Source::Case(_) => None,
    };
    Ok(Entry {
        source: source.clone(),
        case,
        recorded,
    })
}

impl Entry {
    fn modes(&self) -> Vec<Mode> {
        self.recorded
            .as_ref()
            .map_or_else(|| vec![Mode::Eager], |r| r.modes.clone())
    }

    fn size(&self) -> (usize, usize) {
        size_of(&self.case)
    }
}

fn size_of(case: &Case) -> (usize, usize) {
    (
        inner_layers(case),
        case.to_json(&CheckedShapes::of(case)).to_string().len(),
    )
}

/// One run of a case and its verdicts.
pub struct Replay {
    pub tf: TfOutcome,
    pub verdicts: Vec<Verdict>,
}

pub fn replay(h: &mut Harness, case: &Case, modes: &[Mode]) -> Result<Replay, TriageError> {
    let opts = RunOptions {
        modes: modes.to_vec(),
        ..RunOptions::default()
    };
    let tf = h.run(case, &opts)?;
    // A panic of the reference (a bug of ours, e.g. on a minimisation candidate) costs this
    // case only, not the whole triage.
    let verdicts = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let oracle = check_in(case, case.dtype);
        judge(case, case.dtype, &oracle, &tf)
    }))
    .map_err(|p| {
        TriageError::Oracle(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic".to_owned()),
        )
    })?;
    Ok(Replay { tf, verdicts })
}

/// How a signature showed in one replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Finding,
    Known(&'static str),
    Absent,
}

fn seen(verdicts: &[Verdict], signature: &str) -> Seen {
    let matching = || verdicts.iter().filter(|v| v.signature == signature);
    if matching().any(Verdict::is_finding) {
        return Seen::Finding;
    }
    match matching().find_map(|v| v.known) {
        Some(k) => Seen::Known(k),
        None => Seen::Absent,
    }
}

/// The label of a finding after its replays.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// The recorded signature showed, as a finding, in every replay.
    Reproduces,
    /// It showed in some replays only, or differently.
    Flaky,
    /// Explained by a bug already recorded in `crashes/`.
    Known(String),
    NoLongerReproduces,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Reproduces => f.write_str("reproduces"),
            Status::Flaky => f.write_str("flaky"),
            Status::Known(k) => write!(f, "known: {k}"),
            Status::NoLongerReproduces => f.write_str("no longer reproduces"),
        }
    }
}

fn label(seen: &[Seen]) -> Status {
    match seen.first() {
        Some(first) if seen.iter().all(|s| s == first) => match first {
            Seen::Finding => Status::Reproduces,
            Seen::Known(k) => Status::Known((*k).to_owned()),
            Seen::Absent => Status::NoLongerReproduces,
        },
        Some(_) => Status::Flaky,
        None => Status::NoLongerReproduces,
    }
}

/// A triaged entry: its signature (the recorded one, or what the first replay found) and label.
struct Triaged {
    entry: Entry,
    signature: Option<String>,
    status: Status,
    /// The first replay in which the signature showed as a finding.
    showing: Option<Replay>,
}

fn triage_entry(h: &mut Harness, entry: Entry, replays: u32) -> Result<Triaged, TriageError> {
    let modes = entry.modes();
    let mut runs = Vec::new();
    for _ in 0..replays {
        runs.push(replay(h, &entry.case, &modes)?);
    }
    let signature = match &entry.recorded {
        Some(r) => Some(r.signature.clone()),
        None => runs.iter().find_map(|r| {
            r.verdicts
                .iter()
                .find(|v| v.is_finding())
                .or_else(|| r.verdicts.iter().find(|v| v.known.is_some()))
                .map(|v| v.signature.clone())
        }),
    };
    let (status, showing) = match &signature {
        Some(sig) => {
            let seens: Vec<Seen> = runs.iter().map(|r| seen(&r.verdicts, sig)).collect();
            let showing = seens
                .iter()
                .position(|s| *s == Seen::Finding)
                .map(|i| runs.swap_remove(i));
            (label(&seens), showing)
        }
        None => (Status::NoLongerReproduces, None),
    };
    Ok(Triaged {
        entry,
        signature,
        status,
        showing,
    })
}

/// A minimised example and what it took.
struct Minimized {
    dir: PathBuf,
    before: (usize, usize),
    after: (usize, usize),
    tried: usize,
    seconds: f64,
}

/// All entries of one signature.
struct Group {
    signature: String,
    members: Vec<Triaged>,
    minimized: Option<Minimized>,
}

impl Group {
    fn status(&self) -> Status {
        self.members
            .iter()
            .map(|m| m.status.clone())
            .min()
            .unwrap_or(Status::NoLongerReproduces)
    }

    /// The smallest example: fewest layers, then bytes.
    fn best(&self) -> &Triaged {
        self.members
            .iter()
            .min_by_key(|m| m.entry.size())
            .expect("a group has members")
    }

    fn count(&self) -> u64 {
        self.members
            .iter()
            .map(|m| m.entry.recorded.as_ref().map_or(1, |r| r.count))
            .sum()
    }

    fn seen(&self, f: fn(&Recorded) -> Option<u64>) -> Vec<u64> {
        self.members
            .iter()
            .filter_map(|m| m.entry.recorded.as_ref().and_then(f))
            .collect()
    }

    fn verdict(&self) -> &str {
        self.signature.split('/').next().unwrap_or("?")
    }

    fn class(&self) -> &str {
        self.signature.split('/').nth(1).unwrap_or("model")
    }
}

pub fn run(args: &TriageArgs) -> Result<Outcome, Failure> {
    let mut sources = Vec::new();
    for dir in &args.dirs {
        sources.extend(discover(dir).map_err(|e| Failure::usage(e.to_string()))?);
    }
    if !args.time_per_finding.is_finite() || args.time_per_finding < 0.0 {
        return Err(Failure::usage(
            "--time-per-finding must be a number of seconds",
        ));
    }
    let python = PythonEnv::select(args.python.python.as_deref())
        .map_err(|e| Failure::usage(e.to_string()))?;
    let env = PythonEnv::probe(&python).map_err(|e| Failure::usage(e.to_string()))?;
    let cmd = WorkerCommand::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the semfuzz executable: {e}")))?;
    // Panics of the reference are caught per case (see `replay`): logged, not printed raw.
    std::panic::set_hook(Box::new(|info| {
        tracing::warn!("the reference oracle panicked: {info}");
    }));
    let mut h = Harness::new(cmd, env);
    h.keep_spare = true;
    let versions = h.versions().map_err(|e| Failure::failed(e.to_string()))?;

    let mut skipped = Vec::new();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for source in &sources {
        let entry = match load(source) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("semfuzz: skipping {}: {e}", source.path().display());
                skipped.push(format!("{}: {e}", source.path().display()));
                continue;
            }
        };
        let t = match triage_entry(&mut h, entry, args.replays) {
            Ok(t) => t,
            Err(e @ TriageError::Oracle(_)) => {
                eprintln!("semfuzz: skipping {}: {e}", source.path().display());
                skipped.push(format!("{}: {e}", source.path().display()));
                continue;
            }
            Err(e) => return Err(Failure::failed(e.to_string())),
        };
        let key = t
            .signature
            .clone()
            .unwrap_or_else(|| format!("agree/model/{}", source.path().display()));
        println!("{}: {key}: {}", source.path().display(), t.status);
        groups
            .entry(key.clone())
            .or_insert_with(|| Group {
                signature: key,
                members: Vec::new(),
                minimized: None,
            })
            .members
            .push(t);
    }

    if args.minimize {
        for group in groups.values_mut() {
            if group.status() != Status::Reproduces {
                continue;
            }
            match minimize_group(&mut h, group, args.time_per_finding, &versions) {
                Ok(Some(m)) => {
                    println!(
                        "minimized {}: {} → {} layers, {} → {} elements per input ({} variants, {:.1} s): {}",
                        group.signature,
                        m.before.0,
                        m.after.0,
                        m.before.1,
                        m.after.1,
                        m.tried,
                        m.seconds,
                        m.dir.display()
                    );
                    group.minimized = Some(m);
                }
                Ok(None) => println!("minimized {}: nothing to start from", group.signature),
                Err(e) => eprintln!("semfuzz: cannot minimize {}: {e}", group.signature),
            }
        }
        let done: Vec<&Minimized> = groups
            .values()
            .filter_map(|g| g.minimized.as_ref())
            .collect();
        if !done.is_empty() {
            let layers = median(done.iter().map(|m| m.after.0).collect());
            let elements = median(done.iter().map(|m| m.after.1).collect());
            let layers_before = median(done.iter().map(|m| m.before.0).collect());
            let elements_before = median(done.iter().map(|m| m.before.1).collect());
            println!(
                "minimization: {} cases; median {layers_before} → {layers} layers, {elements_before} → {elements} elements per input",
                done.len()
            );
        }
    }

    let report_path = args
        .report
        .clone()
        .unwrap_or_else(|| args.dirs[0].join("triage.md"));
    let report = report(&groups, &args.dirs, args.replays, &skipped, &versions);
    fs::write(&report_path, report)
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", report_path.display())))?;
    println!("report: {}", report_path.display());
    let found = groups
        .values()
        .any(|g| matches!(g.status(), Status::Reproduces | Status::Flaky));
    Ok(if found {
        Outcome::Found
    } else {
        Outcome::Clean
    })
}

fn median(mut v: Vec<usize>) -> usize {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn figures(case: &Case) -> (usize, usize) {
    (inner_layers(case), max_input_elements(case))
}

fn minimize_group(
    h: &mut Harness,
    group: &Group,
    seconds: f64,
    versions: &Versions,
) -> Result<Option<Minimized>, TriageError> {
    let best = group.best();
    let Some(showing) = &best.showing else {
        return Ok(None);
    };
    let signature = group.signature.clone();
    let modes = best.entry.modes();
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let mut worker_error = None;
    let mut keeps = |c: &Case| match replay(h, c, &modes) {
        Ok(r) => seen(&r.verdicts, &signature) == Seen::Finding,
        Err(e @ TriageError::Oracle(_)) => {
            tracing::warn!("a minimisation candidate could not be judged: {e}");
            false
        }
        Err(e) => {
            tracing::warn!("a minimisation candidate could not run: {e}");
            worker_error.get_or_insert(e);
            false
        }
    };
    let original = &best.entry.case;
    // The layer alone, fed TF's own inputs to it, is the best first step.
    let mut start = original.clone();
    let mut tried = 0;
    if let Some(v) = showing.verdicts.iter().find(|v| v.signature == signature)
        && let Some(iso) = isolated_case(original, v, &showing.tf)
    {
        tried += 1;
        if keeps(&iso) {
            start = iso;
        }
    }
    let (small, stats) = minimize(
        &start,
        &mut keeps,
        &MinimizeOptions {
            deadline: Some(deadline),
        },
    );
    if let Some(e) = worker_error
        && small == *original
    {
        return Err(e);
    }
    let last = replay(h, &small, &modes)?;
    let verdict = last
        .verdicts
        .iter()
        .find(|v| v.signature == signature && v.is_finding())
        .or_else(|| showing.verdicts.iter().find(|v| v.signature == signature))
        .cloned();
    let dir = best.entry.source.minimized_dir();
    write_minimized(
        &dir,
        &small,
        &best.entry,
        verdict.as_ref(),
        &modes,
        versions,
    )?;
    Ok(Some(Minimized {
        dir,
        before: figures(original),
        after: figures(&small),
        tried: tried + stats.tried,
        seconds: started.elapsed().as_secs_f64(),
    }))
}

fn write_minimized(
    dir: &Path,
    case: &Case,
    entry: &Entry,
    verdict: Option<&Verdict>,
    modes: &[Mode],
    versions: &Versions,
) -> Result<(), TriageError> {
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let case_path = dir.join("case.case.json");
    case.write(
        &case_path,
        &CheckedShapes::of(case),
        WriteOptions { fsync: true },
    )?;
    let repro = harness_py::export::python_script(case, &case_path.display().to_string());
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        fs::write(&p, text).map_err(io_error(&p))
    };
    write("repro.py", &repro)?;
    let class = verdict
        .and_then(|v| v.layer.as_deref())
        .and_then(|l| case.model.layer(l))
        .map(|l| l.class_name.clone());
    let (layers, elements) = figures(case);
    let outcome = json!({
        "verdict": verdict.map(|v| v.kind.name()),
        "signature": verdict.map(|v| v.signature.clone()),
        "layer": verdict.and_then(|v| v.layer.clone()),
        "class": class,
        "mode": verdict.and_then(|v| v.mode).map(|m| m.name()),
        "modes": modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "dtype": case.dtype.name(),
        "detail": verdict.map(|v| v.detail.clone()),
        "minimized_from": entry.source.case_path().display().to_string(),
        "layers_before": inner_layers(&entry.case),
        "layers": layers,
        "elements_per_input": elements,
        "versions": versions_json(versions),
    });
    write(
        "outcome.json",
        &serde_json::to_string_pretty(&outcome).expect("JSON values serialize"),
    )?;
    write("issue.md", &issue(case, verdict, &repro, modes, versions))?;
    let dot = dot(case);
    write("model.dot", &dot)?;
    render_svg(&dir.join("model.dot"), &dir.join("model.svg"));
    Ok(())
}

fn versions_json(v: &Versions) -> Value {
    json!({"python": v.python, "tensorflow": v.tensorflow, "keras": v.keras, "numpy": v.numpy})
}

/// Renders the graph when Graphviz is installed; silently nothing otherwise.
fn render_svg(dot: &Path, svg: &Path) {
    let status = std::process::Command::new("dot")
        .arg("-Tsvg")
        .arg(dot)
        .arg("-o")
        .arg(svg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if let Ok(s) = status
        && !s.success()
    {
        tracing::warn!("dot could not render {}", dot.display());
    }
}

/// The model as a Graphviz graph: one box per layer (name, class, declared input shapes),
/// one edge per tensor, the outputs marked.
pub fn dot(case: &Case) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut s = String::from(
        "digraph model {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n",
    );
    for l in &case.model.layers {
        let label = match l.input_batch_shape() {
            Some(dims) if l.is_input() => {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|d| d.map_or("None".to_owned(), |n| n.to_string()))
                    .collect();
                format!("{}\\nInput ({})", l.name, dims.join(", "))
            }
            _ => format!("{}\\n{}", l.name, l.class_name),
        };
        let _ = writeln!(
            s,
            "  {} [label=\"{}\"];",
            q(&l.name),
            label.replace('"', "\\\"")
        );
        for r in generators::edit::call_inputs(l) {
            let _ = writeln!(s, "  {} -> {};", q(&r.layer), q(&l.name));
        }
    }
    for (k, r) in generators::edit::outputs(case).iter().enumerate() {
        let node = format!("output {k}");
        let _ = writeln!(s, "  {} [shape=plaintext];", q(&node));
        let _ = writeln!(s, "  {} -> {};", q(&r.layer), q(&node));
    }
    s.push_str("}\n");
    s
}

fn title(kind: &str, class: &str, mode: Option<Mode>, dtype: &str) -> String {
    let mode = mode.map_or("eager".to_owned(), |m| m.name().to_owned());
    match kind {
        "mismatch" => format!("`{class}` computes wrong values ({dtype}, {mode} mode)"),
        "mode-mismatch" => {
            format!("`{class}` gives different results in {mode} mode than in eager mode ({dtype})")
        }
        "missing-validation" => {
            format!("`{class}` accepts an invalid configuration without an error")
        }
        "late-error" => format!(
            "`{class}`: an invalid configuration fails inside a kernel instead of with a clear error"
        ),
        "unclear-error" => format!("`{class}`: the error names neither the layer nor the argument"),
        "unexpected-rejection" => format!("`{class}` refuses a valid model ({dtype}, {mode} mode)"),
        "unexpected-nan" => format!(
            "`{class}` produces NaN/Inf where the result is finite, or the reverse ({dtype})"
        ),
        "crash" => format!("`{class}` crashes the process"),
        "timeout" => format!("`{class}` hangs"),
        "oom" => format!("`{class}` exhausts memory"),
        _ => format!("`{class}`: {kind}"),
    }
}

/// What the finding violates: the precondition the reference names, or the layer's semantics.
fn violated(case: &Case, kind: &str, class: &str) -> String {
    match check_in(case, case.dtype) {
        Err(CheckError::Invalid(v)) => format!(
            "The configuration violates a precondition of `{}` ({}, {}): {v}. {}",
            v.class,
            v.category.name(),
            v.tag.name(),
            match kind {
                "missing-validation" => "TensorFlow/Keras should reject it, naming the layer and the argument, but runs it.",
                "late-error" => "It should be rejected with a clear error when the layer is built, not fail inside a kernel.",
                "unclear-error" => "The error should name the layer and the argument.",
                _ => "",
            }
        ),
        Err(CheckError::Unsupported(u)) => format!("The reference does not judge this model: {u}."),
        Ok(_) => match kind {
            "mismatch" => format!("The semantics of `{class}`: its output differs from the reference computation of the layer's documented formula on the same inputs by more than the layer's tolerance."),
            "mode-mismatch" => format!("The semantics of `{class}` must not depend on the execution mode (eager, `tf.function`, XLA)."),
            "unexpected-nan" => format!("The semantics of `{class}`: the reference result is finite where TensorFlow's is not (or the reverse)."),
            "unexpected-rejection" => "The model is valid by the layers' documented preconditions, but TensorFlow refuses it.".to_owned(),
            _ => "The model is valid; TensorFlow should run it to completion.".to_owned(),
        },
    }
}

fn issue(
    case: &Case,
    verdict: Option<&Verdict>,
    repro: &str,
    modes: &[Mode],
    versions: &Versions,
) -> String {
    let kind = verdict.map_or("finding", |v| v.kind.name());
    let class = verdict
        .and_then(|v| v.layer.as_deref())
        .and_then(|l| case.model.layer(l))
        .map_or("model", |l| l.class_name.as_str());
    let mut s = format!(
        "# {}\n\n",
        title(kind, class, verdict.and_then(|v| v.mode), case.dtype.name())
    );
    let _ = writeln!(
        s,
        "**Versions:** TensorFlow {}, Keras {}, NumPy {}, Python {}\n",
        versions.tensorflow, versions.keras, versions.numpy, versions.python
    );
    let modes: Vec<&str> = modes.iter().map(|m| m.name()).collect();
    let _ = writeln!(
        s,
        "A model of {} layer(s) ({}), run in {} with dtype {}.\n",
        inner_layers(case),
        case.model
            .layers
            .iter()
            .filter(|l| !l.is_input())
            .map(|l| l.class_name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        modes.join(", "),
        case.dtype.name()
    );
    s += "## Minimal reproduction\n\nNeeds only TensorFlow, Keras and NumPy; exits 1 when the bug shows.\n\n```python\n";
    s += repro.trim_end();
    s += "\n```\n\n## Expected vs actual\n\n```\n";
    s += verdict.map_or("(no verdict)", |v| v.detail.trim_end());
    s += "\n```\n\n## What is violated\n\n";
    s += &violated(case, kind, class);
    s += "\n";
    s
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
fn date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

fn report(
    groups: &BTreeMap<String, Group>,
    dirs: &[PathBuf],
    replays: u32,
    skipped: &[String],
    versions: &Versions,
) -> String {
    let entries: usize = groups.values().map(|g| g.members.len()).sum();
    let mut s = String::from("# semfuzz triage\n\n");
    let _ = writeln!(
        s,
        "{entries} finding(s) or case(s) from {}, replayed {replays} time(s) each with TensorFlow {}, Keras {}: {} signature(s).\n",
        dirs.iter()
            .map(|d| format!("`{}`", d.display()))
            .collect::<Vec<_>>()
            .join(", "),
        versions.tensorflow,
        versions.keras,
        groups.len()
    );
    let mut by_verdict: BTreeMap<&str, Vec<&Group>> = BTreeMap::new();
    for g in groups.values() {
        by_verdict.entry(g.verdict()).or_default().push(g);
    }
    for (verdict, gs) in by_verdict {
        let _ = writeln!(s, "## {verdict}\n");
        s += "| class | signature | status | count | first seen | last seen | smallest example | minimal case |\n";
        s += "|---|---|---|---|---|---|---|---|\n";
        let mut gs = gs;
        gs.sort_by(|a, b| (a.class(), &a.signature).cmp(&(b.class(), &b.signature)));
        for g in gs {
            let best = g.best();
            let first = g
                .seen(|r| r.first_seen)
                .into_iter()
                .min()
                .map_or("-".into(), date);
            let last = g
                .seen(|r| r.last_seen)
                .into_iter()
                .max()
                .map_or("-".into(), date);
            let minimal = g.minimized.as_ref().map_or("-".into(), |m| {
                format!(
                    "`{}` ({} layers, {} elements per input)",
                    m.dir.join("case.case.json").display(),
                    m.after.0,
                    m.after.1
                )
            });
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {first} | {last} | `{}` ({} layers) | {minimal} |",
                g.class(),
                g.signature,
                g.status(),
                g.count(),
                best.entry.source.case_path().display(),
                inner_layers(&best.entry.case)
            );
        }
        s.push('\n');
    }
    if !skipped.is_empty() {
        s += "## Skipped\n\n";
        for k in skipped {
            let _ = writeln!(s, "- {k}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_replays() {
        use Seen::*;
        assert_eq!(label(&[Finding, Finding]), Status::Reproduces);
        assert_eq!(label(&[Absent]), Status::NoLongerReproduces);
        assert_eq!(label(&[Finding, Absent, Finding]), Status::Flaky);
        assert_eq!(label(&[Known("x"), Known("x")]), Status::Known("x".into()));
        assert_eq!(
            Status::Known("crashes/a".into()).to_string(),
            "known: crashes/a"
        );
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(date(1_700_000_000), "2023-11-14 22:13 UTC");
    }

    #[test]
    fn plain_cases_are_minimized_beside_themselves() {
        let s = Source::Case(PathBuf::from("/a/b/x.case.json"));
        assert_eq!(s.minimized_dir(), Path::new("/a/b/x.minimized"));
        let f = Source::Finding(PathBuf::from("/o/findings/mismatch/ReLU"));
        assert_eq!(
            f.minimized_dir(),
            Path::new("/o/findings/mismatch/ReLU/minimized")
        );
    }
}
