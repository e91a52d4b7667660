//! `semfuzz check` on ResNet50's config (`tests/data/applications/resnet50.json`, 177 layers),
//! against the time Keras takes to build the same model from that config: target under
//! 20 ms per check. Three figures, each the median of its runs:
//! - the oracle's part in process (read the model, every violation, open-size warnings,
//!   interval hazards), which is what `check` adds over reading a file;
//! - the whole `semfuzz check --json` command, process start included;
//! - `keras.models.model_from_json` in the project's Python (after importing Keras).
//!
//! Appends the figures to `target/bench-results/check.txt`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use oracle::check::{check, check_all};
use oracle::diagnose::{hazards, size_warnings};
use oracle::interval::Interval;

const RUNS: usize = 30;
const KERAS_RUNS: usize = 5;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn timed(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

/// Median milliseconds Keras takes to build the model from its JSON, measured inside one
/// Python process (the import of Keras excluded); `None` without the project's Python.
fn keras_build_ms(model: &PathBuf) -> Option<f64> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let script = format!(
        r#"
import os, sys, time, statistics
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras
text = open(sys.argv[1]).read()
times = []
for _ in range({KERAS_RUNS}):
    start = time.perf_counter()
    keras.models.model_from_json(text)
    times.append((time.perf_counter() - start) * 1e3)
    keras.backend.clear_session()
print(statistics.median(times))
"#
    );
    let out = Command::new(python)
        .args(["-c", &script])
        .arg(model)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn main() {
    let model =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/applications/resnet50.json");
    let oracle_ms = timed(RUNS, || {
        let case = oracle::case::read_keras_model(&model).expect("reads");
        assert!(check_all(&case).expect("supported").is_empty());
        std::hint::black_box(size_warnings(&case));
        let analysis = check(&case).expect("valid");
        std::hint::black_box(hazards(&case, &analysis, Interval::new(-1.0, 1.0)));
    });
    let bin = env!("CARGO_BIN_EXE_semfuzz");
    let command_ms = timed(RUNS, || {
        let out = Command::new(bin)
            .args(["check", "--json"])
            .arg(&model)
            .output()
            .expect("semfuzz check");
        assert!(out.status.success());
    });
    let keras = keras_build_ms(&model);
    let keras_text = keras.map_or("unavailable (no .venv)".to_owned(), |k| {
        format!("{k:.1} ms")
    });
    let line = format!(
        "check ResNet50 (177 layers): oracle in process {oracle_ms:.2} ms, `semfuzz check --json` {command_ms:.1} ms (medians of {RUNS}); Keras model_from_json {keras_text} (median of {KERAS_RUNS}); target < 20 ms"
    );
    println!("{line}");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&dir).expect("results dir");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("check.txt"))
        .expect("results file");
    writeln!(f, "{line}").expect("write");
}
