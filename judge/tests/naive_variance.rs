//! The kept PyTorch bug of `ops.moments` (a variance computed as `mean(x²) − mean(x)²`, which
//! cancels) explains a GroupNormalization's NaN only in a group whose values are close together
//! relative to their size: the same layer wrong in another group is a new finding, and so is the
//! NaN on a backend that computes the variance otherwise.

mod common;

use judge::{Backend, Judge, Kind, Suppressions, Target, Verdict};
use ndarray::{ArrayD, Axis};
use oracle::{Case, DType};
use serde_json::json;

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
    let layer = &case.model.layers[1].name;
    let tf = common::eager_outputs(vec![
        (
            case.model.layers[0].name.as_str(),
            case.inputs[0].data.clone(),
        ),
        (layer.as_str(), out),
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

/// A LayerNormalization of a `(1, 2, 1, 2)` input over `axes`, its values those of the kept
/// case's cancelling group: over axes 1 and 3 (not contiguous) Keras uses `ops.moments` on
/// PyTorch, over axes 2 and 3 `F.layer_norm`.
fn layer_norm_case(axes: [i64; 2]) -> Case {
    let dtype = json!({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null});
    // gamma and beta span the normalized axes; beta is not zero everywhere.
    let shape: Vec<usize> = axes.iter().map(|&a| [1, 2, 1, 2][a as usize]).collect();
    let size: usize = shape.iter().product();
    let mut beta = vec![0.0; size];
    beta[1] = 0.5;
    let v = json!({
        "format": "semfuzz-case/1", "dtype": "float32",
        "model": {"name": "m", "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
             "config": {"batch_shape": [null, 2, 1, 2], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
            {"module": "keras.layers", "class_name": "LayerNormalization", "name": "ln", "registered_name": null,
             "config": {"name": "ln", "dtype": dtype, "axis": axes},
             "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
        ], "input_layers": [["x", 0, 0]], "output_layers": [["ln", 0, 0]]},
        "weights": {"ln": [{"shape": shape, "data": vec![1.0; size]}, {"shape": shape, "data": beta}]},
        "inputs": [{"shape": [1, 2, 1, 2], "data": [1000.0081176757812, 1000.0091552734375, 1000.0060424804688, 1000.00732421875]}]
    });
    Case::from_json_str(&v.to_string(), "layer-norm.case.json").unwrap()
}

#[test]
fn a_layer_normalization_over_axes_apart_is_explained_only_there() {
    for (axes, explained) in [([1, 3], true), ([2, 3], false)] {
        let case = layer_norm_case(axes);
        let analysis = oracle::check(&case).unwrap();
        let mut out = oracle::eval(&case, &analysis).unwrap().outputs[&(1, 0)][0].clone();
        if explained {
            // One group: every element is NaN.
            out.fill(f64::NAN);
        } else {
            // Two groups (one per index on axis 1); the first is NaN.
            out.index_axis_mut(Axis(1), 0).fill(f64::NAN);
        }
        let verdicts = judge(&case, Backend::Torch, out);
        let v = the_finding(&verdicts);
        assert_eq!(v.kind, Kind::UnexpectedNan, "{v:?}");
        assert_eq!(v.evidence.naive_variance, explained, "{axes:?}: {v:?}");
        assert_eq!(v.known.is_some(), explained, "{axes:?}: {v:?}");
    }
}

/// The PyTorch campaign's float64 `GroupNormalization(groups=-1)` (Keras computes it in
/// float32 there) and torch's answer: each element off by the cancelling variance and by
/// float32's rounding of the rest (1.2e-3 at most).
fn float64_case() -> (Case, ArrayD<f64>) {
    let path = format!(
        "{}/tests/data/group-normalization-float64-torch.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let case = Case::from_json_str(&v["case"].to_string(), &path).unwrap();
    let out = &v["torch_output"];
    let shape: Vec<usize> = serde_json::from_value(out["shape"].clone()).unwrap();
    let data: Vec<f64> = serde_json::from_value(out["data"].clone()).unwrap();
    (case, ArrayD::from_shape_vec(shape, data).unwrap())
}

fn judge_float64(case: &Case, out: ArrayD<f64>) -> Vec<Verdict> {
    let tf = common::eager_outputs(vec![
        ("input_1", case.inputs[0].data.clone()),
        ("group_normalization", out),
    ]);
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(Backend::Torch, "3.15.1", "2.21.0"),
    )
    .judge(case, DType::Float64, &oracle::check(case), &tf)
}

#[test]
fn a_float64_group_normalization_takes_float32_rounding_beside_the_variance() {
    let (case, out) = float64_case();
    let v = the_finding(&judge_float64(&case, out.clone())).clone();
    assert_eq!(v.kind, Kind::Mismatch, "{v:?}");
    assert!(v.evidence.naive_variance, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    // One element a hundredth off besides: a finding.
    let mut off = out;
    off[[0, 0, 0]] += 1e-2;
    let v = the_finding(&judge_float64(&case, off)).clone();
    assert!(!v.evidence.naive_variance, "{v:?}");
    assert_eq!(v.known, None, "{v:?}");
}
