//! `semfuzz check` as users run it, on real architectures: the keras.applications configs in
//! `tests/data/applications/` (written by `scripts/make_application_configs.py` with the
//! pinned Keras, weights=None), systematically corrupted copies of them, hostile files, the
//! what-if arguments, numeric hazards, and one comparison with the real TensorFlow.

mod common;

use std::path::{Path, PathBuf};

use common::semfuzz;
use serde_json::{Value, json};

fn application(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/applications")
        .join(format!("{name}.json"))
}

/// A small model of `tests/data/check/` (written by its `make_models.py`).
fn check_model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/check")
        .join(format!("{name}.json"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `check --json` on a file (with extra arguments): the exit code and the report.
fn check_json(path: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["check", path.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = semfuzz(&args);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON object ({e}): {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    (out.status.code(), report)
}

/// A copy of an application's config with `key` of layer `layer` set to `value`.
fn corrupted(dir: &Path, app: &str, layer: &str, key: &str, value: Value) -> PathBuf {
    let mut model: Value =
        serde_json::from_str(&std::fs::read_to_string(application(app)).unwrap()).unwrap();
    let entry = model["config"]["layers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|l| l["config"]["name"] == layer)
        .unwrap_or_else(|| panic!("{app} has no layer {layer}"));
    entry["config"][key] = value;
    let path = dir.join(format!("{app}-{layer}-{key}.json"));
    std::fs::write(&path, model.to_string()).unwrap();
    path
}

const SUPPORTED: [&str; 6] = [
    "resnet50",
    "mobilenet_v2",
    "vgg16",
    "densenet121",
    "efficientnet_b0",
    "xception",
];

#[test]
fn applications_the_oracle_supports_pass_with_few_hazards() {
    for app in SUPPORTED {
        let (code, r) = check_json(&application(app), &[]);
        assert_eq!(code, Some(0), "{app}: {r}");
        assert_eq!(r["valid"], true, "{app}");
        assert_eq!(r["violations"], json!([]), "{app}");
        // Interval bounds grow with depth, so a deep model may get one `overflow` where the
        // bounds first leave float32; nothing more (its consequences are kept apart).
        let hazards = r["hazards"].as_array().unwrap();
        assert!(hazards.len() <= 1, "{app}: {hazards:?}");
        assert!(hazards.iter().all(|h| h["op"] == "overflow"), "{app}");
        // Every batch normalisation's variance + epsilon is proven positive (moving
        // variance initialised to ones, epsilon 1e-3 or 1.001e-5).
        let model = std::fs::read_to_string(application(app)).unwrap();
        let norms = model
            .matches("\"class_name\": \"BatchNormalization\"")
            .count();
        let safe_norms = r["safe"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["op"] == "variance+epsilon")
            .count();
        assert_eq!(safe_norms, norms, "{app}");
    }
}

#[test]
fn unsupported_classes_are_named() {
    let (code, r) = check_json(&application("convnext_tiny"), &[]);
    assert_eq!(code, Some(0));
    assert_eq!(r["status"], "unsupported");
    assert_eq!(r["valid"], Value::Null);
    assert_eq!(r["unsupported"]["class"], "LayerScale");
    assert!(r["message"].as_str().unwrap().contains("LayerScale"));
}

/// One corruption of a real architecture and where `check` must report it.
struct Corruption {
    app: &'static str,
    layer: &'static str,
    key: &'static str,
    value: Value,
    reported_at: &'static str,
    category: &'static str,
    tag: &'static str,
}

fn corruptions() -> Vec<Corruption> {
    let c = |app, layer, key, value, reported_at, category, tag| Corruption {
        app,
        layer,
        key,
        value,
        reported_at,
        category,
        tag,
    };
    vec![
        // A kernel larger than its (valid-padded) input.
        c(
            "resnet50",
            "conv1_conv",
            "kernel_size",
            json!([40, 40]),
            "conv1_conv",
            "improper-argument",
            "keras-enforced",
        ),
        // Mismatched filters on a residual branch: the Add notices.
        c(
            "resnet50",
            "conv2_block1_3_conv",
            "filters",
            json!(200),
            "conv2_block1_add",
            "incompatible-shapes",
            "keras-enforced",
        ),
        // Mismatched units of two dense branches.
        c(
            "small_cnn",
            "dense_b",
            "units",
            json!(6),
            "add",
            "incompatible-shapes",
            "keras-enforced",
        ),
        // Squeeze-and-excitation with the wrong number of units.
        c(
            "efficientnet_b0",
            "block1a_se_expand",
            "filters",
            json!(10),
            "block1a_se_excite",
            "incompatible-shapes",
            "keras-enforced",
        ),
        // A wrong axis.
        c(
            "resnet50",
            "conv1_bn",
            "axis",
            json!(5),
            "conv1_bn",
            "axis",
            "keras-enforced",
        ),
        // A concatenation along an axis where the inputs differ.
        c(
            "densenet121",
            "conv2_block1_concat",
            "axis",
            json!(1),
            "conv2_block1_concat",
            "incompatible-shapes",
            "keras-enforced",
        ),
        // Over-cropping.
        c(
            "small_cnn",
            "crop",
            "cropping",
            json!([[5, 4], [1, 1]]),
            "crop",
            "empty-output",
            "keras-enforced",
        ),
        // Keras accepts it silently (see `compare_shows_where_tensorflow_disagrees`).
        c(
            "small_cnn",
            "prelu",
            "shared_axes",
            json!([0]),
            "prelu",
            "axis",
            "semantic",
        ),
    ]
}

#[test]
fn corruptions_are_reported_at_the_right_layer_with_confirmed_fixes() {
    let dir = tempfile::tempdir().unwrap();
    for c in corruptions() {
        let path = corrupted(dir.path(), c.app, c.layer, c.key, c.value.clone());
        let (code, r) = check_json(&path, &[]);
        let what = format!("{} {}.{}={}", c.app, c.layer, c.key, c.value);
        assert_eq!(code, Some(1), "{what}: {r}");
        assert_eq!(r["valid"], false, "{what}");
        let v = &r["violations"][0];
        assert_eq!(v["layer"], c.reported_at, "{what}: {v}");
        assert_eq!(v["category"], c.category, "{what}: {v}");
        assert_eq!(v["tag"], c.tag, "{what}: {v}");
        for field in ["class", "parameter", "message", "suggestion"] {
            assert!(!v[field].as_str().unwrap().is_empty(), "{what}: no {field}");
        }
        let fixes = v["fixes"].as_array().unwrap();
        assert!(!fixes.is_empty(), "{what}: no fix found");
        // The first fix is real: the model is valid with it alone.
        let first = &fixes[0];
        assert_eq!(first["complete"], true, "{what}: {first}");
        let set = format!(
            "{}.{}={}",
            first["layer"].as_str().unwrap(),
            first["parameter"].as_str().unwrap(),
            first["value"]
        );
        let (code, fixed) = check_json(&path, &["--set", &set]);
        assert_eq!(code, Some(0), "{what} with {set}: {fixed}");
    }
}

fn has_fix(r: &Value, layer: &str, parameter: &str, value: Value) -> bool {
    r["violations"][0]["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["layer"] == layer && f["parameter"] == parameter && f["value"] == value)
}

#[test]
fn merge_fixes_name_a_layer_on_each_branch() {
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(
        dir.path(),
        "resnet50",
        "conv2_block1_3_conv",
        "filters",
        json!(200),
    );
    let (_, r) = check_json(&path, &[]);
    // The branch that was changed, and the shortcut branch, both fix it.
    assert!(
        has_fix(&r, "conv2_block1_3_conv", "filters", json!(256)),
        "{r}"
    );
    assert!(
        has_fix(&r, "conv2_block1_0_conv", "filters", json!(200)),
        "{r}"
    );

    let path = corrupted(dir.path(), "small_cnn", "dense_b", "units", json!(6));
    let (_, r) = check_json(&path, &[]);
    assert!(has_fix(&r, "dense_b", "units", json!(8)), "{r}");
    assert!(has_fix(&r, "dense_a", "units", json!(6)), "{r}");
}

/// `LAYER.ARG=VALUE` for a fix of a report.
fn fix_setting(f: &Value) -> String {
    format!(
        "{}.{}={}",
        f["layer"].as_str().unwrap(),
        f["parameter"].as_str().unwrap(),
        f["value"]
    )
}

#[test]
fn float_and_target_shape_fixes_are_listed_and_each_confirmed() {
    let model = check_model("reshape_dropout");
    // (corruption, the one argument that can fix it, a value it must propose)
    for (corruption, layer, parameter, value) in [
        ("drop.rate=1.5", "drop", "rate", json!(1.0)),
        ("drop.rate=-0.2", "drop", "rate", json!(0.2)),
        (
            "relu.negative_slope=-0.5",
            "relu",
            "negative_slope",
            json!(0.5),
        ),
        // 30 elements for an input of 24: the first entry recomputed from the second.
        (
            "reshape.target_shape=[5,6]",
            "reshape",
            "target_shape",
            json!([4, 6]),
        ),
        (
            "reshape.target_shape=[4,5]",
            "reshape",
            "target_shape",
            json!([4, 6]),
        ),
    ] {
        let (code, r) = check_json(&model, &["--set", corruption]);
        assert_eq!(code, Some(1), "{corruption}: {r}");
        assert_eq!(r["violations"][0]["layer"], layer, "{corruption}: {r}");
        assert!(
            has_fix(&r, layer, parameter, value.clone()),
            "{corruption}: {r}"
        );
        let fixes = r["violations"][0]["fixes"].as_array().unwrap();
        for f in fixes {
            assert_eq!(
                (&f["layer"], &f["parameter"]),
                (&json!(layer), &json!(parameter))
            );
            let (code, fixed) =
                check_json(&model, &["--set", corruption, "--set", &fix_setting(f)]);
            assert_eq!(code, Some(0), "{corruption} then {f}: {fixed}");
        }
    }
}

#[test]
fn layers_inside_nested_models_are_set_by_path_and_fixed() {
    let model = check_model("nested");
    // A kernel too large inside the Functional `backbone`, set by its path: Keras's name
    // for the layer, and its path through the nested models.
    let kernel = "backbone/inner_conv.kernel_size=[9,9]";
    let (code, r) = check_json(&model, &["--set", kernel]);
    assert_eq!(code, Some(1), "{r}");
    let v = &r["violations"][0];
    assert_eq!(
        (&v["layer"], &v["path"]),
        (&json!("inner_conv"), &json!("backbone/inner_conv"))
    );
    assert!(
        has_fix(&r, "backbone/inner_conv", "padding", json!("same")),
        "{r}"
    );
    assert!(
        has_fix(&r, "backbone/inner_conv", "kernel_size", json!([8, 8])),
        "{r}"
    );
    // Mismatched branches, one of them inside the Sequential `head`: the Add notices, and
    // a layer on each branch fixes it.
    let units = "head/head_dense.units=6";
    let (code, r2) = check_json(&model, &["--set", units]);
    assert_eq!(code, Some(1), "{r2}");
    assert_eq!(
        (&r2["violations"][0]["layer"], &r2["violations"][0]["path"]),
        (&json!("add"), &json!("add"))
    );
    assert!(has_fix(&r2, "head/head_dense", "units", json!(8)), "{r2}");
    assert!(has_fix(&r2, "dense_a", "units", json!(6)), "{r2}");
    // Every fix is confirmed by `--set` with the path it names: the violation is gone, and
    // a complete fix leaves the model valid (a smaller kernel makes the backbone's output
    // larger than the head declares: not complete).
    for (corruption, report) in [(kernel, &r), (units, &r2)] {
        let before = &report["violations"][0];
        for f in report["violations"][0]["fixes"].as_array().unwrap() {
            let (code, fixed) =
                check_json(&model, &["--set", corruption, "--set", &fix_setting(f)]);
            let still = fixed["violations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["path"] == before["path"] && v["category"] == before["category"]);
            assert!(!still, "{corruption} then {f}: {fixed}");
            let complete = f["complete"] == true;
            assert_eq!(
                code,
                Some(if complete { 0 } else { 1 }),
                "{corruption} then {f}: {fixed}"
            );
        }
    }
    // A bare name reaches a nested layer when no other layer has it.
    let (code, r) = check_json(&model, &["--set", "inner_conv.kernel_size=[9,9]"]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["violations"][0]["path"], "backbone/inner_conv");
    let out = semfuzz(&["check", model.to_str().unwrap(), "--set", kernel]);
    assert!(
        text(&out.stdout).contains("in nested model: backbone/inner_conv"),
        "{}",
        text(&out.stdout)
    );
    for (set, says) in [
        ("backbone/nope.units=3", "no layer named 'backbone/nope'"),
        (
            "dense_a/x.units=3",
            "layer 'dense_a' is a Dense, not a nested model",
        ),
    ] {
        let out = semfuzz(&["check", model.to_str().unwrap(), "--set", set]);
        assert_eq!(out.status.code(), Some(2), "{set}");
        assert!(
            text(&out.stderr).contains(says),
            "{set}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn kernel_suggestions_name_same_padding_and_the_largest_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(
        dir.path(),
        "resnet50",
        "conv1_conv",
        "kernel_size",
        json!([40, 40]),
    );
    let (_, r) = check_json(&path, &[]);
    let v = &r["violations"][0];
    let s = v["suggestion"].as_str().unwrap();
    assert!(
        s.contains("padding='same'") && s.contains("kernel_size ≤ 38"),
        "{s}"
    );
    assert!(has_fix(&r, "conv1_conv", "padding", json!("same")), "{r}");
    assert!(
        has_fix(&r, "conv1_conv", "kernel_size", json!([38, 38])),
        "{r}"
    );
}

#[test]
fn hostile_files_are_refused_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let lambda = corrupted(
        dir.path(),
        "small_cnn",
        "prelu",
        "function",
        json!({"class_name": "__lambda__", "config": {"code": "import os"}}),
    );
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&lambda).unwrap()).unwrap();
    m["config"]["layers"][2]["class_name"] = json!("Lambda");
    std::fs::write(&lambda, m.to_string()).unwrap();
    let custom = dir.path().join("custom.json");
    m["config"]["layers"][2]["class_name"] = json!("MyLayer");
    m["config"]["layers"][2]["module"] = json!("evil.layers");
    std::fs::write(&custom, m.to_string()).unwrap();
    let truncated = dir.path().join("truncated.json");
    let whole = std::fs::read_to_string(application("small_cnn")).unwrap();
    std::fs::write(&truncated, &whole[..500]).unwrap();
    let zip = dir.path().join("broken.keras");
    std::fs::write(&zip, b"PK\x03\x04 not a zip archive").unwrap();
    for (path, says) in [
        (&lambda, "`Lambda` layers carry Python code"),
        (&custom, "class `MyLayer` comes from module `evil.layers`"),
        (&truncated, "malformed JSON at line 1, column 500"),
        (&zip, "not a .keras archive"),
    ] {
        let out = semfuzz(&["check", path.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        let err = text(&out.stderr);
        assert!(err.contains(says), "{}: {err}", path.display());
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn huge_dimensions_are_checked_symbolically() {
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(
        dir.path(),
        "open_sequence",
        "sequence",
        "batch_shape",
        json!([null, 1_000_000_000_000u64, 3]),
    );
    let (code, r) = check_json(&path, &[]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["valid"], true);
}

#[test]
fn open_sizes_that_break_the_model_are_named() {
    let (code, r) = check_json(&application("open_sequence"), &[]);
    assert_eq!(code, Some(0), "{r}");
    let w = &r["warnings"][0];
    assert_eq!(w["kind"], "input-size");
    assert_eq!(w["input"], "sequence");
    assert_eq!(w["axis"], 1);
    assert_eq!(w["failing"], json!([1, 2, 3, 4]));
    assert_eq!(w["layer"], "conv");
}

#[test]
fn input_shapes_and_settings_change_the_model_checked() {
    let model = application("open_sequence");
    let (code, r) = check_json(&model, &["--input-shape", "sequence=None,3,3"]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["violations"][0]["layer"], "conv");
    let (code, r) = check_json(
        &model,
        &[
            "--input-shape",
            "sequence=2,3,3",
            "--set",
            "conv.padding=same",
        ],
    );
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["warnings"], json!([]), "every size is known");

    let (code, r) = check_json(
        &model,
        &[
            "--input-shape",
            "sequence=None,6,3",
            "--set",
            "conv.kernel_size=1..9",
        ],
    );
    assert_eq!(code, Some(0), "{r}");
    let range = &r["set_ranges"];
    assert_eq!(range["valid"], json!([[1], [2], [3], [4], [5], [6]]));
    let invalid: Vec<&Value> = range["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| &x["values"])
        .collect();
    assert_eq!(invalid, [&json!([7]), &json!([8]), &json!([9])]);
    assert_eq!(range["invalid"][0]["violation"]["layer"], "conv");

    for (args, says) in [
        (
            &["--set", "nope.units=3"][..],
            "--set nope.units: no layer named 'nope'",
        ),
        (&["--set", "conv.colour=3"][..], "has no argument 'colour'"),
        (
            &["--input-shape", "conv=None,4,3"][..],
            "not an input layer",
        ),
        (&["--input-shape", "sequence=None,x,3"][..], "`x`"),
        (&["--input-range", "1,-1"][..], "LO is greater than HI"),
    ] {
        let mut all = vec!["check", model.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = semfuzz(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn several_ranges_report_every_valid_combination() {
    let model = application("open_sequence");
    let shape = ["--input-shape", "sequence=None,6,3"];
    let ranges = [
        "--set",
        "conv.kernel_size=1..4",
        "--set",
        "conv.dilation_rate=1..3",
    ];
    let (code, r) = check_json(&model, &[&shape[..], &ranges[..]].concat());
    assert_eq!(code, Some(0), "{r}");
    let s = &r["set_ranges"];
    assert_eq!(s["combinations"], 12);
    assert_eq!(
        s["settings"][1],
        json!({"layer": "conv", "argument": "dilation_rate", "from": 1, "to": 3})
    );
    // A dilated kernel spans (k - 1) * d + 1 of the 6 steps.
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for k in 1..=4 {
        for d in 1..=3 {
            if (k - 1) * d < 6 {
                valid.push(json!([k, d]))
            } else {
                invalid.push(json!([k, d]))
            }
        }
    }
    assert_eq!(s["valid"], json!(valid));
    let got: Vec<&Value> = s["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| &x["values"])
        .collect();
    assert_eq!(got, invalid.iter().collect::<Vec<_>>());
    let out = semfuzz(
        &[
            &["check", model.to_str().unwrap()][..],
            &shape[..],
            &ranges[..],
        ]
        .concat(),
    );
    let human = text(&out.stdout);
    assert!(
        human.contains("conv.kernel_size × conv.dilation_rate (12 combinations): 9 valid"),
        "{human}"
    );
    assert!(
        human.contains("e.g. conv.kernel_size=3, conv.dilation_rate=3: Conv1D 'conv'"),
        "{human}"
    );
    for (args, says) in [
        (
            &[
                "--set",
                "conv.kernel_size=1..100",
                "--set",
                "conv.filters=1..20",
            ][..],
            "the ranges give 100 × 20 = 2000 combinations; at most 1024 are checked",
        ),
        (
            &[
                "--set",
                "conv.kernel_size=1..3",
                "--set",
                "conv.kernel_size=2..3",
            ][..],
            "--set conv.kernel_size: two ranges for one argument",
        ),
    ] {
        let out = semfuzz(&[&["check", model.to_str().unwrap()][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn hazards_follow_the_input_range() {
    let model = application("open_sequence");
    // exp(Dense(GlobalMaxPool(Conv1D(x)))): glorot-uniform weights keep the argument small
    // for inputs in [-1, 1], not for inputs in [-100, 100].
    let (_, small) = check_json(&model, &[]);
    assert_eq!(ops(&small, "hazards"), Vec::<String>::new());
    assert_eq!(ops(&small, "safe"), ["rate:exp"]);
    let (code, large) = check_json(&model, &["--input-range", "-100,100"]);
    assert_eq!(code, Some(0), "hazards are warnings");
    assert_eq!(ops(&large, "hazards"), ["rate:exp"]);
    let h = &large["hazards"][0];
    assert!(
        h["danger"]
            .as_str()
            .unwrap()
            .contains("exp overflows float32")
    );
    let hi = h["interval"][1].as_f64().unwrap();
    assert!(hi > 88.73, "{h}");
    // The classifier's softmax is proven safe on a small CNN.
    let (_, cnn) = check_json(&application("small_cnn"), &[]);
    assert_eq!(ops(&cnn, "safe"), ["out:softmax"]);
}

/// `layer:op` of each entry of a report's list of hazards (or of safe operations).
fn ops(r: &Value, list: &str) -> Vec<String> {
    r[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{}:{}",
                h["layer"].as_str().unwrap(),
                h["op"].as_str().unwrap()
            )
        })
        .collect()
}

/// `tests/data/check/stored_weights.keras`, saved by Keras with weights set (see
/// `make_models.py`): on its stored weights, read from the archive's HDF5 file with the
/// project's Python (h5py, no TensorFlow), three hazards appear and one disappears compared
/// to the initializers' ranges.
#[test]
fn keras_files_are_judged_on_their_stored_weights() {
    let model = common::data("check/stored_weights.keras");
    let (code, r) = check_json(&model, &[]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["weights"], "stored", "{r}");
    assert_eq!(r["warnings"], json!([]), "{r}");
    assert_eq!(
        ops(&r, "hazards"),
        ["backbone/inner:exp", "grow:exp", "bn:variance+epsilon"],
        "{r}"
    );
    assert_eq!(ops(&r, "safe"), ["shrink:exp"], "{r}");
    // Four inputs in [-1, 1] times a stored kernel of 30s (the initializers allow < 4).
    let grow = &r["hazards"][1];
    assert_eq!(grow["interval"], json!([-120.0, 120.0]), "{grow}");
    let bn = &r["hazards"][2];
    assert!(
        bn["danger"]
            .as_str()
            .unwrap()
            .contains("the stored variance reaches -0.5"),
        "{bn}"
    );

    // Without a Python to read them: the initializers' ranges, and a warning that says so.
    let (code, r) = check_json(&model, &["--python", "/nonexistent/python"]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["weights"], "initializers", "{r}");
    let w = &r["warnings"][0];
    assert_eq!(w["kind"], "weights", "{r}");
    assert!(
        w["message"].as_str().unwrap().contains("were not read"),
        "{w}"
    );
    assert_eq!(ops(&r, "hazards"), ["shrink:exp"], "{r}");
    assert_eq!(
        ops(&r, "safe"),
        ["backbone/inner:exp", "grow:exp", "bn:variance+epsilon"],
        "{r}"
    );
    let out = semfuzz(&[
        "check",
        model.to_str().unwrap(),
        "--python",
        "/nonexistent/python",
    ]);
    assert!(
        text(&out.stdout).contains("warning: the weights stored in the .keras file were not read")
    );

    // A what-if that changes a layer's weight shapes: its stored weights no longer fit, and
    // it is analysed on its initializers' ranges, named in a warning.
    let (code, r) = check_json(&model, &["--set", "grow.units=3"]);
    assert_eq!(code, Some(0), "{r}");
    let w = &r["warnings"][0];
    assert_eq!(
        (&w["kind"], &w["layers"]),
        (&json!("weights"), &json!(["grow"])),
        "{r}"
    );
    assert_eq!(
        ops(&r, "hazards"),
        ["backbone/inner:exp", "bn:variance+epsilon"],
        "{r}"
    );
}

/// Runs the worker with the project's TensorFlow: the oracle and TF side by side.
#[test]
fn compare_shows_where_tensorflow_disagrees() {
    let dir = tempfile::tempdir().unwrap();
    // An invalid model Keras accepts silently: PReLU shares axis 3 for the batch axis 0.
    let prelu = corrupted(dir.path(), "small_cnn", "prelu", "shared_axes", json!([0]));
    let (code, r) = check_json(&prelu, &["--compare"]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["violations"][0]["tag"], "semantic");
    assert_eq!(r["tensorflow"]["accepted"], true, "{r}");
    // An over-cropping both refuse: TF's message names the argument.
    let crop = corrupted(
        dir.path(),
        "small_cnn",
        "crop",
        "cropping",
        json!([[5, 4], [1, 1]]),
    );
    let (code, r) = check_json(&crop, &["--compare"]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["tensorflow"]["accepted"], false, "{r}");
    assert_eq!(r["tensorflow"]["type"], "ValueError");
    assert!(
        r["tensorflow"]["message"]
            .as_str()
            .unwrap()
            .contains("cropping")
    );
}

/// `--compare` on a model whose declared inputs would take more elements than a case's
/// arrays may: refused before anything is allocated or any worker starts, naming the limit.
#[test]
fn inputs_past_the_limit_are_refused_before_allocation() {
    // Written by hand: a Dense on (None, 100000, 100000).
    let model = check_model("wide_input");
    let out = semfuzz(&["check", "--compare", model.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("would take 20000000000 elements")
            && err.contains("past the limit of 268435456"),
        "{err}"
    );
}
