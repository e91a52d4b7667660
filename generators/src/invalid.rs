//! Minimally-invalid cases: one targeted change to a valid case (one argument of one layer, one
//! input's declared shape, or one layer's input) that breaks exactly one precondition, to test
//! whether a framework's validation refuses what it should.

use oracle::case::Dims;
use oracle::check::check_all;
use oracle::layers::{Bound, Domain, ParamDef};
use oracle::{Case, Category, Tag, Violation};
use rand::Rng as _;
use rand::seq::{IndexedMutRandom, IndexedRandom};
use serde_json::{Value, json};

use crate::Rng;
use crate::balance::ClassBalance;
use crate::edit::Skipped;
use crate::mutate::{change_args_of, change_input_shape, rewire_input_of, rewire_to_new_input};
use crate::sample::sample_param;
use crate::values::fill_inputs;

/// Candidates tried at most; twice as many when a Keras-enforced violation is preferred.
const TRIES: usize = 50;

/// The integers next to a domain's finite edges, outside it.
fn just_outside_int(domain: &Domain<i64>) -> Vec<i64> {
    let lo = domain.least().map(|v| v.saturating_sub(1));
    let hi = domain.greatest().map(|v| v.saturating_add(1));
    lo.into_iter().chain(hi).collect()
}

/// Floats just outside a domain's finite edges.
fn just_outside_float(domain: &Domain<f64>) -> Vec<f64> {
    let step = |v: f64| v.abs().max(1.0) * 1e-6;
    let lo = match domain.lo {
        Bound::Unbounded => None,
        Bound::Incl(v) => Some(v - step(v)),
        Bound::Excl(v) => Some(v),
    };
    let hi = match domain.hi {
        Bound::Unbounded => None,
        Bound::Incl(v) => Some(v + step(v)),
        Bound::Excl(v) => Some(v),
    };
    lo.into_iter().chain(hi).collect()
}

/// A value just outside, or far outside, what the parameter allows: where layers refuse
/// arguments outright.
fn out_of_range(def: &ParamDef, input: Option<&Dims>, rng: &mut Rng) -> Value {
    match *def {
        ParamDef::Int {
            min, max, domain, ..
        } => {
            let mut values = vec![
                min.saturating_sub(1),
                0,
                -1,
                max.saturating_add(1),
                max.saturating_mul(8),
            ];
            values.extend(just_outside_int(&domain));
            json!(*values.choose(rng).expect("values"))
        }
        ParamDef::Ints {
            len,
            min,
            max,
            domain,
            ..
        } => {
            let mut v: Vec<i64> = (0..len).map(|_| rng.random_range(min..=max)).collect();
            let mut values = vec![min.saturating_sub(1), 0, -1, max.saturating_mul(8)];
            values.extend(just_outside_int(&domain));
            if let Some(x) = v.choose_mut(rng) {
                *x = *values.choose(rng).expect("values");
            }
            json!(v)
        }
        ParamDef::Float {
            min, max, domain, ..
        } => {
            let span = (max - min).abs().max(1.0);
            let mut values = vec![min - span, max + span, -1.0];
            values.extend(just_outside_float(&domain));
            json!(*values.choose(rng).expect("values"))
        }
        ParamDef::Permutation { .. } => {
            let n = input.map_or(2, |d| d.len().saturating_sub(1)).max(1);
            let mut axes: Vec<i64> = (1..=n as i64).collect();
            match rng.random_range(0..3) {
                0 => axes[0] = n as i64 + 1,
                1 => axes.push(1),
                _ => axes[n - 1] = 1,
            }
            json!(axes)
        }
        _ => sample_param(def, input, rng),
    }
}

/// One candidate: one input's declared shape, or one change at a layer drawn by `balance`
/// (the classes a campaign has seen least most often): one of its arguments (within or
/// outside its range), or one of its tensor inputs taken from another earlier tensor (a tensor
/// of another rank or size where the layer allows only some: a check of the input's shape in
/// the layer's own code, not at the model's input). A class's own checks are then tried about
/// as often as the class is in models, however rare it is in the corpus.
fn candidate(case: &Case, balance: &ClassBalance, rng: &mut Rng) -> Option<Case> {
    let mut c = case.clone();
    if rng.random_bool(0.25) {
        change_input_shape(&mut c, rng).ok()?;
        return Some(c);
    }
    let layers: Vec<(usize, &'static dyn oracle::layers::LayerKind)> = (0..case.model.layers.len())
        .filter(|&i| !case.model.layers[i].is_input())
        .filter_map(|i| {
            let l = &case.model.layers[i];
            oracle::layers::lookup(&l.class_name, l.module.as_deref()).map(|k| (i, k))
        })
        .collect();
    let &(li, kind) = balance.choose_by(&layers, |(_, k)| k.class_name(), rng)?;
    if kind.params().is_empty() || rng.random_bool(REWIRE) {
        if rng.random_bool(NEW_INPUT) {
            rewire_to_new_input(&mut c, li, rng).ok()?;
            // The new model input (and the others: adding one drops the arrays) gets its
            // array, or the model could be built but never called.
            fill_inputs(&mut c, NEW_INPUT_BATCH).ok()?;
        } else {
            rewire_input_of(&mut c, li, rng).ok()?;
        }
        return Some(c);
    }
    let wild = rng.random_bool(0.5);
    let mut sample = |def: &ParamDef, input: Option<&Dims>, rng: &mut Rng| {
        if wild {
            out_of_range(def, input, rng)
        } else {
            sample_param(def, input, rng)
        }
    };
    change_args_of(&mut c, li, kind, 1, &mut sample, rng).ok()?;
    Some(c)
}

/// How often a layer with arguments gets another input rather than another argument.
const REWIRE: f64 = 0.3;

/// The batch of the arrays a rewired case's inputs get where it had none.
const NEW_INPUT_BATCH: usize = 2;

/// How often that input is a new model input of another rank rather than an earlier tensor
/// (a model whose tensors all have one rank could never break a layer's rank check).
const NEW_INPUT: f64 = 0.5;

/// From a valid case, one targeted change after which the model breaks exactly one
/// precondition (weights aside: the arrays are left as they were, and a change that only
/// makes them misfit is not taken). Half the time a Keras-enforced violation is preferred (a
/// semantic one is returned only when none turned up). The layer changed is drawn by
/// `balance`. Deterministic for a seeded `rng`.
pub fn make_minimally_invalid(
    case: &Case,
    balance: &ClassBalance,
    rng: &mut Rng,
) -> Result<(Case, Violation), Skipped> {
    if !matches!(check_all(case), Ok(v) if v.is_empty()) {
        return Err(Skipped("not a valid case"));
    }
    let prefer_keras = rng.random_bool(0.5);
    let tries = if prefer_keras { 2 * TRIES } else { TRIES };
    let mut fallback = None;
    for _ in 0..tries {
        let Some(c) = candidate(case, balance, rng) else {
            continue;
        };
        let Ok(mut found) = check_all(&c) else {
            continue;
        };
        if found.len() != 1
            || matches!(
                found[0].category,
                Category::WeightShape | Category::WeightValue
            )
        {
            continue;
        }
        let v = found.pop().expect("one violation");
        if prefer_keras && v.tag != Tag::KerasEnforced {
            fallback.get_or_insert((c, v));
            continue;
        }
        return Ok((c, v));
    }
    fallback.ok_or(Skipped("no single-violation change found"))
}
