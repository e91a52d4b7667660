//! Golden cases made by real Keras 3.15 (scripts/goldens/<family>.py): the reference agrees
//! with Keras's float64 outputs within each layer's declared tolerance, and calls invalid
//! exactly the cases Keras refuses (or, for semantic preconditions, flags them as such).

use std::path::{Path, PathBuf};

use oracle::check::{CallKind, CheckError, check, eval};
use oracle::{Case, Tag};
use serde_json::Value;

fn golden_cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut v = Vec::new();
    for family in std::fs::read_dir(&root).unwrap() {
        let dir = family.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let p = f.unwrap().path();
            if p.to_string_lossy().ends_with(".case.json") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

fn expected_of(case: &Path) -> Value {
    let p = case
        .to_string_lossy()
        .replace(".case.json", ".expected.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn array(v: &Value) -> ndarray::ArrayD<f64> {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f64> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x {
            Value::String(s) if s == "nan" => f64::NAN,
            Value::String(s) if s == "inf" => f64::INFINITY,
            Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
            x => x.as_f64().unwrap(),
        })
        .collect();
    ndarray::ArrayD::from_shape_vec(shape, data).unwrap()
}

/// One golden case; `Err` says how the reference disagrees with Keras. A case recorded with a
/// known divergence (a TF bug, with its cause) must still disagree, so a fix upstream shows.
fn judge(path: &Path) -> Result<(), String> {
    let expected = expected_of(path);
    let verdict = compare(path, &expected);
    match (expected.get("divergence"), verdict) {
        (None, v) => v,
        (Some(_), Err(_)) => Ok(()),
        (Some(why), Ok(())) => Err(format!(
            "now agrees with Keras; the recorded divergence is gone: {why}"
        )),
    }
}

fn compare(path: &Path, expected: &Value) -> Result<(), String> {
    let case = Case::read(path).map_err(|e| e.to_string())?;
    let checked = check(&case);
    if let Some(outputs) = expected.get("outputs") {
        let analysis = checked.map_err(|e| format!("Keras accepts it, the reference says: {e}"))?;
        let ev = eval(&case, &analysis).map_err(|e| e.to_string())?;
        // The layer under test is the last call; its tolerance applies to the outputs.
        let last = analysis
            .calls
            .iter()
            .rev()
            .find(|c| matches!(c.kind, CallKind::Layer(_)))
            .ok_or("no layer")?;
        let CallKind::Layer(spec) = &last.kind else {
            unreachable!()
        };
        let layer = &case.model.layers[last.layer];
        let args = ev
            .inputs_of(&case, last)
            .ok_or("the evaluation lacks an input of the layer")?;
        let weights: Vec<&ndarray::ArrayD<f64>> = case
            .weights
            .get(&layer.name)
            .map(|w| w.iter().map(|t| &t.data).collect())
            .unwrap_or_default();
        let masks = ev.masks_of(&case, last);
        let mask_refs: Vec<Option<&oracle::layers::Mask>> =
            masks.iter().map(Option::as_ref).collect();
        let tol = spec
            .tolerance_masked(case.dtype, &args, &mask_refs, &weights)
            .flushing(case.dtype);
        for (i, (want, got)) in outputs
            .as_array()
            .unwrap()
            .iter()
            .map(array)
            .zip(&ev.model_outputs)
            .enumerate()
        {
            if want.shape() != got.shape() {
                return Err(format!(
                    "output {i}: shape {:?}, Keras {:?}",
                    got.shape(),
                    want.shape()
                ));
            }
            for ((idx, w), g) in want.indexed_iter().zip(got.iter()) {
                if !tol.accepts(*g, *w) {
                    return Err(format!(
                        "output {i} at {:?}: reference {g}, Keras {w} (tolerance {tol:?})",
                        idx
                    ));
                }
            }
        }
        return Ok(());
    }
    match checked {
        Ok(_) => Err(format!("Keras says {}, the reference accepts it", expected)),
        Err(CheckError::Unsupported(u)) => Err(format!("unsupported: {u}")),
        Err(CheckError::Invalid(v)) => {
            if expected.get("keras_accepts").is_some() && v.tag != Tag::Semantic {
                return Err(format!(
                    "Keras accepts it, the reference calls it keras-enforced: {v}"
                ));
            }
            Ok(())
        }
    }
}

#[test]
fn the_reference_agrees_with_keras_on_every_golden_case() {
    let cases = golden_cases();
    assert!(cases.len() >= 30, "only {} golden cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|p| {
            judge(p).err().map(|e| {
                format!(
                    "{}: {e}",
                    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap_or(p)
                        .display()
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} golden cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
