//! Another Keras release beside the pinned one, installed by the project's own set-up
//! (`make setup KERAS=3.3.3`, which `make test` runs): cases written for the pinned release
//! are adapted to it and run there, and what it cannot express is unsupported, not a finding.

mod common;

use std::path::PathBuf;

use serde_json::Value;

use common::semfuzz;

/// The older release's interpreter (`make setup KERAS=3.3.3` links it).
fn older() -> String {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv-keras-3.3.3-tf-2.16.2/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make setup KERAS=3.3.3`",
        python.display()
    );
    python.to_string_lossy().into_owned()
}

fn seeds() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".case.json"))
        .collect();
    files.sort();
    files
}

fn reports(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_seeds_run_and_agree_on_an_older_release() {
    let python = older();
    let version = semfuzz(&["version", "--python", &python]);
    let said = String::from_utf8_lossy(&version.stdout);
    assert!(
        said.contains("\nkeras 3.3.3\n") && said.contains("\ntensorflow 2.16.2\n"),
        "{said}"
    );

    let seeds = seeds();
    let mut args = vec!["run", "--json", "--modes", "eager", "--python", &python];
    args.extend(seeds.iter().map(String::as_str));
    let out = semfuzz(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports = reports(&out.stdout);
    assert_eq!(reports.len(), seeds.len());
    for r in &reports {
        assert!(r["unsupported_on_target"].is_null(), "{r}");
        let verdicts = r["verdicts"].as_array().unwrap();
        assert!(!verdicts.is_empty(), "{r}");
        for v in verdicts {
            assert_eq!(v["kind"], "agree", "{}: {v}", r["case"]);
        }
    }
}

#[test]
fn what_the_older_release_cannot_express_is_unsupported() {
    let python = older();
    let dir = tempfile::tempdir().unwrap();
    let seed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds/hand-mlp.case.json");
    let mut case: Value = serde_json::from_str(&std::fs::read_to_string(seed).unwrap()).unwrap();
    let dense = case["model"]["layers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|l| l["class_name"] == "Dense")
        .unwrap();
    // `hard_tanh` came after Keras 3.3.
    dense["config"]["activation"] = "hard_tanh".into();
    let path = dir.path().join("hard-tanh.case.json");
    std::fs::write(&path, case.to_string()).unwrap();
    let path = path.to_string_lossy().into_owned();

    let out = semfuzz(&["run", "--json", "--python", &python, &path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = &reports(&out.stdout)[0];
    let why = r["unsupported_on_target"].as_str().unwrap_or_default();
    assert!(why.contains("hard_tanh"), "{r}");
    assert!(r["verdicts"].is_null(), "{r}");

    // The pinned release runs it.
    let out = semfuzz(&["run", "--json", &path]);
    let r = &reports(&out.stdout)[0];
    assert!(r["unsupported_on_target"].is_null(), "{r}");
    assert_eq!(r["verdicts"][0]["kind"], "agree", "{r}");
}

#[test]
fn a_campaign_on_an_older_release_records_it() {
    let python = older();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = semfuzz(&[
        "fuzz",
        "--no-status",
        "--modes",
        "eager",
        "--runs",
        "40",
        "--seed",
        "3",
        "--python",
        &python,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let campaign: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(campaign["runs"][0]["target"]["keras"], "3.3.3");
    // What the unpinned environment installed travels with the campaign.
    let installed = campaign["runs"][0]["installed"].as_array().unwrap();
    assert!(
        installed.iter().any(|l| l == "keras==3.3.3"),
        "{installed:?}"
    );
    let stats = std::fs::read_to_string(out.join("fuzzer_stats")).unwrap();
    assert!(stats.contains("unsupported_execs"), "{stats}");
}
