//! A `.keras` file as a case: the model config read without Python, the weights loaded by
//! Keras in the worker (safe mode), and inputs from an `.npz` or drawn from a seed. Every
//! weight array the reference expects must be in the file, with the shape it expects.

use std::path::{Path, PathBuf};

use generators::values::{ValueOptions, realize};
use harness_py::keras_file::KERAS_FILE_LIMITS;
use harness_py::{Harness, KerasFileError, KerasWeights};
use oracle::Case;
use oracle::case::{CaseError, Dims, Tensor};
use oracle::check::{CallKind, check_model};
use oracle::layers::util::{known, show};

/// The batch of inputs drawn from a seed where the model leaves it open.
const SEED_BATCH: usize = 2;

/// Whether a path names a `.keras` file (by its extension).
pub fn is_keras(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "keras")
}

/// Where a `.keras` file's inputs come from.
#[derive(Debug, Clone, Copy)]
pub enum InputSource<'a> {
    /// An `.npz`: one array per model input.
    Npz(&'a Path),
    /// Drawn with the generators' value code from this seed (no NaN or infinity).
    Seed(u64),
}

#[derive(Debug, thiserror::Error)]
pub enum KerasCaseError {
    #[error(transparent)]
    Read(#[from] CaseError),
    #[error(transparent)]
    Load(#[from] KerasFileError),
    #[error("{}: layer `{layer}` ({class}): {problem}", file.display())]
    Weights {
        file: PathBuf,
        layer: String,
        class: String,
        problem: String,
    },
    #[error("{}: the model declares {declared} input layer(s) for its {inputs} input(s), so neither its inputs nor its weights are known (was it saved before it was built?)", file.display())]
    Unbuilt {
        file: PathBuf,
        declared: usize,
        inputs: usize,
    },
    #[error("{}: cannot draw inputs from seed {seed}: {message}; give them with --inputs", file.display())]
    Seed {
        file: PathBuf,
        seed: u64,
        message: String,
    },
}

impl KerasCaseError {
    /// Whether semfuzz itself failed (the worker), rather than the file or the inputs.
    pub fn is_internal(&self) -> bool {
        matches!(self, KerasCaseError::Load(KerasFileError::Worker { .. }))
    }
}

/// A `.keras` file's model, read without Python; [`KerasModel::complete`] adds the rest.
pub struct KerasModel {
    pub path: PathBuf,
    case: Case,
}

impl KerasModel {
    /// Reads the model config (`config.json`). Lambda layers and custom classes are refused.
    pub fn read(path: &Path) -> Result<KerasModel, KerasCaseError> {
        Ok(KerasModel {
            path: path.to_owned(),
            case: oracle::case::read_keras_model(path)?,
        })
    }

    /// The case: the file's weights (loaded by Keras in the worker) and the inputs.
    pub fn complete(
        self,
        harness: &mut Harness,
        inputs: InputSource<'_>,
    ) -> Result<Case, KerasCaseError> {
        let KerasModel { path, mut case } = self;
        let declared = case.model.input_refs().len();
        if declared != case.model.input_count() {
            return Err(KerasCaseError::Unbuilt {
                file: path,
                declared,
                inputs: case.model.input_count(),
            });
        }
        case.inputs = match inputs {
            InputSource::Npz(npz) => oracle::case::read_inputs_npz(npz, &case.model)?,
            InputSource::Seed(seed) => drawn_inputs(&path, &case, seed)?,
        };
        let loaded = harness.load_keras(&path, KERAS_FILE_LIMITS)?;
        attach_weights(&path, &mut case, &loaded)?;
        tracing::info!(
            file = %path.display(),
            layers_with_weights = case.weights.len(),
            "read a .keras file"
        );
        Ok(case)
    }
}

/// Inputs drawn deterministically from `seed` (the declared shapes, batch [`SEED_BATCH`]
/// where open; indices for the inputs an `Embedding` reads).
fn drawn_inputs(path: &Path, case: &Case, seed: u64) -> Result<Vec<Tensor>, KerasCaseError> {
    let mut scratch = case.clone();
    scratch.weights.clear();
    scratch.inputs.clear();
    let opts = ValueOptions {
        special: 0.0,
        ..ValueOptions::default()
    };
    realize(&mut scratch, SEED_BATCH, &opts, &mut generators::rng(seed)).map_err(|e| {
        KerasCaseError::Seed {
            file: path.to_owned(),
            seed,
            message: e.to_string(),
        }
    })?;
    let dtypes = oracle::case::input_dtypes(&case.model);
    Ok(scratch
        .inputs
        .into_iter()
        .zip(dtypes)
        .map(|(mut t, d)| {
            t.dtype = d;
            t
        })
        .collect())
}

/// Gives the case the loaded weights of every layer the reference knows, after checking
/// that each has the arrays the reference expects on these inputs. When the reference cannot
/// check the model (it is invalid or unsupported), every loaded array is kept as it is.
fn attach_weights(
    path: &Path,
    case: &mut Case,
    loaded: &KerasWeights,
) -> Result<(), KerasCaseError> {
    let dims: Vec<Dims> = case
        .inputs
        .iter()
        .map(|t| t.shape().iter().map(|&d| Some(d)).collect())
        .collect();
    let keep_all = |case: &mut Case| {
        for (name, arrays) in &loaded.layers {
            if !arrays.is_empty() && case.model.layer(name).is_some() {
                case.weights.insert(
                    name.clone(),
                    arrays.iter().cloned().map(Tensor::new).collect(),
                );
            }
        }
    };
    let analysis = match check_model(&case.model, &dims, case.dtype) {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!(file = %path.display(), "weights kept unchecked: {e}");
            keep_all(case);
            return Ok(());
        }
    };
    for call in &analysis.calls {
        let layer = &case.model.layers[call.layer];
        if case.weights.contains_key(&layer.name) {
            continue; // a shared layer's second call
        }
        let given = loaded.layer(&layer.name).unwrap_or(&[]);
        let spec = match &call.kind {
            CallKind::Input { .. } => continue,
            CallKind::Nested(_) => {
                if !given.is_empty() {
                    let arrays = given.iter().cloned().map(Tensor::new).collect();
                    case.weights.insert(layer.name.clone(), arrays);
                }
                continue;
            }
            CallKind::Layer(spec) => spec,
        };
        let Some(shapes) = call
            .input_shapes
            .iter()
            .map(known)
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let wanted = spec.weights(&shapes);
        if wanted.is_empty() {
            if !given.is_empty() {
                tracing::warn!(
                    file = %path.display(),
                    layer = %layer.name,
                    "the file holds {} weight array(s) of a layer the reference computes without; TensorFlow runs it with its own initial values",
                    given.len()
                );
            }
            continue;
        }
        let problem = |what: String| KerasCaseError::Weights {
            file: path.to_owned(),
            layer: layer.name.clone(),
            class: layer.class_name.clone(),
            problem: what,
        };
        let expected = || {
            wanted
                .iter()
                .map(|w| format!("{} {}", w.name, show_shape(&w.shape)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if given.len() != wanted.len() {
            return Err(problem(format!(
                "the file holds {} weight array(s), but on these inputs the layer takes {}: {}",
                given.len(),
                wanted.len(),
                expected()
            )));
        }
        for (w, a) in wanted.iter().zip(given) {
            if a.shape() != w.shape.as_slice() {
                return Err(problem(format!(
                    "weight `{}` in the file has shape {}, but on these inputs the layer takes {}",
                    w.name,
                    show_shape(a.shape()),
                    show_shape(&w.shape)
                )));
            }
        }
        case.weights.insert(
            layer.name.clone(),
            given.iter().cloned().map(Tensor::new).collect(),
        );
    }
    Ok(())
}

fn show_shape(shape: &[usize]) -> String {
    show(&shape.iter().map(|&d| Some(d)).collect())
}

/// The `.npz` that keeps a case's inputs beside its `.keras` file, written when the case has
/// inputs: its path.
pub fn write_inputs_beside(keras: &Path, case: &Case) -> Result<Option<PathBuf>, CaseError> {
    if case.inputs.is_empty() {
        return Ok(None);
    }
    let npz = oracle::case::inputs_npz_path(keras);
    oracle::case::write_inputs_npz(&npz, case)?;
    Ok(Some(npz))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn dense_chain() -> Case {
        Case::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../oracle/tests/fixtures/keras/dense_chain.case.json"),
        )
        .unwrap()
    }

    fn loaded_from(case: &Case) -> KerasWeights {
        KerasWeights {
            layers: case
                .model
                .layers
                .iter()
                .map(|l| {
                    let arrays = case
                        .weights
                        .get(&l.name)
                        .map(|ts| ts.iter().map(|t| t.data.clone()).collect())
                        .unwrap_or_default();
                    (l.name.clone(), arrays)
                })
                .collect(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn complete_weights_are_attached_as_loaded() {
        let full = dense_chain();
        let loaded = loaded_from(&full);
        let mut case = full.clone();
        case.weights.clear();
        attach_weights(Path::new("m.keras"), &mut case, &loaded).unwrap();
        assert_eq!(case.weights, full.weights);
    }

    #[test]
    fn a_layer_without_its_weights_is_an_error_naming_file_and_layer() {
        let full = dense_chain();
        let (name, _) = full.weights.first().unwrap();
        let class = full.model.layer(name).unwrap().class_name.clone();
        let mut loaded = loaded_from(&full);
        loaded
            .layers
            .iter_mut()
            .find(|(n, _)| n == name)
            .unwrap()
            .1
            .clear();
        let mut case = full.clone();
        case.weights.clear();
        let e = attach_weights(Path::new("m.keras"), &mut case, &loaded)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "m.keras: layer `{name}` ({class}): the file holds 0 weight array(s), but on these inputs the layer takes "
            )),
            "{e}"
        );
        assert!(e.contains("kernel ("), "{e}");

        let mut loaded = loaded_from(&full);
        let arrays = &mut loaded.layers.iter_mut().find(|(n, _)| n == name).unwrap().1;
        arrays[0] = ArrayD::zeros(ndarray::IxDyn(&[1, 1]));
        let e = attach_weights(Path::new("m.keras"), &mut case, &loaded)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("weight `kernel` in the file has shape (1, 1), but on these inputs the layer takes ("),
            "{e}"
        );
    }

    #[test]
    fn seeded_inputs_are_deterministic_and_fit_the_model() {
        let mut case = dense_chain();
        case.inputs.clear();
        let a = drawn_inputs(Path::new("m.keras"), &case, 7).unwrap();
        let b = drawn_inputs(Path::new("m.keras"), &case, 7).unwrap();
        let c = drawn_inputs(Path::new("m.keras"), &case, 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let declared = oracle::check::declared_inputs(&case.model).unwrap();
        assert_eq!(a[0].shape().len(), declared[0].len());
        assert_eq!(a[0].shape()[0], SEED_BATCH);
        assert!(a[0].data.iter().all(|x| x.is_finite()));
    }
}
