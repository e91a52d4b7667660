//! Keras before 3.3 clips an Embedding's indices on TensorFlow (kept bug
//! `missing-validation-Embedding-keras-3.2-take-clips-indices`): a negative index reads row 0.
//! The wrong value is explained (evidence `indices_clipped`) on those releases only, and only
//! where it is the clipped lookup: another wrong row is a finding.

mod common;

use judge::{Judge, Suppressions, Target, Verdict};
use ndarray::ArrayD;
use oracle::{Case, DType};

const FOLDER: &str = "missing-validation-Embedding-keras-3.2-take-clips-indices";

/// The kept case (rows `[1, 2, 3]`) on the indices `[-1, 0, 1]`, judged on `keras` with
/// TensorFlow's Embedding output `got`.
fn judge(keras: &str, got: [f64; 3]) -> Vec<Verdict> {
    let mut case = Case::read(format!(
        "{}/../crashes/{FOLDER}/case.case.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    case.inputs[0].data = ArrayD::from_shape_vec(vec![1, 3], vec![-1.0, 0.0, 1.0]).unwrap();
    let outputs = vec![
        ("input_layer", case.inputs[0].data.clone()),
        (
            "embedding",
            ArrayD::from_shape_vec(vec![1, 3, 1], got.to_vec()).unwrap(),
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

fn the_finding(verdicts: &[Verdict]) -> &Verdict {
    assert_eq!(verdicts.len(), 1, "{verdicts:#?}");
    &verdicts[0]
}

#[test]
fn the_clipped_lookup_is_the_kept_bug_before_3_3_only() {
    // The reference reads rows [2, 0, 1] = [3, 1, 2]; clipped, -1 reads row 0.
    let clipped = [1.0, 1.0, 2.0];
    let v = the_finding(&judge("3.2.1", clipped)).clone();
    assert!(v.evidence.indices_clipped, "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    let v = the_finding(&judge("3.3.3", clipped)).clone();
    assert!(v.is_finding(), "{v:?}");
}

#[test]
fn another_wrong_row_is_a_finding() {
    let v = the_finding(&judge("3.2.1", [2.0, 1.0, 2.0])).clone();
    assert!(!v.evidence.indices_clipped, "{v:?}");
    assert!(v.is_finding(), "{v:?}");
}
