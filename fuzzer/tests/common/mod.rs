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

/// The Keras and TensorFlow releases of an environment (its [`release_parts`]), as its worker
/// reports them.
pub struct Installed {
    pub keras: Vec<u64>,
    pub tensorflow: Vec<u64>,
}

/// What an environment (default: the pinned one) has installed, as its worker reports it.
pub fn installed(python: Option<&Path>) -> Installed {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semfuzz"));
    cmd.env_remove("SEMFUZZ_PYTHON")
        .env_remove("SEMFUZZ_WORKER_PLANT");
    if let Some(p) = python {
        cmd.env("SEMFUZZ_PYTHON", p);
    }
    let out = cmd.arg("version").output().expect("semfuzz runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let release = |name: &str| {
        let v = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} version in: {text}"));
        release_parts(v.trim())
    };
    Installed {
        keras: release("keras"),
        tensorflow: release("tensorflow"),
    }
}

/// Whether a kept entry's release ranges (`releases.keras` and `releases.tensorflow` of its
/// `kept.json`) hold for the installed releases.
pub fn releases_hold(kept: &serde_json::Value, installed: &Installed) -> bool {
    let holds = |range: &serde_json::Value, v: &[u64]| {
        range["from"]
            .as_str()
            .is_none_or(|f| v >= release_parts(f).as_slice())
            && range["before"]
                .as_str()
                .is_none_or(|b| v < release_parts(b).as_slice())
    };
    holds(&kept["releases"]["keras"], &installed.keras)
        && holds(&kept["releases"]["tensorflow"], &installed.tensorflow)
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
