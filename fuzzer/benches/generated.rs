//! Generated models in TensorFlow: `semfuzz gen` then `semfuzz run` (eager, float64) on a
//! sample, counting how many run without any exception and every non-agreeing verdict by
//! signature, with the kept framework bug or known limitation that explains it. Writes
//! `target/bench-results/generated-tf.txt`; the cases of unexplained verdicts are copied to
//! `target/bench-results/generated-unexplained/` to be examined.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

fn main() {
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&out_dir).expect("results dir");
    let n: usize = std::env::var("SEMFUZZ_BENCH_MODELS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = dir.path().join("cases");
    let bin = env!("CARGO_BIN_EXE_semfuzz");
    let status = Command::new(bin)
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
    let started = Instant::now();
    let out = Command::new(bin)
        .arg("run")
        .arg("--json")
        .args(&paths)
        .output()
        .expect("semfuzz run");
    let seconds = started.elapsed().as_secs_f64();
    let unexplained_dir = out_dir.join("generated-unexplained");
    let _ = std::fs::remove_dir_all(&unexplained_dir);
    let mut ran_clean = 0;
    let mut ran_clean_but_kept = 0;
    let mut agree = 0;
    let mut unexplained = 0;
    let mut by_signature: BTreeMap<String, usize> = BTreeMap::new();
    let reports: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for r in &reports {
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
    let mut f = std::fs::File::create(out_dir.join("generated-tf.txt")).expect("results file");
    let mut lines = vec![
        format!(
            "# generated models in TF (seed 2026, eager, float64): {} models",
            reports.len()
        ),
        format!(
            "ran without any exception: {ran_clean} ({:.2}%)",
            100.0 * ran_clean as f64 / reports.len().max(1) as f64
        ),
        format!(
            "ran without any exception a kept framework bug does not explain: {ran_clean_but_kept} ({:.2}%)",
            100.0 * ran_clean_but_kept as f64 / reports.len().max(1) as f64
        ),
        format!(
            "agree with the reference everywhere: {agree} ({:.2}%)",
            100.0 * agree as f64 / reports.len().max(1) as f64
        ),
        format!(
            "TF run rate: {:.1} cases/s (one worker, with model rebuilds)",
            reports.len() as f64 / seconds
        ),
        format!("unexplained verdicts: {unexplained}"),
        "non-agreeing verdicts by signature:".to_owned(),
    ];
    lines.extend(by_signature.iter().map(|(s, c)| format!("  {c:5}  {s}")));
    for l in &lines {
        writeln!(f, "{l}").expect("write");
        println!("{l}");
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
fn keep_unexplained(dir: &std::path::Path, report: &Value) {
    let Some(case) = report["case"].as_str().map(PathBuf::from) else {
        return;
    };
    std::fs::create_dir_all(dir).expect("unexplained dir");
    if let Some(name) = case.file_name() {
        let _ = std::fs::copy(&case, dir.join(name));
    }
}
