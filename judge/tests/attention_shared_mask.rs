//! The kept Keras bug of `MultiHeadAttention` clearing its inputs' masks explains an
//! `AdditiveAttention` that reads the same masked tensor and attends to masked steps, and
//! nothing where the attention layers share no masked input.

mod common;

use judge::{Backend, Judge, Kind, Suppressions, Target, Verdict};
use oracle::{Case, DType};

const FOLDER: &str = "mismatch-Minimum-attention-clears-shared-input-mask";

/// `Masking` of `[0, -1, 0]` (steps 0 and 2 masked), read by a `MultiHeadAttention` and by an
/// `AdditiveAttention` (query `x`, value the masked tensor); with `shared` false the
/// `MultiHeadAttention` reads `x` twice instead.
fn case(shared: bool) -> Case {
    let path = format!(
        "{}/tests/data/additive-attention-shared-mask.case.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if !shared {
        let mha = &mut json["model"]["layers"][2];
        assert_eq!(mha["class_name"], "MultiHeadAttention");
        mha["inbound_nodes"][0]["args"][1]["config"]["keras_history"] =
            serde_json::json!(["input_layer_1", 0, 0]);
    }
    Case::from_json_str(&json.to_string(), &path).unwrap()
}

/// The verdicts on a framework that agrees everywhere but at the `AdditiveAttention`, which
/// averages over every step (-1/3) as with its value's mask lost.
fn judge(case: &Case) -> Vec<Verdict> {
    let analysis = oracle::check(case).unwrap();
    let eval = oracle::eval(case, &analysis).unwrap();
    let named = |i: usize| case.model.layers[i].name.as_str();
    let mut layers = vec![("input_layer_1", case.inputs[0].data.clone())];
    for i in 1..=2 {
        layers.push((named(i), eval.outputs[&(i, 0)][0].clone()));
    }
    layers.push((named(3), eval.outputs[&(3, 0)][0].mapv(|_| -1.0 / 3.0)));
    Judge::new(
        Suppressions::builtin().unwrap(),
        Target::on(Backend::Torch, "3.15.1", "2.21.0"),
    )
    .judge(
        case,
        DType::Float32,
        &oracle::check(case),
        &common::eager_outputs(layers),
    )
}

#[test]
fn a_value_mask_lost_to_a_shared_attention_is_the_bug_and_otherwise_a_finding() {
    let mismatch = |vs: Vec<Verdict>| {
        vs.into_iter()
            .find(|v| v.kind == Kind::Mismatch)
            .expect("the AdditiveAttention's -1/3 against -1")
    };
    let v = mismatch(judge(&case(true)));
    assert_eq!(v.layer.as_deref(), Some("additive_attention"), "{v:?}");
    assert_eq!(v.known.as_deref(), Some(FOLDER), "{v:?}");
    let v = mismatch(judge(&case(false)));
    assert_eq!(v.known, None, "{v:?}");
}
