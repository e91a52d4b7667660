//! Tests of the family as a whole: example configs, parsing of calls, masks replayed from
//! direct Keras calls (`oracle/tests/golden/rnn/direct/calls.json`, written by
//! `scripts/goldens/rnn.py`).

use serde_json::Value;

use super::KINDS;
use crate::DType;
use crate::case::Node;
use crate::layers::{CallSite, ParamDef};

/// Every nested config the family offers generators is one its own parser accepts.
#[test]
fn example_configs_parse() {
    for kind in KINDS {
        for def in kind.params() {
            let ParamDef::Config { name, options } = *def else {
                continue;
            };
            for o in options {
                let v: Value = serde_json::from_str(o).expect("JSON");
                let mut config = serde_json::Map::new();
                config.insert(name.to_owned(), v);
                let parsed = kind.parse(&CallSite {
                    config: &config,
                    node: &Node::default(),
                    dtype: DType::Float64,
                });
                assert!(parsed.is_ok(), "{}: {o}: {parsed:?}", kind.class_name());
            }
        }
    }
}

fn dims(a: &ndarray::ArrayD<f64>) -> crate::case::Dims {
    a.shape().iter().map(|&d| Some(d)).collect()
}

fn shape_of(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|d| d.as_u64().expect("a dimension") as usize)
        .collect()
}

fn array(v: &Value) -> ndarray::ArrayD<f64> {
    let data = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_f64().expect("a finite number"))
        .collect();
    ndarray::ArrayD::from_shape_vec(shape_of(v), data).expect("consistent")
}

fn mask(v: &Value) -> crate::layers::Mask {
    let data = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_bool().expect("a boolean"))
        .collect();
    crate::layers::Mask::from_shape_vec(shape_of(v), data).expect("consistent")
}

/// Layers called directly by Keras with a mask (and sometimes initial states): the reference
/// gives Keras's outputs within its tolerance, and the output masks Keras sets.
#[test]
fn direct_masked_calls_match_keras() {
    use crate::case::{Arg, TensorRef};
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/rnn/direct/calls.json");
    let calls: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).expect("calls.json")).expect("JSON");
    assert!(calls.len() >= 30, "only {} calls", calls.len());
    let tensor = |name: &str| Arg::Tensor {
        source: TensorRef::new(name, 0, 0),
        dtype: None,
    };
    for call in &calls {
        let name = call["name"].as_str().expect("a name");
        let class = call["layer"]["class_name"].as_str().expect("a class");
        let config = call["layer"]["config"].as_object().expect("a config");
        let inputs: Vec<_> = call["inputs"]
            .as_array()
            .expect("inputs")
            .iter()
            .map(array)
            .collect();
        let mut node = Node::default();
        node.args.push(tensor("x"));
        if inputs.len() > 1 {
            let states = (1..inputs.len())
                .map(|i| tensor(&format!("s{i}")))
                .collect();
            node.kwargs
                .push(("initial_state".into(), Arg::List(states)));
        }
        let kind = crate::layers::lookup(class, None).expect("registered");
        let spec = kind
            .parse(&CallSite {
                config,
                node: &node,
                dtype: DType::Float64,
            })
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let shapes: Vec<_> = inputs.iter().map(dims).collect();
        spec.infer(&shapes)
            .unwrap_or_else(|v| panic!("{name}: {v}"));
        let m = mask(&call["mask"]);
        let masks: Vec<Option<&crate::layers::Mask>> = std::iter::once(Some(&m))
            .chain(std::iter::repeat(None))
            .take(inputs.len())
            .collect();
        let weights: Vec<_> = call["weights"]
            .as_array()
            .expect("weights")
            .iter()
            .map(array)
            .collect();
        let (ins, ws): (Vec<_>, Vec<_>) = (inputs.iter().collect(), weights.iter().collect());
        let got = spec.eval_masked(&ins, &masks, &ws);
        let tol = spec
            .tolerance(DType::Float64, &ins, &ws)
            .flushing(DType::Float64);
        let want = call["outputs"].as_array().expect("outputs");
        assert_eq!(got.len(), want.len(), "{name}: number of outputs");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let w = array(w);
            assert_eq!(g.shape(), w.shape(), "{name}: output {i}");
            for ((idx, a), b) in g.indexed_iter().zip(w.iter()) {
                assert!(
                    tol.accepts(*a, *b),
                    "{name}: output {i} at {idx:?}: reference {a}, Keras {b} ({tol:?})"
                );
            }
        }
        let got_masks = spec
            .compute_mask(&ins, &masks)
            .expect("recurrent layers mask");
        let want_masks = call["output_masks"].as_array().expect("output masks");
        assert_eq!(got_masks.len(), want_masks.len(), "{name}: number of masks");
        for (i, (g, w)) in got_masks.iter().zip(want_masks).enumerate() {
            let w = (!w.is_null()).then(|| mask(w));
            assert_eq!(g.as_ref(), w.as_ref(), "{name}: mask of output {i}");
        }
    }
}
