//! The loop of one `fuzz-self` child: LibAFL's havoc and dictionary mutations (and, for JSON
//! inputs, a mutation of one JSON value to an edge value), inputs that reach a new behaviour
//! kept and mutated further, every panic saved with its input. Before each execution the
//! input is written to a journal, so the parent can save it when the child dies (an abort,
//! memory past the limit) or hangs.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use libafl::corpus::{Corpus, InMemoryCorpus, Testcase};
use libafl::feedbacks::ConstFeedback;
use libafl::inputs::{BytesInput, HasMutatorBytes};
use libafl::mutators::{
    HavocScheduledMutator, MutationResult, Mutator, Tokens, havoc_mutations, tokens_mutations,
};
use libafl::state::{HasCorpus, HasMaxSize, HasRand, StdState};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::{Rand, StdRand};
use libafl_bolts::tuples::Merge;
use serde_json::{Value, json};

use super::targets::{self, Scratch, Target};

type State = StdState<InMemoryCorpus<BytesInput>, BytesInput, StdRand, InMemoryCorpus<BytesInput>>;

/// The largest input a mutation may make.
const MAX_INPUT: usize = 256 << 10;

/// The most inputs kept for their behaviour.
const MAX_CORPUS: usize = 4096;

/// How one child's run ended.
pub struct ChildRun {
    pub executions: u64,
    pub behaviours: usize,
    pub panics: usize,
}

/// Words that JSON inputs are made of, for the dictionary mutations.
const TOKENS: &[&str] = &[
    "\"shape\"",
    "\"npz\"",
    "\"data\"",
    "\"dtype\"",
    "\"format\"",
    "\"semfuzz-case/1\"",
    "\"model\"",
    "\"layers\"",
    "\"config\"",
    "\"class_name\"",
    "\"inbound_nodes\"",
    "\"batch_shape\"",
    "\"keras_history\"",
    "\"input_layers\"",
    "\"output_layers\"",
    "\"weights\"",
    "\"inputs\"",
    "\"entries\"",
    "\"alternatives\"",
    "\"verdicts\"",
    "\"evidence\"",
    "\"signature\"",
    "\"tier\"",
    "\"modes\"",
    "\"nan\"",
    "\"inf\"",
    "\"-inf\"",
    "null",
    "true",
    "false",
    "[]",
    "{}",
    "1e308",
    "-1",
    "2147483648",
    "9007199254740993",
    "\"float16\"",
    "\"int64\"",
    "\"bool\"",
    "\"__keras_tensor__\"",
    "\"Functional\"",
    "\"Sequential\"",
    "\"Dense\"",
    "\"Conv2D\"",
    "\"Reshape\"",
    "\"Embedding\"",
    "\"LSTM\"",
    "\"MultiHeadAttention\"",
    "\"Concatenate\"",
];

/// Edge values one JSON value may become.
fn edge_value(rand: &mut StdRand) -> Value {
    let values = [
        json!(0),
        json!(-1),
        json!(1),
        json!(2),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(-2_147_483_649i64),
        json!(1_000_000_000),
        json!(1e308),
        json!(-1e-320),
        json!(0.5),
        json!("nan"),
        json!("inf"),
        json!(""),
        json!(null),
        json!(true),
        json!([]),
        json!({}),
        json!([100_000, 100_000]),
        json!([null, 0]),
        json!([65536, 65536, 65536]),
        json!("float64"),
        json!("x".repeat(300)),
    ];
    values[rand.below(core::num::NonZero::new(values.len()).expect("not empty"))].clone()
}

/// Replaces one value of a JSON document (any depth) by an edge value, or removes one
/// member of an object, or duplicates one element of an array.
fn mutate_json(bytes: &[u8], rand: &mut StdRand) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(bytes).ok()?;
    let mut count = 0usize;
    count_values(&v, &mut count);
    let target = rand.below(core::num::NonZero::new(count.max(1)).expect("positive"));
    let how = rand.below(core::num::NonZero::new(4).expect("positive"));
    let mut seen = 0;
    edit_nth(&mut v, target, &mut seen, how, rand);
    serde_json::to_vec(&v).ok()
}

fn count_values(v: &Value, n: &mut usize) {
    *n += 1;
    match v {
        Value::Array(a) => a.iter().for_each(|x| count_values(x, n)),
        Value::Object(o) => o.values().for_each(|x| count_values(x, n)),
        _ => {}
    }
}

fn edit_nth(
    v: &mut Value,
    target: usize,
    seen: &mut usize,
    how: usize,
    rand: &mut StdRand,
) -> bool {
    if *seen == target {
        match (how, &mut *v) {
            (1, Value::Object(o)) if !o.is_empty() => {
                let k = o
                    .keys()
                    .nth(rand.below(core::num::NonZero::new(o.len()).expect("not empty")))
                    .cloned();
                if let Some(k) = k {
                    o.shift_remove(&k);
                }
            }
            (2, Value::Array(a)) if !a.is_empty() && a.len() < 4096 => {
                let i = rand.below(core::num::NonZero::new(a.len()).expect("not empty"));
                let x = a[i].clone();
                a.insert(i, x);
            }
            _ => *v = edge_value(rand),
        }
        return true;
    }
    *seen += 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|x| edit_nth(x, target, seen, how, rand)),
        Value::Object(o) => o.values_mut().any(|x| edit_nth(x, target, seen, how, rand)),
        _ => false,
    }
}

/// When a child stops: after this many executions (seeds included), or at this time.
#[derive(Debug, Clone, Copy)]
pub struct Stop {
    pub runs: Option<u64>,
    pub deadline: Option<Instant>,
}

/// A target's journal in its folder: the input being run.
pub fn journal_of(dir: &Path) -> PathBuf {
    dir.join(".journal")
}

/// A target's findings folder.
pub fn findings_of(dir: &Path) -> PathBuf {
    dir.join("findings")
}

/// Mutates one member of a zip archive (a JSON member as JSON, any other with `havoc`) and
/// writes the archive again, its members stored or deflated: the reader then meets a
/// well-formed archive with a broken member, which byte mutations of the archive (its
/// checksums broken) rarely give.
fn mutate_member<M: Mutator<BytesInput, State>>(
    bytes: &[u8],
    state: &mut State,
    havoc: &mut M,
) -> Result<Option<Vec<u8>>, Error> {
    use std::io::{Read as _, Write as _};
    let Ok(mut zip) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) else {
        return Ok(None);
    };
    let mut members = Vec::new();
    for i in 0..zip.len().min(64) {
        let Ok(f) = zip.by_index(i) else {
            return Ok(None);
        };
        let name = f.name().to_owned();
        let mut data = Vec::new();
        if f.take(MAX_INPUT as u64).read_to_end(&mut data).is_err() {
            return Ok(None);
        }
        members.push((name, data));
    }
    if members.is_empty() {
        return Ok(None);
    }
    let pick = state
        .rand_mut()
        .below(core::num::NonZero::new(members.len()).expect("not empty"));
    let data = &members[pick].1;
    let edited = match mutate_json(data, state.rand_mut()) {
        Some(j) if state.rand_mut().coinflip(0.7) => j,
        _ => {
            let mut m = BytesInput::new(data.clone());
            havoc.mutate(state, &mut m)?;
            m.mutator_bytes().to_vec()
        }
    };
    members[pick].1 = edited;
    let method = if state.rand_mut().coinflip(0.5) {
        zip::CompressionMethod::Stored
    } else {
        zip::CompressionMethod::Deflated
    };
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut out);
    let opts = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, data) in &members {
        if w.start_file(name.as_str(), opts).is_err() || w.write_all(data).is_err() {
            return Ok(None);
        }
    }
    if w.finish().is_err() {
        return Ok(None);
    }
    Ok(Some(out.into_inner()))
}

/// Runs `target` from `seeds` until `stop`, in the target's folder `dir`. Panics are saved
/// under its findings folder; the input of each execution is first written to its journal.
pub fn run_child(
    target: Target,
    seed: u64,
    stop: Stop,
    seeds: Vec<Vec<u8>>,
    dir: &Path,
    progress: &Arc<AtomicU64>,
) -> Result<ChildRun, Error> {
    let mut feedback = ConstFeedback::new(false);
    let mut objective = ConstFeedback::new(false);
    let mut state: State = StdState::new(
        StdRand::with_seed(seed),
        InMemoryCorpus::new(),
        InMemoryCorpus::new(),
        &mut feedback,
        &mut objective,
    )?;
    state.set_max_size(MAX_INPUT);
    state.add_metadata(Tokens::from(
        TOKENS
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect::<Vec<_>>(),
    ));
    let (journal, findings) = (&journal_of(dir), &findings_of(dir));
    let scratch = Scratch::new(dir.join(".scratch"))?;
    let run = |bytes: &[u8]| targets::run(target, bytes, &scratch);
    let mut behaviours = std::collections::HashSet::new();
    let mut panics = std::collections::HashSet::new();
    for s in seeds {
        let b = execute(&run, &s, journal, findings, &mut panics, progress);
        behaviours.insert(b);
        state.corpus_mut().add(Testcase::new(BytesInput::new(s)))?;
    }
    let mut havoc = HavocScheduledMutator::new(havoc_mutations().merge(tokens_mutations()));
    loop {
        let executions = progress.load(Ordering::Relaxed);
        if stop.runs.is_some_and(|r| executions >= r)
            || stop.deadline.is_some_and(|d| Instant::now() >= d)
        {
            break;
        }
        let count = state.corpus().count();
        let nth = state
            .rand_mut()
            .below(core::num::NonZero::new(count).expect("seeded"));
        let id = state.corpus().nth(nth);
        let mut input = state.corpus().cloned_input_for_id(id)?;
        let structured = state.rand_mut().coinflip(0.5);
        let edited = if structured && target.is_json() {
            mutate_json(input.mutator_bytes(), state.rand_mut())
        } else if structured && target.is_archive() {
            mutate_member(input.mutator_bytes(), &mut state, &mut havoc)?
        } else {
            None
        };
        match edited {
            Some(bytes) if bytes.len() <= MAX_INPUT => input = BytesInput::new(bytes),
            _ => {
                if havoc.mutate(&mut state, &mut input)? == MutationResult::Skipped {
                    continue;
                }
            }
        }
        let bytes: Vec<u8> = input.mutator_bytes().to_vec();
        let b = execute(&run, &bytes, journal, findings, &mut panics, progress);
        if behaviours.insert(b) && state.corpus().count() < MAX_CORPUS {
            state.corpus_mut().add(Testcase::new(input))?;
        }
    }
    Ok(ChildRun {
        executions: progress.load(Ordering::Relaxed),
        behaviours: behaviours.len(),
        panics: panics.len(),
    })
}

/// One execution: journal, run, and a panic saved as a finding (one per panic location).
fn execute(
    run: &dyn Fn(&[u8]) -> u64,
    bytes: &[u8],
    journal: &Path,
    findings: &Path,
    panics: &mut std::collections::HashSet<String>,
    progress: &AtomicU64,
) -> u64 {
    write_journal(journal, bytes);
    progress.fetch_add(1, Ordering::Relaxed);
    match catch_unwind(AssertUnwindSafe(|| run(bytes))) {
        Ok(b) => b,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic without a message".to_owned());
            let location = LAST_PANIC.with(|l| l.borrow().clone()).unwrap_or_default();
            if panics.insert(location.clone()) {
                super::save_finding(
                    findings,
                    "panic",
                    bytes,
                    &format!("{message}\nat {location}"),
                );
            }
            u64::MAX
        }
    }
}

thread_local! {
    /// Where the last panic of this thread happened (set by the hook `quiet_panics` installs).
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Panics are expected findings here: their location is kept for the finding instead of
/// printed.
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        LAST_PANIC.with(|l| *l.borrow_mut() = Some(at));
    }));
}

fn write_journal(journal: &Path, bytes: &[u8]) {
    // Not renamed or synced: only a crash of this process, not of the machine, must find it.
    if let Err(e) = std::fs::write(journal, bytes) {
        tracing::warn!(journal = %journal.display(), "cannot write the journal: {e}");
    }
}

/// Watches a child's progress: writes its execution count to `counts` every second (so a
/// child that dies leaves it), and where the same execution runs longer than `hang`, saves
/// the journal as a hang and ends the process.
pub fn watchdog(
    progress: Arc<AtomicU64>,
    hang: Duration,
    journal: PathBuf,
    findings: PathBuf,
    counts: PathBuf,
) {
    std::thread::spawn(move || {
        let mut last = (u64::MAX, Instant::now());
        let mut written = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = progress.load(Ordering::Relaxed);
            if written.elapsed() >= Duration::from_secs(1) {
                let _ = std::fs::write(&counts, json!({"executions": now}).to_string());
                written = Instant::now();
            }
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed() > hang {
                let _ = std::fs::write(&counts, json!({"executions": now}).to_string());
                let bytes = std::fs::read(&journal).unwrap_or_default();
                super::save_finding(
                    &findings,
                    "hang",
                    &bytes,
                    &format!("one execution ran past {} s", hang.as_secs_f64()),
                );
                std::process::exit(super::HANG_EXIT);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic is caught, saved once per location with its input and message, and the loop
    /// goes on; the journal holds the last input.
    #[test]
    fn a_panic_is_saved_with_its_input_and_the_loop_goes_on() {
        quiet_panics();
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join(".journal");
        let findings = dir.path().join("findings");
        let progress = AtomicU64::new(0);
        let mut panics = std::collections::HashSet::new();
        let reader = |b: &[u8]| -> u64 {
            assert!(!b.starts_with(b"boom"), "the reader broke");
            b.len() as u64
        };
        let mut run = |b: &[u8]| execute(&reader, b, &journal, &findings, &mut panics, &progress);
        assert_eq!(run(b"fine"), 4);
        assert_eq!(run(b"boom!"), u64::MAX);
        assert_eq!(run(b"boom?"), u64::MAX);
        assert_eq!(run(b"ok"), 2);
        assert_eq!(progress.load(Ordering::Relaxed), 4);
        assert_eq!(std::fs::read(&journal).unwrap(), b"ok");
        let saved: Vec<_> = std::fs::read_dir(&findings)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        // One panic location: one input and its description.
        assert_eq!(saved.len(), 2, "{saved:?}");
        let txt = saved
            .iter()
            .find(|p| p.extension().unwrap() == "txt")
            .unwrap();
        let text = std::fs::read_to_string(txt).unwrap();
        assert!(
            text.contains("the reader broke") && text.contains("engine.rs:"),
            "{text}"
        );
        let bin = saved
            .iter()
            .find(|p| p.extension().unwrap() == "bin")
            .unwrap();
        assert_eq!(std::fs::read(bin).unwrap(), b"boom!");
    }

    /// Each target reads its seeds, and a fixed run of mutations makes the same behaviours
    /// each time (the loop is deterministic).
    #[test]
    fn a_fixed_run_is_reproducible() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = vec![br#"{"a": [1, 2, {"b": null}]}"#.to_vec()];
        let go = |sub: &str| {
            let d = dir.path().join(sub);
            let progress = Arc::new(AtomicU64::new(0));
            run_child(
                Target::Suppressions,
                5,
                Stop {
                    runs: Some(200),
                    deadline: None,
                },
                seeds.clone(),
                &d,
                &progress,
            )
            .unwrap()
        };
        let (a, b) = (go("a"), go("b"));
        assert_eq!(a.executions, 200);
        assert_eq!((a.behaviours, a.panics), (b.behaviours, b.panics));
        assert!(a.behaviours > 1);
    }
}
