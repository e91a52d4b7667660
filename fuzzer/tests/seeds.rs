//! The seed corpus in `seeds/` (written by `scripts/make_seeds.py`): every seed is a valid
//! model per the reference oracle — not invalid, not unsupported — and the corpus keeps the
//! structures of real architectures it was made to carry.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// How many seeds `scripts/make_seeds.py` writes; the corpus only grows.
const SEEDS: usize = 24;

fn seeds() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    paths.sort();
    paths
}

fn check(path: &PathBuf) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .arg("check")
        .arg("--json")
        .arg(path)
        .env_remove("RUST_LOG")
        .output()
        .expect("semfuzz runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {stdout}\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{}: {e}: {stdout}", path.display()))
}

/// The class names of the layers (and operation nodes) in a case's model.
fn classes(path: &PathBuf) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let case: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(case["format"], "semfuzz-case/1", "{}", path.display());
    case["model"]["layers"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no model layers", path.display()))
        .iter()
        .map(|layer| layer["class_name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_seed_is_valid_per_the_reference() {
    let paths = seeds();
    assert!(
        paths.len() >= SEEDS,
        "{} seeds, want at least {SEEDS}",
        paths.len()
    );
    for path in &paths {
        let report = check(path);
        assert_eq!(report["status"], "valid", "{}: {report}", path.display());
        assert_eq!(
            report["violations"].as_array().map(Vec::len),
            Some(0),
            "{}: {report}",
            path.display()
        );
    }
}

#[test]
fn seeds_carry_the_structures_of_real_architectures() {
    let paths = seeds();
    for wanted in [
        "Add",
        "Concatenate",
        "DepthwiseConv2D",
        "BatchNormalization",
    ] {
        let holders: Vec<_> = paths
            .iter()
            .filter(|p| classes(p).contains(wanted))
            .collect();
        assert!(!holders.is_empty(), "no seed has a {wanted} layer");
    }
    let apps = paths
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("app-"))
        .count();
    let hands = paths
        .iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hand-")
        })
        .count();
    assert_eq!(apps + hands, paths.len(), "seeds are named app-* or hand-*");
    assert!(
        apps >= 15 && hands >= 9,
        "{apps} app seeds, {hands} hand-made"
    );
}
