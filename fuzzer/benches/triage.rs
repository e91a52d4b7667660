//! Benchmark of `semfuzz triage --minimize` on a night's worth of findings. Not a test: run
//! with `make bench` (or `cargo bench -p fuzzer --bench triage`). Results are appended, as
//! they come, to `target/bench-results/triage.txt`.
//!
//! The folder holds 100 random ~10-layer models (fixed seed), each containing at least one
//! layer of a class with a planted fault (`tests/data/plant_many.py`: those classes add
//! 0.25 to their output), so it holds several distinct bugs found many times over, plus
//! whatever stock TensorFlow gets wrong on them. Reported: total wall time and time per
//! finding, the replay and minimisation phases, the groups, and the median minimised
//! finding's layers and elements per input (the target: at most 3 layers and 16 elements).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use generators::{GenOptions, generate};
use oracle::case::WriteOptions;
use oracle::check::CheckedShapes;

const FINDINGS: usize = 100;
const SEED: u64 = 2026;
const LAYERS: usize = 10;
/// The classes with a planted fault: common ones, with floating-point outputs.
const PLANTED: [&str; 8] = [
    "Activation",
    "BatchNormalization",
    "Dense",
    "ELU",
    "LayerNormalization",
    "LeakyReLU",
    "ReLU",
    "Softmax",
];

/// Writes the folder of findings; how many models were generated to find them.
fn write_findings(dir: &Path) -> usize {
    std::fs::create_dir_all(dir).expect("findings dir");
    let opts = GenOptions {
        layers: LAYERS,
        ..GenOptions::default()
    };
    let mut rng = generators::rng(SEED);
    let mut written = 0;
    let mut generated = 0;
    while written < FINDINGS {
        let g = generate(&opts, &mut rng);
        generated += 1;
        let planted = g
            .case
            .model
            .layers
            .iter()
            .any(|l| PLANTED.contains(&l.class_name.as_str()));
        if !g.repair.valid || !planted {
            continue;
        }
        let path = dir.join(format!("finding-{written:03}.case.json"));
        g.case
            .write(&path, &CheckedShapes::of(&g.case), WriteOptions::default())
            .expect("case written");
        written += 1;
    }
    generated
}

/// The figures of every minimised case under `dir`: (layers before, layers, elements).
fn minimized(dir: &Path) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("findings dir").flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("outcome.json")) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&text).expect("outcome.json");
        let n = |k: &str| v[k].as_u64().unwrap_or(0) as usize;
        out.push((n("layers_before"), n("layers"), n("elements_per_input")));
    }
    out
}

fn median(mut v: Vec<usize>) -> usize {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// A result line of `semfuzz triage`: `PATH: SIGNATURE: STATUS` for a replayed finding.
fn replayed(line: &str) -> Option<(&str, &str)> {
    let (_, rest) = line.split_once(".case.json: ")?;
    rest.split_once(": ")
}

fn main() {
    let results = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&results).expect("results dir");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(results.join("triage.txt"))
        .expect("results file");
    let mut say = |line: String| {
        println!("{line}");
        writeln!(f, "{line}").expect("write");
    };
    let work = tempfile::tempdir().expect("temp dir");
    let dir = work.path().join("findings");
    say(format!(
        "# triage bench: {FINDINGS} findings ({LAYERS}-layer models, seed {SEED}, planted faults in {}), --minimize, default time bound",
        PLANTED.join(", ")
    ));
    let generated = write_findings(&dir);
    say(format!(
        "{FINDINGS} findings written ({generated} models generated)"
    ));

    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(["triage", "--minimize"])
        .arg(&dir)
        .env(
            "SEMFUZZ_WORKER_PLANT",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plant_many.py"),
        )
        .env("SEMFUZZ_PLANT_CLASSES", PLANTED.join(","))
        .env_remove("SEMFUZZ_PYTHON")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("semfuzz runs");
    let mut statuses: Vec<(String, String)> = Vec::new();
    let mut replay_seconds = None;
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line.expect("semfuzz output");
        let t = started.elapsed().as_secs_f64();
        if let Some((signature, status)) = replayed(&line) {
            statuses.push((signature.to_owned(), status.to_owned()));
            if statuses.len().is_multiple_of(10) {
                say(format!("{t:.0} s: replayed {}/{FINDINGS}", statuses.len()));
            }
        } else if line.starts_with("minimized ") {
            replay_seconds.get_or_insert(t);
            say(format!("{t:.0} s: {line}"));
        }
    }
    let status = child.wait().expect("semfuzz ends");
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "triage failed: {status}"
    );
    let replay_seconds = replay_seconds.unwrap_or(seconds);

    let mut groups: Vec<&str> = statuses.iter().map(|(s, _)| s.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut reproducing: Vec<&str> = statuses
        .iter()
        .filter(|(_, st)| st == "reproduces")
        .map(|(s, _)| s.as_str())
        .collect();
    reproducing.sort_unstable();
    reproducing.dedup();
    let figures = minimized(&dir);
    let small = figures.iter().filter(|m| m.1 <= 3 && m.2 <= 16).count();
    say(format!(
        "total {seconds:.0} s for {} findings = {:.2} s per finding (replay {replay_seconds:.0} s, minimisation {:.0} s)",
        statuses.len(),
        seconds / statuses.len().max(1) as f64,
        seconds - replay_seconds
    ));
    say(format!(
        "{} groups ({} reproducing; findings reproducing: {}); {} minimised: median {} -> {} layers, {} elements per input; {small} of {} within 3 layers and 16 elements",
        groups.len(),
        reproducing.len(),
        statuses.iter().filter(|(_, st)| st == "reproduces").count(),
        figures.len(),
        median(figures.iter().map(|m| m.0).collect()),
        median(figures.iter().map(|m| m.1).collect()),
        median(figures.iter().map(|m| m.2).collect()),
        figures.len()
    ));
}
