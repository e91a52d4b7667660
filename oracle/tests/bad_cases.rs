//! Broken and hostile case files end in a clear error naming the file and the place, never
//! in a panic.

use oracle::{Case, CaseErrorKind};
use serde_json::{Value, json};

/// A small valid case: Input(4) -> Dense(2), one input array.
fn valid() -> Value {
    json!({
        "format": "semfuzz-case/1",
        "dtype": "float32",
        "model": {
            "name": "m", "trainable": true,
            "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
                 "config": {"batch_shape": [null, 4], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "Dense", "name": "d", "registered_name": null,
                 "config": {"name": "d", "units": 2},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 4], "dtype": "float32", "keras_history": ["x", 0, 0]}}], "kwargs": {}}]}
            ],
            "input_layers": [["x", 0, 0]],
            "output_layers": [["d", 0, 0]]
        },
        "weights": {"d": [{"shape": [4, 2], "data": [1, 2, 3, 4, 5, 6, 7, 8]}, {"shape": [2], "data": [0, 0]}]},
        "inputs": [{"shape": [1, 4], "data": [1, 2, 3, 4]}]
    })
}

/// Parses `v` as the file `bad.case.json`; returns the error's text.
fn error_of(v: &Value) -> String {
    error_of_text(&v.to_string())
}

fn error_of_text(text: &str) -> String {
    match Case::from_json_str(text, "dir/bad.case.json") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

fn edit(f: impl FnOnce(&mut Value)) -> Value {
    let mut v = valid();
    f(&mut v);
    v
}

#[test]
fn the_valid_case_is_valid() {
    let case = Case::from_json_str(&valid().to_string(), "ok.case.json").unwrap();
    assert_eq!(case.model.layers.len(), 2);
    assert_eq!(case.weights["d"][0].shape(), &[4, 2]);
}

#[test]
fn malformed_json_names_line_and_column() {
    assert_eq!(
        error_of_text("{\n  \"format\": \"semfuzz-case/1\",\n  \"dtype\": }"),
        "dir/bad.case.json: malformed JSON at line 3, column 12: expected value"
    );
}

#[test]
fn missing_fields_are_named() {
    let e = error_of(&edit(|v| {
        v.as_object_mut().unwrap().remove("model");
    }));
    assert_eq!(e, "dir/bad.case.json: missing field `model`");
    let e = error_of(&edit(|v| {
        v["model"]["layers"][1]
            .as_object_mut()
            .unwrap()
            .remove("class_name");
    }));
    assert_eq!(
        e,
        "dir/bad.case.json: model.layers[1]: missing field `class_name`"
    );
    let e = error_of(&edit(|v| {
        v["model"]["layers"][1]["inbound_nodes"][0]["args"][0]["config"]
            .as_object_mut()
            .unwrap()
            .remove("keras_history");
    }));
    assert_eq!(
        e,
        "dir/bad.case.json: model.layers[1](d).inbound_nodes[0].args[0].config: missing field `keras_history`"
    );
}

#[test]
fn unknown_format_versions_are_refused() {
    let e = error_of(&edit(|v| v["format"] = json!("semfuzz-case/2")));
    assert_eq!(
        e,
        "dir/bad.case.json: format: unknown format `semfuzz-case/2` (this semfuzz reads `semfuzz-case/1`)"
    );
    let e = error_of(&edit(|v| v["dtype"] = json!("int32")));
    assert!(
        e.contains("dtype: a model's compute dtype must be a float type"),
        "{e}"
    );
    let e = error_of(&edit(|v| v["dtype"] = json!("float128")));
    assert!(e.contains("dtype: unknown dtype `float128`"), "{e}");
}

#[test]
fn references_to_missing_layers_and_calls_are_refused() {
    let e = error_of(&edit(|v| {
        v["model"]["layers"][1]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] =
            json!(["nope", 0, 0])
    }));
    assert_eq!(
        e,
        "dir/bad.case.json: model.layers[1](d).inbound_nodes[0]: refers to layer `nope`, which does not exist"
    );
    let e = error_of(&edit(|v| {
        v["model"]["output_layers"] = json!([["d", 1, 0]])
    }));
    assert_eq!(
        e,
        "dir/bad.case.json: model.output_layers: refers to call 1 of layer `d`, which is called 1 time(s)"
    );
    let e = error_of(&edit(|v| v["model"]["input_layers"] = json!([["d", 0, 0]])));
    assert!(
        e.ends_with("model input `d` is a Dense, not an InputLayer"),
        "{e}"
    );
    let e = error_of(&edit(|v| v["weights"]["ghost"] = json!([])));
    assert_eq!(
        e,
        "dir/bad.case.json: weights.ghost: refers to layer `ghost`, which does not exist"
    );
    let e = error_of(&edit(|v| v["model"]["layers"][1]["name"] = json!("x")));
    assert!(e.ends_with("two layers are named `x`"), "{e}");
}

#[test]
fn cycles_are_refused() {
    // d consumes e, e consumes d.
    let e = error_of(&edit(|v| {
        let mut e_layer = v["model"]["layers"][1].clone();
        e_layer["name"] = json!("e");
        e_layer["config"]["name"] = json!("e");
        e_layer["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = json!(["d", 0, 0]);
        v["model"]["layers"][1]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] =
            json!(["e", 0, 0]);
        v["model"]["layers"].as_array_mut().unwrap().push(e_layer);
    }));
    assert!(
        e.starts_with("dir/bad.case.json: model: the graph has a cycle: "),
        "{e}"
    );
    assert!(e.contains("d[0]") && e.contains("e[0]"), "{e}");
}

#[test]
fn data_must_match_its_shape() {
    let e = error_of(&edit(|v| v["inputs"][0]["data"] = json!([1, 2, 3])));
    assert_eq!(
        e,
        "dir/bad.case.json: inputs[0]: data has 3 values but shape [1, 4] needs 4"
    );
    let e = error_of(&edit(|v| v["weights"]["d"][0]["shape"] = json!([4, -2])));
    assert_eq!(
        e,
        "dir/bad.case.json: weights.d[0].shape: dimension 1 of shape [4, -2] is negative"
    );
    let e = error_of(&edit(|v| {
        v["inputs"][0]["shape"] = json!([100000, 100000, 100000])
    }));
    assert!(e.starts_with("dir/bad.case.json: inputs[0].shape: shape [100000, 100000, 100000] has 1000000000000000 elements, more than the limit"), "{e}");
    let e = error_of(&edit(|v| v["inputs"][0]["shape"] = json!([1, 4.5])));
    assert!(
        e.contains("inputs[0].shape[1]: expected an integer dimension, found number 4.5"),
        "{e}"
    );
    let e = error_of(&edit(|v| v["inputs"][0]["data"][2] = json!("infinity")));
    assert!(e.contains("inputs[0].data[2]: expected a number"), "{e}");
    let e = error_of(&edit(|v| {
        v["inputs"]
            .as_array_mut()
            .unwrap()
            .push(json!({"shape": [1], "data": [0]}))
    }));
    assert!(
        e.ends_with("inputs: 2 input arrays for a model with 1 input(s)"),
        "{e}"
    );
}

#[test]
fn code_is_never_loaded() {
    let e = error_of(&edit(|v| {
        v["model"]["layers"][1]["class_name"] = json!("Lambda");
        v["model"]["layers"][1]["config"]["function"] =
            json!({"class_name": "__lambda__", "config": {"code": "4wEAAAAA"}});
    }));
    assert_eq!(
        e,
        "dir/bad.case.json: model.layers[1](d): refused: `Lambda` layers carry Python code; semfuzz never loads anything that would execute code"
    );
    let e = error_of(&edit(|v| {
        v["model"]["layers"][1]["module"] = json!("my_project.layers")
    }));
    assert!(
        e.contains("class `Dense` comes from module `my_project.layers`, not from Keras"),
        "{e}"
    );
    let e = error_of(&edit(|v| {
        v["model"]["layers"][1]["config"]["kernel_initializer"] =
            json!({"module": "evil", "class_name": "Init", "config": {}});
    }));
    assert!(
        e.contains("model.layers[1](d).config.kernel_initializer: refused"),
        "{e}"
    );
}

#[test]
fn sidecar_problems_name_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.case.json");
    let v = edit(|v| {
        v["weights"]["d"][0] = json!({"shape": [4, 2], "npz": "weights/d/0"});
        v["npz"] = json!("c.npz");
    });
    std::fs::write(&path, v.to_string()).unwrap();
    let e = Case::read(&path).unwrap_err();
    assert!(matches!(e.kind, CaseErrorKind::Sidecar { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("weights.d[0]: sidecar `c.npz`: cannot read: No such file"),
        "{e}"
    );

    std::fs::write(dir.path().join("c.npz"), b"not a zip").unwrap();
    let e = Case::read(&path).unwrap_err().to_string();
    assert!(e.contains("sidecar `c.npz`: not an .npz"), "{e}");

    let no_name = edit(|v| v["weights"]["d"][0] = json!({"shape": [4, 2], "npz": "weights/d/0"}));
    let e = error_of(&no_name);
    assert!(e.contains("the case names no `npz` file"), "{e}");
}

#[test]
fn unreadable_files_name_the_file() {
    let e = Case::read("/nonexistent/x.case.json")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("/nonexistent/x.case.json: cannot read: "),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let e = Case::read(dir.path()).unwrap_err().to_string();
    assert!(e.ends_with(": is not a regular file"), "{e}");
}

/// Arrays that are each within the limit but together past it are refused before they are
/// allocated, naming the one that crossed it.
#[test]
fn arrays_past_the_total_limit_are_refused_before_allocation() {
    let big = oracle::case::tensor::MAX_ELEMENTS / 2 + 1;
    let v = edit(|v| {
        v["weights"]["d"][0] = json!({"shape": [big], "npz": "a"});
        v["weights"]["d"][1] = json!({"shape": [big], "npz": "b"});
        v["npz"] = json!("absent.npz");
    });
    let e = error_of(&v);
    assert!(
        e.contains("weights.d[1].shape: the case's arrays have more than")
            && e.contains("elements in all"),
        "{e}"
    );
}

/// Random byte flips and truncations of a real case never panic.
#[test]
fn corrupted_files_never_panic() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/keras/call_kwargs.case.json"
    ))
    .unwrap();
    let bytes = text.as_bytes();
    let mut state: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let junk = [
        b'"', b'{', b'}', b'[', b']', b',', b'-', b'0', b'9', b'x', b':', b'n',
    ];
    for _ in 0..400 {
        let mut b = bytes.to_vec();
        for _ in 0..1 + next() % 4 {
            let i = (next() as usize) % b.len();
            b[i] = junk[(next() as usize) % junk.len()];
        }
        if next() % 4 == 0 {
            b.truncate((next() as usize) % b.len());
        }
        let s = String::from_utf8_lossy(&b);
        let _ = Case::from_json_str(&s, "fuzzed.case.json");
    }
}
