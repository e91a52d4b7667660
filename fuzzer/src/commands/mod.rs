//! One module per subcommand.

pub mod check;
pub mod export;
pub mod gen_cmd;
pub mod layers;
pub mod run;
pub mod triage;
pub mod version;

use std::path::PathBuf;

use oracle::Case;

use crate::exit::Failure;

/// Reads every case; the first unreadable one is a usage error naming the file and place.
pub fn read_cases(paths: &[PathBuf]) -> Result<Vec<Case>, Failure> {
    paths
        .iter()
        .map(|p| Case::read(p).map_err(|e| Failure::usage(e.to_string())))
        .collect()
}
