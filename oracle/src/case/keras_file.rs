//! Users' own Keras models as cases (model only, no weights or inputs): a `.keras` file (its
//! `config.json`, read from the zip without Python) or the JSON of `model.to_json()`; and the
//! `.npz` of inputs that goes with such a model (NumPy's `savez`).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::error::{CaseErrorKind, Place};
use super::{Case, CaseError, Model, Tensor, npz};
use crate::DType;
use crate::layers::util::show;

use crate::bounded::{self, Kind};

/// Reads a `.keras` file or a Keras model JSON as a case without weights or inputs. The
/// compute dtype is the first layer dtype policy found (float32 when none is).
pub fn read_keras_model(path: &Path) -> Result<Case, CaseError> {
    let err = |kind: CaseErrorKind| Place::root().err(kind).in_file(path);
    let mut keras_version = None;
    let text = if path.extension().is_some_and(|e| e == "keras") {
        let (file, _) = bounded::open(path, Kind::KerasArchive).map_err(|e| err(e.into()))?;
        let mut zip = zip::ZipArchive::new(file)
            .map_err(|e| err(CaseErrorKind::Value(format!("not a .keras archive: {e}"))))?;
        keras_version = metadata_version(&mut zip);
        let entry = zip.by_name("config.json").map_err(|_| {
            err(CaseErrorKind::Missing(
                "config.json (inside the .keras archive)".to_owned(),
            ))
        })?;
        bounded::read_member_text(entry, Kind::KerasConfig).map_err(|e| err(e.into()))?
    } else {
        bounded::read_text(path, Kind::KerasConfig).map_err(|e| err(e.into()))?
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        err(CaseErrorKind::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    })?;
    let model = value
        .get("config")
        .filter(|c| c.get("layers").is_some())
        .ok_or_else(|| {
            err(CaseErrorKind::Missing(
                "config.layers (a Keras model's config)".to_owned(),
            ))
        })?;
    let dtype = first_policy(model).unwrap_or_else(|| "float32".to_owned());
    let mut case = json!({"format": super::FORMAT, "dtype": dtype, "model": model});
    if let Some(v) = keras_version {
        case["keras_version"] = json!(v);
    }
    Case::from_json_str(&case.to_string(), path)
}

/// The Keras version in a `.keras` archive's `metadata.json`, when it says.
fn metadata_version<R: Read + std::io::Seek>(zip: &mut zip::ZipArchive<R>) -> Option<String> {
    let s =
        bounded::read_member_text(zip.by_name("metadata.json").ok()?, Kind::KerasMetadata).ok()?;
    let v: Value = serde_json::from_str(&s).ok()?;
    v.get("keras_version")?.as_str().map(str::to_owned)
}

/// Where the inputs of a `.keras` file are kept beside it: `model.keras` -> `model.npz`.
pub fn inputs_npz_path(keras: &Path) -> PathBuf {
    keras.with_extension("npz")
}

/// The element type each model input declares (its input layer's `dtype`) when it is not a
/// float type, in `model.inputs` order: integer inputs (indices for `Embedding`) keep theirs.
pub fn input_dtypes(model: &Model) -> Vec<Option<DType>> {
    model
        .input_refs()
        .iter()
        .map(|r| {
            let d = model.layer(&r.layer)?.config.get("dtype")?;
            let name = d
                .as_str()
                .or_else(|| d.get("config")?.get("name")?.as_str())?;
            name.parse::<DType>().ok().filter(|d| !d.is_float())
        })
        .collect()
}

/// The model's inputs from an `.npz`, in `model.inputs` order: for input `i` (input layer
/// `name`), the array named `name`, else `arr_i` (how `numpy.savez` names positional arrays).
/// Each must have the rank and the fixed dimensions its input layer declares.
pub fn read_inputs_npz(path: &Path, model: &Model) -> Result<Vec<Tensor>, CaseError> {
    let file_err = |message: String| {
        Place::root()
            .err(CaseErrorKind::Value(message))
            .in_file(path)
    };
    let mut npz = npz::Sidecar::open(path).map_err(file_err)?;
    let names = npz.names().map_err(file_err)?;
    let declared = crate::check::declared_inputs(model).ok();
    let dtypes = input_dtypes(model);
    let mut inputs = Vec::new();
    for (i, r) in model.input_refs().iter().enumerate() {
        let positional = format!("arr_{i}");
        let key = [r.layer.as_str(), positional.as_str()]
            .into_iter()
            .find(|k| names.iter().any(|n| n == k))
            .ok_or_else(|| {
                file_err(format!(
                    "no array for input {i} (`{}`): expected one named `{}` or `{positional}`; the file holds {}",
                    r.layer,
                    r.layer,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                    }
                ))
            })?
            .to_owned();
        let place = Place::root().field(&key);
        let data = npz
            .read(&key)
            .map_err(|m| place.err(CaseErrorKind::Value(m)).in_file(path))?;
        if let Some(want) = declared.as_ref().and_then(|d| d.get(i)) {
            let fits = want.len() == data.ndim()
                && want
                    .iter()
                    .zip(data.shape())
                    .all(|(w, &d)| w.is_none_or(|w| w == d));
            if !fits {
                return Err(place
                    .err(CaseErrorKind::Value(format!(
                        "has shape {}, but input {i} (`{}`) of the model takes {}",
                        show(&data.shape().iter().map(|&d| Some(d)).collect()),
                        r.layer,
                        show(want)
                    )))
                    .in_file(path));
            }
        }
        inputs.push(Tensor {
            dtype: dtypes.get(i).copied().flatten(),
            data,
            npz_key: None,
        });
    }
    let used = inputs.len();
    if names.len() > used {
        tracing::warn!(file = %path.display(), arrays = names.len(), inputs = used, "the .npz holds more arrays than the model has inputs; the others are ignored");
    }
    Ok(inputs)
}

/// Writes a case's inputs to an `.npz`, each under its input layer's name and in its dtype,
/// so [`read_inputs_npz`] (and `numpy.load`) read them back.
pub fn write_inputs_npz(path: &Path, case: &Case) -> Result<(), CaseError> {
    let refs = case.model.input_refs();
    let arrays: Vec<(&str, DType, &ndarray::ArrayD<f64>)> = refs
        .iter()
        .zip(&case.inputs)
        .map(|(r, t)| (r.layer.as_str(), t.dtype_or(case.dtype), &t.data))
        .collect();
    npz::write(path, &arrays).map_err(|m| Place::root().err(CaseErrorKind::Value(m)).in_file(path))
}

/// The name of the first `DTypePolicy` in a config (float types only).
fn first_policy(v: &Value) -> Option<String> {
    match v {
        Value::Object(o) => {
            if o.get("class_name").and_then(Value::as_str) == Some("DTypePolicy") {
                let name = o.get("config")?.get("name")?.as_str()?;
                if name.starts_with("float") || name == "bfloat16" {
                    return Some(name.to_owned());
                }
            }
            o.values().find_map(first_policy)
        }
        Value::Array(a) => a.iter().find_map(first_policy),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    /// A `.keras` whose `config.json` inflates past the limit (a zip bomb) is refused before
    /// it is inflated, naming the member and the limit.
    #[test]
    fn a_config_that_inflates_past_the_limit_is_refused_unread() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bomb.keras");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        zip.start_file("config.json", zip::write::SimpleFileOptions::default())
            .unwrap();
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..(Kind::KerasConfig.limit() >> 20) + 1 {
            zip.write_all(&chunk).unwrap();
        }
        zip.finish().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() < 1 << 20);
        let e = read_keras_model(&path).unwrap_err().to_string();
        assert!(
            e.contains("bomb.keras")
                && e.contains("config.json")
                && e.contains(&format!("limit of {} bytes", Kind::KerasConfig.limit())),
            "{e}"
        );
    }

    fn fixture(name: &str) -> Case {
        Case::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/keras")
                .join(format!("{name}.case.json")),
        )
        .unwrap()
    }

    #[test]
    fn inputs_round_trip_through_an_npz_by_input_name() {
        let dir = tempfile::tempdir().unwrap();
        let case = fixture("multi_io");
        let path = dir.path().join("m.npz");
        write_inputs_npz(&path, &case).unwrap();
        let back = read_inputs_npz(&path, &case.model).unwrap();
        assert_eq!(back.len(), case.inputs.len());
        for (a, b) in back.iter().zip(&case.inputs) {
            assert_eq!(a.data, b.data);
        }
    }

    #[test]
    fn positional_arrays_are_read_in_model_input_order() {
        let dir = tempfile::tempdir().unwrap();
        let case = fixture("dense_chain");
        let path = dir.path().join("p.npz");
        npz::write(&path, &[("arr_0", DType::Float32, &case.inputs[0].data)]).unwrap();
        let back = read_inputs_npz(&path, &case.model).unwrap();
        assert_eq!(back[0].data, case.inputs[0].data.mapv(|x| x as f32 as f64));
    }

    #[test]
    fn a_missing_or_ill_shaped_array_names_the_file_and_the_array() {
        let dir = tempfile::tempdir().unwrap();
        let case = fixture("dense_chain");
        let input = &case.model.input_refs()[0].layer;
        let path = dir.path().join("bad.npz");
        let other = ArrayD::<f64>::zeros(ndarray::IxDyn(&[1, 4]));
        npz::write(&path, &[("something", DType::Float64, &other)]).unwrap();
        let e = read_inputs_npz(&path, &case.model).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: no array for input 0 (`{input}`): expected one named `{input}` or `arr_0`; the file holds `something`",
                path.display()
            )
        );
        let declared = crate::check::declared_inputs(&case.model).unwrap();
        let mut wrong: Vec<usize> = declared[0].iter().map(|d| d.unwrap_or(2)).collect();
        *wrong.last_mut().unwrap() += 1;
        let wide = ArrayD::<f64>::zeros(ndarray::IxDyn(&wrong));
        npz::write(&path, &[(input.as_str(), DType::Float64, &wide)]).unwrap();
        let e = read_inputs_npz(&path, &case.model).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: {input}: has shape (", path.display())),
            "{e}"
        );
        assert!(
            e.ends_with(&format!(
                "but input 0 (`{input}`) of the model takes {}",
                show(&declared[0])
            )),
            "{e}"
        );
        let e = read_inputs_npz(&dir.path().join("absent.npz"), &case.model)
            .unwrap_err()
            .to_string();
        assert!(e.contains("absent.npz: cannot read: No such file"), "{e}");
    }

    #[test]
    fn integer_input_layers_keep_their_dtype() {
        let model: Value = json!({"layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "name": "ids", "registered_name": null,
             "config": {"batch_shape": [null, 3], "dtype": "int32", "name": "ids"}, "inbound_nodes": []},
            {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
             "config": {"batch_shape": [null, 3], "dtype": "float32", "name": "x"}, "inbound_nodes": []}],
            "input_layers": [["ids", 0, 0], ["x", 0, 0]], "output_layers": [["x", 0, 0]]});
        let case = json!({"format": super::super::FORMAT, "dtype": "float32", "model": model});
        let case = Case::from_json_str(&case.to_string(), "m.case.json").unwrap();
        assert_eq!(input_dtypes(&case.model), [Some(DType::Int32), None]);
    }
}
