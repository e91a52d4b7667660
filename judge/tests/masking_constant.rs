//! A float64 `Masking` compares its inputs with a float32 copy of `mask_value` (a kept Keras
//! bug). Where the framework's Masking output agrees with the reference's once that constant
//! is rounded, the layers after it are judged with the masks the framework computed: a
//! `Minimum` that skips the step the framework masked is no new divergence.

mod common;

use judge::{Judge, Kind, Suppressions, Target, Verdict};
use ndarray::ArrayD;
use oracle::{Case, DType};
use serde_json::json;

/// `mask_value` 0.1, which float32 cannot hold; the input's first step holds float32(0.1).
fn case() -> Case {
    let dtype = json!({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float64"}, "registered_name": null});
    let tensor = |name: &str| json!({"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}});
    let f32 = f64::from(0.1f32);
    let v = json!({
        "format": "semfuzz-case/1", "dtype": "float64",
        "model": {"name": "m", "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
             "config": {"batch_shape": [null, 2, 2], "dtype": "float64", "name": "x"}, "inbound_nodes": []},
            {"module": "keras.layers", "class_name": "Masking", "name": "masking", "registered_name": null,
             "config": {"name": "masking", "dtype": dtype, "mask_value": 0.1},
             "inbound_nodes": [{"args": [tensor("x")], "kwargs": {}}]},
            {"module": "keras.layers", "class_name": "Minimum", "name": "minimum", "registered_name": null,
             "config": {"name": "minimum", "dtype": dtype},
             "inbound_nodes": [{"args": [[tensor("masking"), tensor("x")]], "kwargs": {}}]}
        ], "input_layers": [["x", 0, 0]], "output_layers": [["minimum", 0, 0]]},
        "weights": {},
        "inputs": [{"shape": [1, 2, 2], "data": [f32, f32, 0.5, 0.75]}]
    });
    Case::from_json_str(&v.to_string(), "masking.case.json").unwrap()
}

/// The verdicts on the framework's outputs: the first step masked (Masking zeroes it, and
/// Minimum takes the other input there).
fn judge(case: &Case) -> Vec<Verdict> {
    let x = case.inputs[0].data.clone();
    let mut masked = x.clone();
    masked[[0, 0, 0]] = 0.0;
    masked[[0, 0, 1]] = 0.0;
    let minimum: ArrayD<f64> = x.clone();
    let tf = common::eager_outputs(vec![("x", x), ("masking", masked), ("minimum", minimum)]);
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::tensorflow("3.15.1", "2.21.0"),
    )
    .judge(case, DType::Float64, &oracle::check(case), &tf)
}

#[test]
fn layers_after_a_rounded_mask_value_see_the_frameworks_mask() {
    let verdicts = judge(&case());
    let masking = verdicts
        .iter()
        .find(|v| v.layer.as_deref() == Some("masking"))
        .expect("the Masking's own divergence");
    assert_eq!(masking.kind, Kind::Mismatch, "{masking:?}");
    assert!(masking.evidence.float32_constants, "{masking:?}");
    assert!(masking.known.is_some(), "{masking:?}");
    assert!(
        verdicts
            .iter()
            .all(|v| v.layer.as_deref() != Some("minimum") || v.kind == Kind::Agree),
        "{verdicts:#?}"
    );
}
