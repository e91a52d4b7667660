//! Generated models on several Keras releases: `semfuzz gen` once, then `semfuzz run`
//! (eager) of the same models in each environment, adapted to its release. Per release: how
//! many the release cannot express (unsupported, by reason), and of the others the share
//! that builds (no refusal while the model is built or its weights set), agrees, is
//! explained by a kept entry, or shows a finding. Writes `target/bench-results/targets.json`
//! and `targets.md`, rewritten after each release. Then the same count generated for each
//! release (`gen --python`: its classes and arguments only, steered away from its kept
//! refusals), run there the same way.
//!
//! `SEMFUZZ_BENCH_PYTHONS`: the interpreters, comma-separated (default: the project's `.venv`
//! and every `.venv-keras-*` environment `make setup KERAS=...` linked in the project).
//! `SEMFUZZ_BENCH_MODELS` (default 200) sets the sample.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out_dir = root.join("target/bench-results");
    std::fs::create_dir_all(&out_dir).expect("results dir");
    let n: usize = std::env::var("SEMFUZZ_BENCH_MODELS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let pythons = environments(&root);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_semfuzz"));
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = dir.path().join("cases");
    let paths = generate(&bin, n, &cases, None);
    let mut rows = Vec::new();
    for python in &pythons {
        let version = Command::new(&bin)
            .args(["version", "--python"])
            .arg(python)
            .output()
            .expect("semfuzz version");
        let said = String::from_utf8_lossy(&version.stdout).into_owned();
        let pick = |what: &str| {
            said.lines()
                .find_map(|l| l.strip_prefix(what))
                .unwrap_or("?")
                .trim()
                .to_owned()
        };
        let (keras, tf) = (pick("keras "), pick("tensorflow "));
        eprintln!("targets: Keras {keras} / TF {tf} ({} models)", paths.len());
        let mut row = tally(&keras, &tf, python, &run_eager(&bin, python, &paths));
        // The same count generated for the release (`gen --python`): its classes and
        // arguments only, steered away from its kept refusals.
        let own = dir.path().join(format!("cases-{keras}"));
        let own_paths = generate(&bin, n, &own, Some(python));
        row["generated_for_it"] = tally(&keras, &tf, python, &run_eager(&bin, python, &own_paths));
        rows.push(row);
        write(&out_dir, n, &rows);
    }
}

/// `semfuzz gen` of `n` models into `out` (for the release of `python`, if given): their paths.
fn generate(bin: &Path, n: usize, out: &Path, python: Option<&Path>) -> Vec<PathBuf> {
    let mut generate = Command::new(bin);
    generate
        .args(["gen", "--count", &n.to_string(), "--seed", "2026", "--out"])
        .arg(out);
    if let Some(p) = python {
        generate.arg("--python").arg(p);
    }
    assert!(generate.status().expect("semfuzz gen").success());
    let mut paths: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    paths.sort();
    paths
}

/// `semfuzz run --json --modes eager` of the cases in `python`'s environment: its reports.
fn run_eager(bin: &Path, python: &Path, paths: &[PathBuf]) -> Vec<Value> {
    let out = Command::new(bin)
        .args(["run", "--json", "--modes", "eager", "--python"])
        .arg(python)
        .args(paths)
        .output()
        .expect("semfuzz run");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The project's `.venv`, and every `.venv-keras-*` link beside it, or the list given.
fn environments(root: &Path) -> Vec<PathBuf> {
    if let Ok(list) = std::env::var("SEMFUZZ_BENCH_PYTHONS") {
        return list.split(',').map(PathBuf::from).collect();
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("project")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".venv-keras-"))
        })
        .map(|p| p.join("bin/python"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.insert(0, root.join(".venv/bin/python"));
    found
}

/// Whether TensorFlow refused the model while building it or setting its weights.
fn refused_at_build(report: &Value) -> bool {
    report["tensorflow"].as_object().is_some_and(|modes| {
        modes
            .values()
            .any(|m| matches!(m["error"]["phase"].as_str(), Some("build" | "set_weights")))
    })
}

fn tally(keras: &str, tf: &str, python: &Path, reports: &[Value]) -> Value {
    let mut unsupported: BTreeMap<String, usize> = BTreeMap::new();
    let (mut ran, mut built, mut agree, mut known, mut findings) = (0, 0, 0, 0, 0);
    let mut signatures: BTreeMap<String, usize> = BTreeMap::new();
    for r in reports {
        if let Some(why) = r["unsupported_on_target"].as_str() {
            *unsupported.entry(why.to_owned()).or_default() += 1;
            continue;
        }
        ran += 1;
        built += usize::from(!refused_at_build(r));
        let verdicts = r["verdicts"].as_array().cloned().unwrap_or_default();
        if verdicts
            .iter()
            .any(|v| v["kind"] != "agree" && v["known"].is_null())
        {
            findings += 1;
            for v in verdicts
                .iter()
                .filter(|v| v["kind"] != "agree" && v["known"].is_null())
            {
                *signatures
                    .entry(v["signature"].as_str().unwrap_or("?").to_owned())
                    .or_default() += 1;
            }
        } else if verdicts.iter().any(|v| !v["known"].is_null()) {
            known += 1;
        } else {
            agree += 1;
        }
    }
    let share = |k: usize| {
        if ran == 0 {
            0.0
        } else {
            (1000.0 * k as f64 / ran as f64).round() / 10.0
        }
    };
    json!({
        "keras": keras, "tensorflow": tf, "python": python.display().to_string(),
        "models": reports.len(), "unsupported": unsupported.values().sum::<usize>(),
        "unsupported_by_reason": unsupported, "ran": ran,
        "built": built, "built_percent": share(built),
        "agree": agree, "known": known, "with_findings": findings,
        "findings_by_signature": signatures,
    })
}

fn write(out_dir: &Path, n: usize, rows: &[Value]) {
    let json = json!({"models": n, "seed": 2026, "releases": rows});
    std::fs::write(
        out_dir.join("targets.json"),
        serde_json::to_string_pretty(&json).expect("json"),
    )
    .expect("targets.json");
    let mut md = format!(
        "# Generated models on each release\n\n{n} models (`gen --seed 2026`), eager, adapted to each release.\n\n| Keras | TF | unsupported | ran | built | agree | known | with findings |\n|---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        md += &format!(
            "| {} | {} | {} | {} | {} ({}%) | {} | {} | {} |\n",
            r["keras"].as_str().unwrap_or("?"),
            r["tensorflow"].as_str().unwrap_or("?"),
            r["unsupported"],
            r["ran"],
            r["built"],
            r["built_percent"],
            r["agree"],
            r["known"],
            r["with_findings"],
        );
    }
    md += &format!(
        "\n{n} models generated for each release (`gen --seed 2026 --python`: its classes and arguments, steered away from its kept refusals), eager.\n\n| Keras | TF | ran | built | agree | known | with findings |\n|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        let g = &r["generated_for_it"];
        md += &format!(
            "| {} | {} | {} | {} ({}%) | {} | {} | {} |\n",
            r["keras"].as_str().unwrap_or("?"),
            r["tensorflow"].as_str().unwrap_or("?"),
            g["ran"],
            g["built"],
            g["built_percent"],
            g["agree"],
            g["known"],
            g["with_findings"],
        );
    }
    md += "\nFindings by signature, per release:\n\n";
    for r in rows {
        md += &format!(
            "- Keras {}: {}; generated for it: {}\n",
            r["keras"].as_str().unwrap_or("?"),
            r["findings_by_signature"],
            r["generated_for_it"]["findings_by_signature"]
        );
    }
    std::fs::write(out_dir.join("targets.md"), md).expect("targets.md");
}
