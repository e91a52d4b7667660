//! The case format `semfuzz-case/1`: one self-contained JSON file per test case.
//!
//! ```json
//! {"format": "semfuzz-case/1", "keras_version": "3.15.1", "dtype": "float64",
//!  "model": {...keras.Model.get_config()...},
//!  "weights": {"<layer>": [{"shape": [2, 3], "data": [...]}]},
//!  "inputs": [{"shape": [1, 4], "dtype": "int32", "data": [...]}],
//!  "npz": "big.npz"}
//! ```
//! `npz` names an optional sidecar (relative to the case file) for arrays written as
//! `{"shape": [...], "npz": "<key>"}`.

mod error;
pub mod graph;
mod hostile;
mod json;
mod keras_file;
pub mod model;
mod npz;
pub mod tensor;

use std::fs;
use std::io::Write;
use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

pub use error::{CaseError, CaseErrorKind};
pub use json::same_json;
pub use keras_file::{
    input_dtypes, inputs_npz_path, read_inputs_npz, read_keras_model, write_inputs_npz,
};
pub use model::{
    Arg, DeclaredInputShapes, DerivedShapes, Dims, Endpoints, Layer, Model, ModelKind, Node,
    TensorRef,
};
pub use tensor::Tensor;

use error::{Place, Placed};
use json::{as_array, as_object, as_str, field};

use crate::DType;

/// The format tag this version reads and writes.
pub const FORMAT: &str = "semfuzz-case/1";

/// One test case: a model, its weights and its inputs.
#[derive(Debug, PartialEq)]
pub struct Case {
    pub keras_version: Option<String>,
    /// The model's compute dtype; every layer's dtype policy is set to it.
    pub dtype: DType,
    pub model: Model,
    /// Per top-level layer name, the arrays of `layer.get_weights()`, in order.
    pub weights: IndexMap<String, Vec<Tensor>>,
    /// One array per model input, in `model.inputs` order (may be empty: no data given).
    pub inputs: Vec<Tensor>,
    /// The sidecar `.npz` file name, when arrays are kept there.
    pub npz: Option<String>,
    /// Top-level keys this version does not know, kept as written.
    pub extra: Map<String, Value>,
}

impl Clone for Case {
    fn clone(&self) -> Self {
        let Case {
            keras_version,
            dtype,
            model,
            weights,
            inputs,
            npz,
            extra,
        } = self;
        Case {
            keras_version: keras_version.clone(),
            dtype: *dtype,
            model: model.clone(),
            weights: weights.clone(),
            inputs: inputs.clone(),
            npz: npz.clone(),
            extra: extra.clone(),
        }
    }

    /// Keeps what the case already holds where it can ([`Model::clone_from`] keeps the layers
    /// that did not change): repeated copies of a case being edited cost what changed.
    fn clone_from(&mut self, source: &Self) {
        let Case {
            keras_version,
            dtype,
            model,
            weights,
            inputs,
            npz,
            extra,
        } = source;
        self.keras_version.clone_from(keras_version);
        self.dtype = *dtype;
        self.model.clone_from(model);
        self.weights.clone_from(weights);
        self.inputs.clone_from(inputs);
        self.npz.clone_from(npz);
        self.extra.clone_from(extra);
    }
}

/// How [`Case::write`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fsync the files (for findings, which must survive a crash of the machine).
    pub fsync: bool,
}

impl WriteOptions {
    /// Files that must survive a crash of the machine.
    pub const DURABLE: WriteOptions = WriteOptions { fsync: true };
}

impl Case {
    /// Reads a case file and its sidecar, if any.
    pub fn read(path: impl AsRef<Path>) -> Result<Case, CaseError> {
        let path = path.as_ref();
        let text = crate::bounded::read_text(path, crate::bounded::Kind::Case)
            .map_err(|e| Place::root().err(e.into()).in_file(path))?;
        Case::from_json_str(&text, path)
    }

    /// Parses a case from text; `path` names it in errors and locates its sidecar.
    pub fn from_json_str(text: &str, path: impl AsRef<Path>) -> Result<Case, CaseError> {
        let path = path.as_ref();
        let value: Value = serde_json::from_str(text).map_err(|e| {
            Place::root()
                .err(CaseErrorKind::Json {
                    line: e.line(),
                    column: e.column(),
                    message: strip_position(&e.to_string()),
                })
                .in_file(path)
        })?;
        let (mut case, sidecar_shapes) =
            Case::from_value_without_sidecar(&value).map_err(|e| e.in_file(path))?;
        case.load_sidecar(path.parent().unwrap_or(Path::new(".")), sidecar_shapes)
            .map_err(|e| e.in_file(path))?;
        Ok(case)
    }

    /// Parses a case from a JSON value. Arrays kept in a sidecar are left empty until
    /// [`Case::load_sidecar`] reads them; their declared shapes are returned, in the order
    /// [`Case::tensors_mut`] visits them (nothing is allocated for a shape before its data
    /// is read).
    fn from_value_without_sidecar(v: &Value) -> Placed<(Case, Vec<Vec<usize>>)> {
        let root = Place::root();
        let o = as_object(v, &root)?;
        let format = as_str(field(o, "format", &root)?, &root.field("format"))?;
        if format != FORMAT {
            return Err(root
                .field("format")
                .err(CaseErrorKind::Format(format.to_owned())));
        }
        let dp = root.field("dtype");
        let dtype: DType = as_str(field(o, "dtype", &root)?, &dp)?
            .parse()
            .map_err(|e: crate::dtype::UnknownDType| dp.err(CaseErrorKind::Value(e.to_string())))?;
        if !dtype.is_float() {
            return Err(dp.err(CaseErrorKind::Value(format!(
                "a model's compute dtype must be a float type, not {dtype}"
            ))));
        }
        let keras_version = match o.get("keras_version") {
            None | Some(Value::Null) => None,
            Some(k) => Some(as_str(k, &root.field("keras_version"))?.to_owned()),
        };
        let model = Model::parse(field(o, "model", &root)?, &root.field("model"))?;
        let npz = match o.get("npz") {
            None | Some(Value::Null) => None,
            Some(n) => Some(as_str(n, &root.field("npz"))?.to_owned()),
        };

        let mut budget = tensor::Budget::default();
        let wp = root.field("weights");
        let mut weights = IndexMap::new();
        if let Some(w) = o.get("weights") {
            for (name, arrays) in as_object(w, &wp)? {
                let lp = wp.field(name);
                if model.layer(name).is_none() {
                    return Err(lp.err(CaseErrorKind::UnknownLayer(name.clone())));
                }
                let tensors = as_array(arrays, &lp)?
                    .iter()
                    .enumerate()
                    .map(|(i, t)| read_tensor(t, dtype, &mut budget, &lp.index(i)))
                    .collect::<Placed<Vec<_>>>()?;
                weights.insert(name.clone(), tensors);
            }
        }
        let ip = root.field("inputs");
        let inputs = match o.get("inputs") {
            None => Vec::new(),
            Some(i) => as_array(i, &ip)?
                .iter()
                .enumerate()
                .map(|(k, t)| read_tensor(t, dtype, &mut budget, &ip.index(k)))
                .collect::<Placed<Vec<_>>>()?,
        };
        if !inputs.is_empty() && inputs.len() != model.input_count() {
            return Err(ip.err(CaseErrorKind::Value(format!(
                "{} input arrays for a model with {} input(s)",
                inputs.len(),
                model.input_count()
            ))));
        }
        let extra: Map<String, Value> = o
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "format" | "keras_version" | "dtype" | "model" | "weights" | "inputs" | "npz"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for k in extra.keys() {
            tracing::warn!(key = %k, "unknown top-level key in a case; kept as written");
        }
        let case = Case {
            keras_version,
            dtype,
            model,
            weights,
            inputs,
            npz,
            extra,
        };
        Ok((case, budget.sidecar_shapes))
    }

    fn tensors_mut(&mut self) -> impl Iterator<Item = (Place, &mut Tensor)> {
        let root = Place::root();
        let wp = root.field("weights");
        let ip = root.field("inputs");
        let weights = self.weights.iter_mut().flat_map(move |(name, ts)| {
            let lp = wp.field(name);
            ts.iter_mut()
                .enumerate()
                .map(move |(i, t)| (lp.index(i), t))
        });
        let inputs = self
            .inputs
            .iter_mut()
            .enumerate()
            .map(move |(i, t)| (ip.index(i), t));
        weights.chain(inputs)
    }

    fn load_sidecar(&mut self, dir: &Path, shapes: Vec<Vec<usize>>) -> Placed<()> {
        let npz_name = self.npz.clone();
        let mut sidecar = None;
        let mut shapes = shapes.into_iter();
        for (place, t) in self.tensors_mut() {
            let Some(key) = t.npz_key.clone() else {
                continue;
            };
            let Some(name) = &npz_name else {
                return Err(place.err(CaseErrorKind::Value(
                    "refers to the sidecar, but the case names no `npz` file".to_owned(),
                )));
            };
            let sidecar_err = |message: String| {
                place.err(CaseErrorKind::Sidecar {
                    file: name.clone(),
                    message,
                })
            };
            if sidecar.is_none() {
                sidecar = Some(npz::Sidecar::open(&dir.join(name)).map_err(sidecar_err)?);
            }
            let a = sidecar
                .as_mut()
                .expect("opened above")
                .read(&key)
                .map_err(sidecar_err)?;
            let declared = shapes.next().unwrap_or_default();
            if a.shape() != declared.as_slice() {
                return Err(sidecar_err(format!(
                    "array `{key}` has shape {:?}, the case says {declared:?}",
                    a.shape(),
                )));
            }
            t.data = a;
        }
        Ok(())
    }

    /// The case as JSON, with derived shapes from `shapes`.
    pub fn to_json(&self, shapes: &dyn DerivedShapes) -> Value {
        let mut o = Map::new();
        o.insert("format".into(), json!(FORMAT));
        if let Some(k) = &self.keras_version {
            o.insert("keras_version".into(), json!(k));
        }
        o.insert("dtype".into(), json!(self.dtype.name()));
        o.insert("model".into(), self.model.to_json(shapes, &[]));
        let weights: Map<String, Value> = self
            .weights
            .iter()
            .map(|(name, ts)| {
                let arrays = ts.iter().map(|t| tensor::to_json(t, self.dtype)).collect();
                (name.clone(), Value::Array(arrays))
            })
            .collect();
        o.insert("weights".into(), Value::Object(weights));
        o.insert(
            "inputs".into(),
            Value::Array(
                self.inputs
                    .iter()
                    .map(|t| tensor::to_json(t, self.dtype))
                    .collect(),
            ),
        );
        if let Some(n) = &self.npz {
            o.insert("npz".into(), json!(n));
        }
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        Value::Object(o)
    }

    /// Writes the case (and its sidecar, when arrays live there) next to `path`.
    /// The JSON is written to a temporary file and renamed, so a reader never sees half a case.
    pub fn write(
        &self,
        path: impl AsRef<Path>,
        shapes: &dyn DerivedShapes,
        opts: WriteOptions,
    ) -> Result<(), CaseError> {
        let path = path.as_ref();
        let io = |e: std::io::Error| Place::root().err(e.into()).in_file(path);
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut case = self.clone();
        let in_sidecar: Vec<(String, DType, &Tensor)> = self
            .weights
            .values()
            .flatten()
            .chain(&self.inputs)
            .filter_map(|t| t.npz_key.clone().map(|k| (k, t.dtype_or(self.dtype), t)))
            .collect();
        if !in_sidecar.is_empty() {
            let name = case.npz.get_or_insert_with(|| sidecar_name(path)).clone();
            let arrays: Vec<_> = in_sidecar
                .iter()
                .map(|(k, d, t)| (k.as_str(), *d, &t.data))
                .collect();
            let npz_path = dir.join(&name);
            npz::write(&npz_path, &arrays).map_err(|message| {
                Place::root()
                    .err(CaseErrorKind::Sidecar {
                        file: name.clone(),
                        message,
                    })
                    .in_file(path)
            })?;
            if opts.fsync {
                fs::File::open(&npz_path)
                    .and_then(|f| f.sync_all())
                    .map_err(io)?;
            }
        }
        let mut text =
            serde_json::to_string_pretty(&case.to_json(shapes)).expect("JSON values serialize");
        text.push('\n');
        let tmp = path.with_extension("json.tmp");
        {
            let mut f = fs::File::create(&tmp).map_err(io)?;
            f.write_all(text.as_bytes()).map_err(io)?;
            if opts.fsync {
                f.sync_all().map_err(io)?;
            }
        }
        fs::rename(&tmp, path).map_err(io)?;
        if opts.fsync {
            fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        Ok(())
    }
}

fn read_tensor(
    v: &Value,
    case_dtype: DType,
    budget: &mut tensor::Budget,
    place: &Place,
) -> Placed<Tensor> {
    let header = tensor::parse_header(v, place)?;
    budget.take(&header.shape, &place.field("shape"))?;
    let data = match &header.npz_key {
        Some(_) => {
            budget.sidecar_shapes.push(header.shape.clone());
            ndarray::ArrayD::zeros(ndarray::IxDyn(&[0]))
        }
        None => tensor::parse_inline(v, &header, case_dtype, place)?,
    };
    Ok(Tensor {
        dtype: header.dtype,
        data,
        npz_key: header.npz_key,
    })
}

/// `model.case.json` keeps its sidecar in `model.npz`.
fn sidecar_name(path: &Path) -> String {
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("case");
    let stem = file
        .strip_suffix(".case.json")
        .or_else(|| file.strip_suffix(".json"))
        .unwrap_or(file);
    format!("{stem}.npz")
}

/// serde_json appends " at line L column C"; the position is reported separately.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}
