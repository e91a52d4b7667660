//! The PyTorch limitation of float64 computed in float32 explains an overflow only where a
//! value is beyond float32's range: the same infinity from values float32 holds is a finding.

mod common;

use judge::{Backend, Judge, Kind, Suppressions, Target, Verdict};
use ndarray::ArrayD;
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-Dense-torch-float64-computed-in-float32";

/// The kept float64 Dense case with its input scaled by `scale`.
fn case(scale: f64) -> Case {
    let mut case = Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    case.inputs[0].data.mapv_inplace(|x| x * scale);
    case
}

/// The verdicts on PyTorch's answer: the reference's output of the Dense with its first
/// element overflowed to an infinity.
fn judge(case: &Case) -> Vec<Verdict> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let mut dense: ArrayD<f64> = eval.outputs[&(1, 0)][0].clone();
    let first = dense.iter_mut().next().unwrap();
    *first = f64::INFINITY.copysign(*first);
    let tf = common::eager_outputs(vec![
        ("input_1", case.inputs[0].data.clone()),
        ("dense", dense),
    ]);
    let judge = Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(Backend::Torch, "3.15.1", "2.21.0"),
    );
    judge.judge(case, DType::Float64, &oracle::check(case), &tf)
}

#[test]
fn an_overflow_is_the_limitation_only_beyond_float32s_range() {
    let beyond = judge(&case(1e300));
    let v = beyond
        .iter()
        .find(|v| v.kind == Kind::UnexpectedNan)
        .expect("an infinity against a finite value");
    assert!(v.evidence.beyond_float32, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    let within = judge(&case(1.0));
    let v = within
        .iter()
        .find(|v| v.kind == Kind::UnexpectedNan)
        .expect("an infinity against a finite value");
    assert!(!v.evidence.beyond_float32, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}
