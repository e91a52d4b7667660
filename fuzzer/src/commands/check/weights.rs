//! The weights stored in a `.keras` file, for the numeric-hazard analysis: the range of each
//! weight's values, read from the archive's `model.weights.h5` (HDF5) by a short h5py
//! script run with the selected Python in isolated mode (`python -I`). The script imports
//! neither TensorFlow nor Keras and executes nothing from the file; when it cannot run, the
//! analysis falls back to the initializers' ranges and says so.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oracle::diagnose::{StoredWeight, WeightRanges};
use oracle::interval::Interval;
use serde::Deserialize;

use crate::cli::PythonArgs;
use crate::commands::MemoryLimit as _;

const SCRIPT: &str = include_str!("../../../../harness-py/python/semfuzz_weight_ranges.py");

/// The script's bound: reading a large model's weights takes seconds, not minutes.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The most address space the reader may take: it streams the weights and reads each
/// dataset in slices, so a real model's weights fit in a few hundred MiB; a hostile file
/// (an HDF5 bomb) ends the reader, not the machine.
const MEMORY_LIMIT: u64 = 4 << 30;

/// Why the stored weights could not be read (the message of the report's warning).
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("no Python to read them with ({0})")]
    NoPython(String),
    #[error("{python} could not be started: {source}")]
    NotRunnable {
        python: String,
        #[source]
        source: std::io::Error,
    },
    #[error("reading them took longer than {}s", TIMEOUT.as_secs())]
    Timeout,
    #[error("the reader failed: {0}")]
    Failed(String),
    #[error("the reader's answer is not understood: {0}")]
    Answer(String),
}

#[derive(Deserialize)]
struct Answer {
    layers: Vec<LayerAnswer>,
}

#[derive(Deserialize)]
struct LayerAnswer {
    path: Vec<String>,
    weights: Vec<WeightAnswer>,
}

#[derive(Deserialize)]
struct WeightAnswer {
    shape: Vec<usize>,
    min: Option<Bound>,
    max: Option<Bound>,
    nan: bool,
}

/// A finite number, or `"inf"`, `"-inf"`, `"nan"` (JSON has no literal for them).
#[derive(Deserialize)]
#[serde(untagged)]
enum Bound {
    Number(f64),
    Word(String),
}

impl Bound {
    fn value(&self) -> f64 {
        match self {
            Bound::Number(x) => *x,
            Bound::Word(w) if w == "inf" => f64::INFINITY,
            Bound::Word(w) if w == "-inf" => f64::NEG_INFINITY,
            Bound::Word(_) => f64::NAN,
        }
    }
}

/// The ranges of the weights stored in the `.keras` file at `path`, by layer path (empty
/// when the archive holds no weights).
pub fn stored_ranges(path: &Path, python: &PythonArgs) -> Result<WeightRanges, WeightsError> {
    let interpreter = harness_py::PythonEnv::select(python.python.as_deref())
        .map_err(|e| WeightsError::NoPython(e.to_string()))?;
    let mut child = Command::new(&interpreter)
        .arg("-I")
        .arg("-c")
        .arg(SCRIPT)
        .arg(path)
        .arg(oracle::bounded::MAX_RATIO.to_string())
        .arg(oracle::bounded::RATIO_FLOOR.to_string())
        .arg(oracle::case::tensor::MAX_ELEMENTS.to_string())
        .env("OPENBLAS_NUM_THREADS", "1")
        .memory_limit(MEMORY_LIMIT)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| WeightsError::NotRunnable {
            python: interpreter.display().to_string(),
            source,
        })?;
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut out);
            }
            out
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(WeightsError::Timeout);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(WeightsError::Failed(e.to_string())),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        let text = String::from_utf8_lossy(&stderr);
        let last = text
            .trim()
            .lines()
            .last()
            .unwrap_or("no message")
            .to_owned();
        return Err(WeightsError::Failed(last));
    }
    let answer: Answer =
        serde_json::from_slice(&stdout).map_err(|e| WeightsError::Answer(e.to_string()))?;
    Ok(WeightRanges(
        answer
            .layers
            .into_iter()
            .map(|l| {
                let ws = l.weights.into_iter().map(stored_weight).collect();
                (l.path.join("/"), ws)
            })
            .collect(),
    ))
}

fn stored_weight(w: WeightAnswer) -> StoredWeight {
    let mut range = match (w.min.map(|b| b.value()), w.max.map(|b| b.value())) {
        (Some(lo), Some(hi)) if lo <= hi => Interval::new(lo, hi),
        // No value at all (an empty array, or only NaN).
        _ => Interval::point(0.0),
    };
    range.nan |= w.nan;
    StoredWeight {
        shape: w.shape,
        range,
    }
}
