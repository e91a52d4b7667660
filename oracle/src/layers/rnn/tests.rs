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

mod preconditions {
    use serde_json::{Value, json};

    use crate::DType;
    use crate::case::{Arg, Dims, Node, TensorRef};
    use crate::layers::{CallSite, Spec, lookup};
    use crate::params::ParamError;
    use crate::violation::{Category, Tag, Violation};

    fn tensor(name: &str) -> Arg {
        Arg::Tensor {
            source: TensorRef::new(name, 0, 0),
            dtype: None,
        }
    }

    /// A call `layer(x, initial_state=states)`.
    fn node(states: Option<Arg>) -> Node {
        let mut n = Node::default();
        n.args.push(tensor("x"));
        if let Some(s) = states {
            n.kwargs.push(("initial_state".into(), s));
        }
        n
    }

    fn states(n: usize) -> Option<Arg> {
        Some(Arg::List(
            (0..n).map(|i| tensor(&format!("s{i}"))).collect(),
        ))
    }

    fn parse(class: &str, config: Value, node: &Node) -> Result<Box<dyn Spec>, ParamError> {
        lookup(class, None).expect("registered").parse(&CallSite {
            config: config.as_object().expect("an object"),
            node,
            dtype: DType::Float64,
        })
    }

    fn spec(class: &str, config: Value, node: &Node) -> Box<dyn Spec> {
        parse(class, config, node).unwrap_or_else(|e| panic!("{class}: {e:?}"))
    }

    fn invalid(r: Result<Box<dyn Spec>, ParamError>) -> Violation {
        match r {
            Err(ParamError::Invalid(v)) => v,
            other => panic!("expected a violation, got {other:?}"),
        }
    }

    fn d(v: &[Option<usize>]) -> Dims {
        v.to_vec()
    }

    #[test]
    fn stateful_is_unsupported_and_units_must_be_positive_integers() {
        let n = node(None);
        match parse("LSTM", json!({"units": 2, "stateful": true}), &n) {
            Err(ParamError::Unsupported(u)) => assert_eq!(u.parameter, "stateful"),
            other => panic!("{other:?}"),
        }
        for units in [json!(0), json!(-3), json!(2.0), json!("2")] {
            let v = invalid(parse("GRU", json!({ "units": units }), &n));
            assert_eq!(
                (v.category, v.tag),
                (Category::IllegalArgument, Tag::KerasEnforced)
            );
        }
        // Flags are read with Python's truth: Keras accepts "x" as return_sequences=True.
        let s = spec(
            "SimpleRNN",
            json!({"units": 2, "return_sequences": "x"}),
            &n,
        );
        let out = s.infer(&[d(&[Some(1), Some(4), Some(3)])]).unwrap();
        assert_eq!(out, vec![d(&[Some(1), Some(4), Some(2)])]);
    }

    #[test]
    fn initial_states_are_counted_per_layer() {
        // LSTM takes exactly [h, c], SimpleRNN one state, GRU one or more (the first used).
        for (class, n) in [("LSTM", 1), ("LSTM", 3), ("SimpleRNN", 2), ("GRU", 0)] {
            let v = invalid(parse(class, json!({"units": 4}), &node(states(n))));
            assert_eq!(
                (v.category, v.tag),
                (Category::Structure, Tag::KerasEnforced),
                "{class}"
            );
        }
        let gru = spec(
            "GRU",
            json!({"units": 4, "return_state": true}),
            &node(states(3)),
        );
        let seq = d(&[Some(2), Some(5), Some(3)]);
        let out = gru
            .infer(&[
                seq,
                d(&[Some(2), Some(4)]),
                d(&[Some(9)]),
                d(&[Some(1), Some(1)]),
            ])
            .unwrap();
        assert_eq!(out.len(), 2);
        // Positional: layer(x, [h, c]).
        let n = Node {
            args: vec![tensor("x"), states(2).unwrap()],
            ..Node::default()
        };
        let lstm = spec("LSTM", json!({"units": 4}), &n);
        let h = d(&[None, Some(4)]);
        assert!(
            lstm.infer(&[d(&[None, Some(5), Some(3)]), h.clone(), h])
                .is_ok()
        );
    }

    #[test]
    fn initial_states_must_be_batch_by_units() {
        let lstm = spec("LSTM", json!({"units": 4}), &node(states(2)));
        let seq = d(&[Some(2), Some(5), Some(3)]);
        let ok = d(&[Some(2), Some(4)]);
        let check = |c: Dims| lstm.infer(&[seq.clone(), ok.clone(), c]);
        assert!(check(ok.clone()).is_ok());
        assert!(check(d(&[None, Some(4)])).is_ok());
        let v = check(d(&[Some(2), Some(3)])).unwrap_err();
        assert_eq!(
            (v.category, v.tag),
            (Category::IncompatibleShapes, Tag::KerasEnforced)
        );
        assert_eq!(v.parameter, "initial_state[1]");
        // Shapes that broadcast run eagerly, but not as Keras declares them.
        for c in [
            d(&[Some(1), Some(4)]),
            d(&[Some(2), Some(1)]),
            d(&[Some(4)]),
        ] {
            assert_eq!(check(c).unwrap_err().tag, Tag::Semantic);
        }
    }

    #[test]
    fn sequences_need_steps_features_and_rank_three() {
        let n = node(None);
        let lstm = spec("LSTM", json!({"units": 2}), &n);
        let err = |s: &dyn Spec, dims: &[Option<usize>]| s.infer(&[d(dims)]).unwrap_err();
        let v = err(lstm.as_ref(), &[Some(2), Some(0), Some(3)]);
        assert_eq!(
            (v.category, v.tag),
            (Category::EmptyOutput, Tag::KerasEnforced)
        );
        assert_eq!(
            err(lstm.as_ref(), &[None, Some(4), None]).tag,
            Tag::KerasEnforced
        );
        assert_eq!(
            err(lstm.as_ref(), &[None, Some(4), Some(3), Some(1)]).category,
            Category::Rank
        );
        // No time steps known: fine, even unrolled (eager Keras sees the real length).
        let unrolled = spec("GRU", json!({"units": 2, "unroll": true}), &n);
        assert!(unrolled.infer(&[d(&[None, None, Some(3)])]).is_ok());
        // RNN declares no rank: TF asks for >= 3, beyond it the cell's shapes are garbage.
        let cell = json!({"class_name": "SimpleRNNCell", "config": {"units": 2}});
        let rnn = spec("RNN", json!({ "cell": cell }), &n);
        assert_eq!(
            err(rnn.as_ref(), &[None, Some(4), Some(3), Some(1)]).tag,
            Tag::Semantic
        );
        assert_eq!(err(rnn.as_ref(), &[None, Some(4)]).tag, Tag::KerasEnforced);
    }

    #[test]
    fn masks_are_batch_by_time() {
        let s = spec("LSTM", json!({"units": 2}), &node(None));
        let seq = d(&[None, Some(4), Some(3)]);
        let one = std::slice::from_ref(&seq);
        assert!(s.check_masks(one, &[Some(vec![1, 4])]).is_ok());
        assert_eq!(
            s.check_masks(one, &[Some(vec![1, 4, 3])]).unwrap_err().tag,
            Tag::Semantic
        );
        assert!(s.check_masks(&[seq], &[Some(vec![1, 5])]).is_err());
    }

    #[test]
    fn build_config_records_the_initial_state_shapes() {
        let seq = d(&[None, Some(5), Some(3)]);
        let h = d(&[None, Some(4)]);
        let lstm = spec("LSTM", json!({"units": 4}), &node(states(2)));
        assert_eq!(
            lstm.build_config(&[seq.clone(), h.clone(), h.clone()]),
            Some(json!({"shapes_dict": {"sequences_shape": [null, 5, 3],
                "initial_state_shape": [[null, 4], [null, 4]]}}))
        );
        let gru = spec("GRU", json!({"units": 4}), &node(Some(tensor("h"))));
        assert_eq!(
            gru.build_config(&[seq.clone(), h]),
            Some(json!({"shapes_dict": {"sequences_shape": [null, 5, 3],
                "initial_state_shape": [null, 4]}}))
        );
        let plain = spec("GRU", json!({"units": 4}), &node(None));
        assert_eq!(
            plain.build_config(&[seq]),
            Some(json!({"input_shape": [null, 5, 3]}))
        );
    }

    fn lstm(config: Value) -> Value {
        json!({"module": "keras.layers", "class_name": "LSTM", "config": config})
    }

    #[test]
    fn bidirectional_layers_must_pair_up() {
        let n = node(None);
        let bi = |c: Value| parse("Bidirectional", c, &n);
        // Keras compares with Python's ==: go_backwards 1 is True.
        let same = json!({"layer": lstm(json!({"units": 2, "go_backwards": 1})),
                          "backward_layer": lstm(json!({"units": 2, "go_backwards": true}))});
        assert_eq!(invalid(bi(same)).parameter, "go_backwards");
        let mixed = json!({"layer": lstm(json!({"units": 2})),
                           "backward_layer": lstm(json!({"units": 2, "go_backwards": true,
                                                         "return_sequences": true}))});
        assert_eq!(invalid(bi(mixed)).parameter, "return_sequences");
        let bad = json!({"layer": lstm(json!({"units": 2})), "merge_mode": "max"});
        assert_eq!(invalid(bi(bad)).parameter, "merge_mode");
        match bi(json!({"merge_mode": "sum"})) {
            Err(ParamError::Unsupported(u)) => assert_eq!(u.parameter, "layer"),
            other => panic!("{other:?}"),
        }
        // Another backward layer size: Keras declares the forward layer's shapes.
        let wider = json!({"layer": lstm(json!({"units": 2})),
                           "backward_layer": lstm(json!({"units": 3, "go_backwards": true}))});
        let s = bi(wider).unwrap();
        let v = s.infer(&[d(&[None, Some(5), Some(3)])]).unwrap_err();
        assert_eq!(v.tag, Tag::Semantic);
        // merge_mode None: two outputs, then the forward and the backward states.
        let both = json!({"layer": lstm(json!({"units": 2, "return_state": true})),
                          "merge_mode": null});
        let out = bi(both)
            .unwrap()
            .infer(&[d(&[None, Some(5), Some(3)])])
            .unwrap();
        assert_eq!(out.len(), 6);
        // Initial states split in halves: [h, c] forward, [h, c] backward.
        let s = parse(
            "Bidirectional",
            json!({"layer": lstm(json!({"units": 2}))}),
            &node(states(4)),
        );
        assert!(s.is_ok());
        let v = invalid(parse(
            "Bidirectional",
            json!({"layer": lstm(json!({"units": 2}))}),
            &node(states(2)),
        ));
        assert_eq!(v.category, Category::Structure);
    }

    /// The bound follows the steps the mask lets the run take: with every step masked,
    /// nothing is computed and the outputs are exact zeros.
    #[test]
    fn the_tolerance_follows_the_mask() {
        let s = spec("SimpleRNN", json!({"units": 2}), &node(None));
        let x = ndarray::ArrayD::from_elem(vec![1, 3, 2], 0.5);
        let w = [
            ndarray::ArrayD::from_elem(vec![2, 2], 0.1),
            ndarray::ArrayD::from_elem(vec![2, 2], 0.1),
            ndarray::ArrayD::from_elem(vec![2], 0.1),
        ];
        let w: Vec<_> = w.iter().collect();
        let unmasked = s.tolerance(DType::Float64, &[&x], &w).abs;
        assert!(unmasked > 1e-16 && unmasked < 1e-14, "{unmasked}");
        let none = crate::layers::Mask::from_elem(vec![1, 3], false);
        let masked = s
            .tolerance_masked(DType::Float64, &[&x], &[Some(&none)], &w)
            .abs;
        assert_eq!(
            masked,
            crate::tolerance::Tolerance::elementwise(DType::Float64).abs
        );
    }

    fn spec_in(class: &str, config: Value, dtype: DType) -> Box<dyn Spec> {
        lookup(class, None)
            .expect("registered")
            .parse(&CallSite {
                config: config.as_object().expect("an object"),
                node: &node(None),
                dtype,
            })
            .unwrap_or_else(|e| panic!("{class}: {e:?}"))
    }

    /// A nested cell computes in its own dtype policy (float32 when it has none, where
    /// semfuzz builds models): a float64 RNN around it is as exact as float32.
    #[test]
    fn nested_cells_compute_in_their_own_dtype() {
        let x = ndarray::ArrayD::from_elem(vec![1, 3, 2], 0.5);
        let w = [
            ndarray::ArrayD::from_elem(vec![2, 2], 0.1),
            ndarray::ArrayD::from_elem(vec![2, 2], 0.1),
            ndarray::ArrayD::from_elem(vec![2], 0.1),
        ];
        let w: Vec<_> = w.iter().collect();
        let tol = |cell: Value| {
            let s = spec_in("RNN", json!({ "cell": cell }), DType::Float64);
            s.eval(&[&x], &w);
            s.tolerance(DType::Float64, &[&x], &w).abs
        };
        let own = tol(json!({"class_name": "SimpleRNNCell", "config": {"units": 2}}));
        let f64 = tol(json!({"class_name": "SimpleRNNCell",
                              "config": {"units": 2, "dtype": "float64"}}));
        assert!(own > 1e6 * f64, "{own} vs {f64}");
    }

    /// Keras builds a nested cell or layer from its `build_config` when it deserializes it:
    /// its kernel then fits those features only.
    #[test]
    fn nested_build_configs_fix_the_features() {
        let cell = json!({"class_name": "LSTMCell", "config": {"units": 2},
                          "build_config": {"input_shape": [null, 3]}});
        let s = spec_in("RNN", json!({ "cell": cell }), DType::Float64);
        assert!(s.infer(&[d(&[None, Some(5), Some(3)])]).is_ok());
        let v = s.infer(&[d(&[None, Some(5), Some(6)])]).unwrap_err();
        assert_eq!(
            (v.category, v.tag),
            (Category::IncompatibleShapes, Tag::KerasEnforced)
        );
        let layer = json!({"class_name": "GRU", "config": {"units": 2},
                           "build_config": {"input_shape": [null, 5, 4]}});
        let b = spec_in("Bidirectional", json!({ "layer": layer }), DType::Float64);
        assert!(b.infer(&[d(&[None, Some(5), Some(4)])]).is_ok());
        assert!(b.infer(&[d(&[None, Some(5), Some(3)])]).is_err());
    }

    /// TF's float32 kernels overflow to infinity where float64 does not.
    #[test]
    fn float32_overflows() {
        let s = spec_in(
            "SimpleRNN",
            json!({"units": 1, "activation": "linear"}),
            DType::Float32,
        );
        let x = ndarray::ArrayD::from_elem(vec![1, 1, 1], 1e20);
        let k = ndarray::ArrayD::from_elem(vec![1, 1], 1e20);
        let r = ndarray::ArrayD::from_elem(vec![1, 1], 1.0);
        let b = ndarray::ArrayD::from_elem(vec![1], 0.0);
        let out = s.eval(&[&x], &[&k, &r, &b]);
        assert_eq!(out[0][[0, 0]], f64::INFINITY);
        let s = spec_in(
            "SimpleRNN",
            json!({"units": 1, "activation": "linear"}),
            DType::Float64,
        );
        assert_eq!(s.eval(&[&x], &[&k, &r, &b])[0][[0, 0]], 1e40);
    }

    /// From the step at which a row's value may lie on either side of the dtype's largest
    /// value by its error bound, whether TF overflows there is rounding's choice: that
    /// row's later outputs and its final state are flagged, the other rows and the earlier
    /// steps are not. An overflow far beyond the rounding is not flagged: TF must overflow
    /// too.
    #[test]
    fn an_overflow_rounding_decides_is_flagged_from_its_step_on() {
        let s = spec_in(
            "SimpleRNN",
            json!({"units": 1, "activation": "linear", "return_sequences": true,
                   "return_state": true}),
            DType::Float32,
        );
        let max = f64::from(f32::MAX);
        let k = ndarray::ArrayD::from_elem(vec![1, 1], 1.0);
        let r = ndarray::ArrayD::from_elem(vec![1, 1], 1.0);
        let b = ndarray::ArrayD::from_elem(vec![1], 0.0);
        let w = [&k, &r, &b];
        // Row 0 sums to just below the largest float32 at the second step (within a
        // rounding of it); row 1 stays small; row 2 overflows at once, by far.
        let x = ndarray::ArrayD::from_shape_vec(
            vec![3, 3, 1],
            vec![
                max * 0.75,
                max * 0.25 * (1.0 - 1e-9),
                0.0,
                1.0,
                2.0,
                3.0,
                1e300,
                1.0,
                1.0,
            ],
        )
        .unwrap();
        let flags = s.order_dependent_overflow(&[&x], &w).expect("flags");
        let seq: Vec<bool> = flags[0].iter().copied().collect();
        assert_eq!(
            seq,
            [false, true, true, false, false, false, false, false, false]
        );
        let state: Vec<bool> = flags[1].iter().copied().collect();
        assert_eq!(state, [true, false, false]);
        // Nothing near the range: no flags at all.
        let small = ndarray::ArrayD::from_elem(vec![2, 3, 1], 1.0);
        assert!(s.order_dependent_overflow(&[&small], &w).is_none());
        // Masked, row 0 skips its second step (the state stays at 0.75 MAX and the last
        // input is 0): nothing is near the range along the steps it takes, and row 2's
        // overflow is far beyond rounding.
        let m = crate::layers::Mask::from_shape_vec(
            vec![3, 3],
            vec![true, false, true, true, true, true, true, true, true],
        )
        .unwrap();
        assert!(
            s.order_dependent_overflow_masked(&[&x], &[Some(&m)], &w)
                .is_none()
        );
        // Masking a step of row 1 instead leaves row 0's flags as they were.
        let m = crate::layers::Mask::from_shape_vec(
            vec![3, 3],
            vec![true, true, true, true, false, true, true, true, true],
        )
        .unwrap();
        let flags = s
            .order_dependent_overflow_masked(&[&x], &[Some(&m)], &w)
            .expect("flags");
        let seq: Vec<bool> = flags[0].iter().copied().collect();
        assert_eq!(
            seq,
            [false, true, true, false, false, false, false, false, false]
        );
    }

    /// A Bidirectional layer flags each direction's elements where its outputs go: the
    /// backward direction reaches the range at its last step, which is the first time step
    /// of the merged sequence.
    #[test]
    fn a_bidirectional_layer_flags_each_direction_where_its_outputs_go() {
        let layer = json!({"class_name": "SimpleRNN", "config": {"units": 1,
            "activation": "linear", "return_sequences": true}});
        let s = spec_in("Bidirectional", json!({ "layer": layer }), DType::Float32);
        let max = f64::from(f32::MAX);
        let one = ndarray::ArrayD::from_elem(vec![1, 1], 1.0);
        let zero = ndarray::ArrayD::from_elem(vec![1], 0.0);
        let w = [&one, &one, &zero, &one, &one, &zero];
        let x = ndarray::ArrayD::from_shape_vec(
            vec![1, 3, 1],
            vec![max * 0.75, max * 0.25 * (1.0 - 1e-9), 0.0],
        )
        .unwrap();
        let flags = s.order_dependent_overflow(&[&x], &w).expect("flags");
        // (batch, time, forward unit then backward unit).
        let merged: Vec<bool> = flags[0].iter().copied().collect();
        assert_eq!(merged, [false, true, true, false, true, false]);
        // With the second step masked, neither direction sums the two large inputs.
        let m = crate::layers::Mask::from_shape_vec(vec![1, 3], vec![true, false, true]).unwrap();
        assert!(
            s.order_dependent_overflow_masked(&[&x], &[Some(&m)], &w)
                .is_none()
        );
    }
}
