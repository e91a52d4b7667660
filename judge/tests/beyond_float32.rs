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

/// A float64 `LayerNormalization` (PyTorch computes it in float32) of eight values whose
/// largest, 2.6e20, float32 holds but whose square it does not, scaled by `scale`.
fn layer_norm_case(scale: f64) -> Case {
    let text = r#"{"format": "semfuzz-case/1", "dtype": "float64", "model": {"name": "functional",
      "trainable": true, "layers": [
      {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 8],
       "dtype": "float64", "sparse": false, "ragged": false, "name": "input_1", "optional": false},
       "registered_name": null, "name": "input_1", "inbound_nodes": []},
      {"module": "keras.layers", "class_name": "LayerNormalization", "config": {
       "name": "layer_normalization", "trainable": true, "dtype": {"module": "keras",
       "class_name": "DTypePolicy", "config": {"name": "float64"}, "registered_name": null}},
       "registered_name": null, "build_config": {"input_shape": [null, 8]},
       "name": "layer_normalization", "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
       "config": {"shape": [null, 8], "keras_history": ["input_1", 0, 0]}}], "kwargs": {}}]}],
      "input_layers": [["input_1", 0, 0]], "output_layers": [["layer_normalization", 0, 0]]},
      "weights": {"layer_normalization": [
       {"shape": [8], "data": [-0.0, -0.0, 1.0, -0.0, -0.0, -1.0, -1.0, 0.0]},
       {"shape": [8], "data": [-0.0, -1.0, -0.0, -1.0, 1.0, -0.0, -0.0, 1.0]}]},
      "inputs": [{"shape": [1, 8], "data": [0.36595508121354925, 360.19974517822266,
       670213.6528701782, 159479040.0, 20452641079296.0, 0.0, 2.637724876597415e+20, 0.0]}]}"#;
    let mut case = Case::from_json_str(text, "layer_norm.case.json").unwrap();
    case.inputs[0].data.mapv_inplace(|x| x * scale);
    case
}

/// PyTorch's answer to the case: what float32 gives where the variance overflows, the beta
/// alone (the torch campaign's float64 LayerNormalization, normwise error 0.72).
fn judge_layer_norm(case: &Case) -> Vec<Verdict> {
    let beta = case.weights["layer_normalization"][1].data.clone();
    let out = beta.into_shape_with_order(vec![1, 8]).unwrap();
    let tf = common::eager_outputs(vec![
        ("input_1", case.inputs[0].data.clone()),
        ("layer_normalization", out),
    ]);
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(Backend::Torch, "3.15.1", "2.21.0"),
    )
    .judge(case, DType::Float64, &oracle::check(case), &tf)
}

#[test]
fn a_variance_beyond_float32_is_the_limitation_and_the_same_answer_within_it_a_finding() {
    let v = judge_layer_norm(&layer_norm_case(1.0))
        .into_iter()
        .find(|v| v.kind == Kind::Mismatch)
        .expect("the beta against the normalized values");
    assert!(v.evidence.beyond_float32, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    // Squares float32 holds: the same answer is a wrong result.
    let v = judge_layer_norm(&layer_norm_case(1e-10))
        .into_iter()
        .find(|v| v.kind == Kind::Mismatch)
        .expect("the beta against the normalized values");
    assert!(!v.evidence.beyond_float32, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}
