//! Helpers shared by the integration tests. Each test crate uses some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `semfuzz ARGS...` with the project's own environment (no `SEMFUZZ_PYTHON`, no
/// `RUST_LOG`, no planted fault), its output.
pub fn semfuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(args)
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("RUST_LOG")
        .env_remove("SEMFUZZ_WORKER_PLANT")
        .output()
        .expect("semfuzz runs")
}

/// A file of `fuzzer/tests/data/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs a finding's `repro.py` in the project environment, with the planted ReLU fault
/// (`plant_fuzz.py`) loaded first when `planted`; its exit status.
pub fn repro_status(repro: &Path, planted: bool) -> Option<i32> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let plant = if planted {
        format!("runpy.run_path({:?})", data("plant_fuzz.py"))
    } else {
        String::new()
    };
    let script = format!(
        "import runpy, sys\n{plant}\nsys.argv = [{repro:?}]\nrunpy.run_path({repro:?}, run_name='__main__')",
        repro = repro.display().to_string()
    );
    Command::new(python)
        .args(["-c", &script])
        .output()
        .unwrap()
        .status
        .code()
}

/// A model of one ReLU on a 2×3 input, with its data.
pub const RELU_CASE: &str = r#"{"format": "semfuzz-case/1", "dtype": "float64",
 "model": {"name": "functional", "trainable": true, "layers": [
  {"module": "keras.layers", "class_name": "InputLayer", "name": "input_layer", "inbound_nodes": [],
   "config": {"batch_shape": [null, 3], "dtype": "float64", "sparse": false, "ragged": false, "name": "input_layer", "optional": false}},
  {"module": "keras.layers", "class_name": "ReLU", "name": "re_lu",
   "config": {"name": "re_lu", "trainable": true, "max_value": null, "negative_slope": 0.0, "threshold": 0.0},
   "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float64", "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]}],
  "input_layers": ["input_layer", 0, 0], "output_layers": ["re_lu", 0, 0]},
 "weights": {},
 "inputs": [{"shape": [2, 3], "dtype": "float64", "data": [-1.5, 0.5, 2.0, 3.0, -0.25, 1.0]}]}"#;

/// A release number's parts, for comparing with an entry's range (trailing zeros dropped:
/// 3.12.0 is 3.12).
pub fn release_parts(v: &str) -> Vec<u64> {
    let mut p: Vec<u64> = v
        .split('.')
        .map_while(|x| x.parse().ok())
        .collect::<Vec<_>>();
    while p.len() > 1 && p.last() == Some(&0) {
        p.pop();
    }
    p
}

/// The Keras release of an environment (default: the pinned one), as its worker reports it.
pub fn keras_version(python: Option<&Path>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semfuzz"));
    cmd.env_remove("SEMFUZZ_PYTHON")
        .env_remove("SEMFUZZ_WORKER_PLANT");
    if let Some(p) = python {
        cmd.env("SEMFUZZ_PYTHON", p);
    }
    let out = cmd.arg("version").output().expect("semfuzz runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("keras "))
        .unwrap_or_else(|| panic!("no keras version in: {text}"))
        .trim()
        .to_owned()
}

/// Whether a kept entry's Keras range (`releases.keras` of its `kept.json`) holds for the
/// release `keras` (its [`release_parts`]).
pub fn keras_range_holds(kept: &serde_json::Value, keras: &[u64]) -> bool {
    let range = &kept["releases"]["keras"];
    range["from"]
        .as_str()
        .is_none_or(|f| keras >= release_parts(f).as_slice())
        && range["before"]
            .as_str()
            .is_none_or(|b| keras < release_parts(b).as_slice())
}

/// The case-format fixtures every backend's tests run in each mode and dtype
/// (`oracle/tests/fixtures/keras/<name>.case.json`).
pub const MODE_FIXTURES: [&str; 11] = [
    "dense_chain",
    "nested_sequential",
    "nested_functional",
    "nested_functional_output",
    "sequential_top",
    "shared_layer",
    "multi_io",
    "fan_out",
    "special_values",
    "app_mobilenet",
    "app_mobilenet_v2",
];
