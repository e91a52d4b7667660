//! The kept PyTorch bug of `ops.moments` (a variance computed as `mean(x²) − mean(x)²`, which
//! cancels) explains a GroupNormalization's NaN only in a group whose values are close together
//! relative to their size: the same layer wrong in another group is a new finding, and so is the
//! NaN on a backend that computes the variance otherwise.

mod common;

use judge::{Backend, Judge, Kind, Suppressions, Target, Verdict};
use ndarray::{ArrayD, Axis};
use oracle::{Case, DType};

const FOLDER: &str = "unexpected-nan-GroupNormalization-torch-variance-cancels";

/// Two channels, one group each: channel 0 holds four values near 1000 (its variance cancels
/// in float32), channel 1 moderate ones.
fn kept_case() -> Case {
    Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The reference's output of the GroupNormalization, with channel 0 replaced by NaN (PyTorch's
/// answer) and `delta` added to channel 1's first element.
fn answer(case: &Case, delta: f64) -> ArrayD<f64> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let mut out = eval.outputs[&(1, 0)][0].clone();
    out.index_axis_mut(Axis(2), 0).fill(f64::NAN);
    out[[0, 0, 1]] += delta;
    out
}

fn judge(case: &Case, backend: Backend, out: ArrayD<f64>) -> Vec<Verdict> {
    let tf = common::eager_outputs(vec![
        ("input_1", case.inputs[0].data.clone()),
        ("group_normalization", out),
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
fn a_nan_where_the_variance_cancels_is_the_kept_bug_on_pytorch() {
    let case = kept_case();
    let verdicts = judge(&case, Backend::Torch, answer(&case, 0.0));
    let v = the_finding(&verdicts);
    assert_eq!(v.kind, Kind::UnexpectedNan, "{v:?}");
    assert!(v.evidence.naive_variance, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
}

#[test]
fn a_wrong_value_in_a_group_that_does_not_cancel_is_a_finding() {
    let case = kept_case();
    let verdicts = judge(&case, Backend::Torch, answer(&case, 0.5));
    let v = the_finding(&verdicts);
    assert!(!v.evidence.naive_variance, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}

#[test]
fn the_same_nan_on_tensorflow_is_a_finding() {
    let case = kept_case();
    let verdicts = judge(&case, Backend::Tensorflow, answer(&case, 0.0));
    let v = the_finding(&verdicts);
    assert!(v.evidence.naive_variance, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}
