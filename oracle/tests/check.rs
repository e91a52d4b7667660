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
