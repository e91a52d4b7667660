//! The PyTorch limitation of float64 computed in float32 explains a float64 layer's divergence
//! within the tolerance the layer has in a float32 run, and nothing larger.

mod common;

use judge::{Backend, Judge, Suppressions, Target, Verdict};
use ndarray::ArrayD;
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-Dense-torch-float64-computed-in-float32";

fn kept_case() -> Case {
    Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The verdicts on PyTorch's answer: the reference's output of the Dense, changed by `edit`.
fn judge(case: &Case, edit: impl Fn(f64) -> f64) -> Vec<Verdict> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let dense: ArrayD<f64> = eval.outputs[&(1, 0)][0].mapv(edit);
    let tf = common::eager_outputs(vec![
        ("input_1", case.inputs[0].data.clone()),
        ("dense", dense),
    ]);
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(Backend::Torch, "3.15.1", "2.21.0"),
    )
    .judge(case, DType::Float64, &oracle::check(case), &tf)
}

#[test]
fn a_float32_computation_is_the_limitation_and_more_is_a_finding() {
    let case = kept_case();
    // Each output element off by four float32 units in the last place.
    let f32_ulps = |x: f64| x * (1.0 + 4.0 * f64::from(f32::EPSILON));
    let verdicts = judge(&case, f32_ulps);
    let v = verdicts.first().expect("a mismatch");
    assert!(v.evidence.float32_tolerance, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");

    let off = |x: f64| x * (1.0 + 1e-3);
    let verdicts = judge(&case, off);
    let v = verdicts.first().expect("a mismatch");
    assert!(!v.evidence.float32_tolerance, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}
