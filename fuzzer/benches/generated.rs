//! Generated models in TensorFlow: `semfuzz gen` then `semfuzz run` (eager, float64) on a
//! sample, counting how many run without any exception and every non-agreeing verdict by
//! signature, with the kept framework bug or known limitation that explains it. Writes
//! `target/bench-results/generated-tf.txt`; the cases of unexplained verdicts are copied to
//! `target/bench-results/generated-unexplained/` to be examined.
//!
//! `SEMFUZZ_BENCH_MODELS` (default 1000) sets the sample, `SEMFUZZ_BENCH_JOBS` (default 1)
//! the number of `semfuzz run` processes sharing it, `SEMFUZZ_BENCH_BIN` a copy of the
//! binary to use instead of the one built with the bench. The summary is rewritten every
//! minute while the cases run, marked partial until they are all done.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

fn main() {
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&out_dir).expect("results dir");
    let n: usize = env_number("SEMFUZZ_BENCH_MODELS").unwrap_or(1000);
    let jobs: usize = env_number("SEMFUZZ_BENCH_JOBS").unwrap_or(1).max(1);
    // A copy of the binary can be named, so that a long run survives rebuilds of the tree.
    let bin = std::env::var_os("SEMFUZZ_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_semfuzz")));
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = dir.path().join("cases");
    let status = Command::new(&bin)
        .args(["gen", "--count", &n.to_string(), "--seed", "2026", "--out"])
        .arg(&cases)
        .status()
        .expect("semfuzz gen");
    assert!(status.success());
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&cases)
        .expect("cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    paths.sort();
    // Each job runs every `jobs`-th case and streams its reports to its own file, read back
    // every minute into a partial summary: a run cut short still leaves its figures.
    let started = Instant::now();
    let mut parts = Vec::new();
    let mut children = Vec::new();
    for job in 0..jobs {
        let part = out_dir.join(format!("generated-tf.part{job}.jsonl"));
        let file = std::fs::File::create(&part).expect("part file");
        let mine: Vec<&PathBuf> = paths.iter().skip(job).step_by(jobs).collect();
        children.push(
            Command::new(&bin)
                .arg("run")
                .arg("--json")
                .args(mine)
                .stdout(file)
                .spawn()
                .expect("semfuzz run"),
        );
        parts.push(part);
    }
    loop {
        let done = children
            .iter_mut()
            .all(|c| c.try_wait().expect("wait").is_some());
        let reports = read_reports(&parts);
        let seconds = started.elapsed().as_secs_f64();
        summarise(&out_dir, &reports, paths.len(), jobs, seconds, done);
        if done {
            break;
        }
        std::thread::sleep(Duration::from_secs(60));
    }
}

fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The complete report lines written so far to the part files.
fn read_reports(parts: &[PathBuf]) -> Vec<Value> {
    parts
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect::<Vec<Value>>()
        })
        .collect()
}

/// Writes `generated-tf.txt` from the reports so far (and prints it when `done`).
fn summarise(
    out_dir: &Path,
    reports: &[Value],
    total: usize,
    jobs: usize,
    seconds: f64,
    done: bool,
) {
    let unexplained_dir = out_dir.join("generated-unexplained");
    let _ = std::fs::remove_dir_all(&unexplained_dir);
    let mut ran_clean = 0;
    let mut ran_clean_but_kept = 0;
    let mut agree = 0;
    let mut unexplained = 0;
    let mut by_signature: BTreeMap<String, usize> = BTreeMap::new();
    for r in reports {
        let verdicts = r["verdicts"].as_array().cloned().unwrap_or_default();
        let raised = verdicts.iter().any(raises);
        let raised_unexplained = verdicts.iter().any(|v| raises(v) && v["known"].is_null());
        ran_clean += (!raised) as usize;
        ran_clean_but_kept += (!raised_unexplained) as usize;
        let mut all = true;
        for v in &verdicts {
            if v["kind"] != "agree" {
                all = false;
                let why = match v["known"].as_str() {
                    Some(k) => format!("known: {k}"),
                    None => {
                        unexplained += 1;
                        keep_unexplained(&unexplained_dir, r);
                        "UNEXPLAINED".to_owned()
                    }
                };
                *by_signature
                    .entry(format!(
                        "{}  ({why})",
                        v["signature"].as_str().unwrap_or("?")
                    ))
                    .or_default() += 1;
            }
        }
        agree += all as usize;
    }
    let share = |k: usize| 100.0 * k as f64 / reports.len().max(1) as f64;
    let state = if done {
        String::new()
    } else {
        format!(" (partial: {} of {total} run so far)", reports.len())
    };
    let mut lines = vec![
        format!(
            "# generated models in TF (seed 2026, eager, float64): {} models{state}",
            reports.len()
        ),
        format!(
            "ran without any exception: {ran_clean} ({:.2}%)",
            share(ran_clean)
        ),
        format!(
            "ran without any exception a kept framework bug does not explain: {ran_clean_but_kept} ({:.2}%)",
            share(ran_clean_but_kept)
        ),
        format!(
            "agree with the reference everywhere: {agree} ({:.2}%)",
            share(agree)
        ),
        format!(
            "TF run rate: {:.2} cases/s ({jobs} worker(s), with model rebuilds; {seconds:.0} s)",
            reports.len() as f64 / seconds
        ),
        format!("unexplained verdicts: {unexplained}"),
        "non-agreeing verdicts by signature:".to_owned(),
    ];
    lines.extend(by_signature.iter().map(|(s, c)| format!("  {c:5}  {s}")));
    let mut f = std::fs::File::create(out_dir.join("generated-tf.txt")).expect("results file");
    for l in &lines {
        writeln!(f, "{l}").expect("write");
        if done {
            println!("{l}");
        }
    }
}

/// Whether a verdict says TF raised (or died) where the reference computes a result.
fn raises(v: &Value) -> bool {
    matches!(
        v["kind"].as_str(),
        Some("unexpected-rejection" | "crash" | "timeout" | "oom")
    )
}

/// Copies the case of a report with an unexplained verdict into `dir`.
fn keep_unexplained(dir: &Path, report: &Value) {
    let Some(case) = report["case"].as_str().map(PathBuf::from) else {
        return;
    };
    std::fs::create_dir_all(dir).expect("unexplained dir");
    if let Some(name) = case.file_name() {
        let _ = std::fs::copy(&case, dir.join(name));
    }
}
