//! The regression corpus: every confirmed bug kept in `crashes/` still behaves as its record
//! says. When one stops reproducing (fixed upstream?), the failure names the folder so the
//! record can be updated.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn every_kept_finding_behaves_as_recorded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashes");
    let mut checked = 0;
    let mut changed = Vec::new();
    let mut unknown = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("case.case.json").exists() {
            continue;
        }
        let outcome: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("outcome.json")).unwrap())
                .unwrap();
        let status = std::fs::read_to_string(dir.join("status")).unwrap();
        let want = outcome["signature"].as_str().unwrap();
        let dtype = outcome["dtype"].as_str().unwrap_or("");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_semfuzz"));
        cmd.args(["run", "--json"]);
        if !dtype.is_empty() {
            cmd.args(["--dtype", dtype]);
        }
        // A bug of one execution mode (XLA, graph) is replayed in the modes it was found in.
        if let Some(modes) = outcome["modes"].as_array() {
            let modes: Vec<&str> = modes.iter().filter_map(Value::as_str).collect();
            cmd.args(["--modes", &modes.join(",")]);
        }
        let out = cmd
            .arg(dir.join("case.case.json"))
            .env_remove("SEMFUZZ_PYTHON")
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let signatures: Vec<&str> = report["verdicts"]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x["signature"].as_str()).collect())
            .unwrap_or_default();
        let reproduces = signatures.iter().any(|s| s.starts_with(want));
        // While it reproduces, the bug is known: its verdict names this folder, so campaigns
        // count it instead of reporting it again.
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let known_as_this = report["verdicts"].as_array().is_some_and(|vs| {
            vs.iter().any(|v| {
                v["signature"].as_str().is_some_and(|s| s.starts_with(want))
                    && v["known"].as_str() == Some(name.as_str())
            })
        });
        if reproduces && !known_as_this {
            unknown.push(format!("{}: {:#}", dir.display(), report["verdicts"]));
        }
        if reproduces != (status.trim() == "reproduces") {
            changed.push(format!(
                "{}: recorded '{}', now {:?}",
                dir.display(),
                status.trim(),
                signatures
            ));
        }
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} kept findings");
    assert!(
        unknown.is_empty(),
        "kept findings whose verdicts the known-bug table does not name:\n{}",
        unknown.join("\n")
    );
    assert!(
        changed.is_empty(),
        "kept findings no longer behave as recorded (update their `status`):\n{}",
        changed.join("\n")
    );
}
