//! The case format against configs written by real Keras 3.15 (see tests/fixtures/keras,
//! made by scripts/make_fixtures.py): every fixture reads, writes back to the same JSON value
//! (derived shapes aside, see `strip_derived`), and its graph is what Keras built.

use std::path::{Path, PathBuf};

use oracle::case::graph::topological_order;
use oracle::case::{Arg, DeclaredInputShapes, Endpoints, ModelKind, WriteOptions, same_json};
use oracle::{Case, DType};
use serde_json::Value;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keras");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    v.sort();
    v
}

fn fixture(name: &str) -> Case {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/keras/{name}.case.json"));
    Case::read(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Removes what Keras derives from shapes: `build_config`, a Sequential's
/// `build_input_shape` and the `shape` of every `__keras_tensor__`.
fn strip_derived(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if o.get("class_name").and_then(Value::as_str) == Some("__keras_tensor__")
                && let Some(Value::Object(c)) = o.get_mut("config")
            {
                c.remove("shape");
            }
            if o.contains_key("class_name") && o.contains_key("config") {
                o.remove("build_config");
            }
            if o.contains_key("layers") {
                o.remove("build_input_shape");
            }
            o.values_mut().for_each(strip_derived);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_derived),
        _ => {}
    }
}

/// Every `__keras_tensor__` in document order: (keras_history, shape if written).
fn keras_tensors(v: &Value, out: &mut Vec<(Value, Option<Value>)>) {
    match v {
        Value::Object(o) => {
            if o.get("class_name").and_then(Value::as_str) == Some("__keras_tensor__") {
                let c = &o["config"];
                out.push((c["keras_history"].clone(), c.get("shape").cloned()));
            }
            o.values().for_each(|x| keras_tensors(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| keras_tensors(x, out)),
        _ => {}
    }
}

#[test]
fn there_are_enough_fixtures() {
    let names: Vec<_> = fixtures()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.len() >= 15, "{names:?}");
    assert_eq!(
        names.iter().filter(|n| n.starts_with("app_")).count(),
        3,
        "{names:?}"
    );
}

#[test]
fn every_fixture_round_trips_to_the_same_json() {
    for path in fixtures() {
        let original = read_json(&path);
        let case = Case::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let written = case.to_json(&DeclaredInputShapes);

        let (mut a, mut b) = (original.clone(), written.clone());
        strip_derived(&mut a);
        strip_derived(&mut b);
        assert!(
            same_json(&a, &b),
            "{}: written case differs from the original",
            path.display()
        );

        // Every shape the writer regenerates is the one Keras wrote.
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        keras_tensors(&original, &mut ka);
        keras_tensors(&written, &mut kb);
        assert_eq!(ka.len(), kb.len(), "{}", path.display());
        let mut regenerated = 0;
        for ((ha, sa), (hb, sb)) in ka.iter().zip(&kb) {
            assert_eq!(ha, hb, "{}", path.display());
            if let Some(sb) = sb {
                assert_eq!(sa.as_ref(), Some(sb), "{}: shape of {ha}", path.display());
                regenerated += 1;
            }
        }
        if let Some(b) = written["model"].get("build_input_shape") {
            assert_eq!(
                Some(b),
                original["model"].get("build_input_shape"),
                "{}",
                path.display()
            );
            regenerated += 1;
        }
        assert!(
            regenerated > 0,
            "{}: no input shape regenerated",
            path.display()
        );

        // Writing is a fixpoint.
        let again = Case::from_json_str(&written.to_string(), &path).unwrap();
        assert_eq!(
            again.to_json(&DeclaredInputShapes),
            written,
            "{}",
            path.display()
        );
    }
}

#[test]
fn sidecars_are_read_and_written_back() {
    let case = fixture("app_mobilenet");
    assert_eq!(case.npz.as_deref(), Some("app_mobilenet.npz"));
    let kernel = &case.weights["conv1"][0];
    assert_eq!(kernel.npz_key.as_deref(), Some("weights/conv1/0"));
    assert_eq!(kernel.shape(), &[3, 3, 3, 8]);
    assert!(
        kernel.data.iter().any(|&x| x != 0.0),
        "weights were loaded from the sidecar"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copy.case.json");
    case.write(&out, &DeclaredInputShapes, WriteOptions::DURABLE)
        .unwrap();
    assert!(dir.path().join("app_mobilenet.npz").exists());
    let back = Case::read(&out).unwrap();
    assert_eq!(back, case);
}

#[test]
fn a_new_sidecar_is_named_after_the_case() {
    let mut case = fixture("dense_chain");
    case.weights
        .values_mut()
        .flatten()
        .enumerate()
        .for_each(|(i, t)| t.npz_key = Some(format!("w{i}")));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.case.json");
    case.write(&out, &DeclaredInputShapes, WriteOptions::default())
        .unwrap();
    let back = Case::read(&out).unwrap();
    assert_eq!(back.npz.as_deref(), Some("small.npz"));
    assert_eq!(back.weights, case.weights);
}

#[test]
fn special_values_survive_exactly() {
    let case = fixture("special_values");
    assert_eq!(case.dtype, DType::Float64);
    let data: Vec<f64> = case
        .inputs
        .iter()
        .flat_map(|t| t.data.iter().copied())
        .collect();
    assert!(data.iter().any(|x| x.is_nan()));
    assert!(data.contains(&f64::INFINITY) && data.contains(&f64::NEG_INFINITY));
    assert!(data.contains(&5e-324) && data.contains(&f64::MAX) && data.contains(&0.1));
    assert!(data.iter().any(|&x| x == 0.0 && x.is_sign_negative()));
}

#[test]
fn the_graph_forms_keras_writes_are_understood() {
    let kind = |name: &str| fixture(name).model.kind;
    assert!(matches!(
        kind("dense_chain"),
        ModelKind::Functional {
            inputs: Endpoints::Single(_),
            outputs: Endpoints::Single(_)
        }
    ));
    assert!(matches!(
        kind("multi_io"),
        ModelKind::Functional {
            inputs: Endpoints::List(_),
            outputs: Endpoints::List(_)
        }
    ));
    assert!(matches!(kind("sequential_top"), ModelKind::Sequential));

    // Dict inputs flatten sorted by key, like model.inputs.
    let dict = fixture("dict_inputs");
    let names: Vec<_> = dict
        .model
        .input_refs()
        .into_iter()
        .map(|r| r.layer)
        .collect();
    assert_eq!(names, ["features", "tokens"]);

    // A shared layer: two calls, and someone consumes the second.
    let shared = fixture("shared_layer");
    let dense = shared.model.layer("dense").unwrap();
    assert_eq!(dense.nodes.len(), 2);
    assert!(
        shared
            .model
            .layers
            .iter()
            .flat_map(|l| &l.nodes)
            .flat_map(|n| n.tensors())
            .any(|t| t.layer == "dense" && t.node == 1)
    );

    // Nested models are parsed as models.
    let nested = fixture("nested_functional");
    let inner = nested
        .model
        .layers
        .iter()
        .find(|l| l.class_name == "Functional")
        .unwrap();
    assert!(matches!(
        inner.nested.as_deref().map(|m| &m.kind),
        Some(ModelKind::Functional { .. })
    ));
    assert_eq!(inner.nodes.len(), 2);
    // Outputs taken straight from a nested functional model: Keras numbers its calls from 1
    // there (its first node is the one it was built with); the case numbers them from 0.
    let direct = fixture("nested_functional_output");
    let ModelKind::Functional { outputs, .. } = &direct.model.kind else {
        panic!("a functional model");
    };
    let calls: Vec<(&str, usize)> = outputs
        .refs()
        .iter()
        .map(|r| (r.layer.as_str(), r.node))
        .collect();
    assert_eq!(calls, [("inner", 0), ("inner", 1)]);
    let written = direct
        .model
        .to_json(&oracle::case::DeclaredInputShapes, &[]);
    assert_eq!(
        written["output_layers"],
        serde_json::json!([["inner", 1, 0], ["inner", 2, 0]])
    );
    let seq = fixture("nested_sequential");
    let inner = seq
        .model
        .layers
        .iter()
        .find(|l| l.class_name == "Sequential")
        .unwrap();
    assert!(matches!(
        inner.nested.as_deref().map(|m| &m.kind),
        Some(ModelKind::Sequential)
    ));

    // Operation nodes keep their module and constant operands.
    let ops = fixture("operation_nodes");
    let add = ops
        .model
        .layers
        .iter()
        .find(|l| l.module.as_deref() == Some("keras.src.ops.numpy") && l.class_name == "Add")
        .unwrap();
    assert!(
        add.nodes[0]
            .args
            .iter()
            .any(|a| matches!(a, Arg::Literal(v) if v.as_f64() == Some(3.0)))
    );

    // Non-tensor and tensor keyword arguments.
    let kw = fixture("call_kwargs");
    let kwargs: Vec<_> = kw
        .model
        .layers
        .iter()
        .flat_map(|l| &l.nodes)
        .flat_map(|n| &n.kwargs)
        .collect();
    assert!(
        kwargs
            .iter()
            .any(|(k, a)| k == "training" && *a == Arg::Literal(Value::Bool(false)))
    );
    assert!(
        kwargs
            .iter()
            .any(|(k, a)| k == "use_causal_mask" && *a == Arg::Literal(Value::Bool(true)))
    );
    assert!(
        kwargs
            .iter()
            .any(|(k, a)| k == "initial_state" && a.tensors().len() == 2)
    );

    // Integer inputs carry their dtype; a layer's third output is consumed.
    assert_eq!(
        fixture("embedding_int_input").inputs[0].dtype,
        Some(DType::Int32)
    );
    let mo = fixture("multi_output_layer");
    let ModelKind::Functional { outputs, .. } = &mo.model.kind else {
        panic!()
    };
    assert!(outputs.refs().iter().any(|r| r.index == 2));
}

#[test]
fn calls_are_ordered_after_their_inputs() {
    for path in fixtures() {
        let case = Case::read(&path).unwrap();
        let order = topological_order(&case.model).unwrap();
        let pos = |l: usize, n: usize| order.iter().position(|&c| c == (l, n)).unwrap();
        for &(l, n) in &order {
            for t in case.model.layers[l]
                .nodes
                .get(n)
                .map(|n| n.tensors())
                .unwrap_or_default()
            {
                let src = case
                    .model
                    .layers
                    .iter()
                    .position(|x| x.name == t.layer)
                    .unwrap();
                assert!(
                    pos(src, t.node) < pos(l, n),
                    "{}: {} before its input {}",
                    path.display(),
                    case.model.layers[l].name,
                    t.layer
                );
            }
        }
    }
}

/// Fixtures whose every layer the reference supports are written back exactly, derived
/// shapes included.
#[test]
fn supported_fixtures_round_trip_exactly_with_derived_shapes() {
    let mut exact = Vec::new();
    for path in fixtures() {
        let case = Case::read(&path).unwrap();
        if oracle::check::check_model(
            &case.model,
            &oracle::check::declared_inputs(&case.model).unwrap(),
            case.dtype,
        )
        .is_err()
        {
            continue;
        }
        let written = case.to_json(&oracle::check::CheckedShapes::of(&case));
        assert!(
            same_json(&read_json(&path), &written),
            "{}: {}",
            path.display(),
            written
        );
        exact.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    for name in [
        "dense_chain.case.json",
        "nested_sequential.case.json",
        "special_values.case.json",
    ] {
        assert!(
            exact.iter().any(|e| e == name),
            "{name} not checked: {exact:?}"
        );
    }
}
