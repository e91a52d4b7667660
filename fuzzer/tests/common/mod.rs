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
