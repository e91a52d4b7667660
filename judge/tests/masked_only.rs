//! Divergences confined to masked positions (evidence `masked_only`):
//! - Keras's unrolled recurrent layers on JAX ignore `zero_output_for_mask` (a kept bug): a
//!   masked step keeps the previous output where zero is expected. The entry explains a
//!   divergence only where it is confined to masked steps; the same layer wrong at an
//!   unmasked step is a new finding, and so is the masked-step divergence on TensorFlow.
//! - Keras 3.3.3's Maximum merges a masked input's masked values (a kept bug of that
//!   release): explained at masked positions on 3.3.3 only.

mod common;

use judge::{Backend, Judge, Suppressions, Target, Verdict};
use ndarray::{ArrayD, Axis};
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-LSTM-jax-unroll-ignores-zero-output-for-mask";

/// The kept case's `Masking` and `LSTM` (`unroll`, `zero_output_for_mask`, last output only),
/// on two rows: row 0's last step is masked, row 1's is not.
fn two_rows() -> Case {
    let path = format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let layers = json["model"]["layers"].as_array_mut().unwrap();
    layers.retain(|l| !["not_equal", "any"].contains(&l["name"].as_str().unwrap()));
    json["inputs"] = serde_json::json!([{"shape": [2, 2, 1], "data": [1.0, 0.0, 1.0, 1.0]}]);
    Case::from_json_str(&json.to_string(), "two-rows.case.json").unwrap()
}

/// What the framework gave: the reference's outputs, the LSTM's rows changed by `change`.
fn judge(case: &Case, backend: Backend, change: impl Fn(&mut ArrayD<f64>)) -> Vec<Verdict> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let names: Vec<&str> = case.model.layers.iter().map(|l| l.name.as_str()).collect();
    let mut outputs = vec![(names[0], case.inputs[0].data.clone())];
    for (i, name) in names.iter().enumerate().skip(1) {
        let mut out = eval.outputs[&(i, 0)][0].clone();
        if *name == "lstm" {
            change(&mut out);
        }
        outputs.push((name, out));
    }
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(backend, "3.15.1", "2.21.0"),
    )
    .judge(
        case,
        DType::Float32,
        &oracle::check(case),
        &common::eager_outputs(outputs),
    )
}

/// Row 0 (last step masked) keeps a previous output instead of zero.
fn kept_output(out: &mut ArrayD<f64>) {
    assert!(out.index_axis(Axis(0), 0).iter().all(|&v| v == 0.0));
    out.index_axis_mut(Axis(0), 0).fill(0.25);
}

fn the_finding(verdicts: &[Verdict]) -> &Verdict {
    assert_eq!(verdicts.len(), 1, "{verdicts:#?}");
    &verdicts[0]
}

#[test]
fn a_masked_last_step_keeping_an_output_is_the_kept_bug_on_jax() {
    let case = two_rows();
    let v = the_finding(&judge(&case, Backend::Jax, kept_output)).clone();
    assert!(v.evidence.masked_only, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
}

#[test]
fn a_wrong_unmasked_row_beside_it_is_a_finding() {
    let case = two_rows();
    let v = the_finding(&judge(&case, Backend::Jax, |out| {
        kept_output(out);
        out.index_axis_mut(Axis(0), 1)
            .mapv_inplace(|v| 2.0 * v + 1.0);
    }))
    .clone();
    assert!(!v.evidence.masked_only, "{v:?}");
    assert!(v.is_finding(), "{v:?}");
}

#[test]
fn the_same_divergence_on_tensorflow_is_a_finding() {
    let case = two_rows();
    let v = the_finding(&judge(&case, Backend::Tensorflow, kept_output)).clone();
    assert!(v.evidence.masked_only, "{v:?}");
    assert!(v.is_finding(), "{v:?}");
}

const MERGE: &str = "mismatch-Maximum-keras-3.3-masked-merge-uses-masked-values";

/// The kept merge case (`x` masked where a step is all zeros, `y` not) judged on `keras`,
/// TensorFlow's `maximum` output being `got`.
fn judge_merge(keras: &str, got: [f64; 4]) -> Vec<Verdict> {
    let case = Case::read(format!(
        "{}/../crashes/{MERGE}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let analysis = oracle::check(&case).unwrap();
    let eval = oracle::eval(&case, &analysis).unwrap();
    let outputs = vec![
        ("x", case.inputs[0].data.clone()),
        ("y", case.inputs[1].data.clone()),
        ("masking", eval.outputs[&(2, 0)][0].clone()),
        (
            "maximum",
            ArrayD::from_shape_vec(vec![1, 2, 2], got.to_vec()).unwrap(),
        ),
    ];
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::tensorflow(keras, "2.16.2"),
    )
    .judge(
        &case,
        DType::Float32,
        &oracle::check(&case),
        &common::eager_outputs(outputs),
    )
}

#[test]
fn a_merge_of_masked_values_is_the_kept_bug_of_keras_3_3_only() {
    // The reference: [[1, 5], [-3, -4]]; Keras 3.3.3 takes max(0, y) at the masked step.
    let kept = [1.0, 5.0, 0.0, 0.0];
    let v = the_finding(&judge_merge("3.3.3", kept)).clone();
    assert!(v.evidence.masked_only, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(MERGE), "{v:?}");
    // Wrong at an unmasked position too: a finding.
    let v = the_finding(&judge_merge("3.3.3", [1.0, 6.0, 0.0, 0.0])).clone();
    assert!(!v.evidence.masked_only && v.is_finding(), "{v:?}");
    // The release that fixed it.
    let v = the_finding(&judge_merge("3.15.1", kept)).clone();
    assert!(v.is_finding(), "{v:?}");
}

/// A merge whose masks broadcast: `Masking` of a `(B, 1, 1)` input (mask `(B, 1)`) twice,
/// with an unmasked `(B, 2, 1)` input, into `Minimum` (positions `(B, 2)`). Row 0 of the
/// masked input is all `mask_value` (masked), row 1 holds 5.
fn judge_broadcast_minimum(keras: &str, got: [f64; 4]) -> Vec<Verdict> {
    let case = Case::read(format!(
        "{}/tests/data/masked-minimum-broadcast.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let analysis = oracle::check(&case).unwrap();
    let eval = oracle::eval(&case, &analysis).unwrap();
    let outputs = vec![
        ("input_layer", case.inputs[0].data.clone()),
        ("input_layer_1", case.inputs[1].data.clone()),
        ("masking", eval.outputs[&(2, 0)][0].clone()),
        (
            "minimum",
            ArrayD::from_shape_vec(vec![2, 2, 1], got.to_vec()).unwrap(),
        ),
    ];
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::tensorflow(keras, "2.16.2"),
    )
    .judge(
        &case,
        DType::Float64,
        &oracle::check(&case),
        &common::eager_outputs(outputs),
    )
}

#[test]
fn a_merge_of_masked_values_is_known_where_the_masks_broadcast() {
    // The reference leaves row 0's masked input out: min(x) = [1, 0]; row 1 takes
    // min(x, 5) = [-1, 0]. Keras 3.3.3 merges the masked zeros: row 0 is min(x, 0) = [0, 0].
    let kept = [0.0, 0.0, -1.0, 0.0];
    let v = the_finding(&judge_broadcast_minimum("3.3.3", kept)).clone();
    assert!(v.evidence.masked_only, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(MERGE), "{v:?}");
    // Wrong in row 1, whose inputs are all unmasked: a finding.
    let v = the_finding(&judge_broadcast_minimum("3.3.3", [0.0, 0.0, -2.0, 0.0])).clone();
    assert!(!v.evidence.masked_only && v.is_finding(), "{v:?}");
}
