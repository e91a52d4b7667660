//! Minimisation by delta debugging: smaller and simpler variants of a case are tried one at
//! a time, and a variant is kept when the caller's test says the behaviour of interest (a
//! finding's signature) persists. Each round tries, in order: removing layers (the consumers
//! take the removed layer's first input) and cutting the model at a layer, dropping model
//! outputs (with what only they needed), dropping model inputs (their consumers read another
//! input), lowering input ranks (an axis dropped, the slice at its first index kept),
//! shrinking input shapes (arrays sliced, weights refit), replacing inputs and weights with
//! zeros or small integers, and dropping arguments back to their defaults. Rounds repeat
//! until one keeps nothing or the deadline passes.
//!
//! A variant is tried only when it is strictly smaller than the current case in one
//! well-founded order ([`Size`]), so no pass can undo another (a repair that gives a dropped
//! axis back, or an adapter layer that pays for a smaller shape, is never tried) and the
//! rounds end.

use std::time::Instant;

use ndarray::{ArrayD, Axis, Slice};
use oracle::Case;
use oracle::case::{Endpoints, ModelKind, Tensor};
use serde_json::json;

use crate::edit;
use crate::repair::{self, RepairOptions, kind_of};
use crate::values::{self, ValueOptions};

/// How long minimisation may go on.
#[derive(Debug, Clone, Copy, Default)]
pub struct MinimizeOptions {
    /// Stop trying variants after this instant (none: until nothing smaller persists).
    pub deadline: Option<Instant>,
}

/// What minimisation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MinimizeStats {
    /// Variants tested (only those smaller than the current case are).
    pub tried: usize,
    /// Variants kept.
    pub kept: usize,
    /// Rounds started (each runs every pass; the last keeps nothing unless the deadline
    /// stopped it).
    pub rounds: usize,
    /// The deadline stopped it before a round kept nothing.
    pub timed_out: bool,
}

/// How large a case is, in the order minimisation drives down: the fields are compared in
/// turn (a lexicographic order on natural numbers, which has no infinite descending chain),
/// so a variant that removes a layer is smaller whatever it does to the inputs, and one
/// that lowers a rank is smaller whatever it does to the element count or the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size {
    /// Layers other than input layers.
    pub layers: usize,
    /// Model inputs.
    pub inputs: usize,
    /// The input arrays' ranks, summed (batch axes included).
    pub rank: usize,
    /// The input arrays' elements, summed.
    pub elements: usize,
    /// Arguments set in the layers' configs that their classes declare (each can fall back to
    /// its default).
    pub arguments: usize,
    /// Over every input and weight array: the elements that are not zero, plus those that
    /// are not an integer from -4 to 4; NaN and infinities count twice.
    pub values: usize,
}

impl Size {
    pub fn of(case: &Case) -> Size {
        let complexity = |t: &Tensor| {
            t.data
                .iter()
                .map(|&x| usize::from(x != 0.0) + usize::from(!is_small_integer(x)))
                .sum::<usize>()
        };
        Size {
            layers: inner_layers(case),
            inputs: case.inputs.len(),
            rank: case.inputs.iter().map(|t| t.data.ndim()).sum(),
            elements: case.inputs.iter().map(|t| t.data.len()).sum(),
            arguments: case
                .model
                .layers
                .iter()
                .filter_map(|l| {
                    let kind = kind_of(l)?;
                    Some(
                        kind.params()
                            .iter()
                            .filter(|p| l.config.contains_key(p.name()))
                            .count(),
                    )
                })
                .sum(),
            values: case
                .inputs
                .iter()
                .chain(case.weights.values().flatten())
                .map(complexity)
                .sum(),
        }
    }
}

/// The layers of a case other than its input layers.
pub fn inner_layers(case: &Case) -> usize {
    case.model.layers.iter().filter(|l| !l.is_input()).count()
}

/// The largest number of elements of one input array, batch included.
pub fn max_input_elements(case: &Case) -> usize {
    case.inputs.iter().map(|t| t.data.len()).max().unwrap_or(0)
}

/// Shrinks `case` while `keeps` holds for each variant kept. `keeps` is never called on the
/// case itself: the caller has checked it.
pub fn minimize(
    case: &Case,
    keeps: &mut dyn FnMut(&Case) -> bool,
    opts: &MinimizeOptions,
) -> (Case, MinimizeStats) {
    let mut current = case.clone();
    let mut size = Size::of(&current);
    let mut stats = MinimizeStats::default();
    let passes: [fn(&Case) -> Vec<Case>; 7] = [
        layer_variants,
        output_variants,
        input_variants,
        rank_variants,
        shape_variants,
        value_variants,
        argument_variants,
    ];
    'rounds: loop {
        stats.rounds += 1;
        let mut kept_any = false;
        for pass in passes {
            // Within a pass, variants are regenerated from each kept one until none is kept.
            'pass: loop {
                for candidate in pass(&current) {
                    if opts.deadline.is_some_and(|d| Instant::now() >= d) {
                        stats.timed_out = true;
                        break 'rounds;
                    }
                    // Only a strictly smaller variant: what makes the rounds end.
                    let candidate_size = Size::of(&candidate);
                    if candidate_size >= size {
                        continue;
                    }
                    // A variant is kept only as a file could hold it: one whose written form
                    // does not read back (an output naming a removed layer) is an edit's bug,
                    // and the case written at the end would be unreadable.
                    if !readable(&candidate) {
                        tracing::warn!("a minimization variant does not read back; skipped");
                        continue;
                    }
                    stats.tried += 1;
                    if keeps(&candidate) {
                        tracing::debug!(size = ?candidate_size, "kept a smaller variant");
                        stats.kept += 1;
                        current = candidate;
                        size = candidate_size;
                        kept_any = true;
                        continue 'pass;
                    }
                }
                break;
            }
        }
        if !kept_any {
            break;
        }
    }
    (current, stats)
}

/// Whether the case, written as a case file, reads back.
fn readable(case: &Case) -> bool {
    let text = case
        .to_json(&oracle::check::CheckedShapes::of(case))
        .to_string();
    Case::from_json_str(&text, "variant.case.json").is_ok()
}

/// Each inner layer removed (its consumers rewired), then the model cut at each inner layer;
/// from the last layer back, so the outputs go first. A layer whose input shape changed (or
/// that an invalid upstream layer left without weights) gets weights that fit ([`fitted`]).
fn layer_variants(case: &Case) -> Vec<Case> {
    let n = case.model.layers.len();
    let mut out = Vec::new();
    for i in (0..n).rev() {
        if case.model.layers[i].is_input() {
            continue;
        }
        let mut c = case.clone();
        if edit::truncate_at(&mut c, i).is_ok() {
            out.extend(fitted(c));
        }
        let mut c = case.clone();
        if edit::remove_layer(&mut c, i).is_ok() {
            out.extend(fitted(c));
        }
    }
    out
}

/// Each model output dropped, with the layers and inputs only it needed.
fn output_variants(case: &Case) -> Vec<Case> {
    let ModelKind::Functional { outputs, .. } = &case.model.kind else {
        return Vec::new();
    };
    let n = outputs.refs().len();
    if n < 2 {
        return Vec::new();
    }
    (0..n)
        .flat_map(|k| {
            let mut c = case.clone();
            if let ModelKind::Functional { outputs, .. } = &mut c.model.kind {
                match outputs {
                    Endpoints::Single(_) => {}
                    Endpoints::List(v) => {
                        v.remove(k);
                    }
                    Endpoints::Dict(v) => {
                        v.remove(k);
                    }
                }
            }
            edit::prune(&mut c);
            fitted(c)
        })
        .collect()
}

/// Each model input dropped, its consumers reading another input instead (the layers that
/// then see another shape are refit or repaired, see [`fitted`]; a repair that adds a layer
/// makes the variant larger, and it is not tried).
fn input_variants(case: &Case) -> Vec<Case> {
    let refs = case.model.input_refs();
    if refs.len() < 2 || edit::require_flat(case).is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, dropped) in refs.iter().enumerate() {
        for (_, kept) in refs.iter().enumerate().filter(|&(j, _)| j != k) {
            let mut c = case.clone();
            edit::rewire_all_consumers(&mut c, dropped, kept);
            edit::prune(&mut c);
            if c.model.input_refs().len() < refs.len() {
                out.extend(fitted(c));
            }
        }
    }
    out
}

/// Each axis of each input array (batch included) cut to 1, then to half its size: the arrays
/// are sliced (the values that showed the bug stay), the declared shapes follow, and the
/// weights are refit (see [`fitted`]).
fn shape_variants(case: &Case) -> Vec<Case> {
    if edit::require_flat(case).is_err() {
        return Vec::new();
    }
    let refs = case.model.input_refs();
    let mut out = Vec::new();
    for (k, t) in case.inputs.iter().enumerate() {
        for axis in 0..t.data.ndim() {
            let size = t.data.shape()[axis];
            let mut sizes = vec![1];
            if size / 2 > 1 {
                sizes.push(size / 2);
            }
            for to in sizes.into_iter().filter(|&s| s < size) {
                if let Some(c) = refs
                    .get(k)
                    .and_then(|r| with_input_cut(case, k, &r.layer, axis, to))
                {
                    out.extend(fitted(c));
                }
            }
        }
    }
    out
}

/// Each non-batch axis of each input of rank 2 or more dropped, whatever its size: the array
/// keeps the slice at the axis's first index, the declared shape loses the axis, and the
/// layers after it are refit or repaired to the lower rank (see [`fitted`]).
fn rank_variants(case: &Case) -> Vec<Case> {
    if edit::require_flat(case).is_err() {
        return Vec::new();
    }
    let refs = case.model.input_refs();
    let mut out = Vec::new();
    for (k, t) in case.inputs.iter().enumerate() {
        for axis in 1..t.data.ndim() {
            if let Some(c) = refs
                .get(k)
                .and_then(|r| with_input_axis_dropped(case, k, &r.layer, axis))
            {
                out.extend(fitted(c));
            }
        }
    }
    out
}

fn with_input_axis_dropped(case: &Case, k: usize, input: &str, axis: usize) -> Option<Case> {
    let li = edit::position(case, input)?;
    let mut dims = case.model.layers[li].input_batch_shape()?;
    // An empty axis has no first slice to keep.
    if axis >= dims.len() || case.inputs[k].data.len_of(Axis(axis)) == 0 {
        return None;
    }
    dims.remove(axis);
    let mut c = case.clone();
    let t = &mut c.inputs[k];
    t.data = t.data.index_axis(Axis(axis), 0).to_owned();
    t.npz_key = None;
    let config = &mut c.model.layers[li].config;
    config.remove("shape");
    config.insert("batch_shape".into(), json!(dims));
    Some(c)
}

fn with_input_cut(case: &Case, k: usize, input: &str, axis: usize, to: usize) -> Option<Case> {
    let li = edit::position(case, input)?;
    let mut dims = case.model.layers[li].input_batch_shape()?;
    let mut c = case.clone();
    let t = &mut c.inputs[k];
    t.data = t.data.slice_axis(Axis(axis), Slice::from(0..to)).to_owned();
    t.npz_key = None;
    if axis > 0 {
        *dims.get_mut(axis)? = Some(to);
    } else if dims.first().copied().flatten().is_some() {
        dims[0] = Some(to);
    }
    let config = &mut c.model.layers[li].config;
    config.remove("shape");
    config.insert("batch_shape".into(), json!(dims));
    Some(c)
}

/// The forms of an edited case worth testing. A model the reference calls invalid is tried
/// as it is (an invalid model may be the finding, and the reference never evaluates it), then
/// repaired to validity with weights that fit; a valid one gets the weights its layers now
/// need (arrays that still fit are kept).
fn fitted(c: Case) -> Vec<Case> {
    let mut rng = crate::rng(0);
    let batch = c
        .inputs
        .first()
        .and_then(|t| t.shape().first().copied())
        .unwrap_or(1);
    let values = ValueOptions {
        special: 0.0,
        ..ValueOptions::default()
    };
    match oracle::check::check_in(&c, c.dtype) {
        Err(oracle::CheckError::Invalid(_)) => {
            let mut repaired = c.clone();
            // The finding may be a kept bug's: its trigger stays.
            let opts = RepairOptions {
                batch,
                avoid: oracle::triggers::TriggerSet::none(),
                ..RepairOptions::default()
            };
            let mut out = vec![c];
            if repair::repair(&mut repaired, &opts, &mut rng).valid
                && values::realize(&mut repaired, batch, &values, &mut rng).is_ok()
            {
                out.push(repaired);
            }
            out
        }
        Err(oracle::CheckError::Unsupported(_)) => vec![c],
        Ok(_) => {
            let mut c = c;
            match values::realize(&mut c, batch, &values, &mut rng) {
                Ok(()) => vec![c],
                Err(_) => Vec::new(),
            }
        }
    }
}

/// An integer from -4 to 4: what [`small_integers`] leaves as it is.
fn is_small_integer(x: f64) -> bool {
    x.is_finite() && x.fract() == 0.0 && x.abs() <= 4.0
}

/// Values rounded to small integers (NaN and infinities kept: they may be the bug).
fn small_integers(a: &ArrayD<f64>) -> ArrayD<f64> {
    a.mapv(|x| {
        if x.is_finite() {
            x.round().clamp(-4.0, 4.0)
        } else {
            x
        }
    })
}

fn zeros(a: &ArrayD<f64>) -> ArrayD<f64> {
    ArrayD::zeros(a.raw_dim())
}

fn with_arrays(t: &Tensor, f: fn(&ArrayD<f64>) -> ArrayD<f64>) -> Tensor {
    Tensor {
        dtype: t.dtype,
        data: f(&t.data),
        npz_key: None,
    }
}

/// Inputs, then each layer's weights, all zeros, then small integers: everything at once
/// first, then one array list at a time.
fn value_variants(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    for f in [zeros as fn(&ArrayD<f64>) -> ArrayD<f64>, small_integers] {
        let mut all = case.clone();
        all.inputs = all.inputs.iter().map(|t| with_arrays(t, f)).collect();
        for w in all.weights.values_mut() {
            *w = w.iter().map(|t| with_arrays(t, f)).collect();
        }
        out.push(all);
        let mut inputs = case.clone();
        inputs.inputs = inputs.inputs.iter().map(|t| with_arrays(t, f)).collect();
        out.push(inputs);
        for k in 0..case.inputs.len() {
            let mut c = case.clone();
            c.inputs[k] = with_arrays(&c.inputs[k], f);
            out.push(c);
        }
        for name in case.weights.keys() {
            let mut c = case.clone();
            if let Some(w) = c.weights.get_mut(name) {
                *w = w.iter().map(|t| with_arrays(t, f)).collect();
            }
            out.push(c);
        }
    }
    out
}

/// Each argument a layer's class declares, dropped from its config (Keras then uses the
/// default); weights are refit when the change alters their shapes.
fn argument_variants(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    for (li, layer) in case.model.layers.iter().enumerate() {
        let Some(kind) = kind_of(layer) else {
            continue;
        };
        for p in kind.params() {
            if !layer.config.contains_key(p.name()) {
                continue;
            }
            let mut c = case.clone();
            c.model.layers[li].config.remove(p.name());
            out.extend(fitted(c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GenOptions;

    /// A variant whose output names a layer that is gone does not read back, so it is
    /// never kept; the case it came from does.
    #[test]
    fn a_variant_naming_a_missing_output_layer_is_unreadable() {
        let text = serde_json::json!({"format": "semfuzz-case/1", "dtype": "float32",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
                 "config": {"batch_shape": [null, 4], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "ReLU", "name": "a", "registered_name": null,
                 "config": {"name": "a"}, "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                 "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}],
                "input_layers": ["x", 0, 0], "output_layers": ["a", 0, 0]},
            "inputs": [{"shape": [1, 4], "data": [1.0, -1.0, 2.0, -2.0]}]});
        let case = Case::from_json_str(&text.to_string(), "m.case.json").unwrap();
        assert!(super::readable(&case));
        let mut stale = case.clone();
        if let ModelKind::Functional { outputs, .. } = &mut stale.model.kind {
            *outputs = Endpoints::List(vec![
                oracle::case::TensorRef::new("gone", 0, 0),
                oracle::case::TensorRef::new("a", 0, 0),
            ]);
        }
        assert!(!super::readable(&stale));
    }

    /// An input with an empty axis (a case the PyTorch campaign saved) has no variant that
    /// drops that axis, and the others are made without a panic.
    #[test]
    fn an_empty_axis_is_not_dropped() {
        let text = serde_json::json!({"format": "semfuzz-case/1", "dtype": "float32",
            "model": {"name": "m", "trainable": true, "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
                 "config": {"batch_shape": [null, 2, 0, 3], "dtype": "float32", "name": "x"}, "inbound_nodes": []},
                {"module": "keras.layers", "class_name": "ReLU", "name": "a", "registered_name": null,
                 "config": {"name": "a"}, "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                 "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}],
                "input_layers": ["x", 0, 0], "output_layers": ["a", 0, 0]},
            "inputs": [{"shape": [1, 2, 0, 3], "data": []}]});
        let case = Case::from_json_str(&text.to_string(), "m.case.json").unwrap();
        assert!(with_input_axis_dropped(&case, 0, "x", 2).is_none());
        let kept: Vec<Vec<usize>> = rank_variants(&case)
            .iter()
            .map(|v| v.inputs[0].data.shape().to_vec())
            .collect();
        assert!(kept.iter().all(|s| s.len() == 3), "{kept:?}");
        assert!(kept.contains(&vec![1, 0, 3]), "{kept:?}");
    }

    fn generated(seed: u64) -> Case {
        let mut rng = crate::rng(seed);
        crate::generate(&GenOptions::default(), &mut rng).case
    }

    #[test]
    fn a_test_that_always_holds_shrinks_to_one_layer_with_one_element_inputs() {
        let case = (0..20)
            .map(generated)
            .find(|c| inner_layers(c) >= 3 && !c.inputs.is_empty())
            .expect("a generated case with three layers");
        let (small, stats) = minimize(&case, &mut |_| true, &MinimizeOptions::default());
        assert_eq!(inner_layers(&small), 1, "{stats:?}");
        assert_eq!(max_input_elements(&small), 1, "{:?}", small.inputs);
        assert!(stats.kept > 0 && !stats.timed_out);
    }

    #[test]
    fn model_inputs_are_dropped_while_the_test_holds() {
        let case = (0..40)
            .map(generated)
            .find(|c| c.model.input_refs().len() >= 2)
            .expect("a generated case with two inputs");
        // Every layer must stay: only dropping inputs can take them away.
        let n = inner_layers(&case);
        let (small, stats) = minimize(
            &case,
            &mut |c: &Case| inner_layers(c) == n,
            &MinimizeOptions::default(),
        );
        assert_eq!(inner_layers(&small), n);
        assert_eq!(small.model.input_refs().len(), 1, "{stats:?}");
        assert_eq!(small.inputs.len(), 1);
    }

    fn has(c: &Case, class: &str) -> bool {
        c.model.layers.iter().any(|l| l.class_name == class)
    }

    fn valid(c: &Case) -> bool {
        oracle::check::check_in(c, c.dtype).is_ok()
    }

    fn highest_rank(c: &Case) -> usize {
        c.inputs.iter().map(|t| t.data.ndim()).max().unwrap_or(0)
    }

    #[test]
    fn input_ranks_come_down_to_the_batch_axis_when_nothing_needs_more() {
        let case = (0..40)
            .map(generated)
            .find(|c| highest_rank(c) >= 4)
            .expect("a generated case with an input of rank 4 or more");
        let (small, stats) = minimize(&case, &mut |_| true, &MinimizeOptions::default());
        assert!(
            small.inputs.iter().all(|t| t.data.ndim() == 1),
            "{stats:?} {:?}",
            small.inputs
        );
    }

    #[test]
    fn input_ranks_come_down_to_what_the_layer_of_interest_needs() {
        let case = (0..200)
            .map(generated)
            .find(|c| has(c, "Dense") && highest_rank(c) >= 4 && valid(c))
            .expect("a valid generated case with a Dense layer and an input of rank 4 or more");
        let mut keeps = |c: &Case| valid(c) && has(c, "Dense");
        let (small, stats) = minimize(&case, &mut keeps, &MinimizeOptions::default());
        assert!(keeps(&small));
        assert_eq!(inner_layers(&small), 1, "{stats:?}");
        // A Dense layer needs an axis besides the batch: rank 2. A variant of rank 1 keeps
        // it only with a layer that gives the axis back, which is no smaller.
        assert_eq!(highest_rank(&small), 2, "{stats:?} {:?}", small.inputs);
        let size = Size::of(&small);
        for v in rank_variants(&small).iter().filter(|v| keeps(v)) {
            assert!(Size::of(v) > size, "{:?}", v.model.layers);
        }
    }

    /// Multi-head attention cases once made the rounds go on forever: a repair gave back what
    /// another pass had taken (a dropped argument, a dropped axis) with new weights, the next
    /// rounds took it again and zeroed the weights, and so on.
    #[test]
    fn the_rounds_end_on_multi_head_attention_cases() {
        let cases: Vec<Case> = (0..100)
            .map(generated)
            .filter(|c| has(c, "MultiHeadAttention") && valid(c))
            .take(3)
            .collect();
        assert_eq!(cases.len(), 3, "generated cases with multi-head attention");
        let always = |_: &Case| true;
        let attention = |c: &Case| valid(c) && has(c, "MultiHeadAttention");
        for (case, test) in cases
            .iter()
            .flat_map(|c| [(c, &always as &dyn Fn(&Case) -> bool), (c, &attention)])
        {
            // Every kept variant is strictly smaller than the one before. The test stops
            // holding after many calls, which ends a cycle (and the rounds show it).
            let mut sizes = vec![Size::of(case)];
            let mut calls = 0;
            let (small, stats) = minimize(
                case,
                &mut |c: &Case| {
                    calls += 1;
                    let keep = calls <= 2000 && test(c);
                    if keep {
                        sizes.push(Size::of(c));
                    }
                    keep
                },
                &MinimizeOptions::default(),
            );
            assert!(test(&small));
            assert!(!stats.timed_out);
            assert!(stats.rounds <= 5, "{stats:?}");
            assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
            assert_eq!(sizes.last(), Some(&Size::of(&small)));
            assert_eq!(stats.kept, sizes.len() - 1);
        }
    }

    #[test]
    fn each_value_pass_makes_the_values_simpler() {
        let case = generated(5);
        let size = Size::of(&case);
        let variants = value_variants(&case);
        assert!(!variants.is_empty());
        for v in variants.iter().filter(|v| **v != case) {
            let s = Size::of(v);
            assert!(s < size, "{s:?} {size:?}");
            assert!(s.values < size.values, "{s:?} {size:?}");
        }
    }

    #[test]
    fn a_kept_variant_always_passes_the_test_and_keeps_the_layer_of_interest() {
        let case = (0..20)
            .map(generated)
            .find(|c| inner_layers(c) >= 3)
            .expect("a generated case with three layers");
        let target = case
            .model
            .layers
            .iter()
            .rev()
            .find(|l| !l.is_input())
            .map(|l| l.class_name.clone())
            .unwrap();
        let mut seen = 0;
        let (small, _) = minimize(
            &case,
            &mut |c: &Case| {
                seen += 1;
                c.model.layers.iter().any(|l| l.class_name == target)
            },
            &MinimizeOptions::default(),
        );
        assert!(seen > 0);
        assert!(small.model.layers.iter().any(|l| l.class_name == target));
        assert!(inner_layers(&small) <= inner_layers(&case));
    }

    #[test]
    fn a_test_that_never_holds_leaves_the_case_as_it_was() {
        let case = generated(3);
        let (same, stats) = minimize(&case, &mut |_| false, &MinimizeOptions::default());
        assert_eq!(same, case);
        assert_eq!(stats.kept, 0);
        assert!(stats.tried > 0);
    }

    #[test]
    fn a_past_deadline_stops_at_once() {
        let case = generated(4);
        let opts = MinimizeOptions {
            deadline: Some(Instant::now()),
        };
        let (same, stats) = minimize(&case, &mut |_| true, &opts);
        assert_eq!(same, case);
        assert!(stats.timed_out);
        assert_eq!(stats.tried, 0);
    }
}
