//! Mutations never corrupt a case, refuse without a trace, all apply, are undone by repair
//! without loss, and are deterministic; minimally-invalid cases break exactly one
//! precondition.

use std::collections::BTreeMap;

use generators::edit::{self, call_inputs};
use generators::mutate::{self, MUTATIONS, SPLICE_WEIGHT};
use generators::{
    ClassBalance, GenOptions, RepairOptions, Rng, diagnose, generate, make_minimally_invalid,
    repair, rng,
};
use oracle::case::DeclaredInputShapes;
use oracle::check::{CheckedShapes, check_all};
use oracle::{Case, DType};

/// `n` generated cases that ended valid, from seeds `seed..`.
fn valid_cases(n: usize, seed: u64) -> Vec<Case> {
    let opts = GenOptions::default();
    let mut out = Vec::new();
    let mut s = seed;
    while out.len() < n {
        let g = generate(&opts, &mut rng(s));
        s += 1;
        if g.repair.valid {
            out.push(g.case);
        }
    }
    out
}

fn json(case: &Case) -> String {
    serde_json::to_string(&case.to_json(&DeclaredInputShapes)).expect("serialisable")
}

/// The case is well-formed: it reads back (references resolve, no cycle, one array per model
/// input or none), its layers come after their inputs' producers, and every layer reaches an
/// output and every input is consumed (pruning changes nothing).
fn assert_well_formed(case: &Case, what: &str) {
    let text = serde_json::to_string(&case.to_json(&CheckedShapes::of(case))).expect("json");
    if let Err(e) = Case::from_json_str(&text, "x") {
        panic!("{what}: the case does not read back: {e}\n{text}");
    }
    for (i, l) in case.model.layers.iter().enumerate() {
        for r in call_inputs(l) {
            let p = edit::position(case, &r.layer).expect("resolves");
            assert!(
                p < i,
                "{what}: `{}` consumes the later `{}`",
                l.name,
                r.layer
            );
        }
    }
    let mut pruned = case.clone();
    edit::prune(&mut pruned);
    assert_eq!(
        pruned.model.layers.len(),
        case.model.layers.len(),
        "{what}: a layer reaches no output, or an input is unused"
    );
    assert!(
        case.inputs.is_empty() || case.inputs.len() == case.model.input_count(),
        "{what}: {} arrays for {} inputs",
        case.inputs.len(),
        case.model.input_count()
    );
    assert!(!edit::outputs(case).is_empty(), "{what}: no output");
}

/// Every mutation, the splice with a donor included.
fn apply(
    name: &str,
    case: &mut Case,
    donor: &Case,
    rng: &mut Rng,
) -> Result<(), generators::Skipped> {
    match MUTATIONS.iter().find(|m| m.0 == name) {
        Some((_, _, f)) => f(case, rng, &generators::ClassBalance::default()),
        None => mutate::splice(case, donor, rng),
    }
}

fn names() -> Vec<&'static str> {
    MUTATIONS.iter().map(|m| m.0).chain(["splice"]).collect()
}

#[test]
fn mutations_keep_cases_well_formed_and_skips_leave_them_unchanged() {
    let cases = valid_cases(300, 1000);
    let mut r = rng(7);
    let mut applied: BTreeMap<&str, usize> = BTreeMap::new();
    let mut skipped: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, case) in cases.iter().enumerate() {
        let donor = &cases[(k + 1) % cases.len()];
        for name in names() {
            // Repeated on the same case: later rounds mutate already-mutated cases.
            let mut m = case.clone();
            for round in 0..3 {
                let before = m.clone();
                let what = format!("case {k}, {name}, round {round}");
                match apply(name, &mut m, donor, &mut r) {
                    Ok(()) => *applied.entry(name).or_default() += 1,
                    Err(_) => {
                        *skipped.entry(name).or_default() += 1;
                        assert_eq!(json(&m), json(&before), "{what}: a skip changed the case");
                    }
                }
                assert_well_formed(&m, &what);
            }
        }
        // A run of drawn mutations, with a donor.
        let mut m = case.clone();
        for step in 0..10 {
            let before = json(&m);
            if mutate::mutate(&mut m, &mut r, Some(donor)).is_err() {
                assert_eq!(
                    json(&m),
                    before,
                    "case {k}, step {step}: a skip changed the case"
                );
            }
            assert_well_formed(&m, &format!("case {k}, drawn mutation {step}"));
        }
    }
    for name in names() {
        let ok = applied.get(name).copied().unwrap_or(0);
        assert!(
            ok >= 50,
            "{name} applied only {ok} times (skipped {:?})",
            skipped.get(name)
        );
    }
}

#[test]
fn mutate_draws_every_mutation_and_names_it() {
    let cases = valid_cases(60, 5000);
    let mut r = rng(11);
    let mut drawn: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, case) in cases.iter().enumerate() {
        let donor = &cases[(k + 7) % cases.len()];
        for _ in 0..20 {
            let mut m = case.clone();
            if let Ok(name) = mutate::mutate(&mut m, &mut r, Some(donor)) {
                *drawn.entry(name).or_default() += 1;
            }
        }
    }
    for name in names() {
        assert!(
            drawn.get(name).copied().unwrap_or(0) > 0,
            "{name} never drawn: {drawn:?}"
        );
    }
    // Value mutations are about 40% of the draws.
    let values = drawn["perturb_weights"] + drawn["perturb_inputs"];
    let total: usize = drawn.values().sum();
    let share = values as f64 / total as f64;
    assert!(
        (0.3..0.55).contains(&share),
        "value mutations are {share} of {drawn:?}"
    );
    let weight: u32 = MUTATIONS.iter().map(|m| m.1).sum::<u32>() + SPLICE_WEIGHT;
    assert_eq!(weight, 100);
}

#[test]
fn repair_after_a_mutation_never_makes_a_case_worse() {
    let cases = valid_cases(120, 9000);
    let opts = RepairOptions::default();
    let mut r = rng(3);
    let mut invalid_after_mutation = 0;
    let mut repaired = 0;
    for (k, case) in cases.iter().enumerate() {
        let mut m = case.clone();
        let donor = &cases[(k + 1) % cases.len()];
        for _ in 0..3 {
            let _ = mutate::mutate(&mut m, &mut r, Some(donor));
        }
        let before = diagnose(&m, &opts).score;
        if !before.is_valid() {
            invalid_after_mutation += 1;
        }
        let stats = repair(&mut m, &opts, &mut r);
        let after = diagnose(&m, &opts).score;
        assert!(
            !before.better_than(&after),
            "case {k}: repair went from {before:?} to {after:?}"
        );
        assert_eq!(stats.valid, after.is_valid());
        if !before.is_valid() && after.is_valid() {
            repaired += 1;
        }
        assert_well_formed(&m, &format!("case {k} after repair"));
    }
    // Structural mutations do break cases, and repair mends most of them.
    assert!(invalid_after_mutation >= 10, "{invalid_after_mutation}");
    assert!(
        repaired * 2 >= invalid_after_mutation,
        "{repaired} of {invalid_after_mutation}"
    );
}

#[test]
fn minimally_invalid_cases_break_exactly_one_precondition() {
    let cases = valid_cases(200, 20_000);
    let mut r = rng(5);
    let mut made = 0;
    let mut keras_enforced = 0;
    // Classes whose input rank was broken: by a declared input shape, or by a layer's input
    // taken from another tensor (a check deep in a model, not only at its inputs).
    let mut rank_classes = std::collections::BTreeSet::new();
    for (k, case) in cases.iter().enumerate() {
        let Ok((invalid, v)) = make_minimally_invalid(case, &ClassBalance::default(), &mut r)
        else {
            continue;
        };
        made += 1;
        if v.category == oracle::Category::Rank {
            rank_classes.insert(v.class.clone());
        }
        let found = check_all(&invalid).expect("modelled");
        assert_eq!(found, vec![v.clone()], "case {k}");
        assert!(!invalid.model.layers.is_empty());
        assert_ne!(json(&invalid), json(case), "case {k}: nothing changed");
        assert_well_formed(&invalid, &format!("invalid case {k}"));
        assert_inputs_fit(&invalid, &format!("invalid case {k}"));
        if v.tag == oracle::Tag::KerasEnforced {
            keras_enforced += 1;
        }
    }
    assert!(made >= 160, "only {made} of 200");
    assert!(keras_enforced * 3 >= made, "{keras_enforced} of {made}");
    assert!(rank_classes.len() >= RANK_CLASSES, "{rank_classes:?}");
}

/// Classes with a broken input rank in 200 minimally-invalid cases (measured: 27, and 31 from
/// other seeds; 12 when only declared input shapes changed a rank, in 100 cases). In 100
/// cases the count varied from 12 to 24 with the seeds alone, too widely for a bound.
const RANK_CLASSES: usize = 20;

/// The layer a minimally-invalid case changes is drawn by the campaign's balance: the class
/// it has seen least has its own preconditions broken far more often than under a uniform
/// draw (a rare class's checks, such as the rank check of `SpatialDropout1D`, are then tried
/// as often as the class is in models).
#[test]
fn the_layer_a_minimally_invalid_case_breaks_is_drawn_by_the_balance() {
    let cases = valid_cases(120, 60_000);
    let mut held = ClassBalance::default();
    cases.iter().for_each(|c| held.record(c));
    // The class in the most models, and a balance that has seen every other class often.
    let (rare, _) = held.counts().max_by_key(|&(c, n)| (n, c)).expect("classes");
    let mut favouring = ClassBalance::default();
    for (class, _) in held.counts().filter(|&(c, _)| c != rare) {
        (0..1000).for_each(|_| favouring.record_class(class));
    }
    // The cases whose change is at a layer of that class (its arguments or its inputs).
    let at_rare = |balance: &ClassBalance| -> usize {
        let mut r = rng(8);
        cases
            .iter()
            .filter_map(|case| {
                let (invalid, _) = make_minimally_invalid(case, balance, &mut r).ok()?;
                let layers = |c: &Case| -> Vec<serde_json::Value> {
                    let v: serde_json::Value = serde_json::from_str(&json(c)).expect("json");
                    v["model"]["layers"].as_array().expect("layers").clone()
                };
                let before = layers(case);
                let changed = layers(&invalid).into_iter().any(|l| {
                    l["class_name"] == rare
                        && !before
                            .iter()
                            .any(|b| b["config"]["name"] == l["config"]["name"] && *b == l)
                });
                Some(changed)
            })
            .filter(|&changed| changed)
            .count()
    };
    let uniform = at_rare(&ClassBalance::default());
    let favoured = at_rare(&favouring);
    assert!(
        favoured >= 2 * uniform.max(5),
        "{rare}: changed in {favoured} cases under the balance, {uniform} under a uniform draw"
    );
}

/// The case holds one input array per model input, of its declared shape.
fn assert_inputs_fit(case: &oracle::Case, what: &str) {
    let declared = oracle::check::declared_inputs(&case.model).expect("declared inputs");
    assert_eq!(
        case.inputs.len(),
        declared.len(),
        "{what}: an array per model input"
    );
    for (t, d) in case.inputs.iter().zip(&declared) {
        assert!(
            t.shape().len() == d.len()
                && d.iter()
                    .zip(t.shape())
                    .all(|(d, s)| d.is_none_or(|d| d == *s)),
            "{what}: an array of shape {:?} for an input declared {d:?}",
            t.shape()
        );
    }
}

/// A layer's own check of its input's rank is broken even where every tensor of the model has
/// the rank it takes: in `x (rank 3) → Conv1D → SpatialDropout1D` a new input shape breaks the
/// `Conv1D` first, and no earlier tensor has another rank.
#[test]
fn a_minimally_invalid_case_breaks_a_rank_check_no_tensor_of_the_model_breaks() {
    let node = |from: &str| {
        serde_json::json!([{"args": [{"class_name": "__keras_tensor__",
            "config": {"keras_history": [from, 0, 0]}}], "kwargs": {}}])
    };
    let layers = vec![
        serde_json::json!({"class_name": "InputLayer", "name": "x",
            "config": {"batch_shape": [null, 6, 3], "name": "x"}, "inbound_nodes": []}),
        serde_json::json!({"class_name": "Conv1D", "name": "conv",
            "config": {"name": "conv", "filters": 2, "kernel_size": 3}, "inbound_nodes": node("x")}),
        serde_json::json!({"class_name": "SpatialDropout1D", "name": "sd",
            "config": {"name": "sd", "rate": 0.5}, "inbound_nodes": node("conv")}),
    ];
    let case = float32_case(layers, "sd");
    assert!(matches!(check_all(&case), Ok(v) if v.is_empty()));
    let mut r = rng(3);
    let made: Vec<oracle::Violation> = (0..200)
        .filter_map(|_| make_minimally_invalid(&case, &ClassBalance::default(), &mut r).ok())
        .map(|(c, v)| {
            // A new model input comes with its array (and the input the case had gets one):
            // the model can be called, not only built.
            if oracle::check::declared_inputs(&c.model).unwrap().len() > 1 {
                assert_inputs_fit(&c, &v.to_string());
            }
            v
        })
        .collect();
    let at_rank = made
        .iter()
        .filter(|v| v.class == "SpatialDropout1D" && v.category == oracle::Category::Rank)
        .count();
    assert!(
        at_rank >= 10,
        "{at_rank} of {} invalid cases break the SpatialDropout1D rank check",
        made.len()
    );
}

#[test]
fn an_invalid_case_is_refused() {
    let mut case = valid_cases(1, 42).remove(0);
    let (invalid, _) =
        make_minimally_invalid(&case, &ClassBalance::default(), &mut rng(1)).expect("made");
    case = invalid;
    assert_eq!(
        make_minimally_invalid(&case, &ClassBalance::default(), &mut rng(1)).map(|_| ()),
        Err(generators::Skipped("not a valid case"))
    );
}

#[test]
fn the_same_seed_gives_the_same_mutants() {
    let cases = valid_cases(20, 300);
    let run = |seed: u64| -> Vec<String> {
        let mut r = rng(seed);
        let mut out = Vec::new();
        for (k, case) in cases.iter().enumerate() {
            let mut m = case.clone();
            for _ in 0..5 {
                let name = mutate::mutate(&mut m, &mut r, Some(&cases[(k + 1) % cases.len()]));
                out.push(format!("{name:?}"));
            }
            out.push(json(&m));
            if let Ok((c, v)) = make_minimally_invalid(case, &ClassBalance::default(), &mut r) {
                out.push(format!("{v:?}"));
                out.push(json(&c));
            }
        }
        out
    };
    let a = run(99);
    assert_eq!(a, run(99));
    assert_ne!(a, run(100));
}

#[test]
fn change_dtype_twice_is_the_identity_and_retypes_every_layer() {
    for case in valid_cases(20, 700) {
        let mut m = case.clone();
        mutate::change_dtype(&mut m, &mut rng(0)).expect("float64 case");
        assert_eq!(m.dtype, DType::Float32);
        let text = json(&m);
        assert!(!text.contains("float64"), "a float64 left: {text}");
        mutate::change_dtype(&mut m, &mut rng(0)).expect("float32 case");
        assert_eq!(json(&m), json(&case));
    }
}

#[test]
fn perturbing_keeps_non_negative_arrays_non_negative() {
    let cases = valid_cases(150, 40_000);
    let mut r = rng(2);
    let mut checked = 0;
    for case in cases {
        let non_negative: Vec<String> = case
            .weights
            .iter()
            .filter(|(_, ts)| ts.iter().any(|t| t.data.iter().all(|&x| x >= 0.0)))
            .map(|(k, _)| k.clone())
            .collect();
        if non_negative.is_empty() {
            continue;
        }
        let mut m = case.clone();
        for _ in 0..30 {
            mutate::perturb_weights(&mut m, &mut r).expect("has weights");
        }
        for name in &non_negative {
            for (old, new) in case.weights[name].iter().zip(&m.weights[name]) {
                if old.data.iter().all(|&x| x >= 0.0) {
                    assert!(new.data.iter().all(|&x| x >= 0.0 || x.is_nan()), "{name}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0);
}

#[test]
fn splice_adds_a_chain_from_the_donor_as_a_new_output() {
    let cases = valid_cases(40, 800);
    let mut r = rng(4);
    let mut spliced = 0;
    for pair in cases.chunks(2) {
        let [case, donor] = pair else { continue };
        let mut m = case.clone();
        if mutate::splice(&mut m, donor, &mut r).is_err() {
            continue;
        }
        spliced += 1;
        let added = m.model.layers.len() - case.model.layers.len();
        assert!((1..=4).contains(&added), "{added} layers added");
        assert_eq!(edit::outputs(&m).len(), edit::outputs(case).len() + 1);
        let last = edit::outputs(&m).pop().expect("an output");
        assert!(
            case.model.layer(&last.layer).is_none(),
            "the new output is a copied layer"
        );
    }
    assert!(spliced >= 10, "{spliced}");
}

#[test]
fn a_layer_given_another_class_is_named_after_it() {
    let mut renamed = 0;
    for (i, case) in valid_cases(10, 700).into_iter().enumerate() {
        let mut edited = case.clone();
        if mutate::replace_class(
            &mut edited,
            &mut rng(i as u64),
            &generators::ClassBalance::default(),
        )
        .is_err()
        {
            continue;
        }
        assert_well_formed(&edited, "replace_class");
        for l in edited.model.layers.iter().filter(|l| !l.is_input()) {
            let base = generators::build::snake(&l.class_name);
            assert!(
                l.name.starts_with(&base),
                "layer '{}' is a {}",
                l.name,
                l.class_name
            );
            assert_eq!(l.config["name"], serde_json::json!(l.name));
        }
        renamed += 1;
    }
    assert!(renamed >= 5, "replace_class applied only {renamed} times");
}

/// A chain `x → d1 → d2 → d3 → d4 → masking`: only the last tensor carries a Keras mask.
fn masked_last_model() -> Case {
    let node = |from: &str| {
        serde_json::json!([{"args": [{"class_name": "__keras_tensor__",
            "config": {"keras_history": [from, 0, 0]}}], "kwargs": {}}])
    };
    let mut layers = vec![serde_json::json!({"class_name": "InputLayer", "name": "x",
        "config": {"batch_shape": [null, 4, 3], "name": "x"}, "inbound_nodes": []})];
    let mut last = "x".to_owned();
    for i in 1..=4 {
        let name = format!("d{i}");
        layers.push(serde_json::json!({"class_name": "Dense", "name": name,
            "config": {"name": name, "units": 3}, "inbound_nodes": node(&last)}));
        last = name;
    }
    layers.push(
        serde_json::json!({"class_name": "Masking", "name": "masking",
        "config": {"name": "masking", "mask_value": 0.0}, "inbound_nodes": node(&last)}),
    );
    float32_case(layers, "masking")
}

/// A float32 case of these layers (JSON entries), input `x`, one output: the first output of
/// layer `output`; no arrays.
fn float32_case(layers: Vec<serde_json::Value>, output: &str) -> Case {
    let text = serde_json::json!({
        "format": "semfuzz-case/1", "dtype": "float32",
        "model": {"name": "m", "layers": layers,
          "input_layers": [["x", 0, 0]], "output_layers": [[output, 0, 0]]},
        "weights": {}, "inputs": []
    });
    Case::from_json_str(&text.to_string(), "test.case.json").expect("a case")
}

#[test]
fn inserted_layers_often_read_a_masked_tensor() {
    let case = masked_last_model();
    let before: Vec<String> = case.model.layers.iter().map(|l| l.name.clone()).collect();
    let (mut inserted, mut on_mask) = (0, 0);
    for seed in 0..400 {
        let mut edited = case.clone();
        let balance = generators::ClassBalance::default();
        if mutate::insert_layer(&mut edited, &mut rng(seed), &balance).is_err() {
            continue;
        }
        // An applied insertion leaves a new layer (one that took no consumer over becomes an
        // output rather than a dead layer the pruning drops).
        let new = edited
            .model
            .layers
            .iter()
            .find(|l| !before.contains(&l.name))
            .unwrap_or_else(|| panic!("seed {seed}: applied, but no new layer"));
        inserted += 1;
        if call_inputs(new).iter().any(|t| t.layer == "masking") {
            on_mask += 1;
        }
    }
    // One tensor of six carries the mask: a uniform draw reads it in about 1 insertion of 6
    // (a merge's further inputs add a few); the preference, in about half.
    assert!(inserted >= 300, "{inserted} insertions of 400");
    assert!(
        on_mask * 100 >= inserted * 35,
        "{on_mask} of {inserted} inserted layers read the masked tensor"
    );
}

/// A layer that reads masks, inserted where no tensor carries one, often reads a mask whose
/// masked steps hold values: `new input → Masking → Dense → layer` (right after a `Masking`
/// they are zeros, and a pooling that sums them gives the same result).
#[test]
fn a_layer_that_reads_masks_often_gets_masked_steps_holding_values() {
    let node = |from: &str| {
        serde_json::json!([{"args": [{"class_name": "__keras_tensor__",
            "config": {"keras_history": [from, 0, 0]}}], "kwargs": {}}])
    };
    let case = float32_case(
        vec![
            serde_json::json!({"class_name": "InputLayer", "name": "x",
                "config": {"batch_shape": [null, 5, 3], "name": "x"}, "inbound_nodes": []}),
            serde_json::json!({"class_name": "Dense", "name": "d1",
                "config": {"name": "d1", "units": 3}, "inbound_nodes": node("x")}),
        ],
        "d1",
    );
    let mut favouring = ClassBalance::default();
    for k in generators::generate::classes_for(DType::Float32) {
        if k.class_name() != "GlobalAveragePooling1D" {
            (0..1000).for_each(|_| favouring.record_class(k.class_name()));
        }
    }
    let (mut pools, mut chained) = (0, 0);
    for seed in 0..200 {
        let mut edited = case.clone();
        if mutate::insert_layer(&mut edited, &mut rng(seed), &favouring).is_err() {
            continue;
        }
        let Some(pool) = edited
            .model
            .layers
            .iter()
            .find(|l| l.class_name == "GlobalAveragePooling1D")
        else {
            continue;
        };
        pools += 1;
        let producer = |l: &oracle::case::Layer| {
            let first = call_inputs(l).into_iter().next()?;
            edited.model.layer(&first.layer)
        };
        let Some(dense) = producer(pool)
            .filter(|l| l.class_name == "Dense" && case.model.layer(&l.name).is_none())
        else {
            continue;
        };
        let masking = producer(dense).expect("the Dense reads a tensor");
        assert_eq!(masking.class_name, "Masking", "seed {seed}");
        let input = producer(masking).expect("the Masking reads a tensor");
        assert!(input.is_input() && case.model.layer(&input.name).is_none());
        assert_well_formed(&edited, &format!("seed {seed}"));
        assert!(
            matches!(check_all(&edited), Ok(v) if v.is_empty()),
            "seed {seed}: the chain is valid: {:?}\n{}",
            check_all(&edited),
            json(&edited)
        );
        chained += 1;
    }
    assert!(pools >= 100, "{pools} GlobalAveragePooling1D inserted");
    assert!(
        chained * 100 >= pools * 15,
        "{chained} of {pools} read a masked chain"
    );
}

/// Whether a `Masking` layer of the case reads a model input, over its `Masking` layers:
/// (on an input, of all).
fn maskings_on_inputs(case: &Case) -> (usize, usize) {
    let inputs: Vec<&str> = case
        .model
        .layers
        .iter()
        .filter(|l| l.is_input())
        .map(|l| l.name.as_str())
        .collect();
    let maskings: Vec<_> = case
        .model
        .layers
        .iter()
        .filter(|l| l.class_name == "Masking")
        .collect();
    let on_input = maskings
        .iter()
        .filter(|l| {
            call_inputs(l)
                .iter()
                .all(|t| inputs.contains(&t.layer.as_str()))
        })
        .count();
    (on_input, maskings.len())
}

/// A `Masking` layer mostly reads a model input, where the data gets steps of its mask value
/// (in a generated model and when inserted): elsewhere no step equals the mask value.
#[test]
fn a_masking_layer_mostly_reads_a_model_input() {
    let classes: Vec<_> = ["Masking", "Dense", "LSTM", "GlobalAveragePooling1D", "Add"]
        .iter()
        .map(|c| oracle::layers::lookup(c, None).expect("registered"))
        .collect();
    let opts = GenOptions {
        layers: 6,
        classes: classes.clone(),
        ..GenOptions::default()
    };
    let (mut on_input, mut all) = (0, 0);
    for seed in 0..150 {
        let (i, n) = maskings_on_inputs(&generate(&opts, &mut rng(seed)).case);
        on_input += i;
        all += n;
    }
    assert!(all >= 100, "{all} Masking layers");
    assert!(
        on_input * 100 >= all * 60,
        "generated: {on_input} of {all} on an input"
    );
    // Insertions into models of other classes, with a balance that favours `Masking`.
    let mut favouring = ClassBalance::default();
    for k in generators::generate::classes_for(DType::Float64) {
        if k.class_name() != "Masking" {
            (0..1000).for_each(|_| favouring.record_class(k.class_name()));
        }
    }
    let (mut on_input, mut all) = (0, 0);
    for (k, case) in valid_cases(150, 90_000).iter().enumerate() {
        let mut edited = case.clone();
        let before = maskings_on_inputs(case);
        if mutate::insert_layer(&mut edited, &mut rng(k as u64), &favouring).is_err() {
            continue;
        }
        let after = maskings_on_inputs(&edited);
        if after.1 > before.1 {
            on_input += after.0.saturating_sub(before.0);
            all += after.1 - before.1;
        }
    }
    assert!(all >= 50, "{all} Masking layers inserted");
    assert!(
        on_input * 100 >= all * 60,
        "inserted: {on_input} of {all} on an input"
    );
}

/// Generated models do as insertions do: a `Dot` often reads a new model input of its own
/// (shaped to meet its first input), and a layer that reads masks a masked chain
/// (`input → Masking → Dense`).
#[test]
fn generated_dots_get_new_inputs_and_mask_readers_masked_chains() {
    let classes: Vec<_> = ["Dense", "Dot", "GlobalAveragePooling1D", "LSTM"]
        .iter()
        .map(|c| oracle::layers::lookup(c, None).expect("registered"))
        .collect();
    let opts = GenOptions {
        layers: 6,
        classes,
        ..GenOptions::default()
    };
    let (mut dots, mut partnered, mut readers, mut chained) = (0, 0, 0, 0);
    for seed in 0..150 {
        let case = generate(&opts, &mut rng(seed)).case;
        assert_well_formed(&case, &format!("seed {seed}"));
        let model = &case.model;
        let producer = |l: &oracle::case::Layer, j: usize| {
            let t = call_inputs(l).into_iter().nth(j)?;
            model.layer(&t.layer)
        };
        let readers_of = |name: &str| {
            model
                .layers
                .iter()
                .filter(|l| call_inputs(l).iter().any(|t| t.layer == name))
                .count()
        };
        for l in &model.layers {
            match l.class_name.as_str() {
                "Dot" => {
                    dots += 1;
                    partnered += usize::from(
                        producer(l, 1).is_some_and(|p| p.is_input() && readers_of(&p.name) == 1),
                    );
                }
                "GlobalAveragePooling1D" | "LSTM" => {
                    readers += 1;
                    let chain = producer(l, 0)
                        .filter(|d| d.class_name == "Dense")
                        .and_then(|d| producer(d, 0))
                        .filter(|m| m.class_name == "Masking")
                        .and_then(|m| producer(m, 0))
                        .is_some_and(|i| i.is_input());
                    chained += usize::from(chain);
                }
                _ => {}
            }
        }
    }
    assert!(
        dots >= 100 && readers >= 100,
        "{dots} Dot, {readers} mask readers"
    );
    assert!(
        partnered * 100 >= dots * 10,
        "{partnered} of {dots} Dot on a new input"
    );
    assert!(
        chained * 100 >= readers * 10,
        "{chained} of {readers} behind a masked chain"
    );
}

/// A new `Dot` often reads a new model input shaped to meet its first input along the axes
/// drawn: of another rank, or along an axis other than the first's, which a second input of
/// the first's shape (the one that fits among a model's tensors) never gives.
#[test]
fn a_new_dot_often_meets_an_input_of_another_rank_or_along_another_axis() {
    let mut favouring = ClassBalance::default();
    for k in generators::generate::classes_for(DType::Float64) {
        if k.class_name() != "Dot" {
            (0..1000).for_each(|_| favouring.record_class(k.class_name()));
        }
    }
    let (mut dots, mut partnered, mut valid, mut other_rank, mut other_axis) = (0, 0, 0, 0, 0);
    for (k, case) in valid_cases(200, 120_000).iter().enumerate() {
        let mut edited = case.clone();
        if mutate::insert_layer(&mut edited, &mut rng(k as u64), &favouring).is_err() {
            continue;
        }
        let Some(dot) = edited
            .model
            .layers
            .iter()
            .find(|l| l.class_name == "Dot" && case.model.layer(&l.name).is_none())
        else {
            continue;
        };
        dots += 1;
        let reads = call_inputs(dot);
        if !reads.iter().any(|t| {
            edited.model.layer(&t.layer).is_some_and(|l| l.is_input())
                && case.model.layer(&t.layer).is_none()
        }) {
            continue;
        }
        partnered += 1;
        assert_well_formed(&edited, &format!("case {k}"));
        if !matches!(check_all(&edited), Ok(v) if v.is_empty()) {
            continue;
        }
        valid += 1;
        let analysis = diagnose(&edited, &RepairOptions::default())
            .analysis
            .expect("analysed");
        let ranks: Vec<usize> = reads
            .iter()
            .map(|t| analysis.shape(&edited.model, t).expect("known").len())
            .collect();
        let axes: Vec<i64> = serde_json::from_value(dot.config["axes"].clone()).expect("a pair");
        let resolved: Vec<i64> = (0..2)
            .map(|i| axes[i].rem_euclid(ranks[i] as i64))
            .collect();
        other_rank += usize::from(ranks[0] != ranks[1]);
        other_axis += usize::from(resolved[0] != resolved[1]);
    }
    assert!(dots >= 100, "{dots} Dot layers inserted");
    assert!(
        partnered * 100 >= dots * 25,
        "{partnered} of {dots} on a new input"
    );
    assert!(valid * 2 >= partnered, "{valid} of {partnered} valid");
    assert!(
        other_rank * 4 >= valid,
        "{other_rank} of {valid} of another rank"
    );
    assert!(
        other_axis * 4 >= valid,
        "{other_axis} of {valid} along another axis"
    );
}

/// `x → Dot([x, x], axes=1)`: a `Dot` whose two inputs are one tensor.
fn dot_model() -> Case {
    let kt = |from: &str| {
        serde_json::json!({"class_name": "__keras_tensor__",
            "config": {"keras_history": [from, 0, 0]}})
    };
    let layers = vec![
        serde_json::json!({"class_name": "InputLayer", "name": "x",
            "config": {"batch_shape": [null, 4, 3], "name": "x"}, "inbound_nodes": []}),
        serde_json::json!({"class_name": "Dot", "name": "dot",
            "config": {"name": "dot", "axes": 1},
            "inbound_nodes": [{"args": [[kt("x"), kt("x")]], "kwargs": {}}]}),
    ];
    float32_case(layers, "dot")
}

/// A `Dot` already in a model (most of those a campaign runs are) often gets, when its
/// arguments change, a new model input shaped to meet its first along new axes.
#[test]
fn a_dot_whose_arguments_change_often_meets_a_new_input() {
    let case = dot_model();
    let (mut changed, mut partnered, mut valid) = (0, 0, 0);
    for seed in 0..200 {
        let mut edited = case.clone();
        let balance = ClassBalance::default();
        if mutate::change_args(&mut edited, &mut rng(seed), &balance).is_err() {
            continue;
        }
        changed += 1;
        assert_well_formed(&edited, &format!("seed {seed}"));
        let dot = edited.model.layer("dot").expect("the Dot stays");
        if call_inputs(dot).iter().any(|t| t.layer != "x") {
            partnered += 1;
            valid += usize::from(matches!(check_all(&edited), Ok(v) if v.is_empty()));
        }
    }
    assert!(changed >= 150, "{changed} of 200 applied");
    assert!(
        partnered * 100 >= changed * 25,
        "{partnered} of {changed} on a new input"
    );
    assert!(valid * 10 >= partnered * 9, "{valid} of {partnered} valid");
}

#[test]
fn an_inserted_layer_mostly_fits_the_inputs_it_is_given() {
    let opts = GenOptions {
        layers: 6,
        ..GenOptions::default()
    };
    let cases: Vec<Case> = (100..)
        .map(|s| generate(&opts, &mut rng(s)))
        .filter(|g| g.repair.valid)
        .map(|g| g.case)
        .take(150)
        .collect();
    let (mut inserted, mut fit) = (0, 0);
    for (i, case) in cases.iter().enumerate() {
        for k in 0..10 {
            let mut m = case.clone();
            let balance = generators::ClassBalance::default();
            if mutate::insert_layer(&mut m, &mut rng(i as u64 * 100 + k), &balance).is_err() {
                continue;
            }
            let Some(new) = m
                .model
                .layers
                .iter()
                .find(|l| case.model.layer(&l.name).is_none())
            else {
                continue;
            };
            inserted += 1;
            if check_all(&m).is_ok_and(|found| found.iter().all(|v| v.layer != new.name)) {
                fit += 1;
            }
        }
    }
    // Measured: 61% of 1454 insertions meet their own preconditions (45% with one placement
    // drawn and kept whatever it breaks).
    assert!(inserted >= 1200, "{inserted} insertions");
    assert!(
        fit * 100 >= inserted * 55,
        "{fit} of {inserted} inserted layers fit their inputs"
    );
}
