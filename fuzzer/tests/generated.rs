//! Generated models in real TensorFlow: `semfuzz gen` writes valid cases that re-read valid
//! per the oracle, and running them agrees with the reference, except where TensorFlow/Keras
//! itself is wrong in a way kept in `crashes/` (the verdict names that folder).

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

/// The folder of `crashes/` that explains a disagreement: `semfuzz run` names it (`known`)
/// when a confirmed framework bug kept there explains the verdict.
fn framework_problem(verdict: &Value) -> Option<String> {
    let known = verdict["known"].as_str()?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crashes")
        .join(known);
    dir.join("report.md").exists().then(|| known.to_owned())
}

#[test]
fn generated_models_are_valid_and_agree_with_tensorflow() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let o = semfuzz(&[
        "gen",
        "--count",
        "40",
        "--seed",
        "11",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut cases: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 40);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["written"], 40);

    // Re-read from disk: every case is valid per the oracle, with arrays for every input.
    for p in &cases {
        let case = oracle::Case::read(p).unwrap();
        assert!(oracle::check(&case).is_ok(), "{}", p.display());
        assert_eq!(
            case.inputs.len(),
            case.model.input_count(),
            "{}",
            p.display()
        );
    }

    let mut args = vec!["run", "--json"];
    args.extend(cases.iter().map(|p| p.to_str().unwrap()));
    let o = semfuzz(&args);
    let reports: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 40, "{}", String::from_utf8_lossy(&o.stderr));
    let mut agree = 0;
    for r in &reports {
        let path = Path::new(r["case"].as_str().unwrap());
        let mut all_agree = true;
        for v in r["verdicts"].as_array().unwrap() {
            if v["kind"] == "agree" {
                continue;
            }
            all_agree = false;
            assert!(
                framework_problem(v).is_some(),
                "{}: a disagreement no recorded framework problem explains: {v}",
                path.display()
            );
        }
        agree += all_agree as usize;
    }
    // With this seed, most agree outright. The others hold layers with kept bugs (a float64
    // Rescaling or Normalization with float32 constants, float64 gelu, ReLU's float64
    // max_value; the generator steers clear of the RMSNormalization axes); every layer after
    // them is still judged, and agrees. The floor leaves room for other seeds' draws of bug-prone classes.
    assert!(agree >= 18, "only {agree} of 40 generated models agree");
}
