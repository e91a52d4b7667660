//! Keras before 3.4's `LayerNormalization` with `rms_scaling` multiplies by `gamma` as it is
//! (a kept bug of those releases, evidence `scale_on_trailing_axes`): over `axis=1` of a
//! `(1, 3, 3)` input, gamma `[1, 2, 3]` scales the last axis instead. The entry explains
//! exactly that product; any other value at the layer is a finding, and so is the same
//! product on a release that broadcasts gamma.

mod common;

use judge::{Judge, Suppressions, Target, Verdict};
use ndarray::{ArrayD, Axis};
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-LayerNormalization-keras-3.3-rms-gamma-not-broadcast";

fn case() -> Case {
    Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The normalized values of the kept case (the reference's output divided by gamma along
/// axis 1), times gamma along the last axis: what Keras 3.3.3 gave (eager, graph and XLA).
fn scaled_along_the_last_axis(case: &Case) -> ArrayD<f64> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let mut out = eval.outputs[&(1, 0)][0].clone();
    let gamma = [1.0, 2.0, 3.0];
    for (i, mut row) in out.axis_iter_mut(Axis(1)).enumerate() {
        row.mapv_inplace(|v| v / gamma[i]);
    }
    for (j, mut col) in out.axis_iter_mut(Axis(2)).enumerate() {
        col.mapv_inplace(|v| v * gamma[j]);
    }
    out
}

fn judge(case: &Case, keras: &str, got: ArrayD<f64>) -> Vec<Verdict> {
    let outputs = vec![
        ("input_layer", case.inputs[0].data.clone()),
        ("layer_normalization", got),
    ];
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::tensorflow(keras, "2.16.2"),
    )
    .judge(
        case,
        DType::Float64,
        &oracle::check(case),
        &common::eager_outputs(outputs),
    )
}

fn the_finding(verdicts: &[Verdict]) -> &Verdict {
    assert_eq!(verdicts.len(), 1, "{verdicts:#?}");
    &verdicts[0]
}

#[test]
fn gamma_along_the_trailing_axes_is_the_kept_bug_of_keras_before_3_4() {
    let case = case();
    let kept = scaled_along_the_last_axis(&case);
    // What Keras 3.3.3 returned for the kept case (`semfuzz run --json`), element for element.
    let measured = [
        0.4629100002887783,
        3.2071338720847997,
        14.696927434007627,
        0.9258200005775566,
        -1.6035669360423999,
        11.02269557550572,
        -1.388730000866335,
        1.6035669360423999,
        7.348463717003813,
    ];
    for (a, b) in kept.iter().zip(measured) {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{kept:?}");
    }
    let v = the_finding(&judge(&case, "3.3.3", kept.clone())).clone();
    assert!(v.evidence.scale_on_trailing_axes, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    // The release that fixed it.
    let v = the_finding(&judge(&case, "3.15.1", kept)).clone();
    assert!(v.evidence.scale_on_trailing_axes && v.is_finding(), "{v:?}");
}

#[test]
fn another_wrong_value_at_the_layer_is_a_finding() {
    let case = case();
    let mut got = scaled_along_the_last_axis(&case);
    got[[0, 2, 0]] += 0.5;
    let v = the_finding(&judge(&case, "3.3.3", got)).clone();
    assert!(!v.evidence.scale_on_trailing_axes, "{v:?}");
    assert!(v.is_finding(), "{v:?}");
    // Gamma left out altogether is not the product either.
    let analysis = oracle::check(&case).unwrap();
    let eval = oracle::eval(&case, &analysis).unwrap();
    let mut bare = eval.outputs[&(1, 0)][0].clone();
    for (i, mut row) in bare.axis_iter_mut(Axis(1)).enumerate() {
        row.mapv_inplace(|v| v / [1.0, 2.0, 3.0][i]);
    }
    let v = the_finding(&judge(&case, "3.3.3", bare)).clone();
    assert!(
        !v.evidence.scale_on_trailing_axes && v.is_finding(),
        "{v:?}"
    );
}

/// The kept case on a `(1, 3, 1)` input: gamma `(3,)` along the trailing axis broadcasts the
/// output to `(1, 3, 3)`, a shape the entry explains only as that product.
#[test]
fn a_larger_output_is_the_kept_bug_only_as_that_product() {
    let mut json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/../crashes/{FOLDER}/case.case.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    json["model"]["layers"][0]["config"]["batch_shape"] = serde_json::json!([null, 3, 1]);
    json["inputs"] = serde_json::json!([{"shape": [1, 3, 1], "data": [1.0, -2.0, 4.0]}]);
    let case = Case::from_json_str(&json.to_string(), "column.case.json").unwrap();
    let analysis = oracle::check(&case).unwrap();
    let eval = oracle::eval(&case, &analysis).unwrap();
    let reference = eval.outputs[&(1, 0)][0].clone();
    let gamma = [1.0, 2.0, 3.0];
    let product = |i: usize, j: usize| reference[[0, i, 0]] / gamma[i] * gamma[j];
    let grown = ArrayD::from_shape_fn(vec![1, 3, 3], |ix| product(ix[1], ix[2]));
    let v = the_finding(&judge(&case, "3.3.3", grown.clone())).clone();
    assert!(
        v.evidence.shape_differs && v.evidence.scale_on_trailing_axes,
        "{v:?}"
    );
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    let mut other = grown;
    other[[0, 1, 2]] = 0.0;
    let v = the_finding(&judge(&case, "3.3.3", other)).clone();
    assert!(v.evidence.shape_differs && !v.evidence.scale_on_trailing_axes && v.is_finding());
}
