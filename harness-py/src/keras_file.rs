//! `.keras` files through the worker: a case saved as Keras saves models (`save_keras`), and
//! the weights of a file loaded by Keras in safe mode (`load_keras`). Nothing in a loaded
//! file may run code: the worker refuses `Lambda` layers, serialized functions and classes
//! from outside Keras before Keras reads the file, and loads with `safe_mode=True`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ndarray::ArrayD;
use oracle::Case;
use oracle::check::CheckedShapes;
use serde_json::{Value, json};

use crate::client::{Limits, Worker, WorkerError, ok_body};
use crate::protocol::Frame;
use crate::run::{Arrays, Harness, decode_tensors};

/// The Python exception the worker raises for a file that would run code.
const REFUSED: &str = "UnsafeKerasFile";

/// Bounds of a save or load: Keras writes and reads the whole model, slower than a run.
pub const KERAS_FILE_LIMITS: Limits = Limits {
    timeout: Duration::from_secs(120),
    memory_mib: 4096,
    cancel: None,
};

/// What was asked of Keras.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KerasOp {
    Save,
    Load,
}

impl std::fmt::Display for KerasOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KerasOp::Save => "save",
            KerasOp::Load => "load",
        })
    }
}

/// A `.keras` file could not be saved or loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum KerasFileError {
    #[error("{}: refused: {message}; semfuzz never loads anything that would execute code", path.display())]
    Refused { path: PathBuf, message: String },
    #[error("{}: Keras cannot {op} it: {kind}: {message}", path.display())]
    Keras {
        path: PathBuf,
        op: KerasOp,
        kind: String,
        message: String,
    },
    #[error("{}: not a path the worker can use (it must be UTF-8)", path.display())]
    Path { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Worker {
        path: PathBuf,
        #[source]
        source: WorkerError,
    },
}

/// The weights of a loaded `.keras` file.
#[derive(Debug, Clone, PartialEq)]
pub struct KerasWeights {
    /// Every top-level layer in `model.layers` order, with its `get_weights()` arrays (none
    /// for a layer without weights).
    pub layers: Vec<(String, Vec<ArrayD<f64>>)>,
    /// What Keras warned about while loading (weights it could not match, for one).
    pub warnings: Vec<String>,
}

impl KerasWeights {
    /// The arrays of one layer, when the model has a layer of that name.
    pub fn layer(&self, name: &str) -> Option<&[ArrayD<f64>]> {
        self.layers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.as_slice())
    }
}

fn utf8(path: &Path) -> Result<String, KerasFileError> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    absolute
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| KerasFileError::Path {
            path: path.to_owned(),
        })
}

/// The request that saves `case` to `path`: its model built in its own dtype, as `run`
/// builds it, with its weights set.
pub fn save_request(case: &Case, path: &Path) -> Result<Frame, KerasFileError> {
    let arrays = Arrays::of(case, case.dtype, false);
    Ok(Frame {
        header: json!({
            "op": "save_keras",
            "path": utf8(path)?,
            "case": {"model": case.model.to_json(&CheckedShapes::of(case), &[]), "inputs": arrays.input_dtypes},
            "dtype": case.dtype.name(),
            "weights": arrays.weights,
            "shapes": arrays.shapes,
        }),
        payload: arrays.payload(),
    })
}

/// The request that loads the weights of the `.keras` file at `path`.
pub fn load_request(path: &Path) -> Result<Frame, KerasFileError> {
    Ok(Frame::new(json!({"op": "load_keras", "path": utf8(path)?})))
}

/// The worker's error about `path`, typed: a refusal, Keras's own error, or a failure of the
/// worker.
fn error_for(path: &Path, op: KerasOp, e: WorkerError) -> KerasFileError {
    match e {
        WorkerError::Python { kind, message } if kind == REFUSED => KerasFileError::Refused {
            path: path.to_owned(),
            message,
        },
        // Keras's own safe-mode refusal, should the worker's scan have let something through.
        WorkerError::Python { kind, message } if message.contains("safe_mode=False") => {
            KerasFileError::Refused {
                path: path.to_owned(),
                message: format!("{kind}: {message}"),
            }
        }
        WorkerError::Python { kind, message } => KerasFileError::Keras {
            path: path.to_owned(),
            op,
            kind,
            message,
        },
        source => KerasFileError::Worker {
            path: path.to_owned(),
            source,
        },
    }
}

/// Checks a save answer.
pub fn parse_save_answer(path: &Path, answer: Frame) -> Result<(), KerasFileError> {
    ok_body(answer.header).map_err(|e| error_for(path, KerasOp::Save, e))?;
    tracing::debug!(path = %path.display(), "saved a .keras file");
    Ok(())
}

/// The weights in a load answer.
pub fn parse_load_answer(path: &Path, answer: Frame) -> Result<KerasWeights, KerasFileError> {
    let body = ok_body(answer.header).map_err(|e| error_for(path, KerasOp::Load, e))?;
    let bad = |what: String| KerasFileError::Worker {
        path: path.to_owned(),
        source: WorkerError::Protocol(format!("bad load_keras answer: {what}")),
    };
    let mut arrays = decode_tensors(&body, &answer.payload).map_err(bad)?;
    let mut layers = Vec::new();
    for l in body["layers"]
        .as_array()
        .ok_or_else(|| bad("no layers".into()))?
    {
        let name = l["layer"]
            .as_str()
            .ok_or_else(|| bad("layer name".into()))?;
        let n = l["arrays"]
            .as_u64()
            .ok_or_else(|| bad("array count".into()))?;
        let weights = (0..n)
            .map(|i| {
                arrays
                    .remove(&format!("w/{name}/{i}"))
                    .ok_or_else(|| bad(format!("missing array {i} of layer `{name}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        layers.push((name.to_owned(), weights));
    }
    let warnings: Vec<String> = body["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for w in &warnings {
        // What concerns the weights matters (Keras skips what it cannot match); the rest is
        // what Keras says about any model it builds.
        if w.contains("weight") || w.contains("load") {
            tracing::warn!(path = %path.display(), "Keras, loading the file: {w}");
        } else {
            tracing::debug!(path = %path.display(), "Keras, loading the file: {w}");
        }
    }
    tracing::debug!(
        path = %path.display(),
        layers = layers.len(),
        arrays = layers.iter().map(|(_, a)| a.len()).sum::<usize>(),
        "loaded the weights of a .keras file"
    );
    Ok(KerasWeights { layers, warnings })
}

impl Worker {
    /// Saves `case` as a `.keras` file at `path` (the name must end in `.keras`).
    pub fn save_keras(
        &mut self,
        case: &Case,
        path: &Path,
        limits: Limits,
    ) -> Result<(), KerasFileError> {
        let answer = self
            .request_within(&save_request(case, path)?, limits)
            .map_err(|e| error_for(path, KerasOp::Save, e))?;
        parse_save_answer(path, answer)
    }

    /// Loads the `.keras` file at `path` in safe mode: every top-level layer's weights.
    pub fn load_keras(
        &mut self,
        path: &Path,
        limits: Limits,
    ) -> Result<KerasWeights, KerasFileError> {
        let answer = self
            .request_within(&load_request(path)?, limits)
            .map_err(|e| error_for(path, KerasOp::Load, e))?;
        parse_load_answer(path, answer)
    }
}

impl Harness {
    /// [`Worker::save_keras`] on the harness's worker (started if needed, replaced if it
    /// dies). The worker no longer holds the model of the last case run.
    pub fn save_keras(
        &mut self,
        case: &Case,
        path: &Path,
        limits: Limits,
    ) -> Result<(), KerasFileError> {
        let answer = self
            .request_replacing_model(&save_request(case, path)?, limits)
            .map_err(|e| error_for(path, KerasOp::Save, e))?;
        parse_save_answer(path, answer)
    }

    /// [`Worker::load_keras`] on the harness's worker.
    pub fn load_keras(
        &mut self,
        path: &Path,
        limits: Limits,
    ) -> Result<KerasWeights, KerasFileError> {
        let answer = self
            .request_replacing_model(&load_request(path)?, limits)
            .map_err(|e| error_for(path, KerasOp::Load, e))?;
        parse_load_answer(path, answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(header: Value, values: &[f64]) -> Frame {
        Frame {
            header,
            payload: values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    #[test]
    fn a_load_answer_gives_each_layer_its_arrays_in_order() {
        let a = answer(
            json!({"ok": true,
                   "layers": [{"layer": "in", "arrays": 0}, {"layer": "d", "arrays": 2}],
                   "tensors": [{"name": "w/d/0", "shape": [2, 1], "offset": 0, "size": 2},
                               {"name": "w/d/1", "shape": [1], "offset": 16, "size": 1}],
                   "warnings": ["something odd"]}),
            &[1.5, -2.0, 0.25],
        );
        let w = parse_load_answer(Path::new("m.keras"), a).unwrap();
        assert_eq!(w.layers.len(), 2);
        assert_eq!(w.layer("in").unwrap().len(), 0);
        let d = w.layer("d").unwrap();
        assert_eq!(d[0].shape(), &[2, 1]);
        assert_eq!(d[0].iter().copied().collect::<Vec<_>>(), [1.5, -2.0]);
        assert_eq!(d[1].iter().copied().collect::<Vec<_>>(), [0.25]);
        assert_eq!(w.warnings, ["something odd"]);
        assert!(w.layer("nope").is_none());
    }

    #[test]
    fn a_short_payload_is_a_protocol_error_naming_the_file() {
        let a = answer(
            json!({"ok": true, "layers": [{"layer": "d", "arrays": 1}],
                   "tensors": [{"name": "w/d/0", "shape": [4], "offset": 0, "size": 4}]}),
            &[1.0],
        );
        let e = parse_load_answer(Path::new("m.keras"), a).unwrap_err();
        assert!(matches!(e, KerasFileError::Worker { .. }), "{e:?}");
        assert!(e.to_string().starts_with("m.keras: "), "{e}");
        assert!(e.to_string().contains("payload too short"), "{e}");
    }

    #[test]
    fn refusals_and_keras_errors_are_told_apart() {
        let refused = answer(
            json!({"ok": false, "error": {"type": REFUSED, "message": "config.layers[2]: `Lambda` layers carry Python code"}}),
            &[],
        );
        let e = parse_load_answer(Path::new("lam.keras"), refused).unwrap_err();
        assert!(matches!(e, KerasFileError::Refused { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "lam.keras: refused: config.layers[2]: `Lambda` layers carry Python code; semfuzz never loads anything that would execute code"
        );
        let keras = answer(
            json!({"ok": false, "error": {"type": "ValueError", "message": "Layer 'd2' expected 2 variables, but received 0 variables during loading."}}),
            &[],
        );
        let e = parse_load_answer(Path::new("m.keras"), keras).unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.keras: Keras cannot load it: ValueError: Layer 'd2' expected 2 variables, but received 0 variables during loading."
        );
        let save = answer(
            json!({"ok": false, "error": {"type": "ValueError", "message": "bad"}}),
            &[],
        );
        let e = parse_save_answer(Path::new("o.keras"), save).unwrap_err();
        assert_eq!(
            e.to_string(),
            "o.keras: Keras cannot save it: ValueError: bad"
        );
    }

    #[test]
    fn a_save_request_carries_the_weights_but_not_the_inputs() {
        let case = Case::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../oracle/tests/fixtures/keras/dense_chain.case.json"),
        )
        .unwrap();
        let f = save_request(&case, Path::new("/tmp/out.keras")).unwrap();
        assert_eq!(f.header["op"], "save_keras");
        assert_eq!(f.header["path"], "/tmp/out.keras");
        assert_eq!(f.header["dtype"], case.dtype.name());
        // The weights' shapes, in the order of the layers listed: no input among them.
        let shapes: Vec<Value> = case
            .weights
            .values()
            .flatten()
            .map(|t| json!(t.data.shape()))
            .collect();
        assert_eq!(f.header["shapes"], json!(shapes));
        let n: usize = case.weights.values().flatten().map(|t| t.data.len()).sum();
        assert_eq!(f.payload.len(), n * 8);
        assert_eq!(
            f.header["case"]["inputs"].as_array().unwrap().len(),
            case.inputs.len()
        );
    }
}
