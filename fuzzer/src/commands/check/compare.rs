//! `check --compare`: the same model built and run in TensorFlow through the worker, so that
//! the oracle's verdict and TF's stand side by side (TF may refuse a valid model, or accept
//! an invalid one silently).

use harness_py::{Harness, ModeOutcome, RunOptions, TfOutcome};
use ndarray::ArrayD;
use oracle::Case;
use oracle::case::Tensor;
use oracle::check::declared_inputs;
use rand::Rng;
use serde_json::{Value, json};

use crate::exit::Failure;

/// Open sizes (batch included) of the inputs drawn for TF.
const OPEN_SIZE: usize = 2;

/// What TF did with the case, as JSON: `{"accepted": bool, "phase", "type", "message"}`.
pub fn tensorflow(harness: &mut Harness, case: &Case, range: (f64, f64)) -> Result<Value, Failure> {
    let mut case = case.clone();
    if case.inputs.is_empty() {
        case.inputs = drawn_inputs(&case, range)?;
    }
    let tf = harness
        .run(&case, &RunOptions::default())
        .map_err(|e| Failure::failed(e.to_string()))?;
    Ok(match tf {
        TfOutcome::Ran { modes, .. } => match modes.into_iter().find_map(|(_, m)| match m {
            ModeOutcome::Error(e, _) => Some(e),
            ModeOutcome::Outputs(_) => None,
        }) {
            Some(e) => {
                json!({"accepted": false, "phase": e.phase, "type": e.kind, "message": e.message})
            }
            None => json!({"accepted": true}),
        },
        TfOutcome::Rejected(e) => {
            json!({"accepted": false, "phase": e.phase, "type": e.kind, "message": e.message})
        }
        TfOutcome::Crash { signal, layer, .. } => {
            json!({"accepted": false, "phase": "call", "type": "crash", "message": format!("the worker died (signal {signal:?})"), "layer": layer})
        }
        TfOutcome::Timeout { layer, .. } => {
            json!({"accepted": false, "phase": "call", "type": "timeout", "message": "the worker timed out", "layer": layer})
        }
        TfOutcome::OutOfMemory { layer, rss_mib, .. } => {
            json!({"accepted": false, "phase": "call", "type": "oom", "message": format!("the worker used {rss_mib} MiB"), "layer": layer})
        }
    })
}

/// Inputs of the declared shapes (open sizes [`OPEN_SIZE`]), drawn from a fixed seed within
/// the input range; integer inputs get zeros (a valid index for any embedding).
fn drawn_inputs(case: &Case, (lo, hi): (f64, f64)) -> Result<Vec<Tensor>, Failure> {
    let shapes = declared_inputs(&case.model).map_err(|e| Failure::usage(e.to_string()))?;
    let dtypes = oracle::case::input_dtypes(&case.model);
    let concrete: Vec<Vec<usize>> = shapes
        .iter()
        .map(|d| d.iter().map(|x| x.unwrap_or(OPEN_SIZE)).collect())
        .collect();
    // Refused before anything is allocated: arrays of the declared shapes past the limit
    // of a case's arrays.
    let elements = concrete
        .iter()
        .map(|s| s.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128)))
        .fold(0u128, u128::saturating_add);
    if elements > oracle::case::tensor::MAX_ELEMENTS as u128 {
        return Err(Failure::usage(format!(
            "the model's inputs would take {elements} elements (open sizes {OPEN_SIZE}), past the limit of {} for a case's arrays",
            oracle::case::tensor::MAX_ELEMENTS
        )));
    }
    let mut rng = generators::rng(0);
    Ok(concrete
        .into_iter()
        .zip(dtypes)
        .map(|(shape, dtype)| {
            let float = dtype.is_none_or(|t| t.is_float());
            let data = ArrayD::from_shape_fn(shape, |_| {
                if float && lo < hi {
                    rng.random_range(lo..hi)
                } else if float {
                    lo
                } else {
                    0.0
                }
            });
            let mut t = Tensor::new(data);
            t.dtype = dtype;
            t
        })
        .collect())
}
