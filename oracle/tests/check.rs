//! The graph checker over whole models: the first violation in topological order, or all of
//! them on request (downstream consequences of a violation are not reported).

use oracle::case::DeclaredInputShapes;
use oracle::check::{CheckError, check, check_all};
use oracle::{Case, Category};
use serde_json::{Value, json};

fn layer(class: &str, name: &str, config: Value, inputs: &[&str]) -> Value {
    let args: Vec<Value> = inputs
        .iter()
        .map(|i| json!({"class_name": "__keras_tensor__", "config": {"keras_history": [i, 0, 0]}}))
        .collect();
    let args = if args.len() == 1 {
        args
    } else {
        vec![Value::Array(args)]
    };
    let mut config = config;
    config["name"] = json!(name);
    json!({"module": "keras.layers", "class_name": class, "name": name, "registered_name": null, "config": config, "inbound_nodes": [{"args": args, "kwargs": {}}]})
}

fn case(layers: Vec<Value>, outputs: &[&str]) -> Case {
    let mut all = vec![
        json!({"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null, "config": {"batch_shape": [null, 4], "dtype": "float32", "name": "x"}, "inbound_nodes": []}),
    ];
    all.extend(layers);
    let outs: Vec<Value> = outputs.iter().map(|o| json!([o, 0, 0])).collect();
    let v = json!({"format": "semfuzz-case/1", "dtype": "float32", "model": {"name": "m", "layers": all, "input_layers": [["x", 0, 0]], "output_layers": outs}});
    Case::from_json_str(&v.to_string(), "t.case.json").unwrap()
}

#[test]
fn every_independent_violation_is_listed_and_consequences_are_not() {
    let c = case(
        vec![
            layer("Dense", "bad_units", json!({"units": 0}), &["x"]),
            layer("ReLU", "after_bad", json!({}), &["bad_units"]),
            layer("ReLU", "bad_slope", json!({"negative_slope": -1.0}), &["x"]),
            layer("Dense", "fine", json!({"units": 3}), &["x"]),
            layer("Add", "bad_add", json!({}), &["fine", "x"]),
        ],
        &["after_bad", "bad_slope", "bad_add"],
    );
    let all = check_all(&c).unwrap();
    let names: Vec<(&str, Category)> = all.iter().map(|v| (v.layer.as_str(), v.category)).collect();
    assert_eq!(
        names,
        vec![
            ("bad_units", Category::IllegalArgument),
            ("bad_slope", Category::IllegalArgument),
            ("bad_add", Category::IncompatibleShapes)
        ]
    );
    // The first one alone, in topological order.
    let Err(CheckError::Invalid(first)) = check(&c) else {
        panic!()
    };
    assert_eq!(first.layer, "bad_units");
    assert_eq!(first.to_string(), all[0].to_string());
}

#[test]
fn a_valid_model_has_no_violations_and_its_shapes_are_derived() {
    let c = case(
        vec![
            layer("Dense", "d", json!({"units": 3}), &["x"]),
            layer("ReLU", "r", json!({}), &["d"]),
        ],
        &["r"],
    );
    assert!(check_all(&c).unwrap().is_empty());
    let analysis = check(&c).unwrap();
    assert_eq!(analysis.outputs, vec![vec![None, Some(3)]]);
    let written = c.to_json(&oracle::check::CheckedShapes::of(&c));
    assert_eq!(
        written["model"]["layers"][2]["inbound_nodes"][0]["args"][0]["config"]["shape"],
        json!([null, 3])
    );
    let declared_only = c.to_json(&DeclaredInputShapes);
    assert!(
        declared_only["model"]["layers"][2]["inbound_nodes"][0]["args"][0]["config"]
            .get("shape")
            .is_none()
    );
}

/// Keras names the operations it creates to compute masks from its own counter, which the
/// names of a config do not advance: a layer named like one of them, in a graph where a later
/// call receives that mask (TimeDistributed here), is refused as a duplicate name.
#[test]
fn layer_names_taken_by_mask_operations_are_refused() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/masks/mask_concatenate_name_taken.case.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let renamed = |pairs: &[(&str, &str)]| {
        let mut t = text.clone();
        for (from, to) in pairs {
            t = t.replace(&format!("\"{from}\""), &format!("\"{to}\""));
        }
        Case::from_json_str(&t, "renamed.case.json").unwrap()
    };
    let refused_at = |c: &Case| match check(c) {
        Err(CheckError::Invalid(v)) => {
            assert_eq!(v.category, Category::Structure, "{v}");
            v.layer
        }
        other => panic!("expected a duplicate name, got {other:?}"),
    };
    // Masking's mask makes `not_equal` and `any`; Concatenate's makes `ones_like`,
    // `concatenate` and `any_1`; TimeDistributed receives the mask.
    assert_eq!(refused_at(&renamed(&[])), "concatenate");
    assert!(check(&renamed(&[("concatenate", "concatenate_layer")])).is_ok());
    let second_any = renamed(&[("concatenate", "c"), ("time_distributed", "any_1")]);
    assert_eq!(refused_at(&second_any), "any_1");
    assert!(
        check(&renamed(&[
            ("concatenate", "c"),
            ("time_distributed", "any_2")
        ]))
        .is_ok()
    );
    // Without a call that receives the mask, its operations are not in the graph.
    let unconsumed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/masks/mask_concatenate_name_unconsumed.case.json"
    );
    assert!(check(&Case::read(unconsumed).unwrap()).is_ok());
}

/// Weights that misfit a layer whose input changed are listed beside a later layer's
/// violation: Keras refuses them at `set_weights`, before the later layer is reached, so a
/// case with both breaks two preconditions.
#[test]
fn misfitting_weights_are_listed_beside_a_later_violation() {
    let c = case(
        vec![
            layer("Dense", "d", json!({"units": 3}), &["x"]),
            layer("Dense", "bad_units", json!({"units": 0}), &["d"]),
        ],
        &["bad_units"],
    );
    // The kernel of a Dense on 7 features, not on the 4 the input has.
    let mut v = c.to_json(&DeclaredInputShapes);
    v["weights"] = json!({"d": [
        {"shape": [7, 3], "data": vec![0.0; 21]},
        {"shape": [3], "data": [0.0, 0.0, 0.0]}
    ]});
    let c = Case::from_json_str(&v.to_string(), "t.case.json").unwrap();
    let all = check_all(&c).unwrap();
    let names: Vec<(&str, Category)> = all.iter().map(|v| (v.layer.as_str(), v.category)).collect();
    assert_eq!(
        names,
        vec![
            ("bad_units", Category::IllegalArgument),
            ("d", Category::WeightShape)
        ]
    );
}

/// A violation that only the input arrays' sizes show (the model declares them `None`) is one
/// no check at build could see; one the declared shapes show is refused at build.
#[test]
fn a_violation_of_sizes_unknown_at_build_is_marked_so() {
    use oracle::violation::Refused;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crashes/crash-MaxPooling1D-sigfpe/case.case.json"
    );
    let mut c = Case::read(path).unwrap();
    let Err(CheckError::Invalid(v)) = check(&c) else {
        panic!("a pool longer than the input")
    };
    assert_eq!(v.refused, Refused::UnknownAtBuild, "{v:?}");
    let mut v_json = c.to_json(&DeclaredInputShapes);
    v_json["model"]["layers"][0]["config"]["batch_shape"] = json!([null, 5, 1]);
    c = Case::from_json_str(&v_json.to_string(), "t.case.json").unwrap();
    let Err(CheckError::Invalid(v)) = check(&c) else {
        panic!("a pool longer than the declared input")
    };
    assert_eq!(v.refused, Refused::AtBuild, "{v:?}");
}

/// A model that builds but meets a violation only when a layer runs (here TF's float64 CPU
/// kernels refusing a channels_first convolution) fails, on the arrays' sizes, first at an
/// earlier layer whose sizes were unknown at build: that earlier refusal is the one reported.
#[test]
fn a_size_dependent_violation_before_a_run_time_one_comes_first() {
    use oracle::violation::Refused;
    let pool = layer(
        "MaxPooling1D",
        "pool",
        json!({"pool_size": 4, "strides": 4, "padding": "valid", "data_format": "channels_first"}),
        &["x"],
    );
    let conv = layer(
        "Conv1D",
        "conv",
        json!({"filters": 2, "kernel_size": 1, "data_format": "channels_first"}),
        &["pool"],
    );
    let with_length = |length: usize| {
        let v = json!({
            "format": "semfuzz-case/1", "dtype": "float64",
            "model": {"name": "m", "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null, "config": {"batch_shape": [null, 3, null], "dtype": "float64", "name": "x"}, "inbound_nodes": []},
                pool.clone(), conv.clone()
            ], "input_layers": [["x", 0, 0]], "output_layers": [["conv", 0, 0]]},
            "inputs": [{"shape": [1, 3, length], "data": vec![0.5; 3 * length]}]
        });
        Case::from_json_str(&v.to_string(), "t.case.json").unwrap()
    };
    // Long enough to pool: the convolution's run-time refusal.
    let Err(CheckError::Invalid(v)) = check(&with_length(8)) else {
        panic!("a float64 channels_first convolution on TF's CPU kernels")
    };
    assert_eq!(
        (v.layer.as_str(), v.refused),
        ("conv", Refused::ByCpuKernels)
    );
    // Shorter than the pool: the pooling fails first.
    let Err(CheckError::Invalid(v)) = check(&with_length(2)) else {
        panic!("a pool longer than the input")
    };
    assert_eq!(
        (v.layer.as_str(), v.refused),
        ("pool", Refused::UnknownAtBuild),
        "{v:?}"
    );
}
