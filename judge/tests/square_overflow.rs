//! PyTorch's float32 LayerNormalization overflows to NaN in a lane whose squares float32
//! cannot hold (the kept limitation): the NaN there is explained on PyTorch only; a NaN in a
//! lane whose squares fit is a new finding, and so is the same NaN on TensorFlow.

mod common;

use judge::{Backend, Judge, Kind, Suppressions, Target, Verdict};
use ndarray::{ArrayD, Axis};
use oracle::{Case, DType};

const FOLDER: &str = "unexpected-nan-LayerNormalization-torch-float32-square-overflow";

/// Row 0 holds three values 2e19 (their squares sum beyond float32's range), row 1 `[1, 2, 4]`.
fn kept_case() -> Case {
    Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The reference's output with the rows `rows` replaced by NaN.
fn answer(case: &Case, rows: &[usize]) -> ArrayD<f64> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let mut out = eval.outputs[&(1, 0)][0].clone();
    for &row in rows {
        out.index_axis_mut(Axis(0), row).fill(f64::NAN);
    }
    out
}

fn judge(case: &Case, backend: Backend, out: ArrayD<f64>) -> Vec<Verdict> {
    let tf = common::eager_outputs(vec![
        (
            case.model.layers[0].name.as_str(),
            case.inputs[0].data.clone(),
        ),
        (case.model.layers[1].name.as_str(), out),
    ]);
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(backend, "3.15.1", "2.21.0"),
    )
    .judge(case, DType::Float32, &oracle::check(case), &tf)
}

fn the_finding(verdicts: &[Verdict]) -> &Verdict {
    assert_eq!(verdicts.len(), 1, "{verdicts:#?}");
    &verdicts[0]
}

#[test]
fn a_nan_in_the_overflowing_lane_is_the_kept_limitation_on_pytorch() {
    let case = kept_case();
    let v = the_finding(&judge(&case, Backend::Torch, answer(&case, &[0]))).clone();
    assert_eq!(v.kind, Kind::UnexpectedNan, "{v:?}");
    assert!(v.evidence.square_overflow, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
}

#[test]
fn the_same_nan_on_tensorflow_is_a_finding() {
    let case = kept_case();
    let v = the_finding(&judge(&case, Backend::Tensorflow, answer(&case, &[0]))).clone();
    assert!(v.evidence.square_overflow, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}

#[test]
fn without_an_overflowing_lane_a_nan_is_a_finding_on_pytorch() {
    let mut case = kept_case();
    case.inputs[0].data.index_axis_mut(Axis(0), 0).fill(1e19);
    let v = the_finding(&judge(&case, Backend::Torch, answer(&case, &[0]))).clone();
    assert_eq!(v.kind, Kind::UnexpectedNan, "{v:?}");
    assert!(!v.evidence.square_overflow, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}

/// A NaN in the lane whose squares fit is no overflow, though another lane of the same call
/// overflows.
#[test]
fn a_nan_in_a_lane_whose_squares_fit_is_a_finding_beside_an_overflowing_one() {
    let case = kept_case();
    let v = the_finding(&judge(&case, Backend::Torch, answer(&case, &[0, 1]))).clone();
    assert_eq!(v.kind, Kind::UnexpectedNan, "{v:?}");
    assert!(!v.evidence.square_overflow, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}
