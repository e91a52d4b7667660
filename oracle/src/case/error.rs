//! Errors of reading and writing cases. Every error names the file and the place in it.

use std::fmt;
use std::path::PathBuf;

/// A case file could not be read or written. `Display` gives `file: place: problem`.
#[derive(Debug, thiserror::Error)]
pub struct CaseError {
    /// The case file (or `<memory>` for a case read from a string).
    pub file: PathBuf,
    /// Where in the file, as a path of fields and indices (`model.layers[3].inbound_nodes[0]`);
    /// empty for problems with the whole file.
    pub place: String,
    pub kind: CaseErrorKind,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if !self.place.is_empty() {
            write!(f, ": {}", self.place)?;
        }
        write!(f, ": {}", self.kind)
    }
}

/// What was wrong.
#[derive(Debug, thiserror::Error)]
pub enum CaseErrorKind {
    #[error("cannot read or write: {0}")]
    Io(#[from] std::io::Error),
    /// Not read: past a limit, not a regular file, not UTF-8 (`crate::bounded`).
    #[error("{0}")]
    Read(#[from] crate::bounded::ReadError),
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("unknown format `{0}` (this semfuzz reads `semfuzz-case/1`)")]
    Format(String),
    #[error("missing field `{0}`")]
    Missing(String),
    #[error("expected {expected}, found {found}")]
    Type {
        expected: &'static str,
        found: String,
    },
    #[error("{0}")]
    Value(String),
    #[error("refers to layer `{0}`, which does not exist")]
    UnknownLayer(String),
    #[error("refers to call {node} of layer `{layer}`, which is called {calls} time(s)")]
    UnknownNode {
        layer: String,
        node: usize,
        calls: usize,
    },
    #[error("two layers are named `{0}`")]
    DuplicateLayer(String),
    #[error("the graph has a cycle: {0}")]
    Cycle(String),
    #[error("data has {actual} values but shape {shape:?} needs {expected}")]
    DataLength {
        shape: Vec<i64>,
        expected: usize,
        actual: usize,
    },
    #[error("dimension {index} of shape {shape:?} is {reason}")]
    BadDimension {
        shape: Vec<i64>,
        index: usize,
        reason: &'static str,
    },
    #[error("shape {shape:?} has {elements} elements, more than the limit of {limit}")]
    TooLarge {
        shape: Vec<i64>,
        elements: u128,
        limit: usize,
    },
    #[error("refused: {0}; semfuzz never loads anything that would execute code")]
    Refused(String),
    #[error("sidecar `{file}`: {message}")]
    Sidecar { file: String, message: String },
}

/// A position inside a JSON document, for error messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place(String);

impl Place {
    pub fn root() -> Self {
        Place(String::new())
    }

    pub fn field(&self, name: &str) -> Place {
        if self.0.is_empty() {
            Place(name.to_owned())
        } else {
            Place(format!("{}.{name}", self.0))
        }
    }

    pub fn index(&self, i: usize) -> Place {
        Place(format!("{}[{i}]", self.0))
    }

    /// An index annotated with a name, e.g. `layers[3](conv_1)`.
    pub fn named(&self, i: usize, name: &str) -> Place {
        Place(format!("{}[{i}]({name})", self.0))
    }

    pub fn err(&self, kind: CaseErrorKind) -> PlacedError {
        PlacedError {
            place: self.0.clone(),
            kind,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() {
            "(top level)"
        } else {
            &self.0
        })
    }
}

/// An error that knows its place but not yet its file; the file is added at the boundary.
#[derive(Debug)]
pub(crate) struct PlacedError {
    pub place: String,
    pub kind: CaseErrorKind,
}

impl PlacedError {
    pub fn in_file(self, file: impl Into<PathBuf>) -> CaseError {
        CaseError {
            file: file.into(),
            place: self.place,
            kind: self.kind,
        }
    }
}

pub(crate) type Placed<T> = Result<T, PlacedError>;

/// Describes a JSON value's type for "expected X, found Y" messages.
pub(crate) fn describe(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.len() <= 40 => format!("string {s:?}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}
