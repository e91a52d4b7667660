//! The TensorFlow side of semfuzz.
//!
//! A worker process (this crate's [`worker::main`], started by the `semfuzz` binary as
//! `semfuzz __worker`) embeds CPython through pyo3, activates the selected Python
//! environment's packages and imports TensorFlow. The [`client`] starts it, talks to it over
//! its stdin/stdout with length-prefixed [`protocol`] frames, and notices when it dies.
//! The process that uses the client never initialises Python itself.

pub mod client;
pub mod env;
pub mod export;
pub mod keras_file;
pub mod overlay;
pub mod protocol;
pub mod run;
pub mod target;
pub mod worker;

pub use client::{Limits, Versions, Worker, WorkerCommand, WorkerError};
pub use env::{EnvError, PythonEnv};
pub use judge::{Backend, Judge, Kind, Mode, ModeOutcome, PyError, TfOutcome, Verdict, verdict};
pub use keras_file::{KerasFileError, KerasWeights};
pub use run::{Harness, PATIENCE, RunOptions, TimeoutCheck, decode_run_answer};
pub use target::{TargetId, TargetInfo};

/// The Python minor version this build embeds, e.g. `"3.11"`.
pub const BUILD_PYTHON_VERSION: &str = env!("SEMFUZZ_BUILD_PYTHON_VERSION");

/// The interpreter the build was configured with (the project's `.venv/bin/python`): the
/// default environment when neither `--python` nor `SEMFUZZ_PYTHON` names another.
pub fn build_python() -> Option<&'static str> {
    option_env!("SEMFUZZ_BUILD_PYTHON")
}
