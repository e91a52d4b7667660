//! One module per subcommand.

pub mod check;
pub mod export;
pub mod gen_cmd;
pub mod layers;
pub mod run;
pub mod triage;
pub mod version;

use std::path::PathBuf;

use harness_py::{Harness, PythonEnv, WorkerCommand};
use oracle::Case;

use crate::cli::PythonArgs;
use crate::exit::Failure;

/// A harness on the selected Python environment (its worker starts on first use).
pub fn harness(python: &PythonArgs) -> Result<Harness, Failure> {
    let python =
        PythonEnv::select(python.python.as_deref()).map_err(|e| Failure::usage(e.to_string()))?;
    let env = PythonEnv::probe(&python).map_err(|e| Failure::usage(e.to_string()))?;
    let cmd = WorkerCommand::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the semfuzz executable: {e}")))?;
    Ok(Harness::new(cmd, env))
}

/// A `.keras` file that could not be saved or read: semfuzz's own failure (the worker) or
/// bad input (the file, its weights, its inputs).
pub fn keras_failure(e: impl Into<crate::keras_case::KerasCaseError>) -> Failure {
    let e = e.into();
    if e.is_internal() {
        Failure::failed(e.to_string())
    } else {
        Failure::usage(e.to_string())
    }
}

/// Reads every case; the first unreadable one is a usage error naming the file and place.
pub fn read_cases(paths: &[PathBuf]) -> Result<Vec<Case>, Failure> {
    paths
        .iter()
        .map(|p| Case::read(p).map_err(|e| Failure::usage(e.to_string())))
        .collect()
}
