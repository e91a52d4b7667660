//! `semfuzz fuzz-self`: every reader runs a fixed number of mutated inputs from its seeds
//! without a panic, a crash, a hang or memory past the limit, and the inputs of the bugs it
//! found once (kept in `tests/data/fuzz-self/<target>/`) stay fixed.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const TARGETS: [&str; 7] = [
    "case",
    "keras-json",
    "keras-archive",
    "npz",
    "findings",
    "suppressions",
    "frames",
];

fn fuzz_self(args: &[&str], out: &Path) -> (std::process::Output, Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .arg("fuzz-self")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let summary = std::fs::read(out.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (output, summary)
}

#[test]
fn every_reader_survives_a_fixed_run() {
    let dir = tempfile::tempdir().unwrap();
    let (output, summary) = fuzz_self(&["--runs", "1500", "--seed", "11"], dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let targets = summary["targets"].as_array().unwrap();
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert_eq!(names, TARGETS);
    for t in targets {
        assert!(t["executions"].as_u64().unwrap() >= 1500, "{t}");
        assert_eq!(t["restarts"], 0, "{t}");
        assert_eq!(t["findings"].as_array().unwrap().len(), 0, "{t}");
        // The mutations reach more than one way of handling the input.
        assert!(t["behaviours"].as_u64().unwrap() > 1, "{t}");
    }
}

#[test]
fn the_inputs_of_bugs_found_before_stay_fixed() {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-self");
    let mut checked = 0;
    for target in TARGETS {
        let inputs = kept.join(target);
        if !inputs.is_dir() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let (output, summary) = fuzz_self(
            &["--target", target, "--inputs", inputs.to_str().unwrap()],
            dir.path(),
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{target}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let files = std::fs::read_dir(&inputs).unwrap().count() as u64;
        assert_eq!(summary["targets"][0]["executions"].as_u64(), Some(files));
        checked += files;
    }
    assert!(checked > 0);
}
