//! Sums are judged relative to their terms: `a + b` and `a - b` may cancel to a result far
//! smaller than the terms, and their rounding (and, under XLA, the fused kernel's own rounding
//! of the terms) is a few ulps of the terms, not of the result. A real error still fails.

use ndarray::ArrayD;
use oracle::DType;
use oracle::case::{Arg, Node, TensorRef};
use oracle::layers::{CallSite, Spec, lookup};
use serde_json::{Map, Value, json};

fn tensor(layer: &str) -> Arg {
    Arg::Tensor {
        source: TensorRef {
            layer: layer.to_owned(),
            node: 0,
            index: 0,
        },
        dtype: None,
    }
}

/// The spec of `class` (from `module`) called on `args`, in float32.
fn spec(class: &str, module: &str, args: Vec<Arg>) -> Box<dyn Spec> {
    let config: Map<String, Value> = json!({"name": "s"}).as_object().unwrap().clone();
    let node = Node {
        args,
        kwargs: vec![],
    };
    lookup(class, Some(module))
        .unwrap_or_else(|| panic!("{module}.{class} is registered"))
        .parse(&CallSite {
            config: &config,
            node: &node,
            dtype: DType::Float32,
        })
        .unwrap_or_else(|e| panic!("{class}: {e:?}"))
}

fn array(values: &[f64]) -> ArrayD<f64> {
    ArrayD::from_shape_vec(vec![1, values.len()], values.to_vec()).unwrap()
}

/// Whether every element of `tf` is within `spec`'s float32 tolerance of its reference on
/// `inputs`.
fn accepted(spec: &dyn Spec, inputs: &[&ArrayD<f64>], tf: &[f64]) -> bool {
    let reference = &spec.eval(inputs, &[])[0];
    let tol = spec.tolerance(DType::Float32, inputs, &[]);
    reference
        .iter()
        .zip(tf)
        .all(|(&want, &got)| tol.accepts(got, want))
}

// Numbers from a float32 run under XLA (`--modes eager,graph,xla` on
// seeds/hand-operation-nodes.case.json): `h - 0.5` with h = 0.51925176 gave
// 1.9251786172389984e-2 where the correctly rounded difference is 1.9251763820648193e-2,
// 19 ulps of the result but a fifth of an ulp of the terms.
#[test]
fn operation_node_subtract_of_a_constant_cancels_within_tolerance() {
    let h = 0.519_251_763_820_648_2_f64 as f32 as f64;
    let x = array(&[h, 3.0]);
    let sub = spec(
        "Subtract",
        "keras.src.ops.numpy",
        vec![tensor("h"), Arg::Literal(json!(0.5))],
    );
    let exact = (h - 0.5) as f32 as f64;
    assert!(accepted(&*sub, &[&x], &[1.925_178_617_238_998_4e-2, 2.5]));
    assert!(accepted(&*sub, &[&x], &[exact, 2.5]));
    assert!(!accepted(&*sub, &[&x], &[exact + 0.25, 2.5]));
    assert!(!accepted(&*sub, &[&x], &[exact, 2.75]));
}

// `conv + 3.0` near -3: TF -2.674170956015587e-2, reference -2.6741743087768555e-2.
#[test]
fn operation_node_add_of_a_constant_cancels_within_tolerance() {
    let x = array(&[-3.026_741_743_087_768_6]);
    let add = spec(
        "Add",
        "keras.src.ops.numpy",
        vec![tensor("conv"), Arg::Literal(json!(3.0))],
    );
    let want = add.eval(&[&x], &[])[0].iter().next().copied().unwrap();
    assert!(accepted(&*add, &[&x], &[want + 3.35e-8]));
    assert!(!accepted(&*add, &[&x], &[want + 0.25]));
}

#[test]
fn add_and_subtract_layers_judge_heavy_cancellation_by_their_terms() {
    // Terms near 1000 cancelling to about 1e-3: a few ulps of the terms (6.1e-5 each) are
    // an error of several percent of the result.
    let a = array(&[1000.0, 1.0, -2.0]);
    let b = array(&[-999.999, 2.0, 0.5]);
    let add = spec(
        "Add",
        "keras.layers",
        vec![Arg::List(vec![tensor("a"), tensor("b")])],
    );
    let sum: Vec<f64> = add.eval(&[&a, &b], &[])[0].iter().copied().collect();
    let two_ulps = 2.0 * 1000.0 * f32::EPSILON as f64;
    let off: Vec<f64> = sum.iter().map(|s| s + two_ulps).collect();
    assert!(accepted(&*add, &[&a, &b], &off), "two ulps of the terms");
    let wrong: Vec<f64> = sum.iter().map(|s| s + 0.25).collect();
    assert!(!accepted(&*add, &[&a, &b], &wrong), "a real error");

    let neg_b = b.mapv(|x| -x);
    let sub = spec(
        "Subtract",
        "keras.layers",
        vec![Arg::List(vec![tensor("a"), tensor("b")])],
    );
    let diff: Vec<f64> = sub.eval(&[&a, &neg_b], &[])[0].iter().copied().collect();
    assert_eq!(diff, sum);
    let off: Vec<f64> = diff.iter().map(|s| s - two_ulps).collect();
    assert!(
        accepted(&*sub, &[&a, &neg_b], &off),
        "two ulps of the terms"
    );
    let wrong: Vec<f64> = diff.iter().map(|s| s - 0.25).collect();
    assert!(!accepted(&*sub, &[&a, &neg_b], &wrong), "a real error");
}
