//! The checker and evaluator never panic on whole models, whatever the arguments: every golden
//! case is mutated (numbers in layer configs replaced by random, often hostile, values) and
//! must end in a value, a violation or "unsupported".

use std::path::Path;

use oracle::Case;
use oracle::check::{check, check_all, eval};
use serde_json::Value;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Replaces numbers inside layer configs (not the arrays) with random values.
fn mutate(v: &mut Value, rng: &mut Rng, in_config: bool) {
    match v {
        Value::Number(_) if in_config && rng.next().is_multiple_of(4) => {
            let choices = [-3i64, -1, 0, 1, 2, 3, 5, 9, 64, 1 << 20];
            *v = if rng.next().is_multiple_of(5) {
                serde_json::json!(((rng.next() % 2000) as f64 - 1000.0) / 7.0)
            } else {
                serde_json::json!(choices[(rng.next() % choices.len() as u64) as usize])
            };
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mutate(x, rng, in_config)),
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                let config = in_config || k == "config";
                if k == "weights" || k == "inputs" || k == "batch_shape" || k == "keras_history" {
                    continue;
                }
                mutate(x, rng, config);
            }
        }
        _ => {}
    }
}

#[test]
fn mutated_golden_models_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut rng = Rng(0x00c0_ffee_1234_5678);
    let (mut valid, mut total) = (0, 0);
    for family in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(family.unwrap().path()).unwrap() {
            let path = f.unwrap().path();
            if !path.to_string_lossy().ends_with(".case.json") {
                continue;
            }
            let original: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for _ in 0..4 {
                let mut v = original.clone();
                mutate(&mut v, &mut rng, false);
                let Ok(case) = Case::from_json_str(&v.to_string(), &path) else {
                    continue;
                };
                total += 1;
                let _ = check_all(&case);
                if let Ok(analysis) = check(&case) {
                    valid += 1;
                    // Huge outputs are legal but pointless to evaluate here.
                    let big = analysis
                        .calls
                        .iter()
                        .flat_map(|c| &c.outputs)
                        .any(|d| d.iter().map(|x| x.unwrap_or(1)).product::<usize>() > 1 << 16);
                    if !big {
                        let _ = eval(&case, &analysis);
                    }
                }
            }
        }
    }
    eprintln!("{valid} valid of {total} mutated models");
    assert!(
        total > 1000 && valid > 100,
        "{valid} valid of {total} mutated models"
    );
}

/// A model left without layers (as an over-eager minimisation may leave one) is invalid:
/// its outputs name tensors that do not exist. No panic.
#[test]
fn a_model_without_layers_is_a_structure_violation() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keras/dense_chain.case.json");
    let mut case = Case::read(&path).unwrap();
    case.model.layers.clear();
    let e = check(&case).expect_err("no layers");
    assert!(
        e.to_string()
            .contains("names an output that does not exist"),
        "{e}"
    );
}
