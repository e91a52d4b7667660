//! A case as LibAFL's input. It travels between processes (LLMP events, restarts) as its
//! JSON text, and lies on disk as an ordinary case file named by the hash of its content,
//! so `semfuzz run <out>/corpus/*.case.json` replays a corpus.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

use libafl::Error;
use libafl::corpus::CorpusId;
use libafl::inputs::Input;
use oracle::Case;
use oracle::case::CaseError;
use oracle::check::CheckedShapes;
use serde::{Deserialize, Serialize};

use super::features::fnv1a64;

/// A test case: the JSON text of a `semfuzz-case/1` file. A case made in this process keeps
/// its parsed form too, so the executor does not parse again what the mutator wrote; equality
/// and hashing look at the text only.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseInput {
    json: String,
    #[serde(skip)]
    parsed: Option<Arc<Case>>,
}

impl PartialEq for CaseInput {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

impl Eq for CaseInput {}

impl Hash for CaseInput {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.json.hash(state);
    }
}

/// Its length is its JSON's (what the minimizer scheduler weighs entries by).
impl libafl_bolts::HasLen for CaseInput {
    fn len(&self) -> usize {
        self.json.len()
    }
}

impl CaseInput {
    pub fn from_case(case: &Case) -> Self {
        CaseInput {
            json: case.to_json(&CheckedShapes::of(case)).to_string(),
            parsed: Some(Arc::new(case.clone())),
        }
    }

    /// Bytes of its JSON.
    pub fn bytes(&self) -> usize {
        self.json.len()
    }

    /// Its JSON text (one line).
    pub fn json(&self) -> &str {
        &self.json
    }

    pub fn case(&self) -> Result<Case, CaseError> {
        match &self.parsed {
            Some(case) => Ok(Case::clone(case)),
            None => Case::from_json_str(&self.json, "<test case>"),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The parsed case an input keeps is the case its JSON gives: the executor may use either.
    #[test]
    fn the_kept_case_is_the_one_the_json_gives() {
        let opts = generators::generate::GenOptions::default();
        let mut rng = generators::rng(11);
        for _ in 0..40 {
            let case = generators::generate::generate(&opts, &mut rng).case;
            let input = CaseInput::from_case(&case);
            let kept = input.case().unwrap();
            let parsed = Case::from_json_str(input.json(), "<test case>").unwrap();
            // Compared as JSON: NaNs in the arrays are not equal to themselves.
            assert_eq!(CaseInput::from_case(&kept).json, input.json);
            assert_eq!(CaseInput::from_case(&parsed).json, input.json);
        }
    }
}
