//! What a target offers, asked once of its worker: its versions and Keras backend, its layer
//! classes, and the nested objects a layer config holds (initializers, regularizers,
//! constraints, dtype policies), each with its constructor's arguments and their defaults.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::Versions;

/// One constructor argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arg {
    /// No default: a config must give it.
    Required,
    /// Its default, as JSON.
    Default(Value),
    /// A default that is no JSON value (an object; a non-finite float): its type's name.
    Opaque(String),
}

/// A class's constructor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    pub args: BTreeMap<String, Arg>,
    /// Whether it takes more keyword arguments (passed on to its base class).
    pub kwargs: bool,
}

impl Signature {
    /// Whether the constructor takes `name` itself.
    pub fn has(&self, name: &str) -> bool {
        self.args.contains_key(name)
    }
}

/// What a target offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub versions: Versions,
    /// `keras.layers`' layer classes by name.
    pub layers: BTreeMap<String, Signature>,
    /// The base `Layer`'s own constructor (the keyword arguments every layer takes).
    pub base_layer: Signature,
    /// Nested objects by kind (`initializers`, `regularizers`, `constraints`,
    /// `dtype_policies`), then by class name.
    pub objects: BTreeMap<String, BTreeMap<String, Signature>>,
}

impl TargetInfo {
    /// What tells two targets apart in a record: Keras's, TensorFlow's and Python's versions
    /// and the backend (the class tables follow from them).
    pub fn id(&self) -> TargetId {
        TargetId {
            keras: self.versions.keras.clone(),
            tensorflow: self.versions.tensorflow.clone(),
            python: self.versions.python.clone(),
            backend: self.versions.backend.clone(),
        }
    }
}

/// A target as campaigns and findings record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetId {
    pub keras: String,
    pub tensorflow: String,
    pub python: String,
    pub backend: String,
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Keras {} on {} (TensorFlow {}, Python {})",
            self.keras, self.backend, self.tensorflow, self.python
        )
    }
}
