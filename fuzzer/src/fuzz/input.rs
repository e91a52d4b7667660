//! A case as LibAFL's input. It travels between processes (LLMP events, restarts) as its
//! JSON text, and lies on disk as an ordinary case file named by the hash of its content,
//! so `semfuzz run <out>/corpus/*.case.json` replays a corpus.

use std::path::Path;

use libafl::Error;
use libafl::corpus::CorpusId;
use libafl::inputs::Input;
use oracle::Case;
use oracle::case::CaseError;
use oracle::check::CheckedShapes;
use serde::{Deserialize, Serialize};

use super::features::fnv1a64;

/// A test case: the JSON text of a `semfuzz-case/1` file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CaseInput {
    json: String,
}

impl CaseInput {
    pub fn from_case(case: &Case) -> Self {
        CaseInput {
            json: case.to_json(&CheckedShapes::of(case)).to_string(),
        }
    }

    /// Bytes of its JSON.
    pub fn bytes(&self) -> usize {
        self.json.len()
    }

    pub fn case(&self) -> Result<Case, CaseError> {
        Case::from_json_str(&self.json, "<test case>")
    }
}

impl Input for CaseInput {
    fn to_file<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        let value: serde_json::Value = serde_json::from_str(&self.json)
            .map_err(|e| Error::serialize(format!("a test case is not JSON: {e}")))?;
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| Error::serialize(e.to_string()))?;
        std::fs::write(path, text + "\n")?;
        Ok(())
    }

    /// Reads a case file (and its sidecar); anything that is not a valid case is an invalid
    /// input, which corpus loading and syncing skip with a warning.
    fn from_file<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        let path = path.as_ref();
        let case = Case::read(path).map_err(|e| Error::invalid_input(e.to_string()))?;
        Ok(CaseInput::from_case(&case))
    }

    fn generate_name(&self, _id: Option<CorpusId>) -> String {
        format!("{:016x}.case.json", fnv1a64(self.json.as_bytes()))
    }
}
