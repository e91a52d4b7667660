//! Minimisation by delta debugging: smaller and simpler variants of a case are tried one at
//! a time, and a variant is kept when the caller's test says the behaviour of interest (a
//! finding's signature) persists. Each round tries, in order: removing layers (the consumers
//! take the removed layer's first input) and cutting the model at a layer, dropping model
//! outputs (with what only they needed), dropping model inputs (their consumers read another
//! input), shrinking input shapes (arrays sliced, weights refit),
//! replacing inputs and weights with zeros or small integers, and dropping arguments back to
//! their defaults. Rounds repeat until one keeps nothing or the deadline passes.

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
    /// Variants tested.
    pub tried: usize,
    /// Variants kept.
    pub kept: usize,
    /// The deadline stopped it before a round kept nothing.
    pub timed_out: bool,
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
    let mut stats = MinimizeStats::default();
    let passes: [fn(&Case) -> Vec<Case>; 6] = [
        layer_variants,
        output_variants,
        input_variants,
        shape_variants,
        value_variants,
        argument_variants,
    ];
    'rounds: loop {
        let mut kept_any = false;
        for pass in passes {
            // Within a pass, variants are regenerated from each kept one until none is kept.
            'pass: loop {
                for candidate in pass(&current) {
                    if opts.deadline.is_some_and(|d| Instant::now() >= d) {
                        stats.timed_out = true;
                        break 'rounds;
                    }
                    if candidate == current {
                        continue;
                    }
                    stats.tried += 1;
                    if keeps(&candidate) {
                        tracing::debug!(
                            layers = inner_layers(&candidate),
                            elements = max_input_elements(&candidate),
                            "kept a smaller variant"
                        );
                        stats.kept += 1;
                        current = candidate;
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
/// then see another shape are refit or repaired, see [`fitted`]).
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
                out.extend(no_larger(case, fitted(c)));
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

/// The variants with no more layers than `case`: a repair that adapts the layers to a
/// dropped input with a new layer would trade one simplification for another, and
/// the next removal of that layer would undo it, round after round.
fn no_larger(case: &Case, variants: Vec<Case>) -> Vec<Case> {
    let n = inner_layers(case);
    variants
        .into_iter()
        .filter(|v| inner_layers(v) <= n)
        .collect()
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
            let opts = RepairOptions {
                batch,
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
