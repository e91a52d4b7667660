//! The live check of the reference against the installed TensorFlow: for every class the
//! generators use, random valid cases — one-layer models, small models of that class, and
//! small models mixing it with `Embedding` (whose masks then flow into it) — run in
//! TensorFlow in float64 and float32 and must agree with the reference layer by layer.
//!
//! A disagreement is accepted only when the verdict names what explains it (`known`): a
//! confirmed framework bug kept in `crashes/<folder>/` with its minimal repro and report,
//! or a known limitation of TF listed in `harness-py/src/known.rs` (a kernel missing for a
//! dtype). Anything else fails the suite.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn semfuzz(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(args)
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("SEMFUZZ_WORKER_PLANT")
        .output()
        .unwrap()
}

/// The layer classes `semfuzz layers` lists (operation nodes aside).
fn layer_classes() -> Vec<String> {
    let o = semfuzz(&["layers"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.contains("(operation node)") && !l.ends_with(" classes"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Generates the live cases of `class` in `dtype` under `dir`; false when the generators do
/// not use the class in this dtype.
fn generate(class: &str, dtype: &str, dir: &Path) -> bool {
    let flavours: [(&str, &str, &str, String); 3] = [
        ("1", "2", "1", class.to_owned()),
        ("3", "1", "2", class.to_owned()),
        ("mixed", "1", "3", format!("Embedding,{class}")),
    ];
    for (name, count, seed, classes) in flavours {
        let out = dir.join(format!("{class}-{name}"));
        let o = semfuzz(&[
            "gen",
            "-q",
            "--count",
            count,
            "--layers",
            if name == "1" { "1" } else { "3" },
            "--seed",
            seed,
            "--dtype",
            dtype,
            "--classes",
            &classes,
            "--out",
            out.to_str().unwrap(),
        ]);
        if o.status.code() == Some(2)
            && String::from_utf8_lossy(&o.stderr).contains("not a class generated")
        {
            return false;
        }
        assert!(
            o.status.success(),
            "gen {class} in {dtype}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    true
}

/// Generates every class's live cases in `dtype` under `root`: the classes generated, and
/// the case files.
fn generate_all(classes: &[String], dtype: &str, root: &Path) -> (BTreeSet<String>, Vec<String>) {
    let covered: BTreeSet<String> = classes
        .iter()
        .filter(|class| generate(class, dtype, root))
        .cloned()
        .collect();
    let mut cases: Vec<String> = Vec::new();
    for sub in std::fs::read_dir(root).unwrap() {
        for f in std::fs::read_dir(sub.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.to_string_lossy().ends_with(".case.json") {
                cases.push(p.to_string_lossy().into_owned());
            }
        }
    }
    cases.sort();
    (covered, cases)
}

/// Every generated case of `dtype` agrees with TensorFlow, or its disagreement is known.
fn every_class_agrees_in(dtype: &str) {
    let classes = layer_classes();
    assert!(classes.len() >= 60, "only {} classes listed", classes.len());
    let dir = tempfile::tempdir().unwrap();
    let (_, cases) = generate_all(&classes, dtype, dir.path());
    let mut args = vec!["run", "--json", "--modes", "eager"];
    args.extend(cases.iter().map(String::as_str));
    let o = semfuzz(&args);
    let reports: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        reports.len(),
        cases.len(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut failures = Vec::new();
    for r in &reports {
        for v in r["verdicts"].as_array().unwrap() {
            if v["kind"] != "agree" && v["known"].is_null() {
                failures.push(format!("{dtype} {}: {v}", r["case"]));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreement(s) nothing known explains:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// The two dtypes are two tests, so that their workers run side by side.
#[test]
fn every_class_agrees_with_tensorflow_in_float64() {
    every_class_agrees_in("float64");
}

#[test]
fn every_class_agrees_with_tensorflow_in_float32() {
    every_class_agrees_in("float32");
}

/// Every class `semfuzz layers` lists is exercised by the live cases of some dtype.
#[test]
fn every_listed_class_has_live_cases() {
    let classes = layer_classes();
    let dir = tempfile::tempdir().unwrap();
    let mut covered = BTreeSet::new();
    for dtype in ["float64", "float32"] {
        covered.extend(generate_all(&classes, dtype, &dir.path().join(dtype)).0);
    }
    let never: Vec<&String> = classes.iter().filter(|c| !covered.contains(*c)).collect();
    assert!(
        never.is_empty(),
        "classes no generated case exercises: {never:?}"
    );
}
