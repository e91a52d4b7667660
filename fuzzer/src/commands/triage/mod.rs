//! `semfuzz triage`: replays saved findings (or plain cases), labels each (reproduces, no
//! longer reproduces, flaky, known, agrees), groups them by signature, optionally minimises each
//! reproducing group's smallest example while its signature persists, and writes the
//! minimal case, a standalone repro, a ready-to-file issue and a graph of the model beside
//! the original, plus a report of everything (Markdown, and HTML when asked).
//!
//! `minimal` shrinks a group and writes what it found; `report` renders the groups;
//! `progress` keeps a terminal informed.

pub mod bisect;
mod matrix;
mod minimal;
mod picture;
mod progress;
mod report;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use generators::minimize::inner_layers;
use harness_py::{Harness, Mode, RunOptions, TfOutcome, Verdict, Versions, WorkerError};
use judge::Judge;
use oracle::Case;
use oracle::case::CaseError;
use oracle::check::{CheckedShapes, check_in};
use serde_json::Value;

use crate::cli::{PythonArgs, SuppressionArgs, TriageArgs};
use crate::exit::{Failure, Outcome};
use matrix::{Column, Matrix};
use minimal::{Minimized, minimize_group};
use progress::Progress;
use report::Report;

/// Why one finding or case could not be triaged (it is reported and skipped).
#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    #[error("{}: no such directory", .0.display())]
    NoSuchDir(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: oracle::bounded::ReadError,
    },
    #[error(transparent)]
    Case(#[from] CaseError),
    #[error("{}: not a finding's outcome: {reason}", path.display())]
    Outcome { path: PathBuf, reason: String },
    #[error("the TensorFlow worker failed: {0}")]
    Worker(#[from] WorkerError),
    #[error("the reference oracle failed on this case: {0}")]
    Oracle(String),
    #[error("unsupported on this target: {0}")]
    Unsupported(#[from] harness_py::target::Unexpressible),
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

pub(crate) fn read_recorded(dir: &Path) -> Result<Recorded, TriageError> {
    let path = dir.join("outcome.json");
    let text =
        oracle::bounded::read_text(&path, oracle::bounded::Kind::Record).map_err(|source| {
            TriageError::Read {
                path: path.clone(),
                source,
            }
        })?;
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

pub fn replay(
    h: &mut Harness,
    judge: &Judge,
    case: &Case,
    modes: &[Mode],
) -> Result<Replay, TriageError> {
    let opts = RunOptions {
        modes: modes.to_vec(),
        ..RunOptions::default()
    };
    // A case written for another Keras release runs as the target can express it; the
    // reference judges it as written.
    let for_target = h.adapt(case)??;
    let tf = h.run(&for_target, &opts)?;
    // A panic of the reference (a bug of ours, e.g. on a minimisation candidate) costs this
    // case only, not the whole triage.
    let verdicts = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let oracle = check_in(case, case.dtype);
        judge.judge(case, case.dtype, &oracle, &tf)
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
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Finding,
    Known(std::sync::Arc<str>),
    Absent,
}

/// The verdict that shows `signature` as a finding, if any. Minimisation keeps a variant only
/// when there is one: the signature names the verdict and the layer class, so the bug is never
/// traded for another.
fn finding_with<'a>(verdicts: &'a [Verdict], signature: &str) -> Option<&'a Verdict> {
    verdicts
        .iter()
        .find(|v| v.signature == signature && v.is_finding())
}

fn seen(verdicts: &[Verdict], signature: &str) -> Seen {
    if finding_with(verdicts, signature).is_some() {
        return Seen::Finding;
    }
    let mut matching = verdicts.iter().filter(|v| v.signature == signature);
    match matching.find_map(|v| v.known.clone()) {
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
    /// A saved finding whose recorded signature showed in no replay.
    NoLongerReproduces,
    /// The environment's Keras cannot express the case (a class or an argument value it
    /// lacks): not run, no evidence either way.
    Unsupported(String),
    /// A plain case that showed no finding and no known bug in any replay: TensorFlow and the
    /// reference agree on it. Only a saved finding, which records a signature, can no longer
    /// reproduce.
    Agrees,
}

impl Status {
    /// Every status's name, in the order of the variants.
    const NAMES: [&'static str; 6] = [
        "reproduces",
        "flaky",
        "known",
        "no longer reproduces",
        "unsupported",
        "agrees",
    ];

    fn name(&self) -> &'static str {
        let i = match self {
            Status::Reproduces => 0,
            Status::Flaky => 1,
            Status::Known(_) => 2,
            Status::NoLongerReproduces => 3,
            Status::Unsupported(_) => 4,
            Status::Agrees => 5,
        };
        Self::NAMES[i]
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())?;
        match self {
            Status::Known(k) | Status::Unsupported(k) => write!(f, ": {k}"),
            _ => Ok(()),
        }
    }
}

fn label(seen: &[Seen]) -> Status {
    match seen.first() {
        Some(first) if seen.iter().all(|s| s == first) => match first {
            Seen::Finding => Status::Reproduces,
            Seen::Known(k) => Status::Known(k.to_string()),
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

fn triage_entry(
    h: &mut Harness,
    judge: &Judge,
    entry: Entry,
    replays: u32,
) -> Result<Triaged, TriageError> {
    let modes = entry.modes();
    let mut runs = Vec::new();
    for _ in 0..replays {
        match replay(h, judge, &entry.case, &modes) {
            Ok(r) => runs.push(r),
            Err(TriageError::Unsupported(why)) => {
                return Ok(Triaged {
                    signature: entry.recorded.as_ref().map(|r| r.signature.clone()),
                    status: Status::Unsupported(why.to_string()),
                    showing: None,
                    entry,
                });
            }
            Err(e) => return Err(e),
        }
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
        // Only a plain case has no signature: nothing recorded, nothing found.
        None => (Status::Agrees, None),
    };
    Ok(Triaged {
        entry,
        signature,
        status,
        showing,
    })
}
/// All entries of one signature.
struct Group {
    signature: String,
    members: Vec<Triaged>,
    minimized: Option<Minimized>,
}

impl Group {
    fn new(signature: String) -> Self {
        Group {
            signature,
            members: Vec::new(),
            minimized: None,
        }
    }

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

    /// The smallest example that reproduces in every replay: where minimisation starts (the
    /// smallest example overall may be flaky, or explained by a known bug).
    fn best_reproducing(&self) -> Option<&Triaged> {
        self.members
            .iter()
            .filter(|m| m.status == Status::Reproduces)
            .min_by_key(|m| m.entry.size())
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

    /// The verdict a replay showed (the smallest showing example's).
    fn shown(&self) -> Option<&Verdict> {
        let mut members: Vec<&Triaged> = self.members.iter().collect();
        members.sort_by_key(|m| m.entry.size());
        members.into_iter().find_map(|m| {
            m.showing
                .as_ref()
                .and_then(|r| r.verdicts.iter().find(|v| v.signature == self.signature))
        })
    }

    /// The tier of the verdict a replay showed.
    fn tier(&self) -> Option<judge::Tier> {
        self.shown().and_then(|v| v.tier)
    }

    /// What is wrong, in one line: the shown verdict's detail (the framework's value against
    /// the reference's, or the refusal and the violated precondition).
    fn what(&self) -> Option<String> {
        self.shown().map(|v| {
            let line = v.detail.lines().next().unwrap_or("");
            let mut cut: String = line.chars().take(240).collect();
            if cut.len() < line.len() {
                cut.push('…');
            }
            cut
        })
    }

    fn class(&self) -> &str {
        self.signature.split('/').nth(1).unwrap_or("model")
    }
}

/// Every finding folder and plain case under the folders given, in order.
fn sources(dirs: &[PathBuf]) -> Result<Vec<Source>, Failure> {
    let mut sources = Vec::new();
    for dir in dirs {
        sources.extend(discover(dir).map_err(|e| Failure::usage(e.to_string()))?);
    }
    Ok(sources)
}

pub fn run(args: &TriageArgs) -> Result<Outcome, Failure> {
    let sources = sources(&args.dirs)?;
    if !args.time_per_finding.is_finite() || args.time_per_finding < 0.0 {
        return Err(Failure::usage(
            "--time-per-finding must be a number of seconds",
        ));
    }
    let backend = match args.backend {
        Some(b) => b,
        None => recorded_backend(&sources)?,
    };
    let envs: Vec<PythonArgs> = if args.pythons.is_empty() {
        vec![PythonArgs {
            backend,
            ..Default::default()
        }]
    } else {
        args.pythons
            .iter()
            .map(|p| PythonArgs {
                python: Some(p.clone()),
                backend,
            })
            .collect()
    };
    let plan = Plan {
        replays: args.replays,
        minimize: args.minimize.then_some(args.time_per_finding),
        suppressions: args.suppressions.clone(),
    };
    let everywhere = replay_everywhere(&envs, &sources, &plan)?;
    let mut report = Report::new(
        &everywhere.groups,
        &args.dirs,
        args.replays,
        &everywhere.skipped,
        &everywhere.versions,
    );
    if envs.len() > 1 {
        print!("{}", everywhere.matrix.text());
        report.matrix = Some(everywhere.matrix.clone());
    }
    let markdown = args
        .report
        .clone()
        .unwrap_or_else(|| args.dirs[0].join("triage.md"));
    write_report(&markdown, &report.markdown())?;
    if let Some(html) = &args.html {
        write_report(html, &report.html())?;
    }
    let found = everywhere
        .groups
        .values()
        .any(|g| matches!(g.status(), Status::Reproduces | Status::Flaky))
        || everywhere.matrix.rows.iter().any(|r| {
            r.cells
                .iter()
                .any(|c| matches!(c, Some(Status::Reproduces | Status::Flaky)))
        });
    Ok(if found {
        Outcome::Found
    } else {
        Outcome::Clean
    })
}

/// The backend the findings folders among `sources` were found on (their `outcome.json`;
/// TensorFlow where it says none, as before backends were recorded): a usage error where they
/// name several, since one replay runs on one backend.
fn recorded_backend(sources: &[Source]) -> Result<harness_py::Backend, Failure> {
    let mut seen = std::collections::BTreeSet::new();
    for source in sources {
        if let Source::Finding(dir) = source {
            let backend = fs::read_to_string(dir.join("outcome.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|o| serde_json::from_value(o["backend"].clone()).ok())
                .unwrap_or_default();
            seen.insert(backend);
        }
    }
    match seen.len() {
        0 | 1 => Ok(seen.into_iter().next().unwrap_or_default()),
        _ => Err(Failure::usage(format!(
            "the findings were found on several backends ({}): pass --backend to replay them on one",
            seen.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// How the findings are replayed in each environment.
struct Plan {
    replays: u32,
    /// Minimise reproducing groups (in the first environment), this many seconds each.
    minimize: Option<f64>,
    suppressions: SuppressionArgs,
}

/// What the replays in every environment found.
struct Everywhere {
    /// The first environment's groups, what it skipped, and its versions.
    groups: BTreeMap<String, Group>,
    skipped: Vec<String>,
    versions: Versions,
    /// Every environment's statuses, one column each.
    matrix: Matrix,
}

/// Replays every source in each environment in turn (one worker, and its spare, at a time).
fn replay_everywhere(
    envs: &[PythonArgs],
    sources: &[Source],
    plan: &Plan,
) -> Result<Everywhere, Failure> {
    // Panics of the reference are caught per case (see `replay`): logged, not printed raw.
    std::panic::set_hook(Box::new(|info| {
        tracing::warn!("the reference oracle panicked: {info}");
    }));
    let mut progress = Progress::on_terminal();
    let mut first = None;
    let mut matrix = Matrix::default();
    for env in envs {
        let mut h = super::harness(env)?;
        // A crash during replay or minimisation costs a switch to this warm worker, not a start.
        h.keep_spare = true;
        let versions = h.versions().map_err(|e| Failure::failed(e.to_string()))?;
        super::evaluate_for_release(&versions);
        let judge = Judge::new(
            super::suppressions(&plan.suppressions)?,
            super::target(&versions),
        );
        let (mut groups, skipped) =
            replay_all(&mut h, &judge, sources, plan.replays, &mut progress)?;
        if first.is_none()
            && let Some(seconds) = plan.minimize
        {
            minimize_all(
                &mut h,
                &judge,
                &mut groups,
                seconds,
                &versions,
                &mut progress,
            );
        }
        matrix.add(Column::of(&versions), &groups);
        if first.is_none() {
            first = Some((groups, skipped, versions));
        }
    }
    progress.finish();
    let (groups, skipped, versions) = first.expect("at least one environment");
    Ok(Everywhere {
        groups,
        skipped,
        versions,
        matrix,
    })
}

fn write_report(path: &Path, text: &str) -> Result<(), Failure> {
    fs::write(path, text)
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", path.display())))?;
    println!("report: {}", path.display());
    Ok(())
}

/// Replays and labels every source, grouped by signature; what could not be read or judged
/// is reported, listed and skipped.
fn replay_all(
    h: &mut Harness,
    judge: &Judge,
    sources: &[Source],
    replays: u32,
    progress: &mut Progress,
) -> Result<(BTreeMap<String, Group>, Vec<String>), Failure> {
    let mut skipped = Vec::new();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for (k, source) in sources.iter().enumerate() {
        progress.show(
            "replaying",
            k,
            sources.len(),
            &source.path().display().to_string(),
        );
        let triaged = load(source).and_then(|entry| triage_entry(h, judge, entry, replays));
        let t = match triaged {
            Ok(t) => t,
            Err(e @ (TriageError::Worker(_) | TriageError::NoSuchDir(_))) => {
                return Err(Failure::failed(e.to_string()));
            }
            Err(e) => {
                let line = format!("{}: {e}", source.path().display());
                progress.warn(&format!("semfuzz: skipping {line}"));
                skipped.push(line);
                continue;
            }
        };
        let key = t
            .signature
            .clone()
            .unwrap_or_else(|| format!("agree/model/{}", source.path().display()));
        progress.say(&format!("{}: {key}: {}", source.path().display(), t.status));
        groups
            .entry(key.clone())
            .or_insert_with(|| Group::new(key))
            .members
            .push(t);
    }
    Ok((groups, skipped))
}

/// Minimises every reproducing group, each within `seconds`, and prints the figures.
fn minimize_all(
    h: &mut Harness,
    judge: &Judge,
    groups: &mut BTreeMap<String, Group>,
    seconds: f64,
    versions: &Versions,
    progress: &mut Progress,
) {
    let total = groups.len();
    for (k, group) in groups.values_mut().enumerate() {
        if group.status() != Status::Reproduces {
            continue;
        }
        progress.show("minimizing", k, total, &group.signature);
        match minimize_group(h, judge, group, seconds, versions, progress) {
            Ok(Some(m)) => {
                progress.say(&format!(
                    "minimized {}: {} → {} layers, {} → {} elements per input ({} variants, {:.1} s{}): {}",
                    group.signature,
                    m.before.0,
                    m.after.0,
                    m.before.1,
                    m.after.1,
                    m.tried,
                    m.seconds,
                    if m.timed_out { ", time bound reached" } else { "" },
                    m.dir.display()
                ));
                group.minimized = Some(m);
            }
            Ok(None) => progress.say(&format!(
                "minimized {}: nothing to start from",
                group.signature
            )),
            Err(e) => progress.warn(&format!(
                "semfuzz: cannot minimize {}: {e}",
                group.signature
            )),
        }
    }
    let done: Vec<&Minimized> = groups
        .values()
        .filter_map(|g| g.minimized.as_ref())
        .collect();
    if !done.is_empty() {
        let median_of = |f: fn(&Minimized) -> usize| median(done.iter().map(|m| f(m)).collect());
        progress.say(&format!(
            "minimization: {} cases; median {} → {} layers, {} → {} elements per input",
            done.len(),
            median_of(|m| m.before.0),
            median_of(|m| m.after.0),
            median_of(|m| m.before.1),
            median_of(|m| m.after.1),
        ));
    }
}

fn median(mut v: Vec<usize>) -> usize {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
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
        assert_eq!(
            label(&[Known("x".into()), Known("x".into())]),
            Status::Known("x".into())
        );
        assert_eq!(
            Status::Known("crashes/a".into()).to_string(),
            "known: crashes/a"
        );
    }

    /// A plain case of one ReLU on a batch of `batch` rows of 3.
    fn relu_case(batch: usize, status: Status) -> Triaged {
        let data: Vec<f64> = (0..batch * 3).map(|i| i as f64 - 2.5).collect();
        let text = format!(
            r#"{{"format": "semfuzz-case/1", "dtype": "float64",
             "model": {{"name": "m", "layers": [
              {{"module": "keras.layers", "class_name": "InputLayer", "name": "x", "inbound_nodes": [],
               "config": {{"batch_shape": [null, 3], "dtype": "float64", "name": "x"}}}},
              {{"module": "keras.layers", "class_name": "ReLU", "name": "r", "config": {{"name": "r"}},
               "inbound_nodes": [{{"args": [{{"class_name": "__keras_tensor__", "config": {{"shape": [null, 3], "dtype": "float64", "keras_history": ["x", 0, 0]}}}}], "kwargs": {{}}}}]}}],
              "input_layers": ["x", 0, 0], "output_layers": ["r", 0, 0]}},
             "weights": {{}},
             "inputs": [{{"shape": [{batch}, 3], "dtype": "float64", "data": {data:?}}}]}}"#
        );
        let path = format!("/c/relu-{batch}.case.json");
        Triaged {
            entry: Entry {
                source: Source::Case(PathBuf::from(&path)),
                case: Case::from_json_str(&text, &path).unwrap(),
                recorded: None,
            },
            signature: Some("mismatch/ReLU".to_owned()),
            status,
            showing: None,
        }
    }

    #[test]
    fn minimisation_starts_from_the_smallest_example_that_always_reproduces() {
        let mut g = Group::new("mismatch/ReLU".to_owned());
        g.members = vec![
            relu_case(8, Status::Reproduces),
            relu_case(1, Status::Flaky),
            relu_case(2, Status::Known("k".to_owned())),
            relu_case(4, Status::Reproduces),
        ];
        assert_eq!(g.status(), Status::Reproduces);
        let path = |t: &Triaged| t.entry.source.path().to_owned();
        assert_eq!(path(g.best()), Path::new("/c/relu-1.case.json"));
        assert_eq!(
            g.best_reproducing().map(path),
            Some(PathBuf::from("/c/relu-4.case.json"))
        );
        g.members.retain(|m| m.status != Status::Reproduces);
        assert!(g.best_reproducing().is_none());
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
