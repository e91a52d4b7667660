//! Generation and repair: validity, graph features, determinism, and that repair never keeps
//! a worse case. Deterministic (fixed seeds and counts).

use generators::stats::Summary;
use generators::{GenOptions, RepairOptions, diagnose, generate, generate_structure, repair};
use oracle::check::CheckedShapes;

fn json(case: &oracle::Case) -> String {
    serde_json::to_string(&case.to_json(&CheckedShapes::of(case))).unwrap()
}

#[test]
fn generated_models_are_valid_diverse_dags_with_arrays() {
    let opts = GenOptions::default();
    let mut rng = generators::rng(7);
    let mut summary = Summary::default();
    for _ in 0..500 {
        let g = generate(&opts, &mut rng);
        summary.add(&g.case, &g.repair);
        if !g.repair.valid {
            continue;
        }
        // Valid per the oracle as written to disk and read back, with every array.
        let back = oracle::Case::from_json_str(&json(&g.case), "generated.case.json").unwrap();
        assert!(oracle::check(&back).is_ok(), "{}", json(&g.case));
        assert_eq!(back.inputs.len(), back.model.input_count());
        let analysis = oracle::check(&back).unwrap();
        assert!(oracle::eval(&back, &analysis).is_ok());
    }
    assert!(
        summary.valid >= 495,
        "{} of 500 valid\n{}",
        summary.valid,
        summary.to_text()
    );
    for (what, n) in [
        ("multi-input", summary.multi_input),
        ("multi-output", summary.multi_output),
        ("fan-out", summary.fan_out),
        ("merge", summary.merge),
    ] {
        assert!(n >= 50, "{what} in only {n} of 500 models");
    }
    let available = generators::generate::classes_for(opts.dtype).len();
    assert!(
        summary.classes.len() + 2 >= available,
        "{} of {available} classes appear\n{}",
        summary.classes.len(),
        summary.to_text()
    );
}

#[test]
fn the_same_seed_generates_the_same_models() {
    let opts = GenOptions::default();
    let run = |seed| {
        let mut rng = generators::rng(seed);
        (0..20)
            .map(|_| json(&generate(&opts, &mut rng).case))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

#[test]
fn repair_never_keeps_a_worse_case_and_mostly_ends_valid() {
    let opts = GenOptions::default();
    let repair_opts = RepairOptions::default();
    let mut rng = generators::rng(11);
    let mut needed = 0;
    let mut fixed = 0;
    for _ in 0..300 {
        let mut case = generate_structure(&opts, &mut rng);
        let before = diagnose(&case, &repair_opts).score;
        let stats = repair(&mut case, &repair_opts, &mut rng);
        let after = diagnose(&case, &repair_opts).score;
        assert!(!before.better_than(&after), "{before:?} -> {after:?}");
        assert_eq!(stats.valid, after.is_valid());
        if !before.is_valid() {
            needed += 1;
            fixed += after.is_valid() as usize;
        }
    }
    assert!(
        needed >= 100,
        "only {needed} of 300 structures needed repair"
    );
    assert!(
        fixed * 100 >= needed * 99,
        "repair fixed {fixed} of {needed}"
    );
}

/// Keras names the operations it creates where layers compute masks from its own counter
/// (`concatenate`, `concatenate_1`, ...): a generated layer never takes such a name, which
/// would meet theirs in the graph.
#[test]
fn generated_layer_names_leave_keras_mask_operation_names_free() {
    let opts = GenOptions::default();
    let mut rng = generators::rng(11);
    let taken_by_keras = |name: &str| {
        [
            "not_equal",
            "any",
            "ones_like",
            "zeros_like",
            "expand_dims",
            "logical_or",
        ]
        .iter()
        .chain(&["concatenate", "convert_to_tensor"])
        .any(|base| {
            name == *base
                || name
                    .strip_prefix(base)
                    .and_then(|r| r.strip_prefix('_'))
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
    };
    let mut concatenates = 0;
    for _ in 0..300 {
        let g = generate(&opts, &mut rng);
        for l in &g.case.model.layers {
            assert!(!taken_by_keras(&l.name), "{}", json(&g.case));
            concatenates += usize::from(l.class_name == "Concatenate");
        }
    }
    // The class whose own name Keras gives its mask operations is generated.
    assert!(concatenates > 0);
}

/// A Dense after a Flatten keeps its output within the element bound and may still need
/// millions of weights: the repair counts that as a violation at the layer, and ends with a
/// valid case within the weight bound.
#[test]
fn repair_keeps_each_layer_within_the_weight_bound() {
    let case = serde_json::json!({"format": "semfuzz-case/1", "dtype": "float32",
        "model": {"name": "m", "trainable": true, "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
             "config": {"batch_shape": [null, 8, 8, 24], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
            {"module": "keras.layers", "class_name": "Flatten", "name": "f", "registered_name": null,
             "config": {"name": "f"}, "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]},
            {"module": "keras.layers", "class_name": "Dense", "name": "d", "registered_name": null,
             "config": {"name": "d", "units": 1024}, "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["f", 0, 0]}}], "kwargs": {}}]}],
            "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]}});
    let mut case = oracle::Case::from_json_str(&case.to_string(), "wide.case.json").unwrap();
    let opts = RepairOptions::default();
    // 1536 inputs by 1024 units: 2048 outputs at batch 2, within the element bound.
    let d = diagnose(&case, &opts);
    let v = d.violation.expect("over the weight bound");
    assert_eq!((v.layer.as_str(), v.parameter.as_str()), ("d", "weights"));
    assert_eq!(v.actual, (1536 * 1024 + 1024).to_string());
    let within = RepairOptions {
        max_weights: 1 << 21,
        ..opts
    };
    assert!(diagnose(&case, &within).score.is_valid());
    let mut rng = generators::rng(5);
    assert!(repair(&mut case, &opts, &mut rng).valid);
    let analysis = oracle::check(&case).expect("valid");
    for call in &analysis.calls {
        if let oracle::check::CallKind::Layer(spec) = &call.kind {
            let shapes: Vec<Vec<usize>> = call
                .input_shapes
                .iter()
                .map(|d| d.iter().map(|x| x.unwrap_or(2)).collect())
                .collect();
            let n: usize = spec
                .weights(&shapes)
                .iter()
                .map(|w| w.shape.iter().product::<usize>())
                .sum();
            assert!(n <= opts.max_weights, "{n} weights");
        }
    }
}

/// A class that accepts only some ranks (a recurrent layer, a 3-D convolution) is placed on
/// tensors of the pool that fit it, not given up for a class that accepts anything: with four
/// picky classes beside `Dense`, the picky ones keep a fair share of the generated models'
/// layers.
#[test]
fn picky_classes_are_placed_where_they_fit() {
    let picky = ["GRU", "Conv3D", "SimpleRNN", "LSTM"];
    let classes: Vec<_> = generators::generate::classes_for(oracle::DType::Float64)
        .into_iter()
        .filter(|k| picky.contains(&k.class_name()) || k.class_name() == "Dense")
        .collect();
    assert_eq!(classes.len(), 5);
    let opts = GenOptions {
        classes,
        layers: 6,
        ..GenOptions::default()
    };
    let mut rng = generators::rng(21);
    let (mut layers, mut picky_layers) = (0, 0);
    for _ in 0..600 {
        let g = generate(&opts, &mut rng);
        let model = &g.case.model;
        for layer in &model.layers {
            let class = layer.class_name.as_str();
            // The masked chains put before a recurrent layer (`Masking → Dense`) are not draws.
            let after_masking = generators::edit::call_inputs(layer).iter().any(|t| {
                model
                    .layer(&t.layer)
                    .is_some_and(|p| p.class_name == "Masking")
            });
            if class == "InputLayer" || class == "Masking" || (class == "Dense" && after_masking) {
                continue;
            }
            layers += 1;
            picky_layers += picky.contains(&class) as usize;
        }
    }
    assert!(
        picky_layers * 100 >= layers * PICKY_SHARE,
        "{picky_layers} of {layers} layers are of a picky class"
    );
}

/// Percent of the layers of a picky class. Over 200 models the share moves by ±2 with the
/// seed: 42.2 to 46.4 over six seeds (41.4 to 45.2 before the masked chains), hence 600
/// models and a bound below the spread.
const PICKY_SHARE: usize = 42;
