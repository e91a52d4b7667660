//! The kept PyTorch bug of LayerNormalization over non-trailing axes (torch's kernel
//! normalises the trailing ones) explains a wrong result only where the layer's axes are
//! consecutive and not trailing: the same answer from a layer over the last axis is a finding.

mod common;

use judge::{Backend, Judge, Kind, Suppressions, Target, Verdict};
use ndarray::ArrayD;
use oracle::{Case, DType};

const FOLDER: &str = "unexpected-rejection-LayerNormalization-torch-non-trailing-axes";

/// `LayerNormalization(axis, center=False, scale=False)` on a float32 2×2 input.
fn case(axis: i64) -> Case {
    let text = serde_json::json!({"format": "semfuzz-case/1", "dtype": "float32",
        "model": {"name": "m", "trainable": true, "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
             "config": {"batch_shape": [null, 2], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
            {"module": "keras.layers", "class_name": "LayerNormalization", "name": "ln",
             "registered_name": null,
             "config": {"name": "ln", "axis": axis, "center": false, "scale": false},
             "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
             "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}],
            "input_layers": ["x", 0, 0], "output_layers": ["ln", 0, 0]},
        "inputs": [{"shape": [2, 2], "data": [0.4633264511661377, -0.34185600239477587,
                                              0.04494035300554611, -0.32945606815892914]}]});
    Case::from_json_str(&text.to_string(), "ln.case.json").unwrap()
}

/// The verdicts on PyTorch's answer, each row normalised (what torch gives for `axis=0`).
fn judge(case: &Case) -> Vec<Verdict> {
    let rows = ArrayD::from_shape_vec(
        vec![2, 2],
        vec![
            0.9969292879104614,
            -0.9969292879104614,
            0.9860302209854126,
            -0.9860302209854126,
        ],
    )
    .unwrap();
    let tf = common::eager_outputs(vec![("x", case.inputs[0].data.clone()), ("ln", rows)]);
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(Backend::Torch, "3.15.1", "2.21.0"),
    )
    .judge(case, DType::Float32, &oracle::check(case), &tf)
}

#[test]
fn rows_for_columns_is_the_bug_only_where_the_axes_are_not_trailing() {
    let mismatch = |vs: Vec<Verdict>| {
        vs.into_iter()
            .find(|v| v.kind == Kind::Mismatch)
            .expect("rows against columns")
    };
    let v = mismatch(judge(&case(0)));
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    // Over the last axis the reference normalises the rows too: an answer off there is new.
    let mut last = case(-1);
    last.inputs[0].data[[0, 0]] += 0.05;
    let v = mismatch(judge(&last));
    assert_eq!(v.known, None, "{v:?}");
}
